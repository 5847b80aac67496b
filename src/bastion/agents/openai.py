"""OpenAI function calling: the tool set's schemas in OpenAI's shapes, and a dispatcher.

Conversion only: each tool's name, description and compact JSON schema come from its one
definition. The dispatcher takes what the model sent (a tool name and its arguments as a JSON
string), validates the arguments against the tool's input model, runs the tool and returns
its output as a compact JSON string. Nothing the model sends makes it raise: malformed JSON,
an unknown tool, a bad argument or a refusal all come back as a one-line
``{"success":false,"error":"..."}`` for the model to read and correct.

No OpenAI package is needed: the shapes are plain dictionaries, and responses from the
official client (objects with attributes) are read as well as dictionaries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from bastion.agents.tools.outputs import dumps, fail
from bastion.agents.tools.toolset import Toolset

__all__ = ["OpenAITools", "dumps"]


class OpenAITools:
    """A :class:`Toolset` for the OpenAI Chat Completions and Responses APIs."""

    def __init__(self, toolset: Toolset) -> None:
        self.toolset = toolset

    def definitions(self, api: Literal["chat", "responses"] = "chat") -> list[dict[str, Any]]:
        """The ``tools=`` list: ``{"type": "function", "function": {...}}`` items for Chat
        Completions, flat ``{"type": "function", "name": ...}`` items for Responses."""
        if api == "responses":
            return [{"type": "function", **schema} for schema in self.toolset.schemas()]
        return [{"type": "function", "function": schema} for schema in self.toolset.schemas()]

    async def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> str:
        """Run one call; its output as a JSON string (never raises for the model's input)."""
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return dumps(fail(f"arguments of {name} are not valid JSON ({exc.msg}); resend"))
        else:
            parsed = dict(arguments or {})
        if not isinstance(parsed, dict):
            return dumps(fail(f"arguments of {name} must be a JSON object"))
        return dumps(await self.toolset.call(name, parsed))

    async def handle(self, tool_call: Any) -> dict[str, Any]:
        """A Chat Completions ``tool_call`` (a dict or the client's object) in, the
        ``{"role": "tool", ...}`` message to append out."""
        function = _field(tool_call, "function")
        content = await self.call(
            str(_field(function, "name")), _field(function, "arguments", default="")
        )
        return {"role": "tool", "tool_call_id": _field(tool_call, "id"), "content": content}

    async def handle_responses(self, item: Any) -> dict[str, Any]:
        """A Responses ``function_call`` item in, its ``function_call_output`` item out."""
        output = await self.call(str(_field(item, "name")), _field(item, "arguments", default=""))
        return {
            "type": "function_call_output",
            "call_id": _field(item, "call_id"),
            "output": output,
        }


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)
