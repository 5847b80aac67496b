"""Path patterns of policy rules: a pattern that could never match what its author meant is
refused when the policy is loaded, because a deny rule that matches nothing fails open.

Refused: braces (``/docs/{hr,legal}/**``: not supported, list one pattern per alternative), a
trailing slash (``/docs/hr/``: it would name the folder alone, never what it holds), an empty,
``.`` or ``..`` segment, an unbalanced ``[`` or ``]``, an empty class ``[]`` and a reversed
range ``[z-a]``, control characters (no path holds one). Brackets are read the way
:class:`~bastion.core.globs.Glob` reads them.
"""

from __future__ import annotations

from bastion.core.errors import ConfigurationError, InvalidPatternError
from bastion.core.globs import Glob
from bastion.core.schema import show

__all__ = ["rule_glob"]


def rule_glob(pattern: object) -> Glob:
    """A rule's path pattern, compiled; one that could never match what its author meant is
    refused (a deny rule that matches nothing fails open): braces (not supported), a trailing
    slash, an empty or dot segment, an unbalanced bracket, an empty or reversed class."""
    if not isinstance(pattern, str) or not pattern:
        raise ConfigurationError("rule path patterns must be non-empty strings such as /docs/**")
    shown = show(pattern)
    if not pattern.startswith("/"):
        raise ConfigurationError(f"rule path {shown} must be absolute (start with /)")
    problem = _pattern_problem(pattern)
    if problem:
        raise ConfigurationError(f"rule path {shown} can never match: {problem}")
    try:
        return Glob.compile(pattern)
    except InvalidPatternError as exc:
        raise ConfigurationError(f"rule path {shown}: {exc}") from None


def _pattern_problem(pattern: str) -> str:
    """Why ``pattern`` cannot mean what it says, or ``""``."""
    if any(not ch.isprintable() for ch in pattern):
        return "it holds a control character, which no path has"
    if "{" in pattern or "}" in pattern:
        return "braces {a,b} are not supported; list one pattern per alternative"
    if len(pattern) > 1 and pattern.endswith("/"):
        folder = pattern.rstrip("/") or "/"
        return (
            f"a trailing / (write {folder}/** for the folder and all below, {folder} for it alone)"
        )
    segments = pattern.split("/")[1:]
    if pattern != "/" and any(segment in ("", ".", "..") for segment in segments):
        return "an empty, . or .. segment (write each folder once: /docs/**)"
    for segment in segments:
        problem = _segment_problem(segment)
        if problem:
            return problem
    return ""


def _segment_problem(segment: str) -> str:
    """The bracket problems of one segment, read the way ``Glob`` reads classes."""
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "]":
            return "an unbalanced ] (a class is written [abc]; ? matches any one character)"
        if ch != "[":
            i += 1
            continue
        start = i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1
        end = segment.find("]", start)
        if end == -1:
            return "an unbalanced [ (a class is written [abc]; ? matches any one character)"
        body = segment[start:end]
        if not body:
            return "an empty class []"
        j = 0
        while j < len(body):
            if j + 2 < len(body) and body[j + 1] == "-":
                if body[j] > body[j + 2]:
                    return f"the range {body[j]}-{body[j + 2]} is reversed"
                j += 3
            else:
                j += 1
        i = end + 1
    return ""
