"""A multipart upload (``/v1/ingest``) read with limits: every malformed or oversized form is a
``4xx`` with one line, never a ``500``, and nothing is written before the whole form is read.

python-multipart splits the body; this module decides what each part may be. The request
must be ``multipart/form-data`` with an RFC 2046 boundary (``415``/``400``); each part has at
most 8 header lines of at most 4,096 bytes (a longer file name is refused with them, ``400``);
a part is a named text field the endpoint reads (once, at most 4,096 bytes of
UTF-8) or a file under the file field (at most ``max_files``). File names must be UTF-8 (a
lone surrogate is not) and are cut to their last segment; the workspace's path parser judges
what is left, as for any other path. A body that stops before its closing boundary is
refused (``400``) rather than read as the parts that did arrive. The body's size is held by
:class:`~bastion.server.middleware.BodyLimit` (``max_upload_bytes``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterable
from tempfile import SpooledTemporaryFile
from typing import TYPE_CHECKING, BinaryIO, cast

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import FormData, Headers, UploadFile
from starlette.requests import ClientDisconnect, Request

from bastion.server.errors import ApiError

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

__all__ = ["read_upload"]

MAX_HEADER_BYTES = 4096
"""One header line of a part (a file name travels in one)."""
MAX_HEADERS = 8
MAX_FIELD_BYTES = 4096
_SPOOL = 1 << 20
_MALFORMED = (
    f"the multipart body is malformed: check its boundaries, and keep each part's headers "
    f"to {MAX_HEADERS} lines of {MAX_HEADER_BYTES} bytes (a file name travels in one)"
)
_BOUNDARY = re.compile(rb"[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]")


def _bad(message: str) -> ApiError:
    return ApiError(400, "bad_multipart", message)


def _over(message: str) -> ApiError:
    return ApiError(413, "limit_exceeded", message)


def _text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "bad_field", f"{what} is not UTF-8 text") from None


class _Form:
    """The parser's callbacks: one part at a time, each checked as it arrives."""

    def __init__(self, file_field: str, fields: frozenset[str], max_files: int) -> None:
        self.file_field = file_field
        self.fields = fields
        self.max_files = max_files
        self.items: list[tuple[str, str | UploadFile]] = []
        self.files: list[UploadFile] = []
        self.pending: list[tuple[UploadFile, bytes]] = []
        self.ended = False
        self._begin()

    def _begin(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.header_name = bytearray()
        self.header_value = bytearray()
        self.name = ""
        self.value: bytearray | None = None
        self.file: UploadFile | None = None

    def on_part_begin(self) -> None:
        self._begin()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.header_name += data[start:end]
        self._header_size()

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.header_value += data[start:end]
        self._header_size()

    def _header_size(self) -> None:
        if len(self.header_name) + len(self.header_value) > MAX_HEADER_BYTES:
            raise _bad(_MALFORMED)

    def on_header_end(self) -> None:
        self.headers.append((bytes(self.header_name).lower(), bytes(self.header_value)))
        self.header_name, self.header_value = bytearray(), bytearray()
        if len(self.headers) > MAX_HEADERS:
            raise _bad(_MALFORMED)

    def on_headers_finished(self) -> None:
        found = [v for k, v in self.headers if k == b"content-disposition"]
        if len(found) != 1:
            raise _bad("each part needs one Content-Disposition: form-data header")
        kind, options = parse_options_header(found[0])
        if kind != b"form-data" or b"name" not in options:
            raise _bad('each part needs Content-Disposition: form-data; name="..."')
        self.name = _text(options[b"name"], "a part's name")
        if self.name != self.file_field and self.name not in self.fields:
            known = ", ".join(sorted({*self.fields, self.file_field}))
            raise ApiError(
                400,
                "unknown_field",
                f"unknown field {self.name[:64]!r} in the form; check its spelling "
                f"(fields: {known})",
            )
        if b"filename" in options:
            self._open_file(options[b"filename"])
            return
        if self.name == self.file_field:
            raise ApiError(400, "bad_field", f"the {self.file_field!r} part must be a file")
        if any(name == self.name for name, _ in self.items):
            raise ApiError(400, "bad_field", "a form field is given twice; give it once")
        self.value = bytearray()

    def _open_file(self, raw_name: bytes) -> None:
        if self.name != self.file_field:
            raise ApiError(
                400, "bad_field", f"files go in the {self.file_field!r} part of the form"
            )
        if len(self.files) >= self.max_files:
            raise _over(f"more than {self.max_files} files in one upload; send fewer")
        name = _text(raw_name, "a file name").replace("\\", "/").rsplit("/", 1)[-1]
        if not name:
            raise ApiError(400, "bad_field", "an uploaded file has no name")
        spool = SpooledTemporaryFile(max_size=_SPOOL)  # noqa: SIM115 - closed by read_upload
        self.file = UploadFile(
            cast("BinaryIO", spool), size=0, filename=name, headers=Headers(raw=self.headers)
        )
        self.files.append(self.file)

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self.file is not None:
            self.pending.append((self.file, data[start:end]))
        elif self.value is not None:
            self.value += data[start:end]
            if len(self.value) > MAX_FIELD_BYTES:
                raise _over(f"a form field is over {MAX_FIELD_BYTES} bytes")

    def on_part_end(self) -> None:
        if self.file is not None:
            self.items.append((self.name, self.file))
        elif self.value is not None:
            self.items.append((self.name, _text(bytes(self.value), "a form field")))

    def on_end(self) -> None:
        self.ended = True


def _boundary(content_type: str | None) -> bytes:
    kind, options = parse_options_header(content_type)
    if kind != b"multipart/form-data":
        raise ApiError(415, "unsupported_media_type", "send the upload as multipart/form-data")
    charset = options.get(b"charset", b"utf-8").lower()
    if charset not in (b"utf-8", b"utf8"):
        raise ApiError(415, "unsupported_media_type", "a multipart upload must be UTF-8")
    boundary = options.get(b"boundary", b"")
    if not _BOUNDARY.fullmatch(boundary):
        raise _bad("the multipart boundary is missing or malformed (1 to 70 characters)")
    return boundary


@contextlib.asynccontextmanager
async def read_upload(
    request: Request, *, fields: Iterable[str], max_files: int, file_field: str = "file"
) -> AsyncIterator[FormData]:
    """The request's form, read whole before the block runs: ``fields`` are the text fields
    the endpoint reads, ``file_field`` holds up to ``max_files`` files. The files are closed
    when the block ends."""
    boundary = _boundary(request.headers.get("content-type"))
    form = _Form(file_field, frozenset(fields), max_files)
    callbacks: MultipartCallbacks = {
        "on_part_begin": form.on_part_begin,
        "on_part_data": form.on_part_data,
        "on_part_end": form.on_part_end,
        "on_header_field": form.on_header_field,
        "on_header_value": form.on_header_value,
        "on_header_end": form.on_header_end,
        "on_headers_finished": form.on_headers_finished,
        "on_end": form.on_end,
    }
    parser = MultipartParser(boundary, callbacks)
    try:
        try:
            async for chunk in request.stream():
                parser.write(chunk)
                for upload, data in form.pending:
                    await upload.write(data)
                form.pending.clear()
        except FormParserError:
            raise _bad(_MALFORMED) from None
        except ClientDisconnect:
            raise _bad("the upload stopped before its end") from None
        if not form.ended:
            raise _bad("the multipart body ends before its closing boundary")
        for upload in form.files:
            await upload.seek(0)
        yield FormData(form.items)
    finally:
        for upload in form.files:
            await upload.close()
