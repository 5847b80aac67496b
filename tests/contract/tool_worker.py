"""A child process that increments one large counter file through the agent tools'
session, for ``test_lost_updates_tool_processes``.

Run as ``python tool_worker.py SPEC`` (the JSON of ``cas_worker``'s specs plus ``"rounds"``
and ``"lines"``). It opens its own store (:func:`cas_worker.open_store`) under a workspace,
prints ``ready``, waits for a line on stdin, then ``rounds`` times: reads the whole counter
with the read tool's page (:meth:`ToolSession.read_page`, a page over 64 KiB: read in
chunks; read again when it kept changing while read), checks that every line holds one value (a torn page would not), and adds one by the
tool's ``edit`` (odd rounds) or ``write`` (even rounds), retrying on a stale refusal. It
prints ``ack V`` once the change to ``V`` returned, and ``done`` at the end. Any other failure
ends it with a one-line reason on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bastion import Mount, Policy, Principal, Workspace
from bastion.agents.tools.session import StaleFileError, ToolSession
from bastion.core.errors import ConflictError
from bastion.core.paths import VPath

if __package__:
    from .cas_worker import close_store, open_store
else:  # run as a script, with this folder on the path
    from cas_worker import close_store, open_store  # type: ignore[import-not-found,no-redef]

__all__ = ["body", "value_of"]


def body(value: int, lines: int) -> str:
    return f"n={value};\n" * lines


def value_of(text: str, lines: int) -> int:
    """The value of a whole counter; ``ValueError`` for a torn or mixed one."""
    rows = text.split("\n")
    if len(rows) != lines + 1 or rows[-1] or len(set(rows[:-1])) != 1:
        raise ValueError(f"torn counter page: {len(text)} chars, {len(set(rows))} distinct rows")
    return int(rows[0].removeprefix("n=").removesuffix(";"))


async def _main(spec: dict[str, Any]) -> None:
    store = open_store(spec)
    ws = Workspace([Mount.of("/m", store)], policy=Policy.allow_all(), principal=Principal.of("a"))
    session = ToolSession(ws)
    path = VPath.parse("/m" + spec["counter"])
    lines = int(spec["lines"])
    try:
        print("ready", flush=True)
        sys.stdin.readline()
        done = 0
        while done < int(spec["rounds"]):
            try:
                page = await session.read_page(path, 0, lines + 10)
            except ConflictError:  # it kept changing while it was read: read it again
                continue
            k = value_of(page.text, lines)
            try:
                if done % 2:
                    await session.edit(path, f"n={k};", f"n={k + 1};", replace_all=True)
                else:
                    await session.write(path, body(k + 1, lines))
            except (StaleFileError, ConflictError):
                continue
            done += 1
            print(f"ack {k + 1}", flush=True)
        print("done", flush=True)
    finally:
        await close_store(store)


if __name__ == "__main__":
    try:
        asyncio.run(_main(json.loads(sys.argv[1])))
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
