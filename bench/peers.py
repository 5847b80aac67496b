"""Bastion beside the file tools an agent builder would pick instead (issue 31), one command:

    .venv/bin/python bench/peers.py [--rounds N] [--cache DIR] [--append-docs]

Peers, each installed by this script into its own environment under ``--cache``
(default ``~/.cache/bastion-bench/peers``):

* **deepagents** (PyPI) ``FilesystemBackend``, in a virtual environment of its own with the
  ``ripgrep`` wheel, so its grep runs ``rg`` as it does when ripgrep is installed; driven by a
  worker process that times each call itself;
* the official **MCP filesystem server** (npm ``@modelcontextprotocol/server-filesystem``),
  ``npm install``-ed into the cache and driven over stdio by the MCP client SDK, as
  ``bastion mcp`` is;
* a **raw Python floor**: the same work with ``os``/``re``/``pathlib`` and no checks.

All on one generated tree (``bench/_peer_tree.py``: 2,020 files, 30 MB, and one 50 MB log),
interleaved: every round runs every operation once for every tool, in a rotating order. The
table shows medians and 95th percentiles over rounds, and each tool's ratio to Bastion
(above 1: that tool is slower). A peer that cannot be installed is reported as such.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _peer_tree as tree

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = ("EDITME\n" + "bastion peers benchmark line of text, 64 bytes long, writes.\n" * 70)[
    :4096
]
BINARY = ["--only-binary", "ripgrep"]
NPM_PACKAGE = "@modelcontextprotocol/server-filesystem"

# -- the deepagents worker: runs in its own environment, reads one JSON request per line ------

WORKER = r"""
import json, sys, time, os
SECRET = "OUTSIDE-SECRET"
from deepagents.backends.filesystem import FilesystemBackend
tree_root, scratch = sys.argv[1], sys.argv[2]
ro = FilesystemBackend(root_dir=tree_root, virtual_mode=True, max_file_size_mb=100)
rw = FilesystemBackend(root_dir=scratch, virtual_mode=True)
payload = sys.argv[3]
ops = {
    "grep_literal": lambda a: ro.grep(a["pattern"], "/"),
    "glob": lambda a: ro.glob(a["pattern"], "/"),
    "read_page": lambda a: ro.read(a["path"], 0, 100),
    "list_folder": lambda a: ro.ls(a["path"]),
    "write_new": lambda a: rw.write(a["path"], payload),
    "edit": lambda a: rw.edit(a["path"], "EDITME", "EDITED"),
    "delete": lambda a: rw.delete(a["path"]),
}
for line in sys.stdin:
    req = json.loads(line)
    if req["op"] == "race":
        escapes = 0
        for _ in range(req["reads"]):
            try:
                escapes += SECRET in str(ro.read(req["path"]))
            except Exception:
                pass
        print(json.dumps({"s": 0, "escapes": escapes}), flush=True)
        continue
    if req["op"] == "setup":
        with open(os.path.join(scratch, req["path"].lstrip("/")), "w") as f:
            f.write(payload)
        print(json.dumps({"s": 0}), flush=True)
        continue
    t0 = time.perf_counter()
    out = ops[req["op"]](req)
    s = time.perf_counter() - t0
    err = getattr(out, "error", None) if not isinstance(out, (str, list, dict)) else None
    print(json.dumps({"s": s, "error": str(err) if err else None}), flush=True)
