"""Split ``docs/decisions.md`` into one short page per decision, dated and indexed.

    python tools/split_decisions.py            # docs/decisions.md -> docs/decisions/
    python tools/split_decisions.py --check    # say what it would write, write nothing

Every ``## `` section of the file becomes ``docs/decisions/NNNN-<slug>.md`` (numbered in the
order of the file), its heading an ``# `` title and its body unchanged, except that relative
links gain the ``../`` the page's new folder needs. A page opens with its date in front matter:
the date written in its heading, or else the author date of the heading line (``git blame``).
``docs/decisions/index.md`` is the file's preamble and a table of every page. Links elsewhere in
``docs/`` to ``decisions.md`` (and its anchors) are pointed at the page that now holds them,
``mkdocs.yml``'s nav at the index, and ``docs/decisions.md`` is removed.

New decisions are then new files (CONTRIBUTING.md, "Decisions").
"""

from __future__ import annotations

import argparse
import posixpath
import re
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"(\]\()(<?)([^)\s>]+)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LEADING_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}\s*(?:[\u2014\u2013-]+\s*)?")
"""A date opening a heading and the dash after it (em dash, en dash or hyphen)."""


@dataclass(frozen=True)
class Section:
    """One ``## `` section of the decisions file."""

    number: int
    """1-based, in the order of the file."""
    line: int
    """1-based line of its heading in the file."""
    heading: str
    """The heading's text, without the ``## ``."""
    text: str
    """The section as written: its heading line and its body, up to the next section."""

    @property
    def title(self) -> str:
        """The heading without a leading date."""
        return _LEADING_DATE.sub("", self.heading).strip() or self.heading

    @property
    def slug(self) -> str:
        words = re.sub(r"[^a-z0-9]+", "-", _ascii(_DATE.sub("", self.title)).lower()).strip("-")
        return words[:60].rstrip("-") or "decision"

    @property
    def file_name(self) -> str:
        return f"{self.number:04d}-{self.slug}.md"


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def anchor(heading: str) -> str:
    """The anchor MkDocs (Python-Markdown's ``toc``) gives a heading."""
    value = re.sub(r"[^\w\s-]", "", _ascii(heading)).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def split(text: str) -> tuple[str, list[Section]]:
    """The preamble (before the first ``## ``) and the sections; fenced code never splits."""
    preamble: list[str] = []
    sections: list[tuple[int, list[str]]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            sections.append((number, [line]))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    return "".join(preamble), [
        Section(number=i, line=line, heading=lines[0][3:].strip(), text="".join(lines))
        for i, (line, lines) in enumerate(sections, start=1)
    ]


def relink(text: str, prefix: str = "../") -> str:
    """Relative links of ``text`` as seen from one folder down; fenced code untouched."""
    out: list[str] = []
    fenced = False
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            fenced = not fenced
        as_is = fenced or "](" not in line
        out.append(line if as_is else _LINK.sub(lambda m: _down(m, prefix), line))
    return "".join(out)


def _down(match: re.Match[str], prefix: str) -> str:
    target = match.group(3)
    if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{prefix}{target}"


def page(section: Section, date: str) -> str:
    """A section's page: its date in front matter, its heading an ``# `` title."""
    return f"---\ndate: {date}\n---\n\n{relink(section.text[1:])}"


def body_of(page_text: str) -> str:
    """The section a page was made from, links as on the page (front matter and title undone)."""
    _, _, rest = page_text.partition("---\n\n")
    return "#" + rest


def index(preamble: str, sections: list[Section], dates: dict[int, str]) -> str:
    lines = [relink(preamble).rstrip("\n"), ""]
    lines += [
        'New decisions are new files here, `NNNN-short-title.md` (CONTRIBUTING.md, "Decisions").',
        "",
        "| No. | Date | Decision |",
        "|---:|---|---|",
    ]
    for s in sections:
        title = s.title.replace("|", "\\|")
        lines.append(f"| {s.number:04d} | {dates[s.number]} | [{title}]({s.file_name}) |")
    return "\n".join(lines) + "\n"


def dates_of(sections: list[Section], line_date: Callable[[int], str]) -> dict[int, str]:
    """Each section's date: the one in its heading, else ``line_date`` of its heading line."""
    out: dict[int, str] = {}
    for s in sections:
        found = _DATE.search(s.heading)
        out[s.number] = found.group(1) if found else line_date(s.line)
    return out


def blame_dates(path: Path) -> Callable[[int], str]:
    """Author dates of the lines of a file under git, from one ``git blame`` (today for a line
    not committed yet, or a file outside git)."""
    today = datetime.now(UTC).date().isoformat()
    try:
        porcelain = subprocess.run(  # noqa: S603 - fixed arguments, no shell
            ["git", "blame", "--line-porcelain", "--", path.name],  # noqa: S607 - git from PATH
            cwd=path.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return lambda _line: today
    times: dict[int, str] = {}
    line = 0
    for row in porcelain.splitlines():
        head = row.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit() and head[2].isdigit():
            line = int(head[2])
        elif row.startswith("author-time "):
            stamp = datetime.fromtimestamp(int(row.split()[1]), UTC)
            times[line] = stamp.date().isoformat()
    return lambda n: times.get(n, today)


def anchors_of(sections: list[Section]) -> dict[str, str]:
    """Every heading anchor of the file -> the page that now holds it (the first, if twice)."""
    out: dict[str, str] = {}
    for s in sections:
        fenced = False
        for line in s.text.splitlines():
            if _FENCE.match(line):
                fenced = not fenced
            heading = None if fenced else _HEADING.match(line)
            if heading:
                out.setdefault(anchor(heading.group(2)), s.file_name)
    return out


def repoint(text: str, from_dir: str, anchors: dict[str, str]) -> str:
    """Links to ``docs/decisions.md`` in a file at ``from_dir`` (relative to the repository)
    -> the page that now holds their anchor, or the index."""

    def one(match: re.Match[str]) -> str:
        path, _, tag = match.group(3).partition("#")
        if posixpath.normpath(posixpath.join(from_dir, path)) != "docs/decisions.md":
            return match.group(0)
        page_name = anchors.get(tag, "index.md") if tag else "index.md"
        new = posixpath.relpath(f"docs/decisions/{page_name}", from_dir or ".")
        return f"{match.group(1)}{match.group(2)}{new}{'#' + tag if tag else ''}"

    return _LINK.sub(one, text)


def run(
    source: Path, out: Path, *, line_date: Callable[[int], str], write: bool = True
) -> dict[Path, str]:
    """Every file the split writes, with its text (written unless ``write`` is false)."""
    preamble, sections = split(source.read_text(encoding="utf-8"))
    dates = dates_of(sections, line_date)
    files = {out / s.file_name: page(s, dates[s.number]) for s in sections}
    files[out / "index.md"] = index(preamble, sections, dates)
    if write:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--source", type=Path, default=here / "docs" / "decisions.md")
    parser.add_argument("--check", action="store_true", help="list the pages, write nothing")
    args = parser.parse_args(argv)
    source: Path = args.source
    docs = source.parent
    out = docs / "decisions"
    if not source.is_file():
        print(f"{source}: no such file (already split?)", file=sys.stderr)
        return 1
    files = run(source, out, line_date=blame_dates(source), write=not args.check)
    for path in files:
        print(path.relative_to(docs).as_posix())
    if args.check:
        return 0
    _, sections = split(source.read_text(encoding="utf-8"))
    anchors = anchors_of(sections)
    root = docs.parent
    for md in sorted([*root.glob("*.md"), *docs.rglob("*.md")]):
        if md == source or md.parent == out:
            continue
        rel_dir = md.parent.relative_to(root).as_posix()
        text = md.read_text(encoding="utf-8")
        moved = repoint(text, "" if rel_dir == "." else rel_dir, anchors)
        if moved != text:
            md.write_text(moved, encoding="utf-8")
    config = root / "mkdocs.yml"
    if config.is_file():
        yml = config.read_text(encoding="utf-8")
        config.write_text(yml.replace(" decisions.md\n", " decisions/index.md\n"), "utf-8")
    source.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
