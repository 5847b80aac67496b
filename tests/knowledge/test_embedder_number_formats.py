"""Variants of one model share a vector space: an index takes vectors of several of them.

The local model's name holds its number format (``...:int8``, ``...:bf16``); the CPU default
follows the machine (bf16 PyTorch on AMX CPUs with torch installed, else int8 ONNX Runtime),
so an index built on one machine is searched and extended from another. Checked here: the
naming rule, the origin record, the embedded (LanceDB) and PostgreSQL indexes' own checks, a
real mixed int8/bf16 index searched with either variant, and the default's choice (the CPU's
flags are the one thing faked: this machine has one CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bastion.core.errors import ConfigurationError, IndexMismatchError
from bastion.knowledge.embedders import LocalEmbedder, local
from bastion.knowledge.embedders.base import vector_space
from bastion.knowledge.embedders.local import Device, Runtime, Variant, cpu_default
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.lance import LanceIndex
from bastion.knowledge.origin import ORIGIN_FILE, IndexOrigin, check_origin, record_origin

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SRC = Path(__file__).resolve().parents[2] / "src"

DOCS = {
    "/kb/heron.md": "The grey heron nests in tall trees beside rivers and lakes.",
    "/kb/tax.md": "Value added tax returns are filed every quarter with the revenue office.",
    "/kb/gpu.md": "Graphics processors multiply large matrices in parallel for neural networks.",
    "/kb/bread.md": "Sourdough bread rises slowly because wild yeast ferments the dough.",
    "/kb/tide.md": "Ocean tides follow the pull of the moon and the sun on the sea.",
    "/kb/knee.md": "A torn ligament in the knee is repaired by arthroscopic surgery.",
}
QUERIES = {
    "where do herons build their nests": "/kb/heron.md",
    "quarterly VAT filing": "/kb/tax.md",
    "hardware for deep learning matrix math": "/kb/gpu.md",
    "how does sourdough leaven": "/kb/bread.md",
    "why the sea rises and falls": "/kb/tide.md",
    "knee ligament operation": "/kb/knee.md",
}


@pytest.fixture(scope="module")
def int8(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder(
        variant="int8", device="cpu", cache_dir=tmp_path_factory.mktemp("cache") / "models"
    )


@pytest.fixture(scope="module")
def bf16() -> LocalEmbedder:
    pytest.importorskip("torch")
    return LocalEmbedder(variant="bf16", device="cpu")


def test_variants_of_one_model_share_a_space() -> None:
    assert vector_space(f"{MINILM}:int8") == vector_space(f"{MINILM}:bf16") == MINILM
    assert vector_space(f"{MINILM}:fp32") == vector_space(f"{MINILM}:fp16") == MINILM
    # Anything else is its own space: another model, a name without a number format.
    assert vector_space("other/model:int8") != vector_space(f"{MINILM}:int8")
    for name in ("text-embedding-3-small", "bastion/hashing-384", "a:b:c", "fp32", ":int8"):
        assert vector_space(name) == name


def test_the_origin_accepts_another_number_format_and_keeps_its_record(tmp_path: Path) -> None:
    mounts = [("/kb", "file:kb")]
    built = IndexOrigin.of(mounts, embedder=f"{MINILM}:int8", dim=384)
    record_origin(tmp_path, built)
    text = (tmp_path / ORIGIN_FILE).read_text()
    # bf16 (or fp32) now: accepted, nothing to record (the record keeps what it was built with)
    for fmt in ("bf16", "fp32", "int8"):
        assert (
            check_origin(tmp_path, IndexOrigin.of(mounts, embedder=f"{MINILM}:{fmt}", dim=384))
            is None
        )
    assert (tmp_path / ORIGIN_FILE).read_text() == text
    # a new mount is still taken in, under the recorded embedder
    more = check_origin(
        tmp_path,
        IndexOrigin.of([*mounts, ("/new", "file:new")], embedder=f"{MINILM}:bf16", dim=384),
    )
    assert (
        more is not None
        and more.embedder == f"{MINILM}:int8"
        and set(more.mounts) == {"/kb", "/new"}
    )
    # another model, another size, or no model at all: refused, naming both embedders
    for embedder, dim in (("other/model:int8", 384), (f"{MINILM}:bf16", 768), (None, None)):
        with pytest.raises(
            IndexMismatchError, match=f"built with {MINILM}:int8 \\(384 dimensions\\)"
        ):
            check_origin(tmp_path, IndexOrigin.of(mounts, embedder=embedder, dim=dim))


def test_an_embedded_index_opens_with_another_variant_not_another_model(tmp_path: Path) -> None:
    LanceIndex(tmp_path / "ix", dim=384, embedder=f"{MINILM}:int8").close()
    LanceIndex(tmp_path / "ix", dim=384, embedder=f"{MINILM}:bf16").close()
    with pytest.raises(ConfigurationError, match="built differently"):
        LanceIndex(tmp_path / "ix", dim=384, embedder="other/model:bf16")
    with pytest.raises(ConfigurationError, match="built differently"):
        LanceIndex(tmp_path / "ix", dim=None, embedder=None)


def test_a_postgres_index_opens_with_another_variant_not_another_model(pg_dsn: str) -> None:
    from bastion.knowledge.index.postgres import PostgresIndex

    PostgresIndex(pg_dsn, dim=384, embedder=f"{MINILM}:int8").close()
    PostgresIndex(pg_dsn, dim=384, embedder=f"{MINILM}:bf16").close()
    with pytest.raises(ConfigurationError, match="built differently"):
        PostgresIndex(pg_dsn, dim=384, embedder="other/model:int8")


async def test_a_mixed_variant_index_finds_the_same_documents(
    tmp_path: Path, int8: LocalEmbedder, bf16: LocalEmbedder
) -> None:
    """Half the documents embedded in int8 (say, on an AMD machine), half in bf16 (an AMX
    one), in one LanceDB folder; each query, embedded either way, finds its document first."""
    paths = sorted(DOCS)
    first, second = paths[::2], paths[1::2]
    folder = tmp_path / "kb"
    for embedder, part in ((int8, first), (bf16, second)):
        knowledge = Knowledge.open(folder, embedder=embedder)
        try:
            for path in part:
                await knowledge.index_file(path, DOCS[path].encode())
        finally:
            knowledge.close()
    for embedder in (int8, bf16):
        knowledge = Knowledge.open(folder, embedder=embedder)
        try:
            assert knowledge.index.count() == len(DOCS)
            for query, expected in QUERIES.items():
                hits = await knowledge.search(query, mode="vector", k=3)
                assert hits[0].chunk.doc.path == expected, (embedder.name, query, hits)
        finally:
            knowledge.close()
    # The two formats' vectors of one text: the same direction to rounding.
    texts = list(DOCS.values())
    cos = np.sum(int8.encode(texts) * bf16.encode(texts), axis=1)
    assert cos.min() > 0.99, cos


def test_the_cpu_default_follows_amx_and_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setattr(local, "_cpu_flags", lambda: frozenset({"avx512f", "amx_bf16"}))
    assert cpu_default() == (Runtime.TORCH, Variant.BF16)
    auto = LocalEmbedder(device="cpu")
    assert (auto.runtime, auto.variant, auto.name) == (
        Runtime.TORCH,
        Variant.BF16,
        f"{MINILM}:bf16",
    )
    assert auto.batch_tokens == 4096  # the CPU batches, as for ONNX Runtime
    # what is asked wins over the default
    assert LocalEmbedder(device="cpu", variant="int8").runtime is Runtime.ONNX
    assert LocalEmbedder(device="cpu", runtime="onnx").variant is Variant.INT8
    assert LocalEmbedder(device="cpu", runtime="torch").variant is Variant.FP32
    # without AMX, or without torch: int8 ONNX Runtime
    monkeypatch.setattr(local, "_cpu_flags", lambda: frozenset({"avx512f", "avx512_vnni"}))
    plain = LocalEmbedder(device="cpu")
    assert (plain.device, plain.runtime, plain.variant) == (Device.CPU, Runtime.ONNX, Variant.INT8)
    monkeypatch.setattr(local, "_cpu_flags", lambda: frozenset({"amx_bf16"}))
    monkeypatch.setattr(local, "_installed", lambda module: False)
    assert cpu_default() == (Runtime.ONNX, Variant.INT8)


def test_the_flags_are_read_from_this_cpu() -> None:
    flags = local._cpu_flags()
    if Path("/proc/cpuinfo").exists():
        assert "fpu" in flags or "sse2" in flags or not flags  # x86 names them; others may not
    assert cpu_default()[1] is (
        Variant.BF16 if "amx_bf16" in flags and local._installed("torch") else Variant.INT8
    )


def test_building_the_default_imports_no_torch(tmp_path: Path) -> None:
    """A keyword search builds the embedder without embedding: torch stays unloaded even where
    the default is bf16 PyTorch; the first text embedded loads it, with OpenMP's threads
    waiting passively unless the operator chose otherwise."""
    code = (
        "import os, sys\n"
        "from bastion.knowledge.embedders.local import LocalEmbedder, cpu_default\n"
        "e = LocalEmbedder(device='cpu')\n"
        "assert (e.runtime, e.variant) == cpu_default(), e\n"
        "assert 'torch' not in sys.modules, 'built'\n"
        "e.encode(['a text'])\n"
        "print(e.runtime.value, 'torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "BASTION_CACHE_DIR": str(tmp_path)}
    env.pop("OMP_WAIT_POLICY", None)
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True
    ).stdout.split()
    assert out in (["torch", "True", "PASSIVE"], ["onnx", "False", "None"]), out
    if out[0] == "torch":
        env["OMP_WAIT_POLICY"] = "ACTIVE"
        out = subprocess.run(
            [sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True
        ).stdout.split()
        assert out == ["torch", "True", "ACTIVE"], out
