"""Sandbox figures: ``run("true")`` against raw bubblewrap and raw ``subprocess`` in the same
run, view set-up time against the size of the visible tree (copied or bound), and the
write-back: the diff of an unchanged view and the cost per changed file.

    .venv/bin/python bench/sandbox_view.py [--sizes 100,10000,100000] [--repeat 20]
        [--copy-max 100000] [--changed 1,10,100,1000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, Rule, Workspace
from bastion.sandbox.bwrap import bwrap_binary, command_line, sandbox_ids
from bastion.sandbox.view import diff, materialize
from bastion.sandbox.writeback import write_back

POLICY = Policy(rules=(Rule.allow("execute", "/**"), Rule.allow("*", "/**")))
WHO = Principal.of("bench", clearance="internal")


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.1f} ms"


async def _latency(repeat: int) -> None:
    ws = Workspace([Mount.of("/scratch", MemoryStore())], policy=POLICY, principal=WHO)
    await ws.write("/scratch/a.txt", "x")
    empty = Path(tempfile.mkdtemp(prefix="bastion-bench-"))
    empty.chmod(0o755)
    for name in ("usr", "proc", "dev", "tmp"):
        (empty / name).mkdir()
    ids = sandbox_ids()
    if ids is not None:
        for path in (empty, *empty.iterdir()):
            os.chown(path, *ids)
    raw = command_line(bwrap_binary(), empty, [], {}, ["true"], "/", {})
    rows = {
        "subprocess true": lambda: subprocess.run(["true"], check=True),
        "raw bwrap true": lambda: subprocess.run(
            raw, check=True, user=ids and ids[0], group=ids and ids[1], extra_groups=ids and []
        ),
    }
    for label, call in rows.items():
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            call()
            times.append(time.perf_counter() - t)
        print(f"{label:32} {_ms(times)}")
    for label, cmd in (
        ("Workspace.run true", ["true"]),
        ("Workspace.run python -c", ["python3", "-c", "print(1)"]),
    ):
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            result = await ws.run(cmd)
            times.append(time.perf_counter() - t)
            assert result.exit_code == 0, result
        print(f"{label:32} {_ms(times)}")
    shutil.rmtree(empty)


def _tree(root: Path, files: int) -> None:
    for i in range(files):
        folder = root / f"d{i // 100:04d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:06d}.txt").write_text(f"file {i} " * 20)


async def _setup(sizes: list[int], copy_max: int) -> None:
    print(f"{'visible files':>14} {'copied (memory)':>16} {'local copied':>14} {'local bound':>14}")
    for n in sizes:
        base = Path(tempfile.mkdtemp(prefix="bastion-bench-"))
        base.chmod(0o755)
        corpus = base / "corpus"
        corpus.mkdir()
        _tree(corpus, n)
        mem = MemoryStore()
        owner = Workspace([Mount.of("/m", mem)], policy=POLICY)
        for path in sorted(corpus.rglob("*.txt")):
            await owner.write("/m/" + str(path.relative_to(corpus)), path.read_bytes())
        cases = {
            "memory": Workspace([Mount.of("/m", mem)], policy=POLICY, principal=WHO),
            "bound": Workspace(
                [Mount.of("/c", LocalStore(corpus), scope="read_only")],
                policy=POLICY,
                principal=WHO,
            ),
        }
        hidden = base / "hidden"
        shutil.copytree(corpus, hidden)
        (hidden / "secret.md").write_text("---\nclassification: restricted\n---\nx\n")
        cases["copied"] = Workspace(
            [Mount.of("/c", LocalStore(hidden), scope="read_only")], policy=POLICY, principal=WHO
        )
        out: dict[str, float] = {}
        for label, ws in cases.items():
            if label != "bound" and n > copy_max:
                out[label] = float("nan")
                continue
            view = base / f"view-{label}"
            view.mkdir()
            t = time.perf_counter()
            snap = await materialize(ws, view, None)
            out[label] = time.perf_counter() - t
            assert bool(snap.bound) == (label == "bound"), label
            snap.close()
        print(
            f"{n:>14} {out['memory'] * 1000:>13.0f} ms {out['copied'] * 1000:>11.0f} ms "
            f"{out['bound'] * 1000:>11.0f} ms"
        )
        shutil.rmtree(base)


async def _write_back(changed: list[int], files: int) -> None:
    """A view of ``files`` files (memory store); the command's work is simulated by changing
    ``k`` files in the view on the host, then the diff and the guarded write-back are timed."""
    print(f"\nwrite-back over a view of {files} files (memory store)")
    print(f"{'changed files':>14} {'diff':>10} {'write-back':>12} {'per changed file':>18}")
    mem = MemoryStore()
    owner = Workspace([Mount.of("/m", mem)], policy=POLICY)
    for i in range(files):
        await owner.write(f"/m/d{i // 100:04d}/f{i:06d}.txt", f"file {i} " * 20)
    ws = owner.with_principal(WHO)
    for k in [0, *changed]:
        base = Path(tempfile.mkdtemp(prefix="bastion-bench-"))
        view = base / "view"
        view.mkdir()
        snap = await materialize(ws, view, None)
        for i in range(k):
            (view / "m" / f"d{i // 100:04d}" / f"f{i:06d}.txt").write_text(f"round {k}: {i}\n")
        t = time.perf_counter()
        changes = diff(snap)
        t_diff = time.perf_counter() - t
        assert len(changes) == k, (k, len(changes))
        t = time.perf_counter()
        applied = await write_back(ws, changes)
        t_back = time.perf_counter() - t
        assert len(applied.changed) == k and not applied.refused
        per = f"{t_back / k * 1000:>15.2f} ms" if k else f"{'':>18}"
        print(f"{k:>14} {t_diff * 1000:>7.0f} ms {t_back * 1000:>9.0f} ms {per}")
        snap.close()
        shutil.rmtree(base)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--copy-max", type=int, default=100_000, help="skip the copied cases above this size"
    )
    parser.add_argument("--changed", default="1,10,100,1000")
    parser.add_argument("--view-files", type=int, default=10_000)
    args = parser.parse_args()
    asyncio.run(_latency(args.repeat))
    asyncio.run(_setup([int(s) for s in args.sizes.split(",")], args.copy_max))
    asyncio.run(_write_back([int(k) for k in args.changed.split(",")], args.view_files))


if __name__ == "__main__":
    main()
