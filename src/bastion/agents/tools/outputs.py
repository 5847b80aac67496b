"""Tool outputs a model reads well: flat, small, and cut with a clear marker.

Every output is one flat JSON object: ``success`` first, then either ``error`` (one line) or
the data fields at the top level (``content``, ``files``, ``total_found``...), never wrapped
in a ``data`` object (PackFS found that nested outputs confuse models). Text longer than the
session's cap is cut at a line boundary with a marker that says how much was cut and what to
do; a very large result is kept whole in the session's scratch (private to the session,
outside the workspace, so no other principal and no index ever sees it) and its path is
returned, to be paged with ``read_file``.
"""

from __future__ import annotations

import itertools
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from bastion.core.errors import NotFoundError, OperationError
from bastion.core.paths import VPath

__all__ = [
    "OutputLimits",
    "Scratch",
    "cut_at_line",
    "dumps",
    "fail",
    "fit_items",
    "fit_text",
    "ok",
    "one_line",
]

_MAX_ERROR_CHARS = 400


@dataclass(frozen=True, slots=True)
class OutputLimits:
    """Caps on what one tool call returns."""

    max_chars: int = 20_000
    """Longest text field of one output (about 5,000 tokens); longer text is cut."""
    read_lines: int = 500
    """Lines ``read_file`` returns when the call gives no ``limit``."""
    max_line_chars: int = 2_000
    """A longer line is cut in ``read_file`` output (with a marker)."""
    max_entries: int = 500
    """Entries a listing, a glob or a search shows before the rest goes to the scratch."""
    offload: bool = True
    """Keep cut results whole in the scratch (else the marker asks for a narrower call)."""
    scratch_items: int = 20
    """Results the scratch keeps; the oldest is dropped first."""
    scratch_chars: int = 20_000_000
    """Total characters the scratch keeps."""


def ok(**fields: Any) -> dict[str, Any]:
    """A successful output: ``success`` first, ``None`` fields left out."""
    out: dict[str, Any] = {"success": True}
    out.update((k, v) for k, v in fields.items() if v is not None)
    return out


def fail(message: str) -> dict[str, Any]:
    """A failed output: ``{"success": false, "error": "<one line>"}``."""
    return {"success": False, "error": one_line(message)}


def dumps(output: dict[str, Any]) -> str:
    """A tool output as the compact JSON string a model reads (what every adapter sends).
    Always encodable as UTF-8: text holding a lone surrogate (not text, so no transport can
    send it) is written with ``\\u`` escapes instead."""
    text = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    if text.isascii():  # known from the string's kind, without reading it
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(output, ensure_ascii=True, separators=(",", ":"))
    return text


def one_line(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class Scratch:
    """Results too large to return, kept whole for one session and read back by path.

    Paths look like ``/.tool-results/grep-3.txt``. Only the session that made a result can
    read it (the tools route those paths here, never to a mount).
    """

    PREFIX = VPath.parse("/.tool-results")

    def __init__(self, limits: OutputLimits) -> None:
        self._limits = limits
        self._items: OrderedDict[str, str] = OrderedDict()
        self._chars = 0
        self._numbers = itertools.count(1)

    def owns(self, path: str | VPath) -> bool:
        """True when ``path`` names a scratch result (parsed the way the workspace parses)."""
        try:
            vp = VPath.parse(path)
        except OperationError:  # a malformed path is the workspace's to report
            return False
        return vp.is_relative_to(self.PREFIX) and vp != self.PREFIX

    def put(self, tool: str, text: str) -> str:
        """Keep ``text``; its path."""
        path = str(self.PREFIX / f"{tool}-{next(self._numbers)}.txt")
        self._items[path] = text
        self._chars += len(text)
        while self._items and (
            len(self._items) > self._limits.scratch_items
            or self._chars > self._limits.scratch_chars
        ):
            _, dropped = self._items.popitem(last=False)
            self._chars -= len(dropped)
        return path

    def get(self, path: str) -> str:
        """The text kept at ``path``; :class:`NotFoundError` once it has been dropped."""
        key = str(VPath.parse(path))
        try:
            return self._items[key]
        except KeyError:
            raise NotFoundError(
                f"{key} not found; scratch results are kept for this session only (the "
                "oldest are dropped): run the tool again"
            ) from None


def cut_at_line(text: str, limit: int) -> str:
    """The longest head of ``text`` within ``limit`` characters that ends at a line end
    (or at ``limit`` when the first line alone is longer)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = head.rfind("\n")
    return head[: end + 1] if end > 0 else head


def fit_text(
    text: str,
    *,
    tool: str,
    limits: OutputLimits,
    scratch: Scratch,
    hint: str,
    key: str = "content",
) -> dict[str, Any]:
    """``{key: text}``, or, over the cap, the head of ``text`` with a marker that says how
    much was cut and where the whole result is (or, without offloading, ``hint``)."""
    if len(text) <= limits.max_chars:
        return {key: text}
    head = cut_at_line(text, limits.max_chars)
    cut = len(text) - len(head)
    if not limits.offload:
        return {key: f"{head}[... {cut} more characters cut; {hint}]", "truncated": True}
    path = scratch.put(tool, text)
    marker = (
        f"[... {cut} more characters cut; the whole result is in {path}: "
        "read it with read_file and offset/limit]"
    )
    return {key: head + marker, "truncated": True, "full_result": path}


def fit_items(
    items: list[Any],
    render: Any,
    *,
    tool: str,
    limits: OutputLimits,
    scratch: Scratch,
    key: str,
) -> dict[str, Any]:
    """``{key: items}``, or, past ``max_entries`` (or the character cap), the first items
    and the whole list, one ``render(item)`` per line, in the scratch."""
    shown: list[Any] = []
    size = 0
    for item in items:
        size += len(render(item)) + 4
        if len(shown) >= limits.max_entries or size > limits.max_chars:
            break
        shown.append(item)
    if len(shown) == len(items):
        return {key: items}
    out: dict[str, Any] = {key: shown, "truncated": True}
    if limits.offload:
        out["full_result"] = scratch.put(tool, "\n".join(render(i) for i in items) + "\n")
    return out
