"""``--json`` output is safe on a terminal: a path or pattern holding a bidirectional
override, a line separator, a C1 control or a lone surrogate (an argument the shell could not
decode) comes out as its ``\\u`` escape, never raw (text mode escapes them the same way:
``printable``), and reads back as the same text. The audit log, which records what anyone
asked, is where such text reaches an operator's screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import Run

_HOSTILE = [
    "\u202eevil.md",
    "a\u2028b.md",
    "c\x85d.md",
    "e\x7ff.md",
    "\u200bzero.md",
    "g\U000e0041.md",
]
_RAW = ("\u202e", "\u2028", "\x85", "\x7f", "\u200b", "\U000e0041")


def _clean(text: str) -> None:
    for raw in _RAW:
        assert raw not in text, (raw, text)
    text.encode("utf-8")  # no lone surrogate


@pytest.mark.parametrize("name", _HOSTILE)
def test_a_hostile_path_is_escaped_in_json_answers_and_the_audit(
    starter: Path, run: Run, name: str
) -> None:
    path = f"/docs/{name}"
    for args in (["cat", path], ["stat", path], ["ls", path], ["grep", name, "/docs"]):
        result = run(*args, "--json", "--as", "alice")
        _clean(result.stdout)
        _clean(result.stderr)
        json.loads(result.stdout or result.stderr)
    audit = run("audit", "--json", "--as", "alice")
    assert audit.exit_code == 0, audit.output
    _clean(audit.stdout)
    records = json.loads(audit.stdout)["records"]
    assert any(r["path"] == path for r in records)
    text = run("audit", "--as", "alice")
    assert text.exit_code == 0
    _clean(text.stdout)


def test_an_undecodable_argument_is_an_escape_not_a_crash(starter: Path, run: Run) -> None:
    for args in (["grep", "\udcff", "/docs"], ["cat", "/docs/\udcff.md"]):
        result = run(*args, "--json", "--as", "alice")
        assert result.exit_code in (0, 1, 2), result.output
        _clean(result.stdout)
        _clean(result.stderr)
        json.loads(result.stdout or result.stderr)
