"""Run a search function over a dataset's queries, time it, score it and keep the record.

:func:`run_retrieval` sends each judged query through ``search``, measures each call, scores
the results with :func:`~bastion.knowledge.eval.metrics.evaluate` and returns a
:class:`RunRecord`: what ran (dataset, split, mode, settings), what it scored (figures), how long
it took and on which machine. ``record.save(folder)`` writes it as one JSON file.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bastion.core.errors import ConfigurationError
from bastion.knowledge.eval.beir import BeirDataset
from bastion.knowledge.eval.metrics import DEFAULT_KS, evaluate

__all__ = ["RunRecord", "describe_machine", "percentile", "run_retrieval"]

_FORMAT = 1
"""Version of the JSON layout written by :meth:`RunRecord.to_json`."""
_FIELDS = (
    "dataset",
    "split",
    "mode",
    "settings",
    "figures",
    "num_queries",
    "started_at",
    "wall_seconds",
    "machine",
)
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def describe_machine() -> str:
    """One line about this machine, from :mod:`platform`: OS, CPU, CPU count, Python."""
    arch = platform.machine() or "unknown architecture"
    cpu = platform.processor()
    cpu_part = f"{arch} {cpu}" if cpu and cpu != arch else arch
    return (
        f"{platform.system() or 'unknown OS'} {platform.release()}; {cpu_part}, "
        f"{os.cpu_count() or '?'} CPUs; "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecord:
    """One evaluated run: what ran, what it scored, how long it took, where."""

    dataset: str
    """Dataset name, e.g. ``scifact``."""
    split: str
    """Qrels split evaluated, e.g. ``test``."""
    mode: str
    """What was run, e.g. ``bm25``, ``dense:int8``, ``hybrid``."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The knobs of the run (JSON values), e.g. ``{"k1": 1.2, "b": 0.75}``."""
    figures: Mapping[str, float] = field(default_factory=dict)
    """Measured numbers: ``ndcg@10``, ``recall@100``, ``mrr@10``, ``latency_p50_ms``..."""
    num_queries: int
    """Queries evaluated."""
    started_at: str
    """When the run started, ISO 8601 with a UTC offset (``2025-01-31T09:30:00.123+00:00``)."""
    wall_seconds: float
    """Wall-clock duration of the whole run, searching and scoring."""
    machine: str = field(default_factory=describe_machine)
    """The machine it ran on (:func:`describe_machine`)."""

    def __post_init__(self) -> None:
        for name in ("dataset", "split", "mode", "started_at", "machine"):
            if not isinstance(getattr(self, name), str):
                raise ConfigurationError(f"RunRecord.{name} must be a string")
        try:
            started = datetime.fromisoformat(self.started_at)
        except ValueError:
            raise ConfigurationError(
                f"RunRecord.started_at {self.started_at!r} is not an ISO 8601 time"
            ) from None
        if started.utcoffset() is None:
            raise ConfigurationError("RunRecord.started_at needs a UTC offset (e.g. +00:00)")
        if isinstance(self.num_queries, bool) or not isinstance(self.num_queries, int):
            raise ConfigurationError("RunRecord.num_queries must be an integer")
        if self.num_queries < 0 or not _is_number(self.wall_seconds) or self.wall_seconds < 0:
            raise ConfigurationError("RunRecord.num_queries and wall_seconds must be >= 0")
        if not all(isinstance(k, str) and _is_number(v) for k, v in self.figures.items()):
            raise ConfigurationError("RunRecord.figures must map names to finite numbers")
        try:
            settings = json.loads(json.dumps(dict(self.settings), allow_nan=False))
        except (TypeError, ValueError):
            raise ConfigurationError("RunRecord.settings must hold JSON values only") from None
        object.__setattr__(self, "settings", MappingProxyType(settings))
        object.__setattr__(self, "figures", MappingProxyType(dict(self.figures)))

    def to_json(self) -> str:
        """The record as a JSON object (keys sorted, two-space indent)."""
        data = {
            "format": _FORMAT,
            "dataset": self.dataset,
            "split": self.split,
            "mode": self.mode,
            "settings": dict(self.settings),
            "figures": dict(self.figures),
            "num_queries": self.num_queries,
            "started_at": self.started_at,
            "wall_seconds": self.wall_seconds,
            "machine": self.machine,
        }
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> RunRecord:
        """Parse what :meth:`to_json` wrote; a malformed record raises ConfigurationError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"run record is not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ConfigurationError(f"not a run record (expected a JSON object, format {_FORMAT})")
        missing = [name for name in _FIELDS if name not in data]
        if missing:
            raise ConfigurationError(f"run record lacks {', '.join(missing)}")
        if not isinstance(data["settings"], dict) or not isinstance(data["figures"], dict):
            raise ConfigurationError("run record: settings and figures must be JSON objects")
        return cls(**{name: data[name] for name in _FIELDS})

    @classmethod
    def load(cls, path: Path | str) -> RunRecord:
        """Read a record written by :meth:`save`."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"{path}: cannot read run record ({exc.strerror})") from exc
        try:
            return cls.from_json(text)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {exc}") from None

    @property
    def file_name(self) -> str:
        """``<dataset>-<mode>-<UTC start, to the millisecond>.json``, safe on any filesystem."""
        started = datetime.fromisoformat(self.started_at).astimezone(UTC)
        stamp = started.strftime("%Y%m%dT%H%M%S") + f".{started.microsecond // 1000:03d}Z"
        return f"{_slug(self.dataset)}-{_slug(self.mode)}-{stamp}.json"

    def save(self, directory: Path | str) -> Path:
        """Write the record to ``directory/file_name`` atomically (temp file, then replace)."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / self.file_name
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(self.to_json() + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            Path(tmp).replace(target)  # os.replace: atomic on POSIX and Windows
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target


def run_retrieval(
    dataset: BeirDataset,
    search: Callable[[str], Sequence[str]],
    *,
    k: int = 100,
    mode: str = "search",
    settings: Mapping[str, Any] | None = None,
    ks: Iterable[int] = DEFAULT_KS,
) -> RunRecord:
    """Search every judged query of ``dataset``, time each call, score the top ``k`` results.

    ``search(query_text)`` returns doc ids, best first; ids past ``k`` are ignored (so recall
    at a cut-off above ``k`` equals recall@k). Figures: the metrics of
    :func:`~bastion.knowledge.eval.metrics.evaluate` for ``ks`` and query latency
    (``latency_p50_ms``, ``latency_p99_ms``, ``latency_mean_ms``). Exceptions from ``search``
    propagate.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigurationError(f"k must be a positive integer, got {k!r}")
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    start = time.perf_counter()
    rankings: dict[str, list[str]] = {}
    latencies_ms: list[float] = []
    for qid, text in dataset.queries.items():
        before = time.perf_counter()
        hits = search(text)
        latencies_ms.append((time.perf_counter() - before) * 1000.0)
        if isinstance(hits, str):
            raise ConfigurationError("search must return a list of doc ids, not a string")
        rankings[qid] = list(dict.fromkeys(hits))[:k]
    result = evaluate(rankings, dataset.qrels, ks=ks)
    figures = dict(result.figures)
    figures["latency_p50_ms"] = percentile(latencies_ms, 50)
    figures["latency_p99_ms"] = percentile(latencies_ms, 99)
    figures["latency_mean_ms"] = (
        math.fsum(latencies_ms) / len(latencies_ms) if latencies_ms else 0.0
    )
    return RunRecord(
        dataset=dataset.name,
        split=dataset.split,
        mode=mode,
        settings={**(settings or {}), "k": k},
        figures=figures,
        num_queries=result.num_queries,
        started_at=started_at,
        wall_seconds=time.perf_counter() - start,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), interpolated linearly between ranks (numpy's default)."""
    if not 0 <= q <= 100:
        raise ConfigurationError(f"percentile q must be within 0..100, got {q!r}")
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text.lower()).strip("-.") or "run"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
