"""The one front-matter parser: every part of Bastion that reads YAML front matter calls this.

Document labels (:mod:`bastion.labels.resolve`, on every read path), ingestion (titles, dates,
keywords) and skills (``SKILL.md``) used to read front matter with three sets of rules, and
where two disagreed a document was hidden from the index but served by ``read``. One parser
means one answer, whatever the caller:

- text is UTF-8, or UTF-16/UTF-32/UTF-8 marked by a byte-order mark (:func:`decode`); a file
  that opens with ``---`` in UTF-16 or UTF-32 without a mark is read in that encoding too
  (:func:`encoding_of`), so labels written that way are never mistaken for plain text;
- line endings are normalized (CRLF and lone CR become LF) before anything is matched;
- front matter is a ``---`` first line, a YAML mapping, then ``---`` or ``...`` alone on a line;
  a ``---`` first line with no closing line is a thematic break, not front matter;
- any file may carry it, whatever its name: the bytes decide, not the extension;
- the YAML is loaded with the safe loader, bounded in size, nesting and expanded values, and
  made JSON-compatible (dates become ISO strings).

:func:`head_front_matter` answers for the first bytes of a file (labels are worked out from the
head, never from a whole file): there, front matter that does not close inside the head, or that
cannot be decoded, is *undetermined*, which callers treat as "hide the document".
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from bastion.core.errors import OperationError

__all__ = [
    "BOMS",
    "HEAD_BYTES",
    "LABEL_BYTES",
    "MAX_FRONT_MATTER_BYTES",
    "FrontMatter",
    "FrontMatterError",
    "decode",
    "decode_text",
    "encoding_of",
    "head_front_matter",
    "load_mapping",
    "split_front_matter",
]

MAX_FRONT_MATTER_BYTES = 64 * 1024
"""Largest front matter block (and sidecar) any caller accepts."""
HEAD_BYTES = MAX_FRONT_MATTER_BYTES + 4096
"""How much of a file is read to find its front matter: the largest block, its fences and a
byte-order mark fit."""
LABEL_BYTES = HEAD_BYTES + 1
"""The first bytes of a file that decide its labels: the head, and one byte more that tells
whether the head is the whole file (:func:`bastion.labels.resolve.resolve_labels`)."""
MAX_NODES = 10_000
"""Most values a block may hold once YAML aliases are expanded."""
MAX_FLOW_DEPTH = 64
"""Deepest ``[``/``{`` nesting accepted (the C loader recurses per level)."""

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (much faster), else PyYAML's."""

_OPEN = re.compile(r"---[ \t]*\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.M)
_NEWLINES = re.compile(r"\r\n?")


BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""Byte-order marks and the encodings they mark (UTF-32 before UTF-16: its mark begins with
UTF-16's)."""


class FrontMatterError(OperationError):
    """Text or front matter that cannot be read: not decodable, not YAML, not a mapping, too
    large, too deep, or not closed where it must be. The message never quotes its content.
    Ingestion reports it as its ``ParseError`` (``knowledge.ingest.formats``)."""


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 (or UTF-16/32 marked by a byte-order mark); anything else is a
    :class:`FrontMatterError`.

    No guessing of legacy encodings: a wrong guess makes plausible garbage that is then indexed
    and cited. The error says where the first bad byte is, not what it is.
    """
    encoding = next((name for bom, name in BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise FrontMatterError(
            f"{where} is not valid {encoding.removesuffix('-sig').upper()} text "
            f"(bad byte at offset {exc.start}); re-save it as UTF-8"
        ) from None


@dataclass(frozen=True, slots=True)
class FrontMatter:
    """A parsed front-matter block."""

    metadata: dict[str, Any]
    """The mapping, JSON-compatible (string keys, dates as ISO strings)."""
    end: int
    """Offset in the (normalized) text where the body starts."""
    body_line: int
    """1-based line of the body's first line."""


_UNMARKED = (
    (b"-\x00\x00\x00-\x00\x00\x00-\x00\x00\x00", "utf-32-le"),
    (b"\x00\x00\x00-\x00\x00\x00-\x00\x00\x00-", "utf-32-be"),
    (b"-\x00-\x00-\x00", "utf-16-le"),
    (b"\x00-\x00-\x00-", "utf-16-be"),
)
"""A ``---`` opening in UTF-16/32 without a byte-order mark: no UTF-8 text starts this way."""


def encoding_of(head: bytes) -> str:
    """The encoding front matter is read in: the byte-order mark's, else UTF-16/32 when the
    file opens with ``---`` in one of them without a mark, else UTF-8."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name
    return next((name for opening, name in _UNMARKED if head.startswith(opening)), "utf-8")


def decode(data: bytes, where: str) -> str:
    """``data`` as text with LF line endings (:func:`decode_text`, then CRLF
    and lone CR become LF)."""
    return _NEWLINES.sub("\n", decode_text(data, where))


def split_front_matter(
    text: str,
    where: str,
    *,
    max_bytes: int = MAX_FRONT_MATTER_BYTES,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_FLOW_DEPTH,
) -> FrontMatter | None:
    """The front matter opening ``text`` (already :func:`decode`-d), or ``None`` when there is
    none. Raises :class:`FrontMatterError` for a block that is there but cannot be read."""
    text = _NEWLINES.sub("\n", text.removeprefix("\ufeff"))
    opened = _OPEN.match(text)
    if opened is None:
        return None
    closed = _CLOSE.search(text, opened.end())
    if closed is None:
        return None  # a thematic break
    block = text[opened.end() : closed.start()]
    metadata = load_mapping(
        block, where, max_bytes=max_bytes, max_nodes=max_nodes, max_depth=max_depth
    )
    end = closed.end()
    return FrontMatter(metadata, end, text.count("\n", 0, end) + 1)


def head_front_matter(head: bytes, *, complete: bool, where: str) -> FrontMatter | None:
    """The front matter of a file whose first bytes are ``head`` (``complete``: the whole file).

    ``None`` when the file has none. Raises :class:`FrontMatterError` when front matter opens
    the file but cannot be read: invalid, too large, not closed within the head, or holding
    bytes that are not text. A file that is not text at all (a PDF, an image) has none.
    """
    encoding = encoding_of(head)
    try:
        text = head.decode(encoding)
        cut = not complete
    except UnicodeDecodeError as exc:
        text = head[: exc.start].decode(encoding, "replace")
        cut = True
    if cut and text.endswith("\r"):
        text = text[:-1]  # the "\n" of a CRLF may lie beyond the head
    text = _NEWLINES.sub("\n", text.removeprefix("\ufeff"))
    opened = _OPEN.match(text)
    if opened is None:
        return None
    if cut and _CLOSE.search(text, opened.end()) is None:
        raise FrontMatterError(
            f"{where}: front matter does not close within its first {MAX_FRONT_MATTER_BYTES} "
            "bytes of text; close it with a --- line or shorten it",
            path=where,
        )
    return split_front_matter(text, where)


def load_mapping(
    block: str,
    where: str,
    *,
    max_bytes: int = MAX_FRONT_MATTER_BYTES,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_FLOW_DEPTH,
    what: str = "front matter",
) -> dict[str, Any]:
    """A YAML mapping (an empty block is ``{}``), bounded and made JSON-compatible; ``what``
    names the block in errors."""
    if len(block.encode("utf-8", "surrogatepass")) > max_bytes:
        raise FrontMatterError(path=where, reason=f"{what} is over {max_bytes} bytes; shorten it")
    if _flow_depth(block) > max_depth:
        raise FrontMatterError(path=where, reason=f"{what} is nested too deeply; flatten it")
    try:
        loaded = _load(block, where, what)
    except RecursionError:
        raise FrontMatterError(
            path=where, reason=f"{what} is nested too deeply; flatten it"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 2})" if mark is not None else ""
        raise FrontMatterError(
            f"{where}: {what} is not valid YAML{line}; fix it or remove the --- block",
            path=where,
        ) from None
    if loaded is None:
        return {}
    if not isinstance(loaded, Mapping):
        raise FrontMatterError(
            path=where, reason=f"{what} must be a YAML mapping (key: value lines); fix it"
        )
    try:
        converted = _jsonable(loaded, max_nodes, where, what)
    except RecursionError:
        raise FrontMatterError(
            path=where, reason=f"{what} is nested too deeply; flatten it"
        ) from None
    assert isinstance(converted, dict)
    return converted


def _load(block: str, where: str, what: str) -> Any:
    """``yaml.load`` with the safe loader, refusing a top-level key given twice (YAML keeps the
    last one silently, another reader may take the first) or in two spellings that differ only
    in case or surrounding blanks (``classification`` and ``Classification``)."""
    loader = _LOADER(block)
    try:
        node = loader.get_single_node()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, _ in node.value:
                if not isinstance(key, yaml.ScalarNode) or key.tag.endswith(":merge"):
                    continue
                name = str(key.value).strip().casefold()
                if name in seen:
                    raise FrontMatterError(
                        f"{where}: {what} gives a key twice (or in two spellings); keep one",
                        path=where,
                    )
                seen.add(name)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def _jsonable(value: Any, budget: int, where: str, what: str) -> Any:
    """A JSON-compatible copy; ``budget`` bounds the values visited, so YAML aliases cannot
    expand into a "billion laughs"."""
    remaining = [budget]

    def convert(item: Any) -> Any:
        remaining[0] -= 1
        if remaining[0] < 0:
            raise FrontMatterError(
                f"{where}: {what} expands to more than {budget} values; simplify it",
                path=where,
            )
        if isinstance(item, datetime | date):
            return item.isoformat()
        if isinstance(item, Mapping):
            return {str(k): convert(v) for k, v in item.items()}
        if isinstance(item, list | tuple | set | frozenset):
            return [convert(v) for v in item]
        if item is None or isinstance(item, str | int | float | bool):
            return item
        return str(item)

    return convert(value)


def _flow_depth(block: str) -> int:
    """The deepest run of unclosed ``[`` and ``{`` (brackets inside quotes count too: an
    over-estimate, which only refuses front matter nobody needs)."""
    depth = deepest = 0
    for ch in block:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}" and depth:
            depth -= 1
    return deepest
