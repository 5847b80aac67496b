"""Retrieval evaluation: BEIR loading, hand-computed metrics, run records."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import bastion.knowledge.eval as ev
from bastion.core.errors import BastionError, ConfigurationError
from bastion.knowledge.eval import (
    DatasetError,
    Document,
    Rankings,
    RunRecord,
    evaluate,
    iter_corpus,
    load_corpus,
    load_dataset,
    load_qrels,
    mean_metric,
    ndcg,
    percentile,
    ranked_ids,
    recall,
    reciprocal_rank,
    run_retrieval,
)

TINY = Path(__file__).parent / "fixtures" / "beir_tiny"
L3 = 1 / math.log2(3)  # discount at rank 2: 0.6309297535714575


def _write_dataset(root: Path, *, corpus: str, queries: str, qrels: bytes) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (root / "queries.jsonl").write_text(queries, encoding="utf-8")
    (root / "qrels" / "test.tsv").write_bytes(qrels)
    return root


CORPUS = '{"_id": "a", "title": "A", "text": "alpha"}\n{"_id": "b", "text": "beta"}\n'
QUERIES = '{"_id": "q1", "text": "alpha?"}\n{"_id": "q2", "text": "beta?"}\n'
QRELS = b"query-id\tcorpus-id\tscore\nq1\ta\t1\n"


# --- the public surface ----------------------------------------------------------------------


def test_exported_members() -> None:
    assert set(ev.__all__) == {
        "DEFAULT_KS", "BeirDataset", "DatasetError", "Document", "Evaluation", "Judgements",
        "PairedTest", "paired_test", "Qrels", "Ranking", "Rankings", "RunRecord", "describe_machine", "evaluate",
        "iter_corpus", "load_corpus", "load_dataset", "load_qrels", "load_queries",
        "mean_metric", "ndcg", "percentile", "ranked_ids", "recall", "reciprocal_rank",
        "run_retrieval",
    }  # fmt: skip
    for name in ev.__all__:
        assert getattr(ev, name) is not None


def test_dataset_error_has_the_one_root() -> None:
    assert issubclass(DatasetError, ConfigurationError)
    assert issubclass(DatasetError, BastionError)


# --- loading ---------------------------------------------------------------------------------


def test_load_tiny_dataset_keeps_only_judged_queries() -> None:
    ds = load_dataset(TINY)
    assert (ds.name, ds.split) == ("beir_tiny", "test")
    assert dict(ds.queries) == {
        "q1": "why do cats purr",
        "q2": "do central banks set interest rates",
    }
    assert list(ds.queries) == ["q1", "q2"]  # queries.jsonl order
    assert {q: dict(j) for q, j in ds.qrels.items()} == {
        "q1": {"d1": 2, "d2": 1, "d3": 0},
        "q2": {"d4": 1},
    }


def test_other_split_and_name() -> None:
    ds = load_dataset(str(TINY), split="dev", name="tiny")
    assert (ds.name, ds.split, dict(ds.queries)) == ("tiny", "dev", {"q3": "how is tea made"})


def test_corpus_streams_documents() -> None:
    ds = load_dataset(TINY)
    stream = ds.iter_corpus()
    assert isinstance(stream, Iterator)
    first = next(stream)
    assert first == Document(
        doc_id="d1", title="Cats", text="Cats purr when they are content.",
        metadata={"source": "wiki"},
    )  # fmt: skip
    assert [d.doc_id for d in stream] == ["d2", "d3", "d4", "d5"]
    corpus = ds.load_corpus()
    assert list(corpus) == ["d1", "d2", "d3", "d4", "d5"]
    assert corpus["d5"].title == "" and corpus["d5"].metadata == {}
    assert corpus["d3"].title_and_text == "Interest rates rose in March."
    assert corpus["d4"].title_and_text == "Rates Central banks set interest rates."


def test_streaming_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n{oops\n')
    stream = iter_corpus(path)
    assert [next(stream).doc_id, next(stream).doc_id] == ["a", "b"]
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:3: invalid JSON"):
        next(stream)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
def test_qrels_line_ends(tmp_path: Path, newline: bytes) -> None:
    path = tmp_path / "test.tsv"
    path.write_bytes(newline.join([b"query-id\tcorpus-id\tscore", b"q1\ta\t1", b"q1\tb\t2", b""]))
    assert load_qrels(path) == {"q1": {"a": 1, "b": 2}}


def test_qrels_without_header_and_repeated_pair(tmp_path: Path) -> None:
    path = tmp_path / "test.tsv"
    path.write_text("q1\ta\t1\n\nq1\ta\t1\nq2\tb\t0\n")
    assert load_qrels(path) == {"q1": {"a": 1}, "q2": {"b": 0}}


def test_beir_style_lines_with_metadata_and_bom(tmp_path: Path) -> None:
    root = _write_dataset(
        tmp_path / "set",
        corpus='\ufeff{"_id": "a", "title": "", "text": "t", "metadata": {}}\r\n',
        queries='{"_id": "q1", "text": "x", "metadata": {}}\r\n',
        qrels=b"query-id\tcorpus-id\tscore\r\nq1\ta\t1\r\n",
    )
    ds = load_dataset(root)
    assert dict(ds.queries) == {"q1": "x"}
    assert [d.doc_id for d in ds.iter_corpus()] == ["a"]


# --- malformed input: one clear line naming the file and the line ------------------------------


MALFORMED = {
    "query without _id": (
        '{"_id": "q1", "text": "x"}\n{"text": "no id"}\n', QRELS, r'queries\.jsonl:2: missing "_id"'
    ),
    "query not an object": (
        '{"_id": "q1", "text": "x"}\n[1, 2]\n', QRELS, r"queries\.jsonl:2: expected a JSON object"
    ),
    "query without text": ('{"_id": "q1"}\n', QRELS, r'queries\.jsonl:1: "text" missing'),
    "query twice": (
        '{"_id": "q1", "text": "x"}\n{"_id": "q1", "text": "y"}\n', QRELS,
        r"queries\.jsonl:2: query id 'q1' appears twice",
    ),
    "qrels two fields": (
        QUERIES, b"query-id\tcorpus-id\tscore\nq1\ta\n",
        r"test\.tsv:2: expected 3 tab-separated fields",
    ),
    "qrels bad score": (
        QUERIES, b"query-id\tcorpus-id\tscore\nq1\ta\thigh\n",
        r"test\.tsv:2: score 'high' is not an integer",
    ),
    "qrels conflicting pair": (
        QUERIES, b"q1\ta\t1\nq1\ta\t2\n", r"test\.tsv:2: pair \('q1', 'a'\) judged twice"
    ),
    "qrels empty": (QUERIES, b"query-id\tcorpus-id\tscore\n", r"test\.tsv: no judgements"),
    "qrels unknown query": (
        QUERIES, b"q9\ta\t1\n", r"test\.tsv: 1 judged query id\(s\) not in queries\.jsonl"
    ),
}  # fmt: skip


@pytest.mark.parametrize(("queries", "qrels", "message"), MALFORMED.values(), ids=MALFORMED)
def test_malformed_dataset(tmp_path: Path, queries: str, qrels: bytes, message: str) -> None:
    root = _write_dataset(tmp_path / "set", corpus=CORPUS, queries=queries, qrels=qrels)
    with pytest.raises(DatasetError, match=message) as info:
        load_dataset(root)
    assert "\n" not in str(info.value)


def test_invalid_utf8_names_its_line(tmp_path: Path) -> None:
    root = _write_dataset(tmp_path / "set", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    filler = "".join(f'{{"_id": "x{i}", "text": "t"}}\n' for i in range(3999))
    bad = b'{"_id": "q2", "text": "\xff"}\n'  # line 4001, past the first read buffer
    first = b'{"_id": "q1", "text": "alpha?"}\n'
    (root / "queries.jsonl").write_bytes(first + filler.encode() + bad)
    with pytest.raises(DatasetError, match=r"queries\.jsonl:4001: not valid UTF-8"):
        load_dataset(root)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"_id": "a", "text": "x"', "corpus.jsonl:2: invalid JSON"),
        ('{"_id": "", "text": "x"}', 'corpus.jsonl:2: missing "_id"'),
        ('{"_id": "a", "text": 3}', 'corpus.jsonl:2: "text" must be a string'),
        ('{"_id": "a", "text": "x", "metadata": []}', 'corpus.jsonl:2: "metadata" must be'),
    ],
)
def test_malformed_corpus_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "z", "text": "ok"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=message.replace(".", r"\.")):
        list(iter_corpus(path))


def test_numeric_ids_become_strings(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": 7, "text": "x"}\n')
    assert [d.doc_id for d in iter_corpus(path)] == ["7"]


def test_duplicate_document_id(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n\n{"_id": "a", "text": "y"}\n')
    with pytest.raises(DatasetError, match=r"corpus\.jsonl:3: document id 'a' appears twice"):
        load_corpus(path)


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset folder not found"):
        load_dataset(tmp_path / "nowhere")
    root = _write_dataset(tmp_path / "set", corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    with pytest.raises(DatasetError, match=r"qrels[/\\]dev\.tsv: file not found"):
        load_dataset(root, split="dev")
    (root / "corpus.jsonl").unlink()
    with pytest.raises(DatasetError, match=r"corpus\.jsonl: file not found"):
        load_dataset(root)


@pytest.mark.parametrize("split", ["", "../test", "a/b", ".hidden"])
def test_split_must_be_a_plain_name(split: str) -> None:
    with pytest.raises(ConfigurationError, match="not a plain name"):
        load_dataset(TINY, split=split)


# --- metrics, computed by hand ---------------------------------------------------------------

GRADED = {"d1": 2, "d2": 1, "d3": 0}


def test_graded_ndcg_recall_mrr() -> None:
    ranking = ["d3", "d2", "d1", "d4"]
    # DCG = 0/1 + 1/log2(3) + 2/log2(4) = 1.6309; ideal = 2/1 + 1/log2(3) = 2.6309
    assert ndcg(ranking, GRADED, 10) == pytest.approx(0.6199062332840657, abs=1e-12)
    assert ndcg(ranking, GRADED, 10) == pytest.approx((L3 + 1) / (2 + L3))
    assert ndcg(ranking, GRADED, 2) == pytest.approx(0.23981246656813146, abs=1e-12)
    assert ndcg(ranking, GRADED, 1) == 0.0
    assert recall(ranking, GRADED, 10) == 1.0
    assert recall(ranking, GRADED, 2) == 0.5
    assert reciprocal_rank(ranking, GRADED, 10) == 0.5
    assert reciprocal_rank(ranking, GRADED, 1) == 0.0


def test_gain_is_the_grade_not_exponential() -> None:
    # lower grade first: DCG = 1 + 3/log2(3); ideal = 3 + 1/log2(3)
    assert ndcg(["b", "a"], {"a": 3, "b": 1}, 10) == pytest.approx(0.7967075809905066, abs=1e-12)


def test_ideal_is_cut_at_k_too() -> None:
    judged = {"a": 1, "b": 1, "c": 1}
    assert ndcg(["a"], judged, 1) == 1.0
    assert recall(["a"], judged, 1) == pytest.approx(1 / 3)


def test_perfect_ranking_scores_one() -> None:
    for k in (1, 2, 10):
        assert ndcg(["d1", "d2", "d3"], GRADED, k) == 1.0
        assert reciprocal_rank(["d1", "d2"], GRADED, k) == 1.0
    assert recall(["d1", "d2"], GRADED, 2) == 1.0
    result = evaluate({"q1": ["d1", "d2"], "q2": ["d4"]}, {"q1": GRADED, "q2": {"d4": 1}})
    assert (result.ndcg_at_10, result.recall_at_10, result.recall_at_100, result.mrr_at_10) == (
        1.0, 1.0, 1.0, 1.0,
    )  # fmt: skip


def test_nothing_relevant_retrieved_scores_zero() -> None:
    for metric in (ndcg, recall, reciprocal_rank):
        assert metric(["x", "y", "d3"], GRADED, 10) == 0.0
        assert metric([], GRADED, 10) == 0.0
        assert metric(["d1"], {"d1": 0, "d2": -1}, 10) == 0.0  # no relevant document at all


def test_duplicates_count_at_their_first_rank_only() -> None:
    judged = {"d1": 1}
    assert ranked_ids(["d9", "d9", "d1", "d9"]) == ["d9", "d1"]
    assert reciprocal_rank(["d9", "d9", "d1"], judged, 2) == 0.5  # d1 is rank 2, not 3
    assert recall(["d9", "d9", "d1"], judged, 2) == 1.0
    assert ndcg(["d1", "d1"], {"d1": 1, "d2": 1}, 2) == pytest.approx(1 / (1 + L3))


def test_scored_rankings_break_ties_like_trec_eval() -> None:
    # score descending, ties by doc id *descending*: d3 (0.9), then d2, d1 tied at 0.5
    scored = {"d1": 0.5, "d2": 0.5, "d3": 0.9}
    assert ranked_ids(scored) == ["d3", "d2", "d1"]
    assert reciprocal_rank(scored, {"d1": 1}, 10) == pytest.approx(1 / 3)
    assert ndcg(scored, {"d1": 1}, 10) == 0.5  # 1/log2(4)
    # trec_eval keeps scores as 32-bit floats: these two tie
    assert ranked_ids({"a": 1.0 + 1e-12, "b": 1.0}) == ["b", "a"]
    assert ranked_ids({"a": 1.0 + 1e-6, "b": 1.0}) == ["a", "b"]
    assert ranked_ids({"B": 1, "_": 1, "a": 1}) == ["a", "_", "B"]  # strcmp order


def test_bad_rankings_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="list of doc ids"):
        ranked_ids("d1")
    with pytest.raises(ConfigurationError, match="NaN"):
        ranked_ids({"a": math.nan})
    with pytest.raises(ConfigurationError, match="query 'q1'"):
        evaluate({"q1": "d1"}, {"q1": {"d1": 1}})
    for k in (0, -1, True):
        with pytest.raises(ConfigurationError, match="positive integer"):
            ndcg(["a"], {"a": 1}, k)


def test_evaluate_averages_over_judged_queries() -> None:
    qrels = {"q1": GRADED, "q2": {"d4": 1}, "q3": {"d5": 1}}
    rankings: Rankings = {
        "q1": ["d3", "d2", "d1"],  # nDCG 0.6199, recall 1, RR 1/2
        "q2": {"d4": 1.0, "x": 2.0},  # d4 at rank 2: nDCG 1/log2(3), recall 1, RR 1/2
        # q3 has no ranking: 0 everywhere, still counted
        "q9": ["d1"],  # not judged: ignored
    }
    result = evaluate(rankings, qrels, ks=(2,), per_query=True)
    assert result.num_queries == 3
    assert result.ndcg_at_10 == pytest.approx((0.6199062332840657 + L3 + 0) / 3)
    assert result.recall_at_10 == pytest.approx(2 / 3)
    assert result.recall_at_100 == pytest.approx(2 / 3)
    assert result.mrr_at_10 == pytest.approx(1 / 3)
    assert list(result.figures) == [
        "ndcg@2", "recall@2", "mrr@2", "ndcg@10", "recall@10", "mrr@10",
        "ndcg@100", "recall@100", "mrr@100",
    ]  # fmt: skip
    assert result.figures["recall@2"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert result.per_query is not None
    assert set(result.per_query) == {"q1", "q2", "q3"}
    assert result.per_query["q3"]["ndcg@10"] == 0.0
    assert result.per_query["q2"]["mrr@2"] == 0.5
    assert evaluate(rankings, qrels).per_query is None
    assert mean_metric("ndcg", rankings, qrels, 10) == result.ndcg_at_10
    with pytest.raises(ConfigurationError, match="unknown metric"):
        mean_metric("map", rankings, qrels, 10)


def test_evaluate_with_no_queries() -> None:
    result = evaluate({}, {})
    assert result.num_queries == 0 and result.ndcg_at_10 == 0.0


def test_evaluation_is_read_only() -> None:
    result = evaluate({"q1": ["d1"]}, {"q1": GRADED})
    with pytest.raises(AttributeError):
        result.ndcg_at_10 = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.figures["ndcg@10"] = 1.0  # type: ignore[index]


# --- run records -----------------------------------------------------------------------------


def _record(**changes: object) -> RunRecord:
    fields: dict[str, object] = {
        "dataset": "SciFact", "split": "test", "mode": "dense:int8",
        "settings": {"model": "MiniLM", "batch": 16, "nested": {"a": [1, 2]}},
        "figures": {"ndcg@10": 0.65, "latency_p50_ms": 1.5}, "num_queries": 300,
        "started_at": "2025-01-31T09:30:00.123+01:00", "wall_seconds": 12.5,
        "machine": "Linux; x86_64, 8 CPUs; CPython 3.11",
    }  # fmt: skip
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type]


def test_run_record_round_trips() -> None:
    record = _record()
    again = RunRecord.from_json(record.to_json())
    assert again == record
    assert json.loads(record.to_json())["settings"]["nested"] == {"a": [1, 2]}


def test_run_record_save_is_named_and_atomic(tmp_path: Path) -> None:
    record = _record()
    path = record.save(tmp_path / "runs")
    assert path.name == "scifact-dense-int8-20250131T083000.123Z.json"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    assert RunRecord.load(path) == record
    assert record.save(tmp_path / "runs") == path  # same record, same file, replaced


def test_run_record_default_machine_and_read_only_settings() -> None:
    record = RunRecord(
        dataset="d", split="test", mode="m", num_queries=0,
        started_at="2025-01-01T00:00:00+00:00", wall_seconds=0.0,
    )  # fmt: skip
    assert "CPUs" in record.machine and record.settings == {} and record.figures == {}
    with pytest.raises(TypeError):
        record.settings["x"] = 1  # type: ignore[index]
    assert _record(mode="../../etc").file_name.startswith("scifact-etc-")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"started_at": "yesterday"}, "not an ISO 8601 time"),
        ({"started_at": "2025-01-31T09:30:00"}, "needs a UTC offset"),
        ({"num_queries": -1}, "must be >= 0"),
        ({"figures": {"ndcg@10": math.nan}}, "finite numbers"),
        ({"settings": {"fn": print}}, "JSON values only"),
    ],
)
def test_run_record_refuses_bad_values(changes: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        _record(**changes)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "not a run record"),
        ('{"format": 1, "dataset": "d"}', "lacks split, mode"),
    ],
)
def test_run_record_from_bad_json(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RunRecord.from_json(text)


def test_run_record_load_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{}")
    with pytest.raises(ConfigurationError, match=r"r\.json: not a run record"):
        RunRecord.load(path)
    with pytest.raises(ConfigurationError, match="cannot read run record"):
        RunRecord.load(tmp_path / "missing.json")


def test_run_retrieval_on_the_tiny_dataset() -> None:
    ds = load_dataset(TINY)
    docs = ds.load_corpus()
    seen: list[str] = []

    def search(text: str) -> list[str]:  # word overlap, then duplicates and extras
        seen.append(text)
        words = set(re.findall(r"\w+", text))
        ranked = sorted(
            docs, key=lambda d: -len(words & set(re.findall(r"\w+", docs[d].text.lower())))
        )
        return [ranked[0], *ranked]

    record = run_retrieval(ds, search, k=2, mode="overlap", settings={"k": 99, "tok": "split"})
    assert seen == list(ds.queries.values())
    assert (record.dataset, record.split, record.mode, record.num_queries) == (
        "beir_tiny", "test", "overlap", 2,
    )  # fmt: skip
    assert dict(record.settings) == {"k": 2, "tok": "split"}
    # q1 "why do cats purr": d1 (cats, purr) then d2 (purr): perfect; q2: d4 (5 words) first
    assert record.figures["ndcg@10"] == 1.0 and record.figures["recall@100"] == 1.0
    assert 0 <= record.figures["latency_p50_ms"] <= record.figures["latency_p99_ms"]
    assert record.figures["latency_mean_ms"] >= 0 and record.wall_seconds >= 0
    assert RunRecord.from_json(record.to_json()) == record


def test_run_retrieval_refuses_bad_search_and_k() -> None:
    ds = load_dataset(TINY)
    with pytest.raises(ConfigurationError, match="not a string"):
        run_retrieval(ds, lambda text: "d1")
    with pytest.raises(ConfigurationError, match="positive integer"):
        run_retrieval(ds, lambda text: [], k=0)


def test_percentile_interpolates_like_numpy() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 4.0
    assert percentile(values, 50) == 2.5
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) == 0.0
    with pytest.raises(ConfigurationError):
        percentile(values, 101)
