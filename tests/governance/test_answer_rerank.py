"""Rerankers: none, and a real sentence-transformers cross-encoder loaded from a local folder.

The cross-encoder is a tiny BERT with a one-label head, built and saved here with the packaged
MiniLM vocabulary (random weights, fixed seed): the point is the loading and scoring path, not
relevance, so the reranker's order is checked against the model's own scores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import MemoryStore, Mount, Policy, Principal, Workspace
from bastion.core.errors import ConfigurationError
from bastion.governance.answer import Context, CrossEncoderRerank, NoRerank
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex


@pytest.fixture(scope="module")
def cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from bastion.knowledge.chunking.tokens import minilm_tokenizer_path

    out = tmp_path_factory.mktemp("tiny-cross-encoder")
    vocab = minilm_tokenizer_path().with_name("vocab.txt")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab))
    tokenizer.save_pretrained(out)
    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(out)
    return out


def _ctx(n: int, text: str) -> Context:
    return Context(
        chunk_id=f"{n:032x}",
        doc_id="d" * 32,
        path=f"/d{n}.md",
        start_line=1,
        end_line=1,
        text=text,
        score=1.0 - n / 10,
        retrieval_score=1.0 - n / 10,
    )


TEXTS = [
    "Deploys happen on Tuesdays behind a canary.",
    "The on-call engineer answers pages within 15 minutes.",
    "Rollbacks need the release manager's approval.",
    "Salaries are reviewed every March.",
]


async def test_no_rerank_keeps_retrieval_order() -> None:
    contexts = [_ctx(i, t) for i, t in enumerate(TEXTS)]
    assert await NoRerank().rerank("q", contexts) == contexts


async def test_cross_encoder_orders_by_the_models_scores(cross_encoder_dir: Path) -> None:
    from sentence_transformers import CrossEncoder

    question = "How fast are pages answered?"
    contexts = [_ctx(i, t) for i, t in enumerate(TEXTS)]
    reranker = CrossEncoderRerank(cross_encoder_dir)
    assert reranker.name == f"cross-encoder:{cross_encoder_dir.name}"
    ranked = await reranker.rerank(question, contexts)
    model = CrossEncoder(str(cross_encoder_dir), local_files_only=True, device="cpu")
    expected = model.predict([(question, t) for t in TEXTS], show_progress_bar=False)
    by_text = {t: float(s) for t, s in zip(TEXTS, expected, strict=True)}
    assert [c.score for c in ranked] == pytest.approx([by_text[c.text] for c in ranked], abs=1e-5)
    assert [c.score for c in ranked] == sorted((c.score for c in ranked), reverse=True)
    assert all(0.0 <= c.score <= 1.0 for c in ranked)  # sigmoid-activated
    assert {c.retrieval_score for c in ranked} == {c.retrieval_score for c in contexts}
    assert await reranker.rerank(question, []) == []


async def test_workspace_ask_with_a_cross_encoder(cross_encoder_dir: Path) -> None:
    ws = Workspace(
        [Mount.of("/docs", MemoryStore())],
        policy=Policy.allow_all(),
        knowledge=Knowledge(MemoryIndex()),
        principal=Principal.of("lead"),
    )
    for i, text in enumerate(TEXTS):
        await ws.write(f"/docs/{i}.md", text + "\n")
    answer = await ws.ask(
        "When do deploys happen?", reranker=CrossEncoderRerank(cross_encoder_dir), k=4
    )
    assert answer.reranker.startswith("cross-encoder:")
    assert answer.contexts and all(0.0 <= c.score <= 1.0 for c in answer.contexts)
    assert answer.verified


def test_cross_encoder_needs_a_local_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="never downloaded"):
        CrossEncoderRerank("cross-encoder/ms-marco-MiniLM-L6-v2")
    with pytest.raises(ConfigurationError, match="not a local model folder"):
        CrossEncoderRerank(tmp_path)


async def test_a_broken_model_folder_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    reranker = CrossEncoderRerank(tmp_path)
    with pytest.raises(ConfigurationError, match="cannot load the model"):
        await reranker.rerank("q", [_ctx(0, "text")])
