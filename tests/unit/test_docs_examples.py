"""Every Python example in README.md and docs/ runs, and the demo runs end to end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for i, block in enumerate(_BLOCK.findall(doc.read_text(encoding="utf-8"))):
            found.append((f"{doc.name}#{i + 1}", block))
    return found


@pytest.mark.parametrize(("where", "code"), _examples(), ids=[w for w, _ in _examples()])
def test_doc_example_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})


def test_there_are_examples() -> None:
    assert len(_examples()) >= 3


def test_demo_tour_shows_every_step() -> None:
    from bastion.demo import run_demo

    lines: list[str] = []
    run_demo(lines.append)
    text = "\n".join(lines)
    assert "/docs/  read-only (local disk)" in text
    assert "hr" not in [p.rsplit("/", 1)[-1] for p in text.split() if p.startswith("/docs/")]
    assert "The on-call engineer answers pages within 15 minutes." in text
    assert "on-call shadowing" in text
    assert "/docs/handbook.md:4: The on-call engineer" in text
    assert "refused (ScopeError)" in text
    assert "refused (InvalidPathError)" in text
    assert "refused (NotFoundError): /docs/hr/salaries.md not found" in text
    assert "refused (LimitError)" in text
    assert "refused (NoMountError)" in text
    assert "Confidential" not in text
