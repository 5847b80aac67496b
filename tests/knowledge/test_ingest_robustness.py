"""Damaged input never crashes the parser: it parses, or it raises an IngestError.

Seeded byte-level mutations of every fixture (flips, cuts, insertions); the same seed gives the
same inputs on every run.
"""

from __future__ import annotations

import io
import logging
import random
from pathlib import Path

import docx
import pytest

from bastion.knowledge.ingest import IngestError, parse_document

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def _docx() -> bytes:
    document = docx.Document()
    document.core_properties.title = "Robust"
    document.add_heading("Heading", level=1)
    document.add_paragraph("Paragraph text.")
    document.add_table(rows=2, cols=2).cell(0, 0).text = "cell"
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


SEEDS = {
    "/r/report.pdf": (FIXTURES / "report.pdf").read_bytes(),
    "/r/doc.docx": _docx(),
    "/r/article.html": (FIXTURES / "article.html").read_bytes(),
    "/r/notes.md": (FIXTURES / "notes.md").read_bytes(),
}


def _mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 12)):
        at = rng.randrange(len(out))
        roll = rng.random()
        if roll < 0.6:
            out[at] = rng.randrange(256)
        elif roll < 0.8:
            del out[at : at + rng.randint(1, 64)]
        else:
            out[at:at] = rng.randbytes(rng.randint(1, 16))
    return bytes(out)


@pytest.mark.parametrize("path", sorted(SEEDS))
def test_mutated_inputs_parse_or_raise_ingest_errors(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)  # pypdf logs every repair it attempts
    rng = random.Random(f"bastion-ingest-{path}")
    outcomes: set[str] = set()
    for _ in range(60):
        data = _mutate(SEEDS[path], rng)
        try:
            doc = parse_document(data, path)
        except IngestError as exc:
            assert "\n" not in str(exc)
            outcomes.add(type(exc).__name__)
        else:
            assert doc.text.strip()
            outcomes.add("parsed")
    assert outcomes  # at least one outcome was observed per format


def test_html_with_control_characters_and_nul_bytes() -> None:
    page = b"<html><head><title>T\x00itle</title></head><body><p>Te\x01xt \x0bhere\x00.</p></body></html>"
    doc = parse_document(page, "/r/ctl.html")
    assert doc.title == "Title"
    assert doc.text == "Text here."
