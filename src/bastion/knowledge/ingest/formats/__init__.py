"""One parser per supported type: ``(data, where, limits) -> Extraction``.

Adding a type is a module here and a line in :data:`PARSERS` (and a signature or extension in
``detect.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from bastion.knowledge.ingest.detect import DOCX, HTML, MARKDOWN, PDF, TEXT
from bastion.knowledge.ingest.formats.docx import parse_docx
from bastion.knowledge.ingest.formats.html import parse_html
from bastion.knowledge.ingest.formats.markdown import parse_markdown
from bastion.knowledge.ingest.formats.pdf import parse_pdf
from bastion.knowledge.ingest.formats.text import parse_text
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["PARSERS", "Parser"]

Parser = Callable[[bytes, str, IngestLimits], Extraction]

PARSERS: dict[str, Parser] = {
    MARKDOWN: parse_markdown,
    TEXT: parse_text,
    HTML: parse_html,
    PDF: parse_pdf,
    DOCX: parse_docx,
}
