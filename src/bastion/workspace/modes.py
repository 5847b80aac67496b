"""The search modes, and the one choice of the default one (no third-party import: the
workspace facade uses it without loading the declarations' pydantic models)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["MODES", "SearchModeName", "search_mode"]

SearchModeName = Literal["bm25", "vector", "hybrid"]
MODES: tuple[str, ...] = ("bm25", "vector", "hybrid")
"""Every search mode, in the order the index offers them."""


def search_mode(asked: str | None, offered: Sequence[str]) -> str:
    """The search mode of a call: ``asked`` when given, else ``hybrid`` where the index offers
    it, else ``bm25`` (a keyword-only index). The one place the default is chosen: the
    workspace, the HTTP API, the agent tools and the CLI all pass ``None`` for "the default"."""
    if asked is not None:
        return asked
    return "hybrid" if "hybrid" in offered else "bm25"