"""


class Worker:
    """A peer's worker process: one JSON request, one JSON answer with its own timing."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, **req: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def call(self, **req: Any) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if answer.get("error"):
            raise RuntimeError(f"deepagents {req['op']}: {answer['error']}")
        return float(answer["s"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def install_deepagents(cache: Path) -> tuple[Path, str]:
    """A virtual environment with deepagents and the ripgrep wheel; its python and version."""
    env_dir = cache / "deepagents-venv"
    python = env_dir / "bin" / "python"
    probe = [str(python), "-c", "import deepagents"]
    if not python.exists() or subprocess.run(probe, check=False, capture_output=True).returncode:
        venv.create(env_dir, with_pip=True)
        subprocess.run(
            # the newest ripgrep is a Rust sdist: take the newest binary wheel
            [str(python), "-m", "pip", "install", "-q", "deepagents", "ripgrep", *BINARY],
            check=True,
        )
    version = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('deepagents'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return python, version


def install_mcp_server(cache: Path) -> tuple[Path, str]:
    """The MCP filesystem server installed with npm into the cache; its entry and version."""
    folder = cache / "npm"
    entry = folder / "node_modules" / NPM_PACKAGE / "dist" / "index.js"
    if not entry.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--silent", "--prefix", str(folder), NPM_PACKAGE], check=True
        )
    meta = json.loads((folder / "node_modules" / NPM_PACKAGE / "package.json").read_text())
    return entry, str(meta["version"])


# -- the raw floor ---------------------------------------------------------------------------


def raw_grep(root: Path, needle: str | None, regex: Any = None) -> int:
    found = 0
    for folder, _, files in os.walk(root):
        for name in files:
            text = (Path(folder) / name).read_bytes().decode("utf-8", "replace")
            if regex is None and needle not in text:
                continue
            for line in text.splitlines():
                if regex.search(line) if regex is not None else needle in line:  # type: ignore[operator]
                    found += 1
    return found


def raw_tail(path: Path, count: int) -> list[bytes]:
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        f.seek(max(end - 64 * 1024, 0))
        return f.read().splitlines()[-count:]


# -- the escape count: reads racing a symlink swap -------------------------------------------

SECRET = "OUTSIDE-SECRET"


class Swapper:
    """Swaps ``target`` between a regular file and a symbolic link to a secret outside the
    tree, as fast as it can, in a thread: a read that follows the link escapes the root."""

    def __init__(self, target: Path, outside: Path) -> None:
        import threading

        outside.parent.mkdir(parents=True, exist_ok=True)
        outside.write_text(SECRET + "\n")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("inside\n")
        self.target, self.outside = target, outside
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        link, plain = self.target.with_name(".l"), self.target.with_name(".f")
        while not self.stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(self.outside)
            link.replace(self.target)
            plain.write_text("inside\n")
            plain.replace(self.target)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


# -- MCP over stdio --------------------------------------------------------------------------


async def mcp_session_times(
    command: str, args: list[str], env: dict[str, str], calls: dict[str, tuple[str, dict]]
) -> dict[str, float]:
    """Start the server, time start -> first tools/list, then each call once."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        out["mcp_start"] = time.perf_counter() - t0
        for op, (tool, arguments) in calls.items():
            await session.call_tool(tool, arguments)  # warm
            t1 = time.perf_counter()
            result = await session.call_tool(tool, arguments)
            out[op] = time.perf_counter() - t1
            if getattr(result, "is_error", None) or getattr(result, "isError", None):
                raise RuntimeError(f"{command} {tool}: {result.content}")
    return out


# -- the run ---------------------------------------------------------------------------------


OPS = [
    ("grep_literal", "grep a literal over the tree (60 lines)"),
    ("grep_regex", "grep a regular expression (60 lines)"),
    ("glob", "glob `**/*.yaml` (109 of 2,020)"),
    ("read_page", "read 100 lines of a 15 KB file"),
    ("tail", "last 100 lines of the 50 MB file"),
    ("list_folder", "list a folder of 50 files"),
    ("write_new", "write a new 4 KiB file (durable)"),
    ("edit", "edit a 4 KiB file (durable)"),
    ("move", "move a file"),
    ("delete", "delete a file"),
    ("mcp_tail", "last 100 lines of the 50 MB file, over MCP"),
    ("mcp_list", "list a folder of 50 files, over MCP"),
    ("mcp_start", "MCP server start to first `tools/list`"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--mcp-rounds", type=int, default=5)
    parser.add_argument("--race-reads", type=int, default=2000, help="0: no escape count")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/bastion-bench/peers")
    parser.add_argument("--append-docs", action="store_true", help="append to docs/benchmarks.md")
    opts = parser.parse_args()
    cache: Path = opts.cache
    cache.mkdir(parents=True, exist_ok=True)
    root = tree.build(cache / "tree")
    scratch = cache / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    for sub in ("bastion", "raw", "deepagents"):
        (scratch / sub).mkdir(parents=True)

    import re

    from bastion import Mount, Policy, Workspace
    from bastion.stores.local import LocalStore

    ws = Workspace(
        [
            Mount.of("/w", LocalStore(root)),
            Mount.of("/s", LocalStore(scratch / "bastion"), scope="read_write"),
        ],
        policy=Policy.allow_all(),
    )
    versions: dict[str, str] = {"python": platform.python_version()}
    notes: list[str] = []
    try:
        da_python, versions["deepagents"] = install_deepagents(cache)
        worker_file = cache / "deepagents_worker.py"
        worker_file.write_text(WORKER)
        env = dict(os.environ, PATH=f"{da_python.parent}:{os.environ.get('PATH', '')}")
        da: Worker | None = Worker(
            [str(da_python), str(worker_file), str(root), str(scratch / "deepagents"), PAYLOAD],
            env,
        )
    except (subprocess.CalledProcessError, OSError) as exc:
        da = None
        notes.append(f"deepagents could not be installed here: {exc}")
    try:
        mcp_entry, versions["server-filesystem"] = install_mcp_server(cache)
        versions["node"] = subprocess.run(
            ["node", "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (subprocess.CalledProcessError, OSError, KeyError) as exc:
        mcp_entry = None  # type: ignore[assignment]
        notes.append(f"the MCP filesystem server could not be installed here: {exc}")

    regex = re.compile(tree.REGEX)
    page_file = next(n for n in tree.names() if n.endswith(".md"))
    big = root / tree.BIG_FILE
    times: dict[tuple[str, str], list[float]] = {}
    counter = [0]

    def record(op: str, tool: str, seconds: float) -> None:
        times.setdefault((op, tool), []).append(seconds)

    def timed(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    async def atimed(coro: Awaitable[Any]) -> float:
        t0 = time.perf_counter()
        await coro
        return time.perf_counter() - t0

    def fresh() -> str:
        counter[0] += 1
        return f"f{counter[0]:06}.txt"

    async def one_round(r: int) -> None:
        tools = ["bastion", "raw", "deepagents"]
        tools = tools[r % 3 :] + tools[: r % 3]
        for op, _ in OPS:
            if op.startswith("mcp_"):
                continue
            for tool in tools:
                if tool == "deepagents" and da is None:
                    continue
                s = await run_op(op, tool)
                if s is not None:
                    record(op, tool, s)

    async def run_op(op: str, tool: str) -> float | None:
        if tool == "bastion":
            if op == "grep_literal":
                return await atimed(ws.grep(tree.LITERAL, "/w"))
            if op == "grep_regex":
                return await atimed(ws.grep(tree.REGEX, "/w", regex=True))
            if op == "glob":
                return await atimed(ws.glob("**/*.yaml", path="/w"))
            if op == "read_page":
                return await atimed(ws.read_lines(f"/w/{page_file}", limit=100))
            if op == "tail":
                return await atimed(ws.read_lines(f"/w/{tree.BIG_FILE}", offset=-100))
            if op == "list_folder":
                return await atimed(ws.list(f"/w/{tree.LIST_FOLDER}"))
            name = fresh()
            if op == "write_new":
                return await atimed(ws.write(f"/s/{name}", PAYLOAD))
            await ws.write(f"/s/{name}", PAYLOAD)
            if op == "edit":
                return await atimed(ws.edit(f"/s/{name}", "EDITME", "EDITED"))
            if op == "move":
                return await atimed(ws.move(f"/s/{name}", f"/s/m{name}"))
            if op == "delete":
                return await atimed(ws.delete(f"/s/{name}"))
        if tool == "raw":
            base = scratch / "raw"
            if op == "grep_literal":
                return timed(lambda: raw_grep(root, tree.LITERAL))
            if op == "grep_regex":
                return timed(lambda: raw_grep(root, None, regex))
            if op == "glob":
                return timed(lambda: list(root.glob("**/*.yaml")))
            if op == "read_page":
                return timed(lambda: (root / page_file).read_text().splitlines()[:100])
            if op == "tail":
                return timed(lambda: raw_tail(big, 100))
            if op == "list_folder":
                return timed(lambda: [e.stat() for e in os.scandir(root / tree.LIST_FOLDER)])
            path = base / fresh()
            if op == "write_new":
                return timed(lambda: tree.raw_durable_write(path, PAYLOAD.encode()))
            tree.raw_durable_write(path, PAYLOAD.encode())
            if op == "edit":
                return timed(
                    lambda: tree.raw_durable_write(
                        path, path.read_bytes().replace(b"EDITME", b"EDITED", 1)
                    )
                )
            # a durable move or delete fsyncs the folder, as Bastion's local store does
            if op == "move":
                return timed(lambda: tree.raw_durable_move(path, path.with_name("m" + path.name)))
            if op == "delete":
                return timed(lambda: tree.raw_durable_delete(path))
        if tool == "deepagents" and da is not None:
            if op == "grep_literal":
                return da.call(op=op, pattern=tree.LITERAL)
            if op == "glob":
                return da.call(op=op, pattern="**/*.yaml")
            if op == "read_page":
                return da.call(op=op, path=f"/{page_file}")
            if op == "list_folder":
                return da.call(op=op, path=f"/{tree.LIST_FOLDER}")
            name = f"/{fresh()}"
            if op == "write_new":
                return da.call(op=op, path=name)
            if op in ("edit", "delete"):
                da.call(op="setup", path=name)
                return da.call(op=op, path=name)
        return None  # not offered by that tool (deepagents: no regex grep, tail or move)

    async def mcp_round() -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        big_virtual = f"/w/{tree.BIG_FILE}"
        bastion_calls = {
            "mcp_tail": ("read_file", {"path": big_virtual, "offset": -100}),
            "mcp_list": ("list_files", {"path": f"/w/{tree.LIST_FOLDER}"}),
        }
        found = await mcp_session_times(
            sys.executable,
            ["-m", "bastion.cli", "mcp", "--mount", f"/w={root}"],
            env,
            bastion_calls,
        )
        for op, s in found.items():
            record(op, "bastion", s)
        if mcp_entry is not None:
            peer_calls = {
                "mcp_tail": ("read_text_file", {"path": str(big), "tail": 100}),
                "mcp_list": ("list_directory", {"path": str(root / tree.LIST_FOLDER)}),
            }
            found = await mcp_session_times("node", [str(mcp_entry), str(root)], env, peer_calls)
            for op, s in found.items():
                record(op, "mcp-filesystem", s)

    escapes: dict[str, str] = {}

    async def race() -> None:
        """Each tool reads a path inside its root while it is swapped with a link to a file
        outside; every read that returns the outside file's bytes is an escape."""
        target = root / "race" / "target.txt"
        reads = opts.race_reads
        with Swapper(target, cache / "outside" / "secret.txt"):
            found = inside = 0
            for _ in range(reads):
                try:
                    text = await ws.read_text("/w/race/target.txt")
                except Exception:  # a refused or missing read is no escape
                    continue
                found += SECRET in text
                inside += text == "inside\n"
            escapes["bastion"] = f"{found} of {reads} ({inside} read the file inside)"
            if da is not None:
                answer = da.ask(op="race", path="/race/target.txt", reads=reads)
                escapes["deepagents"] = f"{answer['escapes']} of {reads}"
            if mcp_entry is not None:
                from mcp import ClientSession, StdioServerParameters
                from mcp.client.stdio import stdio_client

                params = StdioServerParameters(command="node", args=[str(mcp_entry), str(root)])
                async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
                    await session.initialize()
                    found = 0
                    for _ in range(reads):
                        result = await session.call_tool("read_text_file", {"path": str(target)})
                        found += any(SECRET in getattr(c, "text", "") for c in result.content)
                    escapes["mcp-filesystem"] = f"{found} of {reads}"
        shutil.rmtree(root / "race")

    async def run_all() -> None:
        await one_round(0)  # warm-up, not recorded
        times.clear()
        for r in range(opts.rounds):
            await one_round(r)
        for _ in range(opts.mcp_rounds):
            await mcp_round()
        if opts.race_reads:
            await race()

    asyncio.run(run_all())
    if escapes:
        notes.append(
            "Escapes (reads of a path inside the root that returned a file outside it, while "
            "a thread swapped the path with a symbolic link): "
            + ", ".join(f"{tool} {count}" for tool, count in escapes.items())
            + "."
        )
    if da is not None:
        da.close()
    text = report(times, versions, notes, opts)
    print(text)
    if opts.append_docs:
        with (ROOT / "docs" / "benchmarks.md").open("a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def report(
    times: dict[tuple[str, str], list[float]],
    versions: dict[str, str],
    notes: list[str],
    opts: argparse.Namespace,
) -> str:
    peers = ["raw", "deepagents", "mcp-filesystem"]
    machine = (
        f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"
    )
    lines = [
        f"## Peers (issue 31), {time.strftime('%Y-%m-%d')}",
        "",
        f"`bench/peers.py --rounds {opts.rounds} --mcp-rounds {opts.mcp_rounds}`; machine: "
        f"{machine}; versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".",
        "Medians (p95) in ms over interleaved rounds; ratio = peer median / Bastion median "
        "(below 1: the peer is faster). Raw = plain `os`/`re`/`pathlib`, no checks; its "
        "write, edit, move and delete are durable as Bastion's are (fsync of the file, and of "
        "the folder after the rename, link or unlink).",
        "",
        "| operation | Bastion | raw | deepagents | MCP filesystem server |",
        "|---|---:|---:|---:|---:|",
    ]
    for op, label in OPS:
        mine = times.get((op, "bastion"))
        if not mine:
            continue
        b_med, b_p95 = _ms(mine)
        cells = [f"{b_med:.2f} ({b_p95:.2f})"]
        for peer in peers:
            theirs = times.get((op, peer))
            if not theirs:
                cells.append("—")
                continue
            med, p95 = _ms(theirs)
            cells.append(f"{med:.2f} ({p95:.2f}), x{med / b_med:.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for note in notes:
        lines.append(f"\n{note}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
