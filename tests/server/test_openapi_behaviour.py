"""The generated OpenAPI document says what the server does: every bound it publishes
(``minimum``, ``maximum``) is the bound the endpoint enforces (one past it is a 400
``bad_field``, the bound itself is taken), every endpoint refuses a field it does not name,
and every answer (success or refusal) has a status the document lists and a body valid under
the schema it gives for that status."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from bastion.server.openapi import openapi_document

from .support import Token, auth

_DOC = openapi_document()

_SKIPPED = (
    "/v1/changes",
    "/v1/checkpoints",
    "/v1/auth/demo",
    "/v1/auth/login",
    "/v1/auth/logout",
    "/v1/auth/methods",
    "/v1/auth/oidc",
    "/metrics",
    "/v1/ingest",
    "/healthz",
    "/readyz",
)
"""The change journal (this server keeps none: tests/server/test_api_changes.py), the demo
login (off here), local accounts and OpenID Connect (a workspace file: test_accounts.py,
test_oidc.py), /metrics (text: test_metrics.py) and the upload (a multipart form:
tests/server/test_hostile_requests.py)."""

_SAMPLE: dict[str, Any] = {
    "path": "/docs",
    "pattern": "x",
    "query": "x",
    "question": "x",
    "content": "x",
    "src": "/docs/nothing-here.md",
    "dst": "/docs/nothing-there.md",
    "old": "x",
    "new": "y",
    "conversation": "0123456789abcdef",
    "turn": 0,
    "rating": "right",
    "user": "ana",
    "prefix": "/docs",
}
"""A value for each required field, so that the field under test is what is judged."""


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for route, methods in _DOC["paths"].items():
        if route.startswith(_SKIPPED):
            continue
        for method, op in methods.items():
            found.append((method.upper(), route, op))
    return found


def _fields(op: dict[str, Any]) -> dict[str, tuple[dict[str, Any], bool]]:
    """Each parameter's schema and whether it is required."""
    if "parameters" in op:
        return {p["name"]: (p["schema"], p.get("required", False)) for p in op["parameters"]}
    body = op.get("requestBody")
    if body is None:
        return {}
    schema = body["content"]["application/json"]["schema"]
    needed = set(schema.get("required", ()))
    return {name: (s, name in needed) for name, s in schema.get("properties", {}).items()}


def _call(
    client: httpx.Client, token: str, method: str, route: str, args: dict[str, Any]
) -> httpx.Response:
    if method == "GET":
        query = {k: str(v).lower() if isinstance(v, bool) else v for k, v in args.items()}
        return client.get(route, params=query, headers=auth(token))
    return client.post(route, json=args, headers=auth(token))


def _check_documented(op: dict[str, Any], response: httpx.Response) -> None:
    status = str(response.status_code)
    assert status in op["responses"], (status, response.text)
    content = op["responses"][status].get("content", {}).get("application/json")
    if content is None:
        return
    schema = {**content["schema"], "components": _DOC["components"]}
    Draft202012Validator(schema).validate(response.json())


def _required(op: dict[str, Any]) -> dict[str, Any]:
    return {name: _SAMPLE[name] for name, (_, needed) in _fields(op).items() if needed}


def _integer(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The integer schema of a field (``int`` or ``int | None``), or ``None``."""
    if schema.get("type") == "integer":
        return schema
    ints = [s for s in schema.get("anyOf", ()) if s.get("type") == "integer"]
    return ints[0] if ints else None


def _bounded() -> list[Any]:
    cases = []
    for method, route, op in _operations():
        for name, (schema, _) in _fields(op).items():
            whole = _integer(schema)
            for key, step in (("maximum", 1), ("minimum", -1)):
                if whole is not None and key in whole:
                    at = whole[key]
                    tag = f"{method} {route} {name} {key}"
                    cases.append(pytest.param(method, route, name, at, step, id=tag))
    return cases


@pytest.fixture(scope="module")
def operator(token: Token) -> str:
    return token("olga", roles=("ops",))


@pytest.mark.parametrize(("method", "route", "name", "bound", "step"), _bounded())
def test_each_published_bound_is_the_enforced_one(
    client: httpx.Client,
    operator: str,
    method: str,
    route: str,
    name: str,
    bound: int,
    step: int,
) -> None:
    op = _DOC["paths"][route][method.lower()]
    args = _required(op)
    past = _call(client, operator, method, route, {**args, name: bound + step})
    assert past.status_code == 400, past.text
    assert past.json()["error"]["code"] == "bad_field"
    assert name in past.json()["error"]["message"]
    _check_documented(op, past)
    at = _call(client, operator, method, route, {**args, name: bound})
    assert at.status_code != 400 or name not in at.text, at.text
    _check_documented(op, at)


@pytest.mark.parametrize(
    ("method", "route"), [pytest.param(m, r, id=f"{m} {r}") for m, r, _ in _operations()]
)
def test_each_endpoint_refuses_a_field_it_does_not_name(
    client: httpx.Client, operator: str, method: str, route: str
) -> None:
    op = _DOC["paths"][route][method.lower()]
    for stranger in ("zz_unknown", "recursive_", "K", "maxTotal"):
        if stranger in _fields(op):
            continue
        r = _call(client, operator, method, route, {**_required(op), stranger: 1})
        assert r.status_code == 400, (stranger, r.text)
        assert r.json()["error"]["code"] == "unknown_field"
        _check_documented(op, r)


@pytest.mark.parametrize(
    ("method", "route"), [pytest.param(m, r, id=f"{m} {r}") for m, r, _ in _operations()]
)
def test_each_answer_is_one_the_document_lists(
    client: httpx.Client, operator: str, token: Token, method: str, route: str
) -> None:
    op = _DOC["paths"][route][method.lower()]
    for who in (operator, token("ana")):
        _check_documented(op, _call(client, who, method, route, _required(op)))
    _check_documented(op, _call(client, "not-a-token", method, route, _required(op)))
    if _required(op):
        _check_documented(op, _call(client, operator, method, route, {}))
