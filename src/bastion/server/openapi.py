"""The OpenAPI document of ``/v1``, served at ``/openapi.json`` (a stable path).

Generated from the endpoints (:class:`~bastion.server.handlers.Endpoint`) and the operations
they serve (:mod:`bastion.workspace.operations`): each query parameter and request body is the
JSON schema of the model that validates it, each answer the schema of the declared result, and
each error status one the operation's declared errors map to (:func:`status_for`). Nothing
here is written by hand but the error body and the upload form.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pydantic import BaseModel

from bastion.server.errors import status_for
from bastion.server.handlers import Endpoint

__all__ = ["all_endpoints", "openapi_document"]

_REF = "#/components/schemas/{model}"
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
_WHY = {
    400: "bad request: an unknown, missing or bad field (unknown_field, missing_field, "
    "bad_field, bad_json), an invalid path or pattern",
    401: "no token, or a token that was refused",
    403: "the mount's scope or the policy refused it",
    404: "not found (also what the principal may not see)",
    409: "conflict: a stale version, an existing target, a mode the index lacks",
    413: "over a size limit",
    422: "content that cannot be edited, labelled or read",
    429: "too many requests for this principal",
    502: "a store failed",
    503: "a store did not answer (the message names the mount)",
}
_UPLOAD = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
        "overwrite": {"type": "boolean"},
    },
    "required": ["path", "file"],
}


def all_endpoints() -> tuple[Endpoint, ...]:
    """Every endpoint of the API, in the order of the document."""
    from bastion.server import (
        oidc,
        routes_admin,
        routes_auth,
        routes_changes,
        routes_chat,
        routes_files,
        routes_knowledge,
        routes_overlay,
    )

    return (
        *routes_files.ENDPOINTS,
        *routes_knowledge.ENDPOINTS,
        *routes_admin.ENDPOINTS,
        *routes_changes.ENDPOINTS,
        *routes_overlay.ENDPOINTS,
        *routes_auth.ENDPOINTS,
        *routes_chat.ENDPOINTS,
        *oidc.ENDPOINTS,
    )


class _Schemas:
    """Models' JSON schemas, their shared parts gathered under ``components/schemas``."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {"Error": _ERROR}

    def of(self, model: type[BaseModel], mode: str = "validation") -> dict[str, Any]:
        schema = model.model_json_schema(ref_template=_REF, mode=mode)  # type: ignore[arg-type]
        self.defs.update(schema.pop("$defs", {}))
        return schema


def _statuses(e: Endpoint) -> list[int]:
    found = {400, *(status_for(cls) for cls in e.operation.errors)}
    if not e.public:
        found |= {401, 429}
    if e.method == "POST":
        found.add(413)
    return sorted(found)


def _operation(e: Endpoint, schemas: _Schemas) -> dict[str, Any]:
    op = e.operation
    content: dict[str, Any] = {
        "application/json": {"schema": schemas.of(op.result, "serialization")}
    }
    if e.path == "/v1/files/read":
        content["application/octet-stream"] = {"schema": {"type": "string", "format": "binary"}}
    if op.name == "ask":
        content["text/event-stream"] = {"schema": {"type": "string"}}
    answer = {"description": "OK", "content": content}
    doc: dict[str, Any] = {
        "operationId": f"{op.name}_{e.method.lower()}",
        "summary": op.summary,
        "responses": {
            str(e.status): answer,
            **{
                str(status): {
                    "description": _WHY.get(status, "error"),
                    "content": {
                        "application/json": {"schema": {"$ref": _REF.format(model="Error")}}
                    },
                }
                for status in _statuses(e)
            },
        },
        "security": [] if e.public else [{"bearer": []}],
    }
    if e.source == "query":
        schema = schemas.of(e.model)
        required = set(schema.get("required", ()))
        params = [
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "schema": {k: v for k, v in prop.items() if k != "description"},
                "description": prop.get("description", ""),
            }
            for name, prop in schema.get("properties", {}).items()
        ]
        if params:
            doc["parameters"] = params
    elif e.source == "body":
        doc["requestBody"] = {
            "required": bool(e.model.model_fields),
            "content": {"application/json": {"schema": schemas.of(e.model)}},
        }
    else:
        doc["requestBody"] = {
            "required": True,
            "content": {"multipart/form-data": {"schema": _UPLOAD}},
        }
    return doc


@functools.cache
def _paths() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    schemas = _Schemas()
    paths: dict[str, dict[str, Any]] = {}
    for e in all_endpoints():
        paths.setdefault(e.path, {})[e.method.lower()] = _operation(e, schemas)
    return paths, schemas.defs


def openapi_document() -> dict[str, Any]:
    from bastion.core.version import __version__

    paths, defs = copy.deepcopy(_paths())
    return {
        "openapi": "3.1.0",
        "info": {"title": "Bastion", "version": __version__},
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
