"""Tree operations: listing and searching the merged tree: ``list``, ``glob`` and ``grep``.

Each walks only what the principal may see: hidden entries are dropped by the guard before
they reach this module, directories it may not list are skipped, and grep reads a file only
through the guard, so a hidden file is never opened, counted or named.
"""

from __future__ import annotations

import asyncio
import builtins

from bastion.core.errors import (
    NoMountError,
    NotADirectoryError_,
    NotFoundError,
    ScopeError,
)
from bastion.core.globs import Glob
from bastion.core.guard import GuardContext
from bastion.core.listings import held_listings
from bastion.core.models import FileInfo
from bastion.core.paths import VPath
from bastion.labels.store import listings_reused
from bastion.workspace.grep import GrepResult, compile_matcher
from bastion.workspace.grep_run import GrepCall
from bastion.workspace.routing import Router, parse_in
from bastion.workspace.visible import visible_tree

__all__ = ["TreeOps"]


class TreeOps:
    """``list``, ``glob`` and ``grep`` over the merged tree of one router."""

    def __init__(self, router: Router) -> None:
        self._router = router
        self._ctx: GuardContext = router.ctx

    async def list(
        self,
        path: str | VPath = "/",
        *,
        recursive: bool = False,
        depth: int | None = None,
    ) -> builtins.list[FileInfo]:
        """Entries under ``path``. (see :meth:`Workspace.list`)"""
        max_depth = depth if depth is not None else (None if recursive else 1)
        with self._ctx.operation("list", path) as op, held_listings(max_depth):
            vp = parse_in(op, path)
            info = await self._router.stat(vp)
            if not info.is_dir:
                raise NotADirectoryError_(f"{vp} is a file; use stat or read")
            entries = [entry async for entry in self._router.walk(vp, max_depth, strict=True)]
            return sorted(entries, key=lambda e: e.path.parts)

    async def glob(
        self, pattern: str, *, path: str | VPath = "/", limit: int | None = None
    ) -> builtins.list[FileInfo]:
        """Entries matching a glob (``**/*.md``). (see :meth:`Workspace.glob`)"""
        with self._ctx.operation("glob", path) as op:
            base = parse_in(op, path)
            full = pattern if pattern.startswith("/") else f"{str(base).rstrip('/')}/{pattern}"
            compiled = Glob.compile(full)
            # "**" goes nearly everywhere: each trip may list a level below the one asked for
            with held_listings(1 if compiled.max_depth is None else 0):
                return await self._glob(compiled, limit)

    async def _glob(self, compiled: Glob, limit: int | None) -> builtins.list[FileInfo]:
        """Entries matching ``compiled``, the first ``limit`` the walk meets, in name order."""
        start = compiled.literal_prefix
        try:
            start_info = await self._router.stat(start)
        except (NotFoundError, ScopeError, NoMountError):
            return []
        if not start_info.is_dir:
            return [start_info] if compiled.matches(start) else []
        found: builtins.list[FileInfo] = []
        below = compiled.could_match_below
        wanted = compiled.matches

        # one walk of what the principal sees, each folder listed once, only the
        # entries the pattern may return labelled (``visible_tree``)
        tree = await visible_tree(
            self._router, start, wanted=wanted, below=below, named=compiled.name_pattern
        )
        walked = tree.pruned(start, below)
        for entry in walked:
            if wanted(entry.path):
                found.append(entry)
                if limit is not None and len(found) >= limit:
                    break
        return sorted(found, key=lambda i: i.path.parts)

    async def grep(
        self,
        pattern: str,
        path: str | VPath = "/",
        *,
        regex: bool = False,
        ignore_case: bool = False,
        context: int = 0,
        glob: str | None = None,
        max_per_file: int = 100,
        max_total: int = 1000,
    ) -> GrepResult:
        """Lines matching ``pattern`` in the files under ``path`` (see :meth:`Workspace.grep`)."""
        with self._ctx.operation("grep", path) as op, listings_reused():
            vp = parse_in(op, path)
            if regex:  # compiling RE2 holds the GIL for up to milliseconds: off the loop
                matcher = await asyncio.to_thread(
                    compile_matcher, pattern, regex=regex, ignore_case=ignore_case
                )
            else:
                matcher = compile_matcher(pattern, regex=regex, ignore_case=ignore_case)
            call = GrepCall(
                self._router,
                op,
                matcher,
                context=context,
                glob=glob,
                max_per_file=max_per_file,
                max_total=max_total,
            )
            return await call.run(vp)
