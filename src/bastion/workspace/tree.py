"""Tree operations: listing and searching the merged tree: ``list``, ``glob`` and ``grep``.

Each walks only what the principal may see: hidden entries are dropped by the guard before
they reach this module, directories it may not list are skipped, and grep reads a file only
through the guard, so a hidden file is never opened, counted or named.
"""

from __future__ import annotations

import asyncio
import builtins

from bastion.core.errors import (
    LimitError,
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
from bastion.workspace.grep import Budget, GrepMatch, GrepResult, clip, compile_matcher
from bastion.workspace.routing import Router, parse_in
from bastion.workspace.visible import visible_tree

__all__ = ["TreeOps"]

_BINARY_SNIFF = 8192


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
        ahead = None if max_depth is None else max_depth
        with self._ctx.operation("list", path) as op, held_listings(ahead):
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

        def wanted(path: VPath) -> bool:
            return compiled.name_may_match(path.name) and compiled.matches(path)

        # one walk of what the principal sees, each folder listed once, only the
        # entries the pattern may return labelled (``visible_tree``)
        tree = await visible_tree(
            self._router, start, wanted=wanted, below=below, named=compiled.name_may_match
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
        context = max(context, 0)
        with self._ctx.operation("grep", path) as op, listings_reused():
            vp = parse_in(op, path)
            matcher = await asyncio.to_thread(
                compile_matcher, pattern, regex=regex, ignore_case=ignore_case
            )
            name_glob = (
                Glob.compile(glob if glob.startswith("/") else "/**/" + glob) if glob else None
            )
            info = await self._router.stat(vp)
            files = [info] if info.is_file else (await visible_tree(self._router, vp)).files(vp)
            matches: builtins.list[GrepMatch] = []
            skipped: builtins.list[str] = []
            searched = matched_files = total = 0
            truncated = exhausted = False
            budget = Budget()
            for entry in files:
                if name_glob is not None and not name_glob.matches(entry.path):
                    continue
                if budget.exhausted:
                    exhausted = True
                    break
                data, why = await self._grep_read(entry)
                if why:
                    skipped.append(f"{entry.path}: {why}")
                if data is None:
                    continue
                searched += 1
                if matcher.inline(data):
                    scan = matcher.scan(data, budget, max_per_file)
                else:  # off the event loop: RE2 releases the GIL, other callers keep running
                    scan = await asyncio.to_thread(matcher.scan, data, budget, max_per_file)
                lines, hits = scan.lines, scan.hits
                exhausted = scan.stopped
                if hits:
                    matched_files += 1
                    if len(hits) > max_per_file:
                        hits = hits[:max_per_file]
                        truncated = True
                    room = max_total - total
                    if len(hits) > room:
                        hits = hits[:room]
                        truncated = True
                    total += len(hits)
                    matches.extend(_with_context(str(entry.path), lines, hits, context))
                if exhausted:
                    break
                if total >= max_total:
                    truncated = truncated or entry is not files[-1]
                    break
            return GrepResult(
                tuple(matches),
                searched,
                matched_files,
                truncated or exhausted,
                tuple(skipped),
                budget_exhausted=exhausted,
            )

    async def _grep_read(self, entry: FileInfo) -> tuple[bytes | None, str]:
        """The bytes of one file to grep, or ``None`` and why it is skipped (``""``: silently,
        because the principal may not read it)."""
        cap = self._ctx.policy.limits.max_file_bytes
        too_big = f"over the {cap}-byte size limit"

        def small_enough(found: FileInfo) -> None:
            if found.size > cap:
                raise LimitError(too_big)

        if entry.size > cap:
            return None, too_big
        guarded, rel = self._router.route(entry.path)
        try:
            _, data = await guarded.read_file(rel, check=small_enough)
        except LimitError:
            return None, too_big
        except (NotFoundError, ScopeError):
            return None, ""
        if b"\x00" in data[:_BINARY_SNIFF]:
            return None, "binary"
        return data, ""


def _with_context(path: str, lines: list[str], hits: list[int], context: int) -> list[GrepMatch]:
    hit_set = set(hits)
    shown: list[int] = []
    for i in hits:
        for j in range(max(i - context, 0), min(i + context + 1, len(lines))):
            if not shown or j > shown[-1]:
                shown.append(j)
    return [GrepMatch(path, j + 1, clip(lines[j]), is_context=j not in hit_set) for j in shown]
