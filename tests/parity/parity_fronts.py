"""The front ends of the parity suite, and the two worlds they are driven in.

:data:`FRONTS` is the table of front ends: a name (also its lane) and its driver class.
:class:`Worlds` makes both worlds once per module and opens each front end's driver in each
world when first asked (the servers and subprocesses they need with it), and closes
everything at the end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from parity_edges import (
    Cli,
    CliOperator,
    HttpApi,
    HttpOperator,
    McpCliHttp,
    McpServerHttp,
    McpStdio,
    WebPage,
    WebPageOperator,
    serving,
)
from parity_library import (
    Driver,
    IntentTools,
    LangChain,
    McpInProcess,
    OpenAI,
    PydanticAI,
    PythonAsync,
    PythonOperator,
    PythonSync,
)
from parity_support import Loop
from parity_web_app import WebApp
from parity_world import Tokens, World, make_world

FRONTS: Mapping[str, type[Driver]] = {
    "python-async": PythonAsync,
    "python-sync": PythonSync,
    "intent-tools": IntentTools,
    "langchain": LangChain,
    "pydantic-ai": PydanticAI,
    "openai": OpenAI,
    "mcp-inprocess": McpInProcess,
    "mcp-stdio": McpStdio,
    "mcp-http": McpServerHttp,
    "mcp-cli-http": McpCliHttp,
    "http-api": HttpApi,
    "web-page": WebPage,
    "cli": Cli,
    "python-operator": PythonOperator,
    "http-operator": HttpOperator,
    "web-page-operator": WebPageOperator,
    "web-app": WebApp,
    "cli-operator": CliOperator,
}
"""Every front end, by name; the name is also the front end's lane in the worlds."""

SERVED = frozenset(
    {"mcp-http", "http-api", "web-page", "http-operator", "web-page-operator", "web-app"}
)
"""Front ends that reach the world through its server."""

FIXED_TIME = 1_767_225_600  # 2026-01-01: every seeded entry's time, in both worlds


def _same_times(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            os.utime(os.path.join(folder, name), (FIXED_TIME, FIXED_TIME))
    os.utime(root, (FIXED_TIME, FIXED_TIME))


class Worlds:
    """Both worlds, with the drivers opened in them so far."""

    def __init__(self, base: Path) -> None:
        self.loop = Loop()
        self.tokens = Tokens()
        self.worlds = {
            name: make_world(base / name, full=name == "full", lanes=FRONTS)
            for name in ("full", "bare")
        }
        for world in self.worlds.values():
            for folder in ("docs", "drop", "board"):
                _same_times(world.root / folder)
        self._stack = contextlib.ExitStack()
        self._urls: dict[str, str] = {}
        self._drivers: dict[tuple[str, str], Driver] = {}

    def url(self, world: World) -> str:
        if world.name not in self._urls:
            self._urls[world.name] = self._stack.enter_context(serving(world, self.tokens))
        return self._urls[world.name]

    def driver(self, front: str, world_name: str) -> Driver:
        key = (front, world_name)
        if key not in self._drivers:
            world = self.worlds[world_name]
            cls = FRONTS[front]
            make: Callable[..., Driver] = cls
            extra: dict[str, Any] = {}
            if front in SERVED:
                extra = {"url": self.url(world), "token": self.tokens.token(cls.user)}
            self._drivers[key] = make(world, self.loop, front, **extra)
        return self._drivers[key]

    def close(self) -> None:
        try:
            for driver in self._drivers.values():
                driver.close()
            self._stack.close()
        finally:
            self.loop.close()
