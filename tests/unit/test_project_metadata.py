"""The package's metadata names where the project lives: pyproject.toml's [project.urls] (the
addresses are placeholders until publication; docs/decisions/, "First hour: docs site")."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_project_urls_are_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    urls = project["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Issues", "Changelog"}
    assert all(url.startswith("https://") for url in urls.values())
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    assert (ROOT / "CHANGELOG.md").is_file()


def test_the_docs_extra_builds_the_site() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert {d.split(">")[0] for d in extras["docs"]} == {"mkdocs", "mkdocs-material"}
    assert "bastion[docs]" in extras["dev"]
    site = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"repo_url: {project['urls']['Repository']}\n" in site
