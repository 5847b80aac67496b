"""The embedder contract, run against every embedder, and the local model's own checks.

The local embedder loads the real packaged all-MiniLM-L6-v2 (no mocks). Its ONNX files are
built once per test session into a temporary cache directory. ``embedders_reference.json``
holds sentence-transformers' own vectors for a few texts (made by
``bench/make_embedder_reference.py``), so the suite compares against the reference without
importing torch.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    HashingEmbedder,
    LocalEmbedder,
    _artifacts,
)

REFERENCE = json.loads((Path(__file__).with_name("embedders_reference.json")).read_text())
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def local_fp32(model_cache: Path) -> LocalEmbedder:
    embedder = LocalEmbedder(variant="fp32", device="cpu", cache_dir=model_cache)
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def local_int8(model_cache: Path) -> LocalEmbedder:
    embedder = LocalEmbedder(variant="int8", device="cpu", cache_dir=model_cache)
    embedder.load()
    return embedder


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return np.sum(a * b, axis=-1)


# -- the contract, for every embedder -----------------------------------------------------------


class EmbedderContract:
    """Subclass and provide an ``embedder`` fixture."""

    TEXTS = ("The cat sat on the mat.", "Stock markets fell sharply today.", "", "ünïcödé 東京")

    async def test_shape_dtype_and_unit_rows(self, embedder: Embedder) -> None:
        out = await embedder.embed(list(self.TEXTS))
        assert out.shape == (len(self.TEXTS), embedder.dim)
        assert out.dtype == np.float32
        assert out.flags.c_contiguous
        np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)

    async def test_empty_input(self, embedder: Embedder) -> None:
        out = await embedder.embed([])
        assert out.shape == (0, embedder.dim)
        assert out.dtype == np.float32

    async def test_rows_follow_input_order_and_repeat(self, embedder: Embedder) -> None:
        # Quantized variants set the activation scale per batch, so a text's vector may move a
        # little with its batch-mates: compare by cosine, not bit for bit.
        texts = list(self.TEXTS)
        forward = await embedder.embed(texts)
        backward = await embedder.embed(texts[::-1])
        assert _cosine(forward, backward[::-1]).min() > 0.99
        again = await embedder.embed_one(texts[0])
        assert float(_cosine(again, forward[0])) > 0.99
        other = await embedder.embed([texts[0], "something else entirely, and longer " * 5])
        assert float(_cosine(other[0], forward[0])) > 0.99

    async def test_similar_texts_are_closer(self, embedder: Embedder) -> None:
        a, b, c = await embedder.embed(
            ["the cat sat on the mat", "a cat sat on a mat", "interest rates rose in March"]
        )
        assert float(a @ b) > float(a @ c)

    def test_token_counting(self, embedder: Embedder) -> None:
        assert 0 <= embedder.count_tokens("") <= 2  # special tokens only
        assert 1 <= embedder.count_tokens("hello") - embedder.count_tokens("") <= 2
        short, long = "one two three", "one two three " * 2000
        assert embedder.count_tokens(long) > embedder.count_tokens(short)
        assert embedder.fits(short)
        assert not embedder.fits(long)

    def test_identity(self, embedder: Embedder) -> None:
        assert embedder.name
        assert embedder.dim > 0
        assert embedder.max_tokens > 0
        assert embedder.name in repr(embedder)


class TestHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder()

    async def test_deterministic_across_processes(self) -> None:
        code = (
            "import asyncio, sys; from bastion.knowledge.embedders import HashingEmbedder; "
            "v = asyncio.run(HashingEmbedder(64).embed(['same text'])); "
            "sys.stdout.write(v.tobytes().hex())"
        )
        env = {**os.environ, "PYTHONHASHSEED": "123", "PYTHONPATH": str(SRC)}
        other = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        ).stdout
        here = (await HashingEmbedder(64).embed(["same text"])).tobytes().hex()
        assert other == here

    def test_name_carries_dim(self) -> None:
        assert HashingEmbedder(64).name != HashingEmbedder(128).name
        with pytest.raises(ValueError, match="dim"):
            HashingEmbedder(2)


class TestCachedHashingEmbedder(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return CachedEmbedder(HashingEmbedder(), EmbeddingCache())


class TestLocalInt8(EmbedderContract):
    @pytest.fixture
    def embedder(self, local_int8: LocalEmbedder) -> Embedder:
        return local_int8


class TestLocalFp32(EmbedderContract):
    @pytest.fixture
    def embedder(self, local_fp32: LocalEmbedder) -> Embedder:
        return local_fp32


# -- the local model ------------------------------------------------------------------------------


def test_fp32_matches_sentence_transformers(local_fp32: LocalEmbedder) -> None:
    ours = local_fp32.encode(REFERENCE["texts"])
    theirs = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cos = _cosine(ours, theirs)
    assert cos.min() > 0.9999, cos
    np.testing.assert_allclose(ours, theirs, atol=1e-4)


def test_int8_is_close_to_fp32(local_fp32: LocalEmbedder, local_int8: LocalEmbedder) -> None:
    texts = REFERENCE["texts"]
    fp32 = local_fp32.encode(texts)
    for int8 in (local_int8.encode(texts), np.vstack([local_int8.encode([t]) for t in texts])):
        cos = _cosine(int8, fp32)
        real = np.array([bool(t) for t in texts])
        assert cos[real].min() > 0.98, cos
        assert cos[real].mean() > 0.99, cos
        # The empty text is only [CLS] [SEP]: two activations set the whole int8 range.
        assert cos[~real].min() > 0.95, cos


def test_identity_of_variants(local_fp32: LocalEmbedder, local_int8: LocalEmbedder) -> None:
    assert local_fp32.dim == local_int8.dim == 384
    assert local_fp32.max_tokens == 256
    assert local_fp32.count_tokens("") == 2  # [CLS] [SEP]
    assert local_fp32.name == "sentence-transformers/all-MiniLM-L6-v2:fp32"
    assert local_int8.name == "sentence-transformers/all-MiniLM-L6-v2:int8"


async def test_semantic_sanity(local_int8: LocalEmbedder) -> None:
    query, near, far = await local_int8.embed(
        [
            "How do vaccines train the immune system?",
            "Immunization exposes the body's defenses to a harmless antigen.",
            "The recipe needs two cups of flour and an egg.",
        ]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_truncation_at_the_model_window(local_fp32: LocalEmbedder) -> None:
    words = [f"w{i}" for i in range(600)]
    long_text = " ".join(words)
    assert local_fp32.count_tokens(long_text) > local_fp32.max_tokens
    content = local_fp32.max_tokens - 2  # the window holds [CLS] + 254 tokens + [SEP]
    head = local_fp32._tokenizer.decode(  # the first 254 tokens, as text
        local_fp32._counter.encode(long_text, add_special_tokens=False).ids[:content]
    )
    assert local_fp32.count_tokens(head) == local_fp32.max_tokens
    both = local_fp32.encode([long_text, head])
    assert float(both[0] @ both[1]) > 0.9999


def test_batching_does_not_change_fp32_vectors(local_fp32: LocalEmbedder) -> None:
    texts = [("word " * n).strip() for n in (1, 5, 40, 200, 3)]
    together = local_fp32.encode(texts)
    alone = np.vstack([local_fp32.encode([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


async def test_embed_runs_off_the_event_loop(local_int8: LocalEmbedder) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    await local_int8.embed(["some text to embed " * 30] * 64)
    task.cancel()
    assert ticks > 3


def test_artifacts_are_built_once(model_cache: Path, local_int8: LocalEmbedder) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in model_cache.glob("*.onnx")}
    assert len(before) == 2  # fp32 and int8
    again = LocalEmbedder(variant="int8", device="cpu", cache_dir=model_cache)
    assert again.model_path().name in before
    after = {p.name: p.stat().st_mtime_ns for p in model_cache.glob("*.onnx")}
    assert after == before
    assert not list(model_cache.glob(".*.tmp"))


def test_corrupt_artifact_is_rebuilt(tmp_path: Path, local_fp32: LocalEmbedder) -> None:
    # Reuse the built fp32 file under the name a fresh cache would use, then corrupt it.
    fresh = LocalEmbedder(variant="fp32", device="cpu", cache_dir=tmp_path)
    target = tmp_path / local_fp32.model_path().name
    target.write_bytes(b"not an onnx model")
    assert fresh.model_path() == target
    out = fresh.encode(["rebuilt"])
    assert out.shape == (1, 384)
    assert target.stat().st_size > 1_000_000


def test_fp16_graph_is_valid_and_accurate(local_fp32: LocalEmbedder, tmp_path: Path) -> None:
    # The fp16 variant is for CUDA. Here the graph itself is checked: valid ONNX, int32 inputs,
    # float32 output, fp16 encoder weights, fp32 pooling; ORT's CPU provider runs it (casting
    # back to fp32 internally), which checks the wiring against the reference vectors.
    import onnx
    import onnxruntime as ort

    from bastion.knowledge.embedders import _export
    from bastion.knowledge.embedders._bert_graph import BertShape, build_bert_graph

    weights = _export.load_weights(local_fp32.model_dir / "model.safetensors")
    shape = BertShape.from_config(json.loads((local_fp32.model_dir / "config.json").read_text()))
    model = build_bert_graph(weights, shape, half=True)
    onnx.checker.check_model(model)
    assert [i.type.tensor_type.elem_type for i in model.graph.input] == [onnx.TensorProto.INT32] * 2
    assert model.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    types = {t.name: t.data_type for t in model.graph.initializer}
    assert types["l0.qkv.w"] == types["emb.word"] == onnx.TensorProto.FLOAT16
    assert types["pool.min_norm"] == onnx.TensorProto.FLOAT

    _export.save(model, tmp_path / "fp16.onnx")
    session = ort.InferenceSession(str(tmp_path / "fp16.onnx"), providers=["CPUExecutionProvider"])
    rows = []
    for text in REFERENCE["texts"][:3]:
        ids = np.asarray([local_fp32._tokenizer.encode(text).ids], dtype=np.int32)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        rows.append(session.run(None, feeds)[0][0])
    reference = np.asarray(REFERENCE["vectors"][:3], dtype=np.float32)
    assert _cosine(np.asarray(rows), reference).min() > 0.999


def test_bad_options_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        LocalEmbedder(variant="int4")
    with pytest.raises(ConfigurationError):
        LocalEmbedder(variant="fp16", device="cpu")
    with pytest.raises(ConfigurationError, match="onnxruntime-gpu"):
        LocalEmbedder(device="cuda")


def test_onnx_default_is_int8_on_cpu() -> None:
    # The CPU default without a runtime asked follows the CPU (test_embedder_number_formats.py);
    # ONNX Runtime's own default on CPU is int8.
    embedder = LocalEmbedder(device="cpu", runtime="onnx")
    assert embedder.variant == "int8"
    assert embedder.name.endswith(":int8")


# -- the artifact cache ---------------------------------------------------------------------------


def _slow_builder(payload: bytes) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        with tmp.open("wb") as fh:
            for i in range(0, len(payload), 4096):
                fh.write(payload[i : i + 4096])
                fh.flush()

    return build


def test_publish_is_atomic_under_concurrent_processes(tmp_path: Path) -> None:
    target = tmp_path / "models" / "artifact.bin"
    code = (
        "import sys, time; from pathlib import Path; "
        "from bastion.knowledge.embedders._artifacts import publish\n"
        "def build(tmp):\n"
        "    with tmp.open('wb') as fh:\n"
        "        for _ in range(64):\n"
        "            fh.write(sys.argv[2].encode() * 16384); fh.flush(); time.sleep(0.002)\n"
        "publish(Path(sys.argv[1]), build)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(target), letter], env=env)
        for letter in "ab"
    ]
    seen_partial = False
    while any(p.poll() is None for p in procs):
        if target.exists():
            size = target.stat().st_size
            seen_partial |= size != 64 * 16384
    assert [p.wait() for p in procs] == [0, 0]
    assert not seen_partial
    data = target.read_bytes()
    assert len(data) == 64 * 16384
    assert set(data) in ({ord("a")}, {ord("b")})
    assert [p.name for p in target.parent.iterdir()] == ["artifact.bin"]


def test_publish_keeps_an_existing_file_and_cleans_up_failures(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    _artifacts.publish(target, _slow_builder(b"x" * 10_000))
    _artifacts.publish(target, _slow_builder(b"y"))  # not rebuilt
    assert target.read_bytes() == b"x" * 10_000

    def failing(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        _artifacts.publish(tmp_path / "b.bin", failing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BASTION_CACHE_DIR", str(tmp_path))
    assert _artifacts.default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("BASTION_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _artifacts.default_cache_dir() == tmp_path / "xdg" / "bastion" / "models"
