"""Plain text: decoded strictly, kept as it is (cleaning happens later)."""

from __future__ import annotations

import codecs

from bastion.knowledge.ingest.errors import ParseError
from bastion.knowledge.ingest.models import Extraction, IngestLimits

__all__ = ["BOMS", "decode_text", "parse_text"]

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 (or UTF-16/32 marked by a byte-order mark); anything else is a ``ParseError``.

    No guessing of legacy encodings: a wrong guess makes plausible garbage that is then indexed
    and cited. The error says where the first bad byte is, not what it is.
    """
    encoding = next((name for bom, name in BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"{where} is not valid {encoding.removesuffix('-sig').upper()} text "
            f"(bad byte at offset {exc.start}); re-save it as UTF-8",
            path=where,
        ) from None


def parse_text(data: bytes, where: str, limits: IngestLimits) -> Extraction:
    """Plain text: no headings, no metadata."""
    del limits
    return Extraction(text=decode_text(data, where), structured=False)
