"""The documentation site builds strictly: a broken link, a missing anchor or a page left out of
the nav fails the suite (``mkdocs.yml``; the README is its home page, tools/docs_hooks.py)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SPLIT_PAGE = "decisions/0"
"""Pages of the split decisions: reached from decisions/index.md, not listed in the nav."""


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the tree at ``root``, offline, into ``site``."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def site_copy(tmp_path: Path) -> Path:
    """A tree to build: docs/, mkdocs.yml and the top-level Markdown files copied (a test may
    change them), the rest of the repository linked."""
    copy = tmp_path / "repo"
    copy.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in {"docs", "mkdocs.yml", ".git", "site"}:
            continue
        if entry.suffix == ".md":
            shutil.copy(entry, copy / entry.name)
        else:
            (copy / entry.name).symlink_to(entry)
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    return copy


def nav_files(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in nav_files(item)]
    if isinstance(nav, dict):
        return [f for value in nav.values() for f in nav_files(value)]
    return []


def config() -> dict[str, object]:
    loaded = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_every_page_is_in_the_nav_once() -> None:
    listed = nav_files(config()["nav"])
    assert len(listed) == len(set(listed))
    pages = {
        p.relative_to(DOCS).as_posix()
        for p in DOCS.rglob("*.md")
        if not p.relative_to(DOCS).as_posix().startswith(SPLIT_PAGE)
    }
    assert pages - set(listed) == set()
    # the README is the home page (made by the hooks); every other entry is a file of docs/
    assert set(listed) - pages == {"index.md"}


def test_decisions_are_in_the_nav_in_either_layout() -> None:
    listed = nav_files(config()["nav"])
    if (DOCS / "decisions.md").exists():
        assert "decisions.md" in listed
    else:
        assert "decisions/index.md" in listed
        index = (DOCS / "decisions" / "index.md").read_text(encoding="utf-8")
        for page in (DOCS / "decisions").glob("0*.md"):
            assert f"]({page.name})" in index


def test_the_build_reaches_nothing_on_the_network() -> None:
    loaded = config()
    theme = loaded["theme"]
    assert isinstance(theme, dict) and theme["font"] is False
    assert loaded["plugins"] == ["search"]


def test_readme_links_into_docs_become_site_links(tmp_path: Path) -> None:
    hooks = _load("docs_hooks")
    (tmp_path / "docs").mkdir()
    (tmp_path / "examples").mkdir()
    text = (
        "[install](docs/install.md#extras) [ex](examples/) [web](https://x.org/a.md) [gone](nope.md)\n"
        "```\n[in code](docs/code.md)\n```\n"
    )
    out = hooks.rewrite_links(text, page_dir="", root=tmp_path, repo_url="https://h/o/r")
    assert out == (
        "[install](install.md#extras) [ex](https://h/o/r/tree/main/examples) "
        "[web](https://x.org/a.md) [gone](nope.md)\n```\n[in code](docs/code.md)\n```\n"
    )
    from_docs = hooks.rewrite_links(
        "[cli](cli.md) [src](../src/x.py) [up](../README.md)",
        page_dir="docs",
        root=tmp_path,
        repo_url="https://h/o/r",
    )
    # a page's own links stay; a missing repository file stays, for MkDocs to report
    assert from_docs == "[cli](cli.md) [src](../src/x.py) [up](../README.md)"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert 'href="install/' in home  # the README's docs/install.md, as a site link
    assert (tmp_path / "site" / "reference" / "benchmarks" / "index.html").is_file()


@pytest.mark.slow
def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    copy = site_copy(tmp_path)
    page = copy / "docs" / "cli.md"
    page.write_text(
        page.read_text(encoding="utf-8") + "\nSee [nothing](paths.md#no-such-heading).\n",
        encoding="utf-8",
    )
    done = build(copy, tmp_path / "site")
    assert done.returncode != 0
    assert "no-such-heading" in done.stderr
