"""``index``, ``search``, ``reindex`` and ``ask`` on the demo workspace file, as its users."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import Run, as_json, error_of


@pytest.fixture
def indexed(demo: Path, run: Run) -> Path:
    done = run("index", "--json")
    assert done.exit_code == 0, done.output
    assert as_json(done)["indexed"] == 17 and as_json(done)["skipped"] == {}
    return demo


def test_search_shows_what_the_user_may_read_and_nothing_of_the_rest(
    indexed: Path, run: Run
) -> None:
    ana = run("search", "--as", "ana", "salary bands")
    assert ana.exit_code == 0, ana.output
    assert "salary-bands" not in ana.output
    assert "not visible" not in ana.stderr  # no word of what hides (tests/cli/test_cli_oracle.py)
    mei = as_json(run("search", "--as", "mei", "salary bands", "--json"))
    assert mei["hits"][0]["path"] == "/larkspur/hr/salary-bands.md"
    assert mei["principal"]["id"] == "mei"
    assert all(hit["path"].startswith("/larkspur/") for hit in mei["hits"])
    lena = as_json(run("search", "--as", "lena", "parental leave", "-k", "1", "--json"))
    assert lena["hits"][0]["path"] == "/larkspur/handbook/leave-policy.md"
    assert "hidden" not in lena


def test_ask_answers_with_structured_citations(indexed: Path, run: Run) -> None:
    result = run("ask", "--as", "ana", "How many days of paid vacation?", "--json")
    assert result.exit_code == 0, result.output
    data = as_json(result)
    assert "25 days" in data["answer"] and "§" not in data["answer"]
    assert data["citations"][0]["n"] == 1
    assert data["citations"][0]["path"] == "/larkspur/handbook/leave-policy.md"
    assert data["principal"]["tenant"] == "larkspur"
    refused = as_json(run("ask", "--as", "gus", "What is the salary band for L4?", "--json"))
    assert "128,000" not in str(refused)


def test_ask_needs_someone_to_ask(indexed: Path, run: Run) -> None:
    result = run("ask", "anything", "--json")
    assert result.exit_code == 2 and "--as USER" in error_of(result)["message"]


def test_an_index_run_that_skips_files_exits_3(demo: Path, run: Run) -> None:
    (demo / "corpus" / "larkspur" / "public" / "empty.md").write_text("")
    result = run("index")
    assert result.exit_code == 3, result.output
    line = "  skipped /larkspur/public/empty.md: is empty"
    assert line in result.stdout and result.stdout.count("empty.md") == 1
    again = run("reindex", "--json")
    assert again.exit_code == 3 and "/larkspur/public/empty.md" in as_json(again)["skipped"]


def test_index_needs_a_folder_or_a_workspace_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run: Run
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("index", "--json")
    assert result.exit_code == 2 and error_of(result)["error"] == "usage"


def test_eval_names_the_splits_that_exist(tmp_path: Path, run: Run) -> None:
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    (tmp_path / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n")
    (tmp_path / "corpus.jsonl").write_text("")
    result = run("eval", str(tmp_path), "--split", "train", "--json")
    assert result.exit_code == 2
    assert "has the splits dev, test" in error_of(result)["message"]
    nonsense = run("eval", str(tmp_path), "--limit", "0", "--json")
    assert nonsense.exit_code == 2 and error_of(nonsense)["error"] == "usage"


TINY = Path(__file__).parents[1] / "knowledge" / "fixtures" / "beir_tiny"


def test_eval_limit_keeps_only_queries_answerable_from_the_subset(tmp_path: Path, run: Run) -> None:
    result = run(
        "eval", str(TINY), "--mode", "bm25", "--limit", "2", "--out", str(tmp_path), "--json"
    )
    assert result.exit_code == 0, result.output
    data = as_json(result)
    assert data["limit"] == {"documents": 2, "queries": 1}
    assert data["dataset"] == "beir_tiny" and data["figures"]["ndcg@10"] == 1.0
    assert "1 of 2 queries" in result.stderr
    none = run(
        "eval", str(TINY), "--mode", "bm25", "--limit", "1", "--out", str(tmp_path), "--json"
    )
    assert none.exit_code == 2 and "raise N" in error_of(none)["message"]


def test_ask_says_nothing_of_matching_documents_it_hides(indexed: Path, run: Run) -> None:
    gus = run("ask", "--as", "gus", "What is the salary band for a senior engineer?")
    assert gus.exit_code == 0, gus.output
    assert "128,000" not in gus.output and "not visible" not in gus.stderr
    data = as_json(run("ask", "--as", "gus", "What is the salary band?", "--json"))
    assert "hidden" not in data and "128,000" not in str(data)


def test_an_index_folder_is_not_silently_repointed(tmp_path: Path, run: Run) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "a.md").write_text(f"# {folder.name}\n\nText of {folder.name}.\n")
    index = str(tmp_path / "idx")
    assert run("index", str(one), "--index", index, "--keyword-only").exit_code == 0
    other = run("index", str(two), "--index", index, "--keyword-only", "--json")
    assert other.exit_code == 1 and error_of(other)["error"] == "index_mismatch"
    assert "--rebuild" in error_of(other)["message"]
    found = as_json(run("search", "Text", "--index", index, "--json"))
    assert [hit["snippet"] for hit in found["hits"]] == ["# one\n\nText of one."]
    rebuilt = run("index", str(two), "--index", index, "--keyword-only", "--rebuild")
    assert rebuilt.exit_code == 0, rebuilt.output


def test_reindex_as_a_user_is_an_operator_task(indexed: Path, run: Run) -> None:
    refused = run("reindex", "--as", "ana", "--json")
    assert refused.exit_code == 1 and error_of(refused)["error"] == "policy_denied"
    (indexed / "corpus" / "tidewater" / "public" / "note.md").write_text("# Note\n\nNew.\n")
    (indexed / "corpus" / "larkspur" / "public" / "memo.md").write_text("# Memo\n\nNew.\n")
    zoe = as_json(run("reindex", "--as", "zoe", "--json"))  # an executive of tidewater
    assert zoe["indexed"] == 1 and zoe["unchanged"] == 6  # what zoe may read, nothing else
    # the run read as the system (the memo is indexed too); zoe only hears of her files
    owner = as_json(run("reindex", "--json"))
    assert owner["indexed"] == 0 and owner["unchanged"] == 19
