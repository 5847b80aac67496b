"""grep, glob and a durable write over the peers tree, this tree against another revision.

Runs the Bastion calls of ``bench/peers.py`` (literal and regular-expression grep, ``**/*.yaml``
glob, a new file written durably) and the raw Python floor of each, in child processes: one
child per revision and round, alternating, so both see the same load. Prints the median of
each, and the ratios (after/before, and each against the raw floor).

    PYTHONPATH=src python bench/grep_scan.py --base HEAD~1 --rounds 7

``--engines`` instead times, over the same visible files and in one process, what a grep can
match them with once it has opened them confined (``LocalStore.open_confined``): Python over
the descriptors (the local lane), ``rg -l`` handed the same descriptors (``/dev/fd/N``,
``pass_fds``), and, for reference, ``rg`` given the folder (which resolves paths itself:
not confined). ``--rg`` names the binary (default: ``rg`` on ``PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _peer_tree as tree
from _children import before_after

OPS = ("grep_literal", "grep_regex", "glob", "write_new")
PAYLOAD = b"line one EDITME\n" + b"payload line\n" * 200


def raw_grep(root: Path, needle: str | None, regex: re.Pattern[str] | None = None) -> int:
    """The floor: every file read and matched line by line (no size limit, no labels)."""
    found = 0
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if path.stat().st_size > 10 * 1024 * 1024:
                continue  # as Bastion's size limit skips the big log
            text = path.read_bytes().decode("utf-8", "replace")
            if regex is None and needle not in text:  # type: ignore[operator]
                continue
            for line in text.splitlines():
                if regex.search(line) if regex is not None else needle in line:  # type: ignore[operator]
                    found += 1
    return found


def child(root: Path, scratch: Path, repeat: int, ops: list[str]) -> dict[str, dict[str, float]]:
    """One round in this process: each op ``repeat`` times, Bastion and raw alternating."""
    from bastion import Mount, Policy, Workspace
    from bastion.stores.local import LocalStore

    for sub in ("b", "r"):
        (scratch / sub).mkdir(parents=True, exist_ok=True)
    ws = Workspace(
        [
            Mount.of("/w", LocalStore(root)),
            Mount.of("/s", LocalStore(scratch / "b"), scope="read_write"),
        ],
        policy=Policy.allow_all(),
    )
    regex = re.compile(tree.REGEX)
    text = PAYLOAD.decode()
    counter = [0]

    def name() -> str:
        counter[0] += 1
        return f"f{counter[0]:06}.txt"

    async def bastion(op: str) -> None:
        if op == "grep_literal":
            await ws.grep(tree.LITERAL, "/w")
        elif op == "grep_regex":
            await ws.grep(tree.REGEX, "/w", regex=True)
        elif op == "glob":
            await ws.glob("**/*.yaml", path="/w")
        else:
            await ws.write(f"/s/{name()}", text)

    def raw(op: str) -> None:
        if op == "grep_literal":
            raw_grep(root, tree.LITERAL)
        elif op == "grep_regex":
            raw_grep(root, None, regex)
        elif op == "glob":
            list(root.glob("**/*.yaml"))
        else:
            tree.raw_durable_write(scratch / "r" / name(), PAYLOAD)

    async def run() -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for op in ops:
            await bastion(op)  # warm: caches, compiled pattern
            b: list[float] = []
            r: list[float] = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                await bastion(op)
                b.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                raw(op)
                r.append(time.perf_counter() - t0)
            out[op] = {"bastion": statistics.median(b), "raw": statistics.median(r)}
        return out

    return asyncio.run(run())


def engines(root: Path, rounds: int, rg: str) -> None:
    """Python over confined descriptors vs ripgrep over the same descriptors, interleaved."""
    from bastion import Mount, Policy, Workspace
    from bastion.core.paths import VPath
    from bastion.labels.store import listings_reused
    from bastion.stores.local import LocalStore
    from bastion.workspace.grep import Budget, compile_matcher
    from bastion.workspace.grep_local import local_lane
    from bastion.workspace.visible import visible_tree

    store = LocalStore(root)
    ws = Workspace([Mount.of("/w", store)], policy=Policy.allow_all())
    router, top = ws._router, VPath.parse("/w")
    lane = local_lane(router.guarded[top], 10 << 20)
    assert lane is not None

    async def listed() -> list[tuple[object, VPath]]:
        with listings_reused():
            files = (await visible_tree(router, top)).files(top)
        return [(f, router.route(f.path)[1]) for f in files]

    batch = asyncio.run(listed())
    matcher = compile_matcher(tree.LITERAL, regex=False, ignore_case=False)

    def python() -> int:
        done, _ = lane.search(batch, matcher, Budget(), 100)  # type: ignore[arg-type]
        return sum(1 for d in done if d.scan is not None and d.scan.hits)

    def rg_fds() -> int:
        fds = []
        try:
            for _entry, rel in batch:
                opened = store.open_confined(rel)
                if opened is None:
                    continue
                fd, st = opened
                if st.st_size > 10 << 20:
                    os.close(fd)
                    continue
                fds.append(fd)
            args = [rg, "--no-config", "-l", "-F", "--", tree.LITERAL]
            paths = [f"/dev/fd/{fd}" for fd in fds]
            out = subprocess.run(args + paths, pass_fds=fds, capture_output=True, check=False)
        finally:
            for fd in fds:
                os.close(fd)
        return len(out.stdout.splitlines())

    def rg_dir() -> int:
        args = [rg, "--no-config", "-l", "-F", "--max-filesize", "10M", "--", tree.LITERAL]
        out = subprocess.run([*args, str(root)], capture_output=True, check=False)
        return len(out.stdout.splitlines())

    runs = {"python over descriptors": python, "rg over descriptors": rg_fds}
    runs["rg over the folder (unconfined)"] = rg_dir
    found = {name: run() for name, run in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    print(f"{len(batch)} files; files matched: {found}")
    for name, got in times.items():
        print(f"{name:34} median {statistics.median(got) * 1e3:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="HEAD~1", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5, help="calls per op in one child")
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "peer-tree")
    parser.add_argument("--ops", default=",".join(OPS), help="which of " + ", ".join(OPS))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engines", action="store_true", help="Python vs rg over descriptors")
    parser.add_argument("--rg", default=shutil.which("rg") or "rg", help="the rg binary")
    opts = parser.parse_args()
    root = tree.build(opts.tree)
    if opts.engines:
        engines(root, opts.rounds, opts.rg)
        return
    if opts.child:
        scratch = Path(tempfile.mkdtemp(prefix="grep-scan-"))
        try:
            print(json.dumps(child(root, scratch, opts.repeat, opts.ops.split(","))))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    args = ["--child", "--repeat", str(opts.repeat), "--tree", str(opts.tree)]
    args += ["--ops", opts.ops]
    got: dict[str, list[dict[str, dict[str, float]]]] = before_after(
        __file__, opts.base, args, rounds=opts.rounds, prefix="grep-scan-src-"
    )
    print(
        f"{'op':14} {'before ms':>10} {'after ms':>9} {'raw ms':>7} {'after/before':>13} "
        f"{'before/raw':>11} {'after/raw':>10}"
    )
    for op in opts.ops.split(","):
        med = {label: statistics.median(x[op]["bastion"] for x in got[label]) for label in got}
        floor = statistics.median(x[op]["raw"] for label in got for x in got[label])
        print(
            f"{op:14} {med['before'] * 1e3:10.1f} {med['after'] * 1e3:9.1f} {floor * 1e3:7.1f} "
            f"{med['after'] / med['before']:13.2f} {med['before'] / floor:11.2f} "
            f"{med['after'] / floor:10.2f}"
        )


if __name__ == "__main__":
    main()
