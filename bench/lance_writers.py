"""Several processes writing one embedded LanceDB index at once (``LanceIndex``), at full size.

The workload is the one ``tests/knowledge/test_lance_writers.py`` checks at 4 x 30 writes:
each writer process writes new documents whole or by upsert, rewrites earlier ones at a new
version with other chunks, deletes some, and rewrites a few documents every writer shares.
Reported:

* ``concurrent``: ``--writers`` processes x ``--writes`` writes at once into one folder:
  writes/s (all writes over the wall time, process start-up included), and the check of a
  fresh open against what the plans make (chunks lost, duplicated, stale: of a deleted or
  superseded version; mirror disagreeing with the table);
* ``one process``: the same writes, one writer process after the other (the peer: what the
  lock costs and what running at once gains); the ratio is concurrent / one process;
* the table after the run: LanceDB versions, fragments, disk size, time to open a fresh
  ``LanceIndex`` (the mirror built), to open and read the table with LanceDB alone (raw
  open), and to read an opened table once (scan: what a refresh after another process's write
  reads), before and after ``optimize`` by hand (what compaction would still gain);
* ``kill``: the concurrent run again with the last writer ``SIGKILL``-ed halfway, right after
  the LanceDB commit of a rewrite, while it holds the lock; then ``--random-kills`` writers
  killed at a random moment each; the check must find every document whole at one version.

Run: ``.venv/bin/python bench/lance_writers.py`` (``--writers 4 --writes 1000``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "knowledge"))

import lancedb  # noqa: E402
from test_lance_writers import (  # noqa: E402
    check,
    expectations,
    open_index,
    outcome,
    plan,
    writer_main,
)


def _du(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _median_s(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _raw_open(folder: Path) -> None:
    lancedb.connect(str(folder)).open_table("chunks").to_arrow()


def table_figures(folder: Path) -> dict[str, Any]:
    table = lancedb.connect(str(folder)).open_table("chunks")
    stats = table.stats()
    return {
        "rows": stats["num_rows"],
        "versions": len(table.list_versions()),
        "fragments": stats["fragment_stats"]["num_fragments"],
        "disk MB": round(_du(folder) / 1e6, 1),
        "open ms": round(_median_s(lambda: open_index(folder).close()) * 1e3),
        "raw open ms": round(_median_s(lambda: _raw_open(folder)) * 1e3, 1),
        "scan ms": round(_median_s(table.to_arrow) * 1e3, 1),
    }


def _fresh(base: Path, name: str) -> Path:
    folder = base / name
    open_index(folder).close()
    return folder


def _start(folder: Path, writer: int, writes: int, hold: int | None = None, conn: Any = None):
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=writer_main, args=(str(folder), writer, writes, hold, conn))
    proc.start()
    return proc


def _join(procs: list[Any]) -> None:
    for proc in procs:
        proc.join()
        if proc.exitcode != 0:
            raise SystemExit(f"writer exited with {proc.exitcode}")


def concurrent(folder: Path, writers: int, writes: int) -> float:
    t0 = time.perf_counter()
    _join([_start(folder, n, writes) for n in range(writers)])
    return time.perf_counter() - t0


def one_process(folder: Path, writers: int, writes: int) -> float:
    t0 = time.perf_counter()
    for n in range(writers):
        _join([_start(folder, n, writes)])
    return time.perf_counter() - t0


def killed_run(folder: Path, writers: int, writes: int, random_kills: int) -> Any:
    ctx = multiprocessing.get_context("spawn")
    others = [_start(folder, n, writes) for n in range(writers - 1)]
    parent, child = ctx.Pipe()
    at = writes // 2 // 10 * 10 + 6  # a rewrite at a new version
    victim = _start(folder, writers - 1, writes, at, child)
    assert parent.recv() == "ready"
    parent.send("go")
    assert parent.recv() == "committed"
    os.kill(victim.pid, signal.SIGKILL)
    victim.join()
    _join(others)
    exact, allowed = expectations(writers, writes, killed=(writers - 1, at))
    # Writers killed at a random moment: each of their documents at a state some prefix of
    # their plan gives it (one version, whole), never anything else.
    rng = random.Random(7)
    for r in range(random_kills):
        writer = 100 + r
        proc = _start(folder, writer, writes)
        time.sleep(rng.uniform(3.0, 8.0))  # start-up takes ~2 s
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        ops = plan(writer, writes)
        for i in range(len(ops) + 1):
            for doc_id, state in outcome(ops[:i]).items():
                allowed.setdefault(doc_id, {None}).add(state)
    late = _start(folder, 99, 10)  # the next writer is not blocked; it writes last
    _join([late])
    for doc_id, state in outcome(plan(99, 10)).items():
        allowed.pop(doc_id, None)
        exact[doc_id] = state
    return check(folder, exact, allowed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--random-kills", type=int, default=3)
    parser.add_argument("--skip-one-process", action="store_true")
    args = parser.parse_args()
    n, w = args.writers, args.writes
    total = n * w
    print(f"{n} processes x {w} writes ({total} writes), LanceIndex dim 8")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folder = _fresh(base, "concurrent")
        wall = concurrent(folder, n, w)
        result = check(folder, *expectations(n, w))
        print(f"concurrent: {total / wall:.1f} writes/s ({wall:.1f} s)")
        print(
            f"  check: ok={result.ok} rows={result.rows} lost={len(result.lost)} "
            f"duplicated={len(result.duplicated)} stale={len(result.stale)} "
            f"mirror={len(result.mirror)}"
        )
        print(f"  table after the run: {table_figures(folder)}")
        lancedb.connect(str(folder)).open_table("chunks").optimize()
        print(f"  after optimize by hand: {table_figures(folder)}")
        if not args.skip_one_process:
            single = one_process(_fresh(base, "single"), n, w)
            print(f"one process at a time: {total / single:.1f} writes/s ({single:.1f} s)")
            print(f"  ratio concurrent / one process: {single / wall:.2f}")
        killed = killed_run(_fresh(base, "killed"), n, w, args.random_kills)
        print(
            f"kill -9 (1 inside a write + {args.random_kills} at random): ok={killed.ok} "
            f"rows={killed.rows} lost={len(killed.lost)} "
            f"duplicated={len(killed.duplicated)} stale={len(killed.stale)} "
            f"mirror={len(killed.mirror)}"
        )
        if not (result.ok and killed.ok):
            print(result, killed)
            raise SystemExit(1)


if __name__ == "__main__":
    main()
