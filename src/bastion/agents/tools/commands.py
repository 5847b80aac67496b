"""Approval rules for commands: which ``execute`` calls a human must approve first.

A rule is one line, ``program [argument ...]``, written like a command (quotes allowed): the
program and each argument are globs (``*``, ``?``, ``[...]``), matched case-sensitively.

* ``rm``: any command that runs ``rm`` (also ``/bin/rm``: a program is matched by its name and
  by its whole path);
* ``git push``: ``git`` with an argument ``push`` somewhere after it;
* ``* --force``: any program with an argument ``--force``;
* ``curl http*://*``: ``curl`` with a URL.

Matching is on what the command line says, and it errs towards asking:

* every word of the command can be the program (``env rm x``, ``xargs rm``, ``sh -c 'rm x'``
  and ``true; rm x`` all match ``rm``), and each argument glob may match any word;
* a shell line (a string, run by ``sh -c``), or a list that runs a shell, is split the way the
  shell splits words (quotes and backslashes removed); when it holds what only the shell could
  resolve (``$`` expansions, backticks, glob characters) or cannot be split (an open quote),
  the call needs approval whenever any command rule is set.

A rule reads only what the command says, never what it does: a program that deletes a file
(``python -c``, a script, ``make``) or input sent later to a shell is not seen, and a shell has
more ways to spell a program than any reader (brace expansion ``r{m,x}``, a line
continuation, an alias, ``$(printf rm)``); the ones found are treated as unreadable (asked when
any rule is set), but the list cannot be complete. Command rules are a convenience, documented
as bypassable. The boundaries are the guard (what the command changes comes back as the
principal, refused where the policy refuses it) and approval on effects: path rules, asked per
changed path before the write-back (``docs/sandbox.md``).
"""

from __future__ import annotations

import fnmatch
import posixpath
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bastion.core.errors import ConfigurationError

__all__ = ["CommandRule", "command_words", "needs_approval"]

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox", "eval"})
_OPAQUE = frozenset("$`*?[{")
"""Characters only the shell resolves: a line holding one cannot be matched word by word."""
_INDIRECT = frozenset({"alias", "source", "."})
"""Words that make the next ones mean something else (an alias, a sourced file): a line
holding one as a word cannot be matched word by word."""
_NESTING = 4
_MAX_WORDS = 10_000


@dataclass(frozen=True, slots=True)
class CommandRule:
    """``program [argument ...]``: the program glob and the argument globs."""

    program: str
    arguments: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> CommandRule:
        """A rule from its one-line form; :class:`ConfigurationError` when it is empty or
        cannot be split."""
        try:
            words = shlex.split(text)
        except ValueError:
            raise ConfigurationError(
                f"approval command rule {text!r} cannot be split (an open quote?); fix it"
            ) from None
        if not words:
            raise ConfigurationError("an approval command rule is empty; name a program or *")
        return cls(words[0], tuple(words[1:]))

    def matches(self, words: Sequence[str]) -> bool:
        """True when some word is the program and each argument glob matches some word."""
        program = any(
            fnmatch.fnmatchcase(w, self.program)
            or fnmatch.fnmatchcase(posixpath.basename(w), self.program)
            for w in words
        )
        return program and all(
            any(fnmatch.fnmatchcase(w, a) for w in words) for a in self.arguments
        )


def command_words(command: str | Sequence[str]) -> tuple[list[str], bool]:
    """The words of ``command`` that rules are matched against, and whether they say all the
    shell would run (``False``: something only the shell resolves, or a line that cannot be
    split). When a word names a shell (``sh -c '...'``), every word is split again as a shell
    line, so the script's own words count too."""
    if isinstance(command, str):
        words, readable = _shell_words(command)
    else:
        words, readable = list(command), True  # no shell: each argument reaches the program
    for _ in range(_NESTING):
        if not any(posixpath.basename(w) in _SHELLS for w in words):
            return words, readable
        found: list[str] = []
        for word in words:
            split, clear = _shell_words(word)
            found += split
            readable = readable and clear
        grown = list(dict.fromkeys([*words, *found]))
        if grown == words:
            return words, readable
        if len(grown) > _MAX_WORDS:
            return grown, False
        words = grown
    return words, False  # shells within shells within shells: ask


def _shell_words(line: str) -> tuple[list[str], bool]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return line.split(), False
    clear = (
        not any(c in _OPAQUE for c in line)
        and "\\\n" not in line  # a line continuation joins two words the shell's way
        and not any(w in _INDIRECT for w in words)
    )
    return words, clear


def needs_approval(rules: Iterable[CommandRule], command: str | Sequence[str]) -> bool:
    """True when a rule matches ``command``, or when rules are set and the command holds what
    cannot be matched word by word (fail closed)."""
    chosen = list(rules)
    if not chosen:
        return False
    words, readable = command_words(command)
    return not readable or any(rule.matches(words) for rule in chosen)
