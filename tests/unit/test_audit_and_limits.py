"""Audit sinks and the rate limiter."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from bastion.core.audit import AuditRecord
from bastion.core.audit_sinks import JsonLinesAuditSink
from bastion.core.errors import ConfigurationError, RateLimitError
from bastion.core.mounts import Mount
from bastion.core.policy import Policy, RateLimit
from bastion.core.principal import Principal
from bastion.core.ratelimit import RateLimiter
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace


def _record(i: int) -> AuditRecord:
    return AuditRecord(
        time=1.0,
        principal="p",
        tenant="t",
        operation="read",
        path=f"/f{i}",
        allowed=True,
        reason="allowed",
        bytes=i,
    )


def test_jsonl_sink_appends_one_object_per_line(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "audit.jsonl"
    sink = JsonLinesAuditSink(log)
    for i in range(3):
        sink.append(_record(i))
    sink.close()
    again = JsonLinesAuditSink(log)  # reopening appends, never truncates
    again.append(_record(3))
    again.close()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["path"] for r in rows] == ["/f0", "/f1", "/f2", "/f3"]
    assert rows[0]["allowed"] is True and rows[0]["operation"] == "read"


def _append_many(path: str, worker: int) -> None:
    sink = JsonLinesAuditSink(path)
    for i in range(200):
        sink.append(_record(worker * 1000 + i))
    sink.close()


def test_jsonl_sink_lines_never_interleave_across_processes(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(str(log), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 600


def test_jsonl_sink_bad_location_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigurationError, match="cannot open audit log"):
        JsonLinesAuditSink(blocker / "audit.jsonl")


def test_workspace_writes_audit_to_jsonl(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    ws = Workspace(
        [Mount.of("/m", MemoryStore())], policy=Policy.allow_all(), audit=JsonLinesAuditSink(log)
    ).sync()
    ws.write("/m/a.txt", "secret content")
    ws.read_text("/m/a.txt")
    text = log.read_text()
    assert "secret content" not in text
    assert [json.loads(line)["operation"] for line in text.splitlines()] == ["write", "read"]


def test_rate_limiter_sliding_window() -> None:
    now = [0.0]
    limiter = RateLimiter(RateLimit(2, 10.0), clock=lambda: now[0])
    alice = Principal.of("alice")
    limiter.check(alice)
    limiter.check(alice)
    with pytest.raises(RateLimitError, match=r"2 requests per 10s; retry in 10\.0s"):
        limiter.check(alice)
    limiter.check(Principal.of("alice", tenant="other"))  # separate budget
    now[0] = 10.5
    limiter.check(alice)  # the window slid past the first two
