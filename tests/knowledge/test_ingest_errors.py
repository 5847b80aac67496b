"""Refusals: typed errors with one-line messages that name the path and never the content."""

from __future__ import annotations

import pytest

from bastion.core.errors import (
    BastionError,
    ConfigurationError,
    InvalidPathError,
    OperationError,
)
from bastion.knowledge.ingest import (
    DEFAULT_LIMITS,
    DocumentTooLargeError,
    EmptyDocumentError,
    IngestError,
    IngestLimits,
    ParseError,
    UnsupportedTypeError,
    parse_document,
)

SECRET = "hunter2-SECRET-CONTENT"


def test_the_error_tree() -> None:
    for error in (UnsupportedTypeError, ParseError, EmptyDocumentError, DocumentTooLargeError):
        assert issubclass(error, IngestError)
    assert issubclass(IngestError, OperationError)
    assert issubclass(IngestError, BastionError)


def _refusal(data: bytes, path: str, **kwargs: object) -> IngestError:
    with pytest.raises(IngestError) as caught:
        parse_document(data, path, **kwargs)  # type: ignore[arg-type]
    return caught.value


@pytest.mark.parametrize(
    ("data", "path", "error"),
    [
        (b"", "/a/empty.md", EmptyDocumentError),
        (b"   \n\n\t  \r\n", "/a/blank.txt", EmptyDocumentError),
        (b"---\ntitle: only front matter\n---\n\n", "/a/fm.md", EmptyDocumentError),
        (
            b"<html><body><nav>menu</nav><script>x()</script></body></html>",
            "/a/e.html",
            EmptyDocumentError,
        ),
        (f"ok {SECRET} \xff".encode("latin-1"), "/a/latin1.txt", ParseError),
        (f"# {SECRET}\n".encode() + b"\xc3\x28", "/a/bad.md", ParseError),
        (b"\x89PNG\r\n\x1a\n\x00\x00" + SECRET.encode(), "/a/image.png", UnsupportedTypeError),
        (b"\x00\x01\x02" + SECRET.encode(), "/a/blob", UnsupportedTypeError),
    ],
)
def test_refusals_are_typed(data: bytes, path: str, error: type[IngestError]) -> None:
    refusal = _refusal(data, path)
    assert type(refusal) is error
    message = str(refusal)
    assert path in message
    assert "\n" not in message
    assert SECRET not in message and "hunter2" not in message


def test_invalid_utf8_message_says_where_and_what_to_do() -> None:
    refusal = _refusal(b"good start \xff then more", "/a/legacy.txt")
    assert str(refusal) == (
        "/a/legacy.txt is not valid UTF-8 text (bad byte at offset 11); re-save it as UTF-8"
    )


def test_unsupported_type_names_the_supported_ones() -> None:
    message = str(_refusal(b"\x00\x01\x02\x03", "/a/blob.bin"))
    assert "application/octet-stream" in message
    assert "Markdown" in message and "PDF" in message and "DOCX" in message


def test_explicit_unknown_mime_is_unsupported() -> None:
    with pytest.raises(UnsupportedTypeError, match="image/png files cannot be ingested"):
        parse_document(b"text", "/a.txt", mime="image/png")


def test_size_limit_is_checked_before_anything_else() -> None:
    limits = IngestLimits(max_bytes=1024)
    with pytest.raises(DocumentTooLargeError) as caught:
        parse_document(b"\xff" * 2048, "/a/big.txt", limits=limits)
    assert str(caught.value) == (
        "/a/big.txt is 2 KiB, over the 1 KiB ingest limit; "
        "split the file or raise IngestLimits.max_bytes"
    )
    assert parse_document(b"x" * 1024, "/a/ok.txt", limits=limits).text == "x" * 1024


def test_default_limit_is_50_mib() -> None:
    assert DEFAULT_LIMITS.max_bytes == 50 * 1024 * 1024
    over = b"a" * (DEFAULT_LIMITS.max_bytes + 1)
    with pytest.raises(DocumentTooLargeError, match="over the 50 MiB ingest limit"):
        parse_document(over, "/a/huge.txt")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_limits_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="max_bytes"):
        IngestLimits(max_bytes=bad)  # type: ignore[arg-type]


def test_a_bad_path_is_an_invalid_path_error() -> None:
    with pytest.raises(InvalidPathError):
        parse_document(b"text", "/../outside.txt")
