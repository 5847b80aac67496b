"""A request body's field names: one shape may serve several endpoints, but a name no endpoint
reads is refused before anything happens (a misspelt ``if_version`` ignored would make a
conditional write a blind one, and lose the update it was guarding)."""

from __future__ import annotations

import httpx

from bastion.server.handlers import FIELDS

from .support import Token, auth


def test_a_misspelt_condition_is_refused_and_the_file_is_left_alone(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("raj"))
    made = client.post(
        "/v1/files/write", json={"path": "/docs/w/f.md", "content": "one\n"}, headers=h
    )
    assert made.status_code == 201
    stale = made.json()["version"]
    client.post("/v1/files/write", json={"path": "/docs/w/f.md", "content": "two\n"}, headers=h)
    typo = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/f.md", "content": "three\n", "if_versoin": stale},
        headers=h,
    )
    assert typo.status_code == 400
    error = typo.json()["error"]
    assert error["code"] == "unknown_field"
    assert "'if_versoin'" in error["message"] and "if_version" in error["message"]
    read = client.get("/v1/files/read", params={"path": "/docs/w/f.md"}, headers=h)
    assert read.json()["content"] == "two\n"


def test_every_endpoint_refuses_a_name_none_reads_and_takes_the_others(
    client: httpx.Client, token: Token
) -> None:
    h = auth(token("raj"))
    for route in ("/v1/files/edit", "/v1/files/move", "/v1/files/delete", "/v1/ask"):
        r = client.post(route, json={"path": "/docs/w/x.md", "bogus": 1}, headers=h)
        assert r.status_code == 400, route
        assert r.json()["error"]["code"] == "unknown_field", route
    # another endpoint's field is no mistake: a mkdir body may carry a write's fields
    shared = {"path": "/docs/w/made", "content": "x", "if_version": "v", "parents": True}
    assert set(shared) <= FIELDS
    assert client.post("/v1/files/mkdir", json=shared, headers=h).status_code < 300


def test_a_long_or_odd_field_name_is_cut_and_quoted_in_one_line(
    client: httpx.Client, token: Token
) -> None:
    r = client.post(
        "/v1/files/write",
        json={"path": "/docs/w/y.md", "content": "x", "a\nb" + "z" * 500: 1},
        headers=auth(token("raj")),
    )
    message = r.json()["error"]["message"]
    assert r.status_code == 400 and "\n" not in message and "z" * 100 not in message
