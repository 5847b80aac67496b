"""tools/split_decisions.py: docs/decisions.md becomes one dated page per decision and an
index, with nothing lost (CONTRIBUTING.md, "Decisions")."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _split() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "split_decisions", ROOT / "tools" / "split_decisions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def unsplit(preamble: str, pages: list[str]) -> str:
    """The file the pages came from: front matter dropped, titles ``## `` again, links as
    written in docs/ (the pages' ``../`` taken off)."""
    out = [preamble]
    for text in pages:
        assert text.startswith("---\ndate: ")
        _, _, body = text.partition("---\n\n")
        assert body.startswith("# ")
        out.append("#" + body.replace("](../", "]("))
    return "".join(out)


def _body(page: str) -> str:
    assert page.startswith("---\ndate: ")
    return page.partition("---\n\n")[2]


def test_the_committed_pages_split_back_to_themselves_and_are_all_indexed(
    tmp_path: Path,
) -> None:
    """docs/decisions.md was split into these pages: joined again and split again, every page
    comes back with the same body, numbered in order, dated, and listed in the index."""
    split = _split()
    folder = ROOT / "docs" / "decisions"
    pages = sorted(folder.glob("0*.md"))
    texts = [p.read_text(encoding="utf-8") for p in pages]
    assert len(pages) > 50
    assert [p.name[:5] for p in pages] == [f"{n:04d}-" for n in range(1, len(pages) + 1)]
    assert all(re.match(r"---\ndate: \d{4}-\d{2}-\d{2}\n---\n\n# ", t) for t in texts)

    preamble = "# Decisions\n\nEach entry: the decision, the reason.\n\n"
    source = tmp_path / "docs" / "decisions.md"
    source.parent.mkdir()
    source.write_text(unsplit(preamble, texts), encoding="utf-8")
    files = split.run(source, tmp_path / "docs" / "decisions", line_date=lambda _n: "2000-01-01")
    again = sorted(p for p in files if p.name != "index.md")
    assert [p.name for p in again] == [p.name for p in pages]
    assert [_body(files[p]) for p in again] == [_body(t) for t in texts]

    index = (folder / "index.md").read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| (\d{4}) \| (\d{4}-\d{2}-\d{2}) \| \[.*\]\((\d{4}-[a-z0-9-]+\.md)\) \|$",
        index,
        flags=re.MULTILINE,
    )
    assert [r[2] for r in rows] == [p.name for p in pages]
    assert rows[0][1] == "2026-11-22"  # the heading's own date


def test_a_heading_inside_fenced_code_does_not_split() -> None:
    split = _split()
    text = "# D\n\n## 2026-01-01 — One\n\n```md\n## not a section\n```\n\n## Two\n\nbody\n"
    preamble, sections = split.split(text)
    assert preamble == "# D\n\n"
    assert [s.heading for s in sections] == ["2026-01-01 — One", "Two"]
    assert [s.title for s in sections] == ["One", "Two"]
    assert "".join(s.text for s in sections) == text[len(preamble) :]
    assert split.relink("[a](b.md) [c](https://x) [d](#e)\n```\n[f](g.md)\n```\n") == (
        "[a](../b.md) [c](https://x) [d](#e)\n```\n[f](g.md)\n```\n"
    )


def _git(repo: Path, *args: str, date: str | None = None) -> None:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.org",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.org",
    )
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def test_the_command_dates_by_blame_and_moves_links_nav_and_file(tmp_path: Path) -> None:
    if shutil.which("git") is None:  # pragma: no cover - git is part of the toolchain
        raise AssertionError("git is needed to date decisions")
    repo = tmp_path
    docs = repo / "docs"
    docs.mkdir()
    (docs / "decisions.md").write_text(
        "# Decisions\n\nPreamble.\n\n## 2026-11-22 — Dated\n\n### Sub part\n\nSee [cli](cli.md).\n"
        "\n## Undated (area)\n\nText.\n",
        encoding="utf-8",
    )
    (docs / "cli.md").write_text(
        "[d](decisions.md) [s](decisions.md#sub-part) [u](decisions.md#undated-area)\n",
        encoding="utf-8",
    )
    (repo / "README.md").write_text("[d](docs/decisions.md)\n", encoding="utf-8")
    (repo / "mkdocs.yml").write_text("nav:\n  - Decisions: decisions.md\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x", date="2020-03-04T05:06:07+00:00")
    with (docs / "decisions.md").open("a", encoding="utf-8") as f:
        f.write("\n## Not committed\n\nNew.\n")

    assert _split().main(["--source", str(docs / "decisions.md")]) == 0

    assert not (docs / "decisions.md").exists()
    out = docs / "decisions"
    assert sorted(p.name for p in out.iterdir()) == [
        "0001-dated.md",
        "0002-undated-area.md",
        "0003-not-committed.md",
        "index.md",
    ]
    assert (out / "0001-dated.md").read_text(encoding="utf-8") == (
        "---\ndate: 2026-11-22\n---\n\n# 2026-11-22 — Dated\n\n### Sub part\n\n"
        "See [cli](../cli.md).\n\n"
    )
    assert (
        (out / "0002-undated-area.md")
        .read_text(encoding="utf-8")
        .startswith("---\ndate: 2020-03-04\n---\n\n# Undated (area)\n")
    )
    index = (out / "index.md").read_text(encoding="utf-8")
    assert index.startswith("# Decisions\n\nPreamble.\n")
    assert "| 0002 | 2020-03-04 | [Undated (area)](0002-undated-area.md) |" in index
    assert (docs / "cli.md").read_text(encoding="utf-8") == (
        "[d](decisions/index.md) [s](decisions/0001-dated.md#sub-part) "
        "[u](decisions/0002-undated-area.md#undated-area)\n"
    )
    assert (repo / "README.md").read_text(encoding="utf-8") == "[d](docs/decisions/index.md)\n"
    assert (repo / "mkdocs.yml").read_text(encoding="utf-8") == (
        "nav:\n  - Decisions: decisions/index.md\n"
    )


def test_check_writes_nothing(tmp_path: Path) -> None:
    source = tmp_path / "docs" / "decisions.md"
    source.parent.mkdir()
    source.write_text("# Decisions\n\n## 2026-01-01 — One\n\nx\n", encoding="utf-8")
    assert _split().main(["--source", str(source), "--check"]) == 0
    assert sorted(p.name for p in source.parent.iterdir()) == ["decisions.md"]
