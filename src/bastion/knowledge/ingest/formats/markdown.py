"""Markdown: YAML front matter becomes metadata; the body is kept as written."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from bastion.knowledge.ingest.errors import ParseError
from bastion.knowledge.ingest.formats.text import decode_text
from bastion.knowledge.ingest.metadata import jsonable, one_line, person, split_keywords
from bastion.knowledge.ingest.models import Extraction, IngestLimits

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (ten times faster), else PyYAML's."""

__all__ = ["parse_markdown", "split_front_matter"]

# "---" on the first line, YAML, then "---" or "..." alone on a line.
FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def split_front_matter(text: str, where: str, limits: IngestLimits) -> tuple[dict[str, Any], str]:
    """``(front matter, body)``. A document without front matter gives ``({}, text)``.

    Front matter that is not valid YAML, is not a mapping, or is over the size limits raises
    :class:`ParseError` (the message gives the line, never the content). A ``---`` first line
    with no closing ``---`` is a thematic break, not front matter.
    """
    match = FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    block = match.group(1) or ""
    if len(block.encode("utf-8")) > limits.max_front_matter_bytes:
        raise ParseError(
            f"{where}: front matter is over {limits.max_front_matter_bytes} bytes; shorten it"
        )
    try:
        loaded = yaml.load(block, Loader=_LOADER)  # noqa: S506 - a safe loader
    except RecursionError:
        raise ParseError(f"{where}: front matter is nested too deeply; flatten it") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 2})" if mark is not None else ""
        raise ParseError(
            f"{where}: front matter is not valid YAML{line}; fix it or remove the --- block"
        ) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, Mapping):
        raise ParseError(f"{where}: front matter must be a YAML mapping (key: value lines); fix it")
    try:
        meta = jsonable(loaded, budget=limits.max_front_matter_nodes, where=where)
    except RecursionError:
        raise ParseError(f"{where}: front matter is nested too deeply; flatten it") from None
    return meta, text[match.end() :]


def parse_markdown(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Markdown: title, author, date and keywords from front matter; the rest passes through."""
    text = decode_text(data, where).replace("\r\n", "\n")
    meta, body = split_front_matter(text, where, limits)
    return Extraction(
        text=body,
        structured=True,
        title=one_line(meta.get("title")),
        author=person(meta.get("author", meta.get("authors"))),
        date=meta.get("date"),
        keywords=split_keywords(meta.get("keywords"), meta.get("tags")),
        metadata=meta,
    )
