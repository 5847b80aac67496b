"""MkDocs hooks for the documentation site (named by ``mkdocs.yml``).

Two jobs, both pure text rewriting, so ``mkdocs build --strict`` still checks every link:

* the repository's README becomes the home page (``index.md``), its ``docs/x.md`` links
  rewritten to ``x.md``;
* a link from a page to a repository file outside ``docs/`` (source, examples, CHANGELOG) is
  checked to exist and pointed at the file on ``repo_url``; a link to a file that does not exist
  is left alone, so MkDocs reports it and the strict build fails.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

_LINK = re.compile(r"(\]\()(<?)([^)\s>]+)(>?)((?:\s+\"[^\"]*\")?\))")
_FENCE = re.compile(r"^\s*(```|~~~)")
_EXTERNAL = ("http://", "https://", "mailto:", "#", "/")


def rewrite_links(markdown: str, *, page_dir: str, root: Path, repo_url: str) -> str:
    """Rewrite the links of a page whose source sits at ``page_dir`` (repository-relative).

    Links into ``docs/`` become relative to the page's place in the site; links to other
    repository files that exist become ``repo_url`` addresses. Fenced code is left as written.
    """
    out: list[str] = []
    fenced = False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or "](" not in line:
            out.append(line)
            continue
        out.append(_LINK.sub(lambda m: _rewrite(m, page_dir, root, repo_url), line))
    return "".join(out)


def _rewrite(match: re.Match[str], page_dir: str, root: Path, repo_url: str) -> str:
    target = match.group(3)
    if target.startswith(_EXTERNAL):
        return match.group(0)
    path, _, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(page_dir, path))
    if resolved.startswith("docs/"):
        new = posixpath.relpath(resolved, posixpath.join("docs", _site_dir(page_dir)))
    elif resolved.startswith("..") or not (root / resolved).exists():
        return match.group(0)  # outside the repository or missing: MkDocs reports it
    else:
        kind = "tree" if (root / resolved).is_dir() else "blob"
        new = f"{repo_url.rstrip('/')}/{kind}/main/{resolved}"
    if anchor:
        new = f"{new}#{anchor}"
    return f"{match.group(1)}{match.group(2)}{new}{match.group(4)}{match.group(5)}"


def _site_dir(page_dir: str) -> str:
    """Where a page sits inside the site: the README is the site's root page."""
    if page_dir in {"", "."}:
        return ""
    return posixpath.relpath(page_dir, "docs")


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    root = Path(config["config_file_path"]).parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    content = rewrite_links(readme, page_dir="", root=root, repo_url=config["repo_url"])
    files.append(File.generated(config, "index.md", content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri == "index.md":
        return markdown  # the README, rewritten in on_files
    root = Path(config["config_file_path"]).parent
    page_dir = posixpath.dirname(f"docs/{page.file.src_uri}")
    return rewrite_links(markdown, page_dir=page_dir, root=root, repo_url=config["repo_url"])
