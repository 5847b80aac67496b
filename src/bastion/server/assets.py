"""The page and its static files, served from memory ("Web app: finish").

Every file under ``static/`` is read once when the server is built, with its gzip form and
an ETag (a hash of its bytes). The page names its files under a versioned folder,
``/static/<version>/app.js``, the version a hash of all of them: a browser keeps those a
year without asking again (``immutable``), and the modules' relative imports
(``./chat.js``) stay in the same version. A new release has a new version, so a page never
mixes old and new modules. ``/static/<name>`` (no version) and a version that is not this
server's answer the current file with ``no-cache``: the browser asks again each time, and a
matching ``If-None-Match`` is a ``304`` with no body. Text is sent gzip-compressed to a
browser that accepts it (the static files only: the API's streams are never buffered).
"""

from __future__ import annotations

import gzip
import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

__all__ = ["Assets"]

_YEAR = "public, max-age=31536000, immutable"
_AGAIN = "no-cache"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_TEXT = (".js", ".css", ".html", ".svg", ".json", ".txt")


@dataclass(frozen=True, slots=True)
class _File:
    body: bytes
    zipped: bytes | None
    etag: str
    media: str


def _load(path: Path) -> _File:
    media = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0]
    return _held(path.read_bytes(), media or "application/octet-stream", path.suffix in _TEXT)


def _held(body: bytes, media: str, text: bool) -> _File:
    zipped = gzip.compress(body, 9, mtime=0) if text else None
    if zipped is not None and len(zipped) >= len(body):
        zipped = None
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    return _File(body, zipped, etag, media)


class Assets:
    """The files of ``folder`` (its top level), held in memory; :meth:`page` and
    :meth:`file` are the two endpoints."""

    def __init__(self, folder: Path) -> None:
        self.files = {p.name: _load(p) for p in sorted(folder.iterdir()) if p.is_file()}
        whole = hashlib.sha256()
        for name, f in self.files.items():
            whole.update(name.encode() + b"\0" + f.etag.encode())
        self.version = whole.hexdigest()[:12]
        html = self.files["index.html"].body.replace(
            b'"/static/', b'"/static/' + self.version.encode() + b"/"
        )
        self.index = _held(html, "text/html; charset=utf-8", True)

    def _send(self, request: Request, f: _File, cache: str) -> Response:
        headers = {"Cache-Control": cache, "ETag": f.etag, "Vary": "Accept-Encoding"}
        if f.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        body = f.body
        accepted = request.headers.get("accept-encoding", "")
        if f.zipped is not None and "gzip" in accepted.lower():
            body = f.zipped
            headers["Content-Encoding"] = "gzip"
        return Response(body, media_type=f.media, headers=headers)

    async def page(self, request: Request) -> Response:
        """The page, its files named under this version; asked again on each load."""
        return self._send(request, self.index, _AGAIN)

    async def file(self, request: Request) -> Response:
        """``/static/<name>`` or ``/static/<version>/<name>``; 404 for any other name."""
        version = request.path_params.get("version")
        f = self.files.get(request.path_params["name"])
        if f is None:
            raise HTTPException(404)
        return self._send(request, f, _YEAR if version == self.version else _AGAIN)
