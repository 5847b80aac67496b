"""What opening a workspace file costs when its index must be brought up to date.

.venv/bin/python bench/index_on_open.py [--files 3000] [--rounds 7] [--local]

Two workspaces, each a ``bastion.toml`` with a LanceDB ``[knowledge]`` index (keyword-only;
``--local`` adds the demo corpus with the packaged model): the demo corpus (as ``bastion init
--demo`` lays it out: 2 mounts, 20 labelled documents) and ``--files`` generated Markdown files
(about 1.5 KiB each, 30 folders, one mount). For each, after a first open that indexes
everything, median wall milliseconds over ``--rounds`` rounds, the four measured in turn in
each round (a noisy stretch of a shared machine slows them alike):

* ``open, index_on_open=false``: ``WorkspaceConfig.opened`` without the run (stores, index);
* ``open, nothing changed``: the same with the run (``Workspace.reindex``), which finds nothing;
* ``open, one file changed``: one file rewritten before the open, indexed by it;
* the run alone: ``Workspace.reindex`` in a workspace opened without it, nothing changed;
* ``os.walk + os.stat`` of the same folders: the floor of any change detection that looks.

The difference of the first two is what indexing on open costs a process that starts over an
unchanged workspace.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from bastion.cli import main
from bastion.config import WorkspaceConfig

_WORDS = [
    *("river", "heron", "otter", "badger", "kingfisher", "ledger", "invoice", "policy"),
    *("release", "deploy", "canary", "rollback", "incident", "pager", "rotation", "salary"),
    *("band", "review", "travel", "booking", "train", "plane", "hotel", "budget", "quarter"),
    *("forecast", "contract", "vendor", "audit", "label", "tenant", "clearance", "archive"),
]


def _generated(root: Path, files: int) -> Path:
    rng = random.Random(7)
    docs = root / "docs"
    for n in range(files):
        folder = docs / f"area{n % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        paragraphs = [
            " ".join(rng.choice(_WORDS) for _ in range(40)).capitalize() + "." for _ in range(5)
        ]
        (folder / f"note{n:05d}.md").write_text(
            f"# Note {n}\n\n" + "\n\n".join(paragraphs) + "\n", encoding="utf-8"
        )
    (root / "bastion.toml").write_text(
        '[knowledge]\nfolder = ".bastion/index"\nembedder = "none"\n\n'
        '[[mounts]]\nprefix = "/docs"\nurl = "file:docs"\nscope = "read_only"\n\n'
        '[policy]\nrules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]\n',
        encoding="utf-8",
    )
    return root / "bastion.toml"


def _demo(root: Path, embedder: str) -> Path:
    done = CliRunner().invoke(main, ["init", "--demo", str(root)])
    assert done.exit_code == 0, done.output
    config = root / "bastion.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace('embedder = "none"', f'embedder = "{embedder}"', 1))
    return config


def _walk(root: Path) -> None:
    for folder, _dirs, names in os.walk(root):
        for name in names:
            os.stat(os.path.join(folder, name))  # noqa: PTH116, PTH118  # the floor: no Path


def _ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _measure(name: str, config: Path, corpus: Path, rounds: int) -> list[str]:
    settings = WorkspaceConfig.from_file(config)
    files = sorted(p for p in corpus.rglob("*.md") if not p.name.endswith(".labels.yaml"))

    def open_(index: bool) -> None:
        with settings.opened(index_on_open=index):
            pass

    def run_alone() -> float:
        with settings.opened(index_on_open=False) as ws:
            return _ms(ws.sync().reindex)

    first = _ms(lambda: open_(True))
    per: dict[str, list[float]] = {
        "open, index_on_open=false": [],
        "open, nothing changed": [],
        "open, one file changed": [],
        "the run alone (reindex, nothing changed)": [],
        "os.walk + os.stat": [],
    }
    for r in range(rounds + 1):  # round 0 warms up
        victim = files[r % len(files)]
        times = {
            "open, index_on_open=false": _ms(lambda: open_(False)),
            "open, nothing changed": _ms(lambda: open_(True)),
        }
        victim.write_text(victim.read_text(encoding="utf-8") + f"\nEdited {r}.\n")
        times["open, one file changed"] = _ms(lambda: open_(True))
        times["the run alone (reindex, nothing changed)"] = run_alone()
        times["os.walk + os.stat"] = _ms(lambda: _walk(corpus))
        if r:
            for key, value in times.items():
                per[key].append(value)
    rows = [f"| {name} | first open (indexes all {len(files)} files) | {first:.0f} |"]
    for key, values in per.items():
        rows.append(f"| {name} | {key} | {statistics.median(values):.1f} |")
    return rows


def run(files: int, rounds: int, local: bool) -> None:
    logging.disable(logging.INFO)
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}; median ms over {rounds} rounds",
        file=sys.stderr,
    )
    rows = ["| workspace | open | ms (median) |", "|---|---|---:|"]
    with tempfile.TemporaryDirectory(prefix="bench-open-") as tmp:
        base = Path(tmp)
        demo = _demo(base / "demo", "none")
        rows += _measure("demo corpus, keyword-only", demo, base / "demo" / "corpus", rounds)
        if local:
            demo_local = _demo(base / "demo-local", "local")
            rows += _measure(
                "demo corpus, local model", demo_local, base / "demo-local" / "corpus", rounds
            )
        big = _generated(base / "big", files)
        rows += _measure(f"{files} files, keyword-only", big, base / "big" / "docs", rounds)
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--local", action="store_true", help="also the demo with the local model")
    args = parser.parse_args()
    run(args.files, args.rounds, args.local)
