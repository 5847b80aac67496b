"""Every malformed request is a 4xx with one JSON line, never a 500 (issue 23, "one answer at
every edge"): a table of hostile requests, each with the answer it must get, then hypothesis
mixing their pieces, all against the real ASGI app in-process (raw scopes: nothing cleans a
request up before the app sees it). ``test_hostile_wire.py`` sends the same kind through
uvicorn on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.governance.identity import IdentityConfig

from .hostile import Served, assert_answered, served_app
from .support import Token

JSON = (b"content-type", b"application/json")
MP = (b"content-type", b"multipart/form-data; boundary=XyZ")


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, identity: IdentityConfig, token: Token
) -> Iterator[Served]:
    with served_app(tmp_path_factory.mktemp("hostile"), identity, token()) as s:
        yield s


def form(*parts: tuple[bytes, bytes], close: bool = True) -> bytes:
    out = b"".join(b"--XyZ\r\n" + head + b"\r\n\r\n" + data + b"\r\n" for head, data in parts)
    return out + (b"--XyZ--\r\n" if close else b"")


FOLDER = (b'Content-Disposition: form-data; name="path"', b"/docs/hostile")


def file(name: bytes, data: bytes = b"x\n") -> tuple[bytes, bytes]:
    return (b'Content-Disposition: form-data; name="file"; filename="' + name + b'"', data)


# fmt: off
# name: (method, path, query, headers, body chunks, status, code)
CASES: dict[str, tuple[str, str, bytes, list[tuple[bytes, bytes]], list[bytes], int, str]] = {
    # multipart
    "upload without boundary": (
        "POST", "/v1/ingest", b"", [(b"content-type", b"multipart/form-data")],
        [form(FOLDER, file(b"a.md"))], 400, "bad_multipart",
    ),
    "upload with a boundary of 71 characters": (
        "POST", "/v1/ingest", b"", [(b"content-type", b"multipart/form-data; boundary=" + b"b" * 71)],
        [form(FOLDER, file(b"a.md"))], 400, "bad_multipart",
    ),
    "upload with another boundary in the body": (
        "POST", "/v1/ingest", b"", [(b"content-type", b"multipart/form-data; boundary=other")],
        [form(FOLDER, file(b"a.md"))], 400, "bad_multipart",
    ),
    "upload cut before its closing boundary": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"cut.md"), close=False)],
        400, "bad_multipart",
    ),
    "upload cut inside a part": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"cut.md"))[:-20]],
        400, "bad_multipart",
    ),
    "upload of garbage": ("POST", "/v1/ingest", b"", [MP], [b"\x00garbage\r\n\r\n"], 400, "bad_multipart"),
    "upload of nothing": ("POST", "/v1/ingest", b"", [MP], [], 400, "bad_multipart"),
    "upload with 30 files": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, *(file(b"f%d.md" % i) for i in range(30)))], 413, "limit_exceeded",
    ),
    "upload with 30 unknown fields": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, *((b'Content-Disposition: form-data; name="f%d"' % i, b"v") for i in range(30)))],
        400, "unknown_field",
    ),
    "upload with the folder twice": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, FOLDER, file(b"a.md"))], 400, "bad_field",
    ),
    "upload with a 5,000-character file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"a" * 5000))], 400, "bad_multipart",
    ),
    "upload with a 300-byte file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"a" * 300))], 400, "invalid_path",
    ),
    "upload with a 40 KiB part header": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, (b"X-Pad: " + b"p" * 40_000 + b"\r\n" + file(b"a.md")[0], b"x"))],
        400, "bad_multipart",
    ),
    "upload with 20 part headers": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, (b"".join(b"X-H%d: v\r\n" % i for i in range(20)) + file(b"a.md")[0], b"x"))],
        400, "bad_multipart",
    ),
    "upload with a Latin-1 file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"caf\xe9.md"))], 400, "bad_field",
    ),
    "upload with a lone surrogate in its file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"\xed\xa0\x80.md"))], 400, "bad_field",
    ),
    "upload with a NUL in its file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b"a\x00b.md"))], 400, "invalid_path",
    ),
    "upload named ..": ("POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b".."))], 400, "invalid_path"),
    "upload with an empty file name": (
        "POST", "/v1/ingest", b"", [MP], [form(FOLDER, file(b""))], 400, "bad_field",
    ),
    "upload part without a name": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, (b'Content-Disposition: form-data; filename="a.md"', b"x"))], 400, "bad_multipart",
    ),
    "upload part that is not form-data": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, (b'Content-Disposition: attachment; name="file"; filename="a.md"', b"x"))],
        400, "bad_multipart",
    ),
    "upload with a Latin-1 folder": (
        "POST", "/v1/ingest", b"", [MP],
        [form((FOLDER[0], b"/docs/caf\xe9"), file(b"a.md"))], 400, "bad_field",
    ),
    "upload in UTF-16": (
        "POST", "/v1/ingest", b"", [(b"content-type", b"multipart/form-data; boundary=XyZ; charset=utf-16")],
        [form(FOLDER, file(b"a.md"))], 415, "unsupported_media_type",
    ),
    "upload sent as JSON": ("POST", "/v1/ingest", b"", [JSON], [b"{}"], 415, "unsupported_media_type"),
    "upload over the limit, chunked": (
        "POST", "/v1/ingest", b"", [MP],
        [form(FOLDER, file(b"big.md", b"y" * 1024))[:-12]] + [b"y" * 1024] * 60, 413, "body_too_large",
    ),
    # JSON bodies
    "JSON that does not parse": ("POST", "/v1/files/write", b"", [JSON], [b"{"], 400, "bad_json"),
    "JSON that is a list": ("POST", "/v1/files/write", b"", [JSON], [b"[]"], 400, "bad_json"),
    "JSON nested 100,000 deep": (
        "POST", "/v1/files/write", b"", [JSON], [b"[" * 100_000 + b"]" * 100_000], 413, "body_too_large",
    ),
    "JSON nested 20,000 deep": ("POST", "/v1/search", b"", [JSON], [b"[" * 20_000], 400, "bad_json"),
    "JSON with a 6,000-digit number": (
        "POST", "/v1/search", b"", [JSON], [b'{"query":"x","k":' + b"9" * 6000 + b"}"], 400, "bad_json",
    ),
    "JSON with 1e999": ("POST", "/v1/search", b"", [JSON], [b'{"query":"x","k":1e999}'], 400, "bad_field"),
    "JSON with NaN": ("POST", "/v1/search", b"", [JSON], [b'{"query":"x","k":NaN}'], 400, "bad_field"),
    "JSON in Latin-1": ("POST", "/v1/files/write", b"", [JSON], [b'{"path":"\xe9"}'], 400, "bad_json"),
    "JSON with a lone surrogate in a path": (
        "POST", "/v1/files/write", b"", [JSON], [b'{"path":"/docs/\\ud800.md","content":"x"}'],
        400, "invalid_path",
    ),
    "JSON sent as text/plain": (
        "POST", "/v1/files/write", b"", [(b"content-type", b"text/plain")],
        [b'{"path":"/docs/plain.md","content":"x"}'], 415, "unsupported_media_type",
    ),
    "JSON sent as a form": (
        "POST", "/v1/auth/demo", b"", [(b"content-type", b"application/x-www-form-urlencoded")],
        [b"user=ana"], 415, "unsupported_media_type",
    ),
    "JSON without a content type": (
        "POST", "/v1/files/mkdir", b"", [], [b'{"path":"/docs/untyped"}'], 415, "unsupported_media_type",
    ),
    "JSON in UTF-16": (
        "POST", "/v1/search", b"", [(b"content-type", b"application/json; charset=utf-16")],
        ['{"query":"x"}'.encode("utf-16")], 415, "unsupported_media_type",
    ),
    "JSON over the limit, chunked": (
        "POST", "/v1/files/write", b"", [JSON], [b" " * 8192] * 5, 413, "body_too_large",
    ),
    "MCP body over the limit, chunked": ("POST", "/mcp", b"", [JSON], [b" " * 8192] * 5, 413, "body_too_large"),
    # query strings
    "query with a broken escape": ("GET", "/v1/files/read", b"path=%zz", [], [], 400, "bad_query"),
    "query with a cut escape": ("GET", "/v1/files/read", b"path=/docs/a%2", [], [], 400, "bad_query"),
    "query with a lone surrogate": ("GET", "/v1/files/read", b"path=/docs/%ED%A0%80", [], [], 400, "bad_query"),
    "query in Latin-1": ("GET", "/v1/files/read", b"path=/docs/caf%E9.md", [], [], 400, "bad_query"),
    "query with a raw byte": ("GET", "/v1/files/read", b"path=/docs/\xff", [], [], 400, "bad_query"),
    "query with a repeated key": (
        "GET", "/v1/files/read", b"path=/docs/handbook.md&path=/docs/hr/pay.md", [], [], 400, "bad_query",
    ),
    "query with a repeated key spelt by escape": (
        "GET", "/v1/files/read", b"path=/docs/handbook.md&p%61th=/docs/hr/pay.md", [], [], 400, "bad_query",
    ),
    "query of 10 KiB": ("GET", "/v1/files", b"path=" + b"a" * 10_000, [], [], 414, "uri_too_long"),
    "query with 100 keys": ("GET", "/v1/files", b"&".join(b"k%d=v" % i for i in range(100)), [], [], 400, "bad_query"),
    "query with a NUL": ("GET", "/v1/files/read", b"path=/docs/%00", [], [], 400, "invalid_path"),
    # headers
    "two Authorization headers": (
        "GET", "/v1/me", b"", [(b"authorization", b"Bearer x.y.z")], [], 400, "bad_header",
    ),
    "a header of 20 KiB": ("GET", "/v1/me", b"", [(b"x-pad", b"p" * 20_000)], [], 431, "headers_too_large"),
    "200 headers": ("GET", "/v1/me", b"", [(b"x-h%d" % i, b"v") for i in range(200)], [], 431, "headers_too_large"),
    "a header with a line break": ("GET", "/v1/me", b"", [(b"x-a", b"a\r\nb")], [], 400, "bad_header"),
    "Content-Length that is not a number": (
        "POST", "/v1/files/write", b"", [JSON, (b"content-length", b"12abc")], [b"{}"], 400, "bad_header",
    ),
    "negative Content-Length": (
        "POST", "/v1/files/write", b"", [JSON, (b"content-length", b"-1")], [b"{}"], 400, "bad_header",
    ),
    "Content-Length over the limit": (
        "POST", "/v1/files/write", b"", [JSON, (b"content-length", b"99999999999")], [], 413, "body_too_large",
    ),
    "a method no endpoint takes": ("BREW", "/v1/files", b"", [], [], 405, "method_not_allowed"),
    "TRACE on the page": ("TRACE", "/", b"", [], [], 405, "method_not_allowed"),
    "two Content-Type headers": (
        "POST", "/v1/files/write", b"", [JSON, (b"content-type", b"text/plain")], [b"{}"], 400, "bad_header",
    ),
}
UNSIGNED = {
    "a Latin-1 bearer token": ("GET", "/v1/me", [(b"authorization", b"Bearer caf\xe9.x.y")], 401),
    "a Basic credential": ("GET", "/v1/me", [(b"authorization", b"Basic YTpi")], 401),
    "a bearer token of 12 KiB": ("GET", "/v1/me", [(b"authorization", b"Bearer " + b"a" * 12_000)], 401),
    "an empty Authorization": ("GET", "/v1/me", [(b"authorization", b"")], 401),
}
PATHS = {
    "a NUL in the path": ("/v1/files\x00", None, 400, "bad_request"),
    "a control character in the path": ("/v1/\x1bfiles", None, 400, "bad_request"),
    "a lone surrogate in the path": ("/v1/\udc80", None, 400, "bad_request"),
    "an escaped NUL in the path": ("/v1/files\x00", b"/v1/files%00", 400, "bad_request"),
    "a broken escape in the path": ("/v1/files%zz", b"/v1/files%zz", 400, "bad_request"),
    "an escaped surrogate in the path": ("/v1/\ufffd", b"/v1/%ED%A0%80", 400, "bad_request"),
    "a NUL in a static file's path": ("/static/a\x00b.js", None, 400, "bad_request"),
    "a surrogate in a static file's path": ("/static/\udc80.js", None, 400, "bad_request"),
    "a path of 3,000 characters": ("/v1/" + "a" * 3000, None, 414, "uri_too_long"),
    "a static path that climbs": ("/static/../app.py", None, 404, "not_found"),
    "no such endpoint": ("/v2/files", None, 404, "not_found"),
}
# fmt: on


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_malformed_request_has_its_one_answer(served: Served, name: str) -> None:
    method, path, query, headers, chunks, status, code = CASES[name]
    reply = served.call(method, path, query=query, headers=headers, chunks=chunks)
    assert_answered(reply, served)
    assert (reply.status, reply.json()["error"]["code"]) == (status, code), reply.body[:200]


@pytest.mark.parametrize(
    "range_",
    [
        b"bytes=abc",
        b"bytes=5-1",
        b"bytes=999999-",
        b"bytes=" + b",".join(b"%d-%d" % (i, i) for i in range(500)),
    ],
)
@pytest.mark.parametrize("path", ["/", "/static/app.js"])
def test_a_range_on_the_page_is_ignored(served: Served, path: str, range_: bytes) -> None:
    """The page and its files come back whole: Starlette answered a malformed Range with
    plain text, and nothing here needs ranges (file bytes are read with start/end)."""
    reply = served.call("GET", path, headers=[(b"range", range_), (b"if-range", b"\xff")])
    assert reply.status == 200 and len(reply.body) > 1000
    assert_answered(reply, served)


@pytest.mark.parametrize("name", sorted(UNSIGNED))
def test_bad_credentials_are_401_in_one_line(served: Served, name: str) -> None:
    method, path, headers, status = UNSIGNED[name]
    reply = served.call(method, path, headers=headers, signed=False)
    assert_answered(reply, served, sent=headers[0][1])
    assert reply.status == status


@pytest.mark.parametrize("name", sorted(PATHS))
def test_hostile_url_paths_are_refused_in_one_line(served: Served, name: str) -> None:
    path, raw, status, code = PATHS[name]
    reply = served.call("GET", path, raw_path=raw)
    assert_answered(reply, served)
    assert (reply.status, reply.json()["error"]["code"]) == (status, code)


def test_a_refused_upload_writes_nothing(served: Served) -> None:
    """All or nothing: the good files before a bad part are not written."""
    for name in ("upload cut before its closing boundary", "upload with 30 files"):
        method, path, _, headers, chunks, _, _ = CASES[name]
        assert served.call(method, path, headers=headers, chunks=chunks).status >= 400
    bad_last = form(FOLDER, file(b"first.md"), file(b"\xff.md"))
    assert served.call("POST", "/v1/ingest", headers=[MP], chunks=[bad_last]).status == 400
    listing = served.call("GET", "/v1/files", query=b"path=/docs")
    assert "/docs/hostile" not in {e["path"] for e in listing.json()["entries"]}


def test_a_good_upload_still_works_split_anywhere(served: Served) -> None:
    """The checks refuse no well-formed upload, however its body is cut into messages: a
    Windows path is cut to its name, and a UTF-8 name is kept."""
    body = form(
        (FOLDER[0], b"/docs/good"),
        (b'Content-Disposition: form-data; name="overwrite"', b"true"),
        file(b"C:\\Users\\ana\\caf\xc3\xa9.md", b"# Caf\xc3\xa9\n"),
    )
    for size in (1, 7, 64, len(body)):
        chunks = [body[i : i + size] for i in range(0, len(body), size)]
        reply = served.call("POST", "/v1/ingest", headers=[MP], chunks=chunks)
        assert reply.status == 201, reply.body
        assert reply.json()["files"][0]["path"] == "/docs/good/café.md"


def test_a_malformed_request_naming_a_hidden_file_answers_like_one_naming_a_missing_file(
    served: Served,
) -> None:
    """A malformed request is refused before anything is looked up."""
    hidden = served.call("GET", "/v1/files/read", query=b"path=/docs/hr/pay.md&path=/x")
    missing = served.call("GET", "/v1/files/read", query=b"path=/docs/hr/none.md&path=/x")
    assert hidden.status == 400 and (hidden.status, hidden.body) == (missing.status, missing.body)


# -- hypothesis: pieces of the table, mixed ------------------------------------------------------

# fmt: off
_ROUTES = [
    ("GET", "/v1/files"), ("GET", "/v1/files/read"), ("GET", "/v1/files/stat"),
    ("POST", "/v1/files/write"), ("POST", "/v1/files/edit"), ("POST", "/v1/files/delete"),
    ("GET", "/v1/files/grep"), ("GET", "/v1/search"), ("POST", "/v1/search"), ("POST", "/v1/ask"),
    ("POST", "/v1/ingest"), ("GET", "/v1/me"), ("POST", "/v1/auth/demo"), ("POST", "/mcp"),
    ("DELETE", "/mcp"), ("GET", "/"), ("GET", "/static/app.js"), ("GET", "/healthz"),
    ("GET", "/openapi.json"), ("PUT", "/v1/files/write"), ("HEAD", "/v1/me"), ("OPTIONS", "/v1/files"),
]
_NAMES = ["path", "depth", "recursive", "pattern", "regex", "query", "limit", "start", "end",
          "format", "mode", "k", "offset", "p%61th", "", "%zz", "caf%C3%A9"]
_VALUES = [b"/docs/handbook.md", b"/docs/hr/pay.md", b"/docs", b"/", b"2", b"-1", b"true", b"(",
           b"kestrel", b"bm25", b"bytes", b"99999999999999999999", b"/docs/caf%C3%A9.md", b"%2Fdocs",
           b"", b"%", b"%e9", b"%ED%A0%80", b"%00", b"\xff", b"a+b", b"=", b"/docs/../../etc"]
_QUERY = st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(_VALUES), max_size=4).map(
    lambda d: b"&".join(k.encode() + b"=" + v for k, v in d.items())
)
_FIELDS = ["path", "content", "mode", "if_version", "old", "new", "query", "question", "k",
           "filter", "user", "src", "dst", "recursive", "tenant"]
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
    | st.sampled_from(["/docs/handbook.md", "/docs/hr/pay.md", "/docs/new.md", "kestrel", "ana", "\ud800", "a" * 300]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
_JSON_BODY = st.dictionaries(st.sampled_from(_FIELDS), _JSON_VALUES, max_size=4).map(
    lambda d: json.dumps(d).encode()
)
_FRAGMENTS = st.lists(
    st.one_of(
        st.sampled_from(
            [b"{", b"}", b'"path":', b'"/docs/a.md"', b'"content":"x"', b",", b"[", b"]", b"1e999",
             b"NaN", b'"\\ud800"', b"--XyZ\r\n", b"--XyZ--\r\n", b"\r\n\r\n",
             b'Content-Disposition: form-data; name="file"; filename="a.md"',
             b'Content-Disposition: form-data; name="path"', b"\xff\xfe", b"\x00"]
        ),
        st.binary(max_size=16),
    ),
    max_size=8,
).map(b"".join)
_UPLOAD = st.lists(
    st.sampled_from([FOLDER, (FOLDER[0], b"/ref"), file(b"a.md"), file(b"\xff"), file(b"../x.md"),
                     file(b"fuzz.md", b"kestrel\n"), (b'Content-Disposition: form-data; name="overwrite"', b"1")]),
    max_size=4,
).flatmap(lambda parts: st.booleans().map(lambda close: form(*parts, close=close)))
_ODD_HEADERS = st.dictionaries(
    st.sampled_from([b"content-type", b"accept", b"origin", b"mcp-session-id", b"authorization", b"x-a"]),
    st.sampled_from(
        [b"application/json", b"multipart/form-data; boundary=XyZ", b"multipart/form-data", b"text/plain",
         b"application/json; charset=latin-1", b"text/event-stream", b"application/json, text/event-stream",
         b"http://127.0.0.1:8765", b"http://evil.example", b"null", b"\xff", b"Bearer \xff", b"", b"a\tb"]
    ),
    max_size=3,
).map(lambda d: list(d.items()))


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, str, bytes, list[tuple[bytes, bytes]], bytes]:
    """Mostly well-typed requests with hostile values (they reach the handlers), sometimes
    hostile in their shape too."""
    method, path = draw(st.sampled_from(_ROUTES))
    usual = "upload" if path == "/v1/ingest" else "json" if method in ("POST", "PUT") else "none"
    kinds = [usual] * 4 + ["json", "upload", "fragments", "none"]
    kind = draw(st.sampled_from(kinds))
    body = {"json": _JSON_BODY, "upload": _UPLOAD, "fragments": _FRAGMENTS, "none": st.just(b"")}
    typed = {"json": [JSON], "upload": [MP]}.get(kind, [])
    odd = draw(st.sampled_from([False, False, False, True]))
    headers = draw(_ODD_HEADERS) if odd else typed
    if path == "/mcp":
        headers = [*headers, (b"accept", b"application/json, text/event-stream")]
    return method, path, draw(_QUERY), headers, draw(body[kind])
# fmt: on


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    request=_requests(),
    split=st.integers(1, 64),
    signed=st.sampled_from([True, True, True, False]),
)
def test_mixed_hostile_requests_are_never_a_500(
    served: Served,
    request: tuple[str, str, bytes, list[tuple[bytes, bytes]], bytes],
    split: int,
    signed: bool,
) -> None:
    method, path, query, headers, body = request
    chunks = [body[i : i + split] for i in range(0, len(body), split)]
    reply = served.call(method, path, query=query, headers=headers, chunks=chunks, signed=signed)
    assert_answered(reply, served)


def test_the_store_folder_is_what_the_no_echo_check_looks_for(served: Served) -> None:
    """The check above is not vacuous: the folder exists and holds the hidden document."""
    assert (Path(served.root) / "docs" / "hr" / "pay.md").read_text().count("kestrel bonus") == 1
