"""A bench's published result: ``bench/published/<bench>.json``, what ``bench/report.py`` renders
into the reference page ``docs/reference/benchmarks.md``.

A bench writes one when run with ``--publish``: the command that made it, the machine, the date
and its tables (each a title, column names and rows of numbers or text). The file is committed;
a later run of the same bench replaces it.
"""

from __future__ import annotations

import json
import os
import platform
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

PUBLISHED = Path(__file__).resolve().parent / "published"

Cell = str | int | float | None


@dataclass(frozen=True, kw_only=True)
class Table:
    """One table of a result."""

    title: str
    columns: list[str]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    """Lines printed under the table."""


@dataclass(frozen=True, kw_only=True)
class Result:
    """What one run of one bench measured."""

    bench: str
    """The script's name without ``.py``: also the file's name."""
    title: str
    command: str
    """The command line that made it, from the repository root."""
    machine: dict[str, str]
    date: str
    """UTC, ISO 8601, minutes."""
    tables: list[Table]
    notes: list[str] = field(default_factory=list)
    """Lines printed under the heading, before the tables."""


def machine() -> dict[str, str]:
    """The machine in the words the reference page shows: CPU, cores, Python, OS, load."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 0
    return {
        "cpu": cpu,
        "cores": f"{os.cpu_count()} (usable: {usable})",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": f"{platform.system()} {platform.release()}",
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")


def from_markdown(text: str) -> tuple[list[str], list[Table]]:
    """A bench's Markdown report as notes and tables, for a bench that prints one: runs of
    ``|`` lines are tables (their first row the columns), other lines notes (of the table
    above them, or of the result before the first table). Cells stay text as printed."""
    notes: list[str] = []
    tables: list[Table] = []
    rows: list[list[Cell]] = []
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(set(c) <= set(":-") and c for c in cells):
                rows.append(list(cells))
            continue
        if rows:
            columns = [str(c) for c in rows[0]]
            tables.append(Table(title="", columns=columns, rows=rows[1:]))
            rows = []
        if stripped:
            (tables[-1].notes if tables else notes).append(stripped)
    return notes, tables


def write_result(result: Result, folder: Path = PUBLISHED) -> Path:
    """Write ``result`` as ``<folder>/<bench>.json`` (replacing the last one), a table row a
    line; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{result.bench}.json"
    text = json.dumps(asdict(result), indent=1, ensure_ascii=False)
    # innermost lists (columns, rows) on one line each: a new run diffs row by row
    text = re.sub(
        r"\[\n\s*([^\[\]{}]*?)\n\s*\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",\n")) + "]",
        text,
    )
    path.write_text(text + "\n", "utf-8")
    return path


def read_result(path: Path) -> Result:
    """A result file back as a :class:`Result`; a missing key is a ``KeyError`` naming it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tables = [Table(**t) for t in data.pop("tables")]
    return Result(tables=tables, **data)


def publish_markdown(bench: str, title: str, command: str, report: str) -> Path:
    """Publish a bench that prints a Markdown report (see :func:`from_markdown`)."""
    notes, tables = from_markdown(report)
    result = Result(
        bench=bench,
        title=title,
        command=command,
        machine=machine(),
        date=now(),
        tables=tables,
        notes=notes,
    )
    return write_result(result)
