"""Metadata helpers: stable ids, dates, keywords, headings, JSON-compatible values. All pure."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta, timezone
from email.utils import parsedate_to_datetime

from bastion.core.paths import VPath
from bastion.knowledge.ingest.models import Heading

__all__ = [
    "iso_date",
    "markdown_headings",
    "one_line",
    "person",
    "split_keywords",
    "stable_doc_id",
]


def stable_doc_id(path: str) -> str:
    """A 32-hex-digit id for the workspace ``path``: SHA-256 of the normalized path, truncated.

    Spellings of one path (``docs/a.md``, ``/docs/./a.md``) give one id, so re-ingesting a file
    replaces its chunks instead of adding new ones. Raises ``InvalidPathError`` for a bad path.
    """
    canonical = str(VPath.parse(path))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:32]


def one_line(value: object) -> str | None:
    """A value as one trimmed line of text, or None when there is no text."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def person(value: object) -> str | None:
    """An author given as a string, a list of names, or a mapping with a ``name``."""
    if isinstance(value, Mapping):
        return one_line(value.get("name"))
    if isinstance(value, list | tuple):
        names = [p for p in (person(v) for v in value) if p]
        return ", ".join(names) or None
    return one_line(value)


def split_keywords(*values: object) -> tuple[str, ...]:
    """Keywords from strings (split on ``,`` and ``;``) and lists, de-duplicated, in order."""
    seen: dict[str, str] = {}
    for value in values:
        items: Iterable[object]
        if isinstance(value, str):
            items = re.split(r"[,;]", value)
        elif isinstance(value, list | tuple | set | frozenset):
            items = value
        elif value is None:
            continue
        else:
            items = [value]
        for item in items:
            word = one_line(item)
            if word:
                seen.setdefault(word.casefold(), word)
    return tuple(seen.values())


_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%Y%m%d",
    "%d %B %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%b %d, %Y",
    "%B %d %Y",
)
_PDF_DATE = re.compile(
    r"^D:(\d{4})(\d{2})?(\d{2})?(?:(\d{2})(\d{2})?(\d{2})?(?:([Zz+-])(\d{2})?'?(\d{2})?'?)?)?$"
)


def iso_date(value: object) -> str | None:
    """An ISO 8601 string for a date given as ``date``/``datetime`` or a common text form.

    Dates without a time give ``YYYY-MM-DD``; times keep their offset when one was given.
    Unparseable input gives None (the raw value stays in the document's metadata).
    """
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    text = one_line(value)
    if text is None:
        return None
    pdf = _PDF_DATE.match(text)
    if pdf:
        return _pdf_date(pdf)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        return parsed.date().isoformat() if _is_date_only(text, parsed) else parsed.isoformat()
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date().isoformat()
        except ValueError:
            continue
    try:
        return parsedate_to_datetime(text).isoformat()
    except (TypeError, ValueError, IndexError):
        return None


def _pdf_date(match: re.Match[str]) -> str | None:
    """``D:YYYYMMDDHHmmSSOHH'mm'`` (PDF 32000-1, 7.9.4); every part after the year optional."""
    year, month, day, hour, minute, second, sign, tz_hour, tz_minute = match.groups()
    try:
        if hour is None:  # reduced precision stays reduced: "2024", "2024-03"
            full = date(int(year), int(month or 1), int(day or 1)).isoformat()
            return full[: 4 if month is None else 7 if day is None else 10]
        tz = None
        if sign in ("Z", "z"):
            tz = UTC
        elif sign:
            offset = timedelta(hours=int(tz_hour or 0), minutes=int(tz_minute or 0))
            tz = timezone(-offset if sign == "-" else offset)
        moment = datetime(
            int(year), int(month or 1), int(day or 1), int(hour), int(minute or 0),
            int(second or 0), tzinfo=tz,
        )  # fmt: skip
    except ValueError:
        return None
    return moment.isoformat()


def _is_date_only(text: str, parsed: datetime) -> bool:
    return parsed.time() == time() and parsed.tzinfo is None and len(text) <= 10


# The heading text ends in a non-blank (a shortest text always does), so the closing sequence
# is tried once per run of blanks, not at each blank ("# a" + 20,000 spaces + "x" took 9 s);
# the blanks after the marks are possessive (giving them back never helps).
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]++((?:.*?[^ \t\n])?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|#]|\d+[.)]\s|```|~~~)")


def markdown_headings(text: str) -> tuple[Heading, ...]:
    """ATX (``## Title``) and one-line setext headings of Markdown ``text``, outside code."""
    headings: list[Heading] = []
    lines = text.split("\n")
    fence: str | None = None
    for index, line in enumerate(lines):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if _closes(fence_match, fence):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        atx = _ATX.match(line)
        if atx and atx.group(2) and atx.group(2).strip("#").strip():
            headings.append(Heading(len(atx.group(1)), atx.group(2).strip(), index + 1))
            continue
        setext = _SETEXT.match(line)
        if setext and index > 0 and _is_setext_title(lines, index - 1):
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append(Heading(level, lines[index - 1].strip(), index))
    return tuple(headings)


def _closes(match: re.Match[str] | None, fence: str) -> bool:
    return match is not None and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence)


def _is_setext_title(lines: list[str], index: int) -> bool:
    """A one-line paragraph: text that starts a block (after a blank line, a code fence or a
    heading) and is not a list, quote, table or indented-code line."""
    line = lines[index]
    if not line.strip() or _NOT_PARAGRAPH.match(line) or line.startswith("    "):
        return False
    before = lines[index - 1] if index else ""
    return not before.strip() or bool(_FENCE.match(before) or _ATX.match(before))
