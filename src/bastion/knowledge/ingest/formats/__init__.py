"""One parser per supported type: ``(data, where, limits) -> Extraction``.

Adding a type is a module here and a line in :data:`PARSERS` (and a signature or extension in
``detect.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import import_module

from bastion.knowledge.ingest.detect import DOCX, HTML, MARKDOWN, PDF, TEXT
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["PARSERS", "Parser"]

Parser = Callable[[bytes, str, IngestLimits], Extraction]

_WHERE: dict[str, tuple[str, str]] = {
    MARKDOWN: ("markdown", "parse_markdown"),
    TEXT: ("text", "parse_text"),
    HTML: ("html", "parse_html"),
    PDF: ("pdf", "parse_pdf"),
    DOCX: ("docx", "parse_docx"),
}
"""Type -> (module in this package, parser function)."""


class _Parsers(Mapping[str, Parser]):
    """The parsers by type, each module imported when its type is first parsed: the HTML,
    PDF and DOCX libraries take most of a second to import, and reading front matter (which
    every labelled read does, through ``formats.text``) needs none of them."""

    def __getitem__(self, kind: str) -> Parser:
        module, name = _WHERE[kind]
        parser: Parser = getattr(import_module(f"{__name__}.{module}"), name)
        return parser

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


PARSERS: Mapping[str, Parser] = _Parsers()
