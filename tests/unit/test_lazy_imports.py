"""Start fast: reading front matter (every labelled read) and importing the library do not
import the HTML, PDF and DOCX parsing libraries; parsing a document of a type imports its
parser then, and only then."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("trafilatura", "pypdf", "docx")

PROBE = """
import sys
import bastion
from bastion.labels.frontmatter import split_front_matter
from bastion.labels.store import DocumentLabels
print(",".join(m for m in {heavy!r} if m in sys.modules))
from bastion.knowledge.ingest import parse_document
parse_document(b"<html><body><main><p>Hello there, reader.</p></main></body></html>", "a.html")
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def test_the_parsers_are_imported_when_first_used() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == ["", "trafilatura"]
