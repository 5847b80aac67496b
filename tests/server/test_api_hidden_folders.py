"""Red-team variants of the existence-oracle class through HTTP (docs/security.md, "folder
names are content"): ``/docs/hr`` holds only a document the caller may not see (labels), so
every endpoint must answer for it exactly as for a folder that is not there: status, stable
code, message (but for the path) and headers. A read of it used to answer ``400
is_a_directory``."""

from __future__ import annotations

import httpx
import pytest

from .support import Token, auth

HIDDEN, MISSING = "/docs/hr", "/docs/hx"


def _same(hidden: httpx.Response, missing: httpx.Response) -> None:
    assert hidden.status_code == missing.status_code
    told = hidden.text.replace(HIDDEN, "<P>")
    assert told == missing.text.replace(MISSING, "<P>")
    skip = {"date", "content-length", "x-request-id"}  # the id: random per request
    assert {k: v for k, v in hidden.headers.items() if k not in skip} == {
        k: v for k, v in missing.headers.items() if k not in skip
    }


@pytest.mark.parametrize(
    ("method", "url", "fields"),
    [
        ("GET", "/v1/files/read", {}),
        ("GET", "/v1/files/read", {"format": "bytes"}),
        ("GET", "/v1/files/read", {"offset": "1", "limit": "2"}),
        ("GET", "/v1/files/stat", {}),
        ("GET", "/v1/files", {}),
        ("GET", "/v1/files/grep", {"pattern": "kestrel"}),
        ("POST", "/v1/files/edit", {"old": "a", "new": "b"}),
        ("POST", "/v1/files/copy", {"dst": "/docs/copied"}),
    ],
)
def test_a_folder_of_hidden_documents_answers_like_a_missing_one(
    client: httpx.Client, token: Token, method: str, url: str, fields: dict[str, str]
) -> None:
    h = auth(token())

    def call(path: str) -> httpx.Response:
        if method == "GET":
            return client.get(url, params={"path": path, **fields}, headers=h)
        key = "src" if url.endswith("copy") else "path"
        return client.post(url, json={key: path, **fields}, headers=h)

    _same(call(HIDDEN), call(MISSING))


def test_a_file_written_onto_a_folder_of_hidden_documents_is_refused_as_policy_would(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token())
    hidden = client.post("/v1/files/write", json={"path": HIDDEN, "content": "x"}, headers=h)
    locked = client.post(
        "/v1/files/write", json={"path": "/docs/locked/x", "content": "x"}, headers=h
    )
    assert hidden.status_code == locked.status_code == 403
    assert hidden.json()["error"]["code"] == locked.json()["error"]["code"]
    assert hidden.json()["error"]["message"] == f"write on {HIDDEN} is not allowed by policy"
