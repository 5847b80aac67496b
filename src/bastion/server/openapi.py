"""The OpenAPI document of ``/v1``, served at ``/openapi.json`` (a stable path).

Written as data next to the routes it describes; ``tests/server`` checks that every API route
is in it and every path in it is served.
"""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_document"]

_ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
}
_ERRORS = {
    str(status): {"description": why, "content": {"application/json": {"schema": _ERROR}}}
    for status, why in (
        (400, "bad request (invalid path, parameter or pattern)"),
        (401, "no token, or a token that was refused"),
        (403, "the mount's scope or the policy refused it"),
        (404, "not found (also what the principal may not see)"),
        (409, "conflict: a stale version, an existing target"),
        (413, "over a size limit"),
        (429, "too many requests for this principal"),
        (503, "a store did not answer (the message names the mount)"),
    )
}


def _q(name: str, kind: str = "string", required: bool = False, about: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "schema": {"type": kind},
        "description": about,
    }


def _body(**props: str) -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {k: {"type": v} for k, v in props.items()},
                }
            }
        },
    }


def _op(summary: str, **extra: Any) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {"200": {"description": "OK"}, **_ERRORS},
        "security": [{"bearer": []}],
    }
    op.update(extra)
    return op


_PATH = _q("path", required=True, about="workspace path, such as /docs/a.md")

_PATHS: dict[str, dict[str, Any]] = {
    "/v1/files": {
        "get": _op(
            "List a directory",
            parameters=[_q("path"), _q("recursive", "boolean"), _q("depth", "integer")],
        )
    },
    "/v1/files/stat": {"get": _op("Size, kind, time and version of an entry", parameters=[_PATH])},
    "/v1/files/read": {
        "get": _op(
            "Read lines (offset/limit: JSON) or bytes (start/end: octet-stream)",
            parameters=[
                _PATH,
                _q("offset", "integer", about="lines to skip"),
                _q("limit", "integer", about="lines to return"),
                _q("start", "integer", about="first byte"),
                _q("end", "integer", about="byte after the last"),
                _q("format", about="bytes: the whole file as bytes"),
            ],
        )
    },
    "/v1/files/write": {
        "post": _op(
            "Create, overwrite or append; if_version makes it conditional",
            requestBody=_body(
                path="string",
                content="string",
                mode="string",
                if_version="string",
                backup="boolean",
            ),
        )
    },
    "/v1/files/edit": {
        "post": _op(
            "Replace exact text",
            requestBody=_body(
                path="string",
                old="string",
                new="string",
                replace_all="boolean",
                if_version="string",
            ),
        )
    },
    "/v1/files/move": {
        "post": _op(
            "Move or rename", requestBody=_body(src="string", dst="string", overwrite="boolean")
        )
    },
    "/v1/files/copy": {
        "post": _op("Copy", requestBody=_body(src="string", dst="string", overwrite="boolean"))
    },
    "/v1/files/delete": {
        "post": _op("Delete", requestBody=_body(path="string", recursive="boolean"))
    },
    "/v1/files/mkdir": {
        "post": _op(
            "Make a directory",
            requestBody=_body(path="string", parents="boolean", exist_ok="boolean"),
        )
    },
    "/v1/files/glob": {
        "get": _op("Entries matching a glob", parameters=[_q("pattern", required=True), _q("path")])
    },
    "/v1/files/grep": {
        "get": _op(
            "Matching lines",
            parameters=[
                _q("pattern", required=True),
                _q("path"),
                _q("regex", "boolean"),
                _q("ignore_case", "boolean"),
                _q("context", "integer"),
                _q("glob"),
            ],
        )
    },
    "/v1/search": {
        "get": _op(
            "Search (bm25, vector, hybrid)",
            parameters=[_q("query", required=True), _q("mode"), _q("k", "integer"), _q("path")],
        ),
        "post": _op(
            "Search with filters",
            requestBody=_body(
                query="string", mode="string", k="integer", path="string", filter="object"
            ),
        ),
    },
    "/v1/ask": {
        "post": _op(
            "A governed answer with citations; Accept: text/event-stream streams events "
            "answer, citations, verification, done",
            requestBody=_body(question="string", k="integer", mode="string", path="string"),
        )
    },
    "/v1/ingest": {
        "post": _op(
            "Upload files (multipart: path, file...) into a folder; indexed before the answer",
            requestBody={
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string"},
                                "file": {
                                    "type": "array",
                                    "items": {"type": "string", "format": "binary"},
                                },
                                "overwrite": {"type": "boolean"},
                            },
                        }
                    }
                },
            },
        )
    },
    "/v1/index/status": {"get": _op("Index modes; the repair job's progress for operators")},
    "/v1/index/repair": {
        "post": _op(
            "Repair (or rebuild) the index: operators", requestBody=_body(rebuild="boolean")
        )
    },
    "/v1/audit": {
        "get": _op(
            "A page of audit records, newest last, and the cursor of the older page: operators",
            parameters=[
                _q("limit", "integer", about="records in the page: 1 to 1000 (default 100)"),
                _q("cursor", about="the 'next' of a previous page (absent: the newest)"),
            ],
        )
    },
    "/v1/me": {"get": _op("The principal of the token and the mounts it sees")},
    "/v1/auth/demo/users": {"get": _op("Demo users (when the demo login is on)", security=[])},
    "/v1/auth/demo": {
        "post": _op(
            "A token for a demo user (when the demo login is on)",
            requestBody=_body(user="string"),
            security=[],
        )
    },
    "/healthz": {"get": _op("Liveness", security=[])},
    "/readyz": {"get": _op("Readiness: every mount answers", security=[])},
}


def openapi_document() -> dict[str, Any]:
    from importlib.metadata import version

    return {
        "openapi": "3.1.0",
        "info": {"title": "Bastion", "version": version("bastion")},
        "paths": _PATHS,
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            }
        },
    }
