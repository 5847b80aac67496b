"""`bastion index`, `bastion search` and `bastion eval`, run in-process with click's runner."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from bastion.cli import main
from bastion.knowledge.eval import RunRecord

TINY = Path(__file__).parent / "fixtures" / "beir_tiny"


def test_index_then_search_a_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "ops").mkdir(parents=True)
    (docs / "ops" / "deploy.md").write_text("# Deploys\n\nWe deploy behind a canary.\n")
    (docs / "oncall.md").write_text("# On-call\n\nThe pager rotates weekly.\n")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    index = tmp_path / "idx"
    runner = CliRunner()
    done = runner.invoke(main, ["index", str(docs), "--index", str(index), "--keyword-only"])
    assert done.exit_code == 3, done.output  # EXIT_SKIPPED: the run skipped logo.png
    assert "indexed 2 files (2 chunks), skipped 1" in done.output
    assert "/logo.png: unsupported type" in done.output
    found = runner.invoke(main, ["search", "canary deploy", "--index", str(index)])
    assert found.exit_code == 0, found.output
    assert found.output.startswith("/ops/deploy.md:1-3 ")
    refused = runner.invoke(main, ["search", "x", "--index", str(index), "--mode", "vector"])
    assert refused.exit_code == 1
    assert "needs an embedder" in refused.output
    again = runner.invoke(main, ["index", str(docs), "--index", str(index)])
    assert again.exit_code == 1 and "--rebuild" in again.output


def test_search_without_an_index_says_what_to_do(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["search", "x", "--index", str(tmp_path / "none")])
    assert result.exit_code == 1
    assert "run `bastion index PATH` first" in result.output


def test_eval_writes_a_run_record(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["eval", str(TINY), "--mode", "bm25", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "ndcg@10 1.0000" in result.output
    [saved] = list(out.glob("*.json"))
    record = RunRecord.from_json(saved.read_text())
    assert record.mode == "bm25" and record.num_queries == 2
    assert json.loads(saved.read_text())["settings"]["documents"] == 5
