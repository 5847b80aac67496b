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

    async def call(self, name: object, arguments: object) -> str:
        """Run one call; its output as a JSON string. Never raises for what the model sent:
        malformed or hostile arguments (invalid JSON, numbers too long to convert, nesting
        too deep to parse, anything but an object) come back as a tool error."""
        if not isinstance(name, str) or name not in self.toolset:
            return dumps(await self.toolset.call(str(name)[:100], {}))  # "unknown tool ..."
        parsed = _arguments(name, arguments)
        if isinstance(parsed, str):
            return dumps(fail(parsed))
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


def _arguments(name: str, arguments: object) -> dict[str, Any] | str:
    """The call's arguments as a dict, or the one-line reason they cannot be read."""
    resend = f"arguments of {name} must be a JSON object of the tool's parameters; resend"
    if arguments is None:
        return {}
    if isinstance(arguments, str | bytes | bytearray):
        try:
            text = arguments if isinstance(arguments, str) else bytes(arguments).decode()
            parsed = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            return f"arguments of {name} are not valid JSON ({exc.msg}); resend"
        except UnicodeDecodeError:
            return f"arguments of {name} are not UTF-8 text; resend"
        except ValueError:  # an integer of more digits than Python converts
            return f"arguments of {name} hold a number too long to read; resend"
        except RecursionError:
            return f"arguments of {name} are nested too deeply to read; resend"
    elif isinstance(arguments, Mapping):
        parsed = arguments
    else:
        return resend
    if not isinstance(parsed, Mapping) or not all(isinstance(k, str) for k in parsed):
        return resend
    return dict(parsed)


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)
