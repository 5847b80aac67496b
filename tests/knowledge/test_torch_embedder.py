"""The PyTorch runtime of the local embedder, run on CPU: everything of the CUDA path but the
GPU and its attention kernel.

The encoder, the batching, the device-side batch assembly and the pooling are the code the
CUDA path runs; here they run in fp32 on CPU and are compared with the ONNX path (the fp32
graph reproduces sentence-transformers to 1e-6) and with sentence-transformers' own vectors
(``embedders_reference.json``). Runtime selection is checked by making PyTorch report a GPU
(``torch.cuda.is_available``) and building, never running, the embedder it picks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from test_embedders import EmbedderContract
from tokenizers import Tokenizer

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders import Embedder, LocalEmbedder, torch_bert
from bastion.knowledge.embedders._batching import plan_batches
from bastion.knowledge.embedders._bert_graph import BertShape
from bastion.knowledge.embedders.local import (
    Device,
    Runtime,
    Variant,
    cpu_default,
    cuda_available,
)
from bastion.knowledge.embedders.torch_bert import TorchBert, TorchRunner, _slices

REFERENCE = json.loads((Path(__file__).with_name("embedders_reference.json")).read_text())
SRC = Path(__file__).resolve().parents[2] / "src"

# Real sentences of several lengths: SciFact-like claims, a question, a heading, an empty text.
TEXTS = [
    "Vitamin D deficiency is associated with an increased risk of cardiovascular disease.",
    "What is the capital of France?",
    "",
    "Results",
    "The microtubule-associated protein tau regulates axonal transport in neurons, and its "
    "hyperphosphorylation is a hallmark of several neurodegenerative disorders including "
    "Alzheimer's disease; here we show that reducing tau levels restores transport rates.",
    "Ünïcödé, ACCENTS and CAPS: naïve café résumé — 東京 2024!",
    "A man is eating a piece of bread.",
]
LONG = "Long documents are cut at the model's window of 256 tokens. " * 60


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache") / "models"  # as BASTION_CACHE_DIR=cache names it


@pytest.fixture(scope="module")
def onnx_fp32(model_cache: Path) -> LocalEmbedder:
    return LocalEmbedder(variant="fp32", device="cpu", cache_dir=model_cache)


@pytest.fixture(scope="module")
def torch_fp32() -> LocalEmbedder:
    embedder = LocalEmbedder(runtime="torch", device="cpu", variant="fp32")
    embedder.load()
    return embedder


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


class TestTorchEmbedderContract(EmbedderContract):
    @pytest.fixture
    def embedder(self, torch_fp32: LocalEmbedder) -> Embedder:
        return torch_fp32


# -- the same vectors as the ONNX path -----------------------------------------------------------


def test_matches_onnx_fp32_and_sentence_transformers(
    torch_fp32: LocalEmbedder, onnx_fp32: LocalEmbedder
) -> None:
    assert torch_fp32.runtime is Runtime.TORCH and torch_fp32.device is Device.CPU
    ours = torch_fp32.encode(TEXTS)
    assert _cos(ours, onnx_fp32.encode(TEXTS)).min() >= 0.9999
    reference = torch_fp32.encode(REFERENCE["texts"])
    assert _cos(reference, np.asarray(REFERENCE["vectors"], dtype=np.float32)).min() >= 0.9999
    # Same numeric format, same arithmetic: the name does not depend on the runtime.
    assert torch_fp32.name == onnx_fp32.name


def test_close_to_the_onnx_default(torch_fp32: LocalEmbedder, model_cache: Path) -> None:
    default = LocalEmbedder(device="cpu", runtime="onnx", cache_dir=model_cache)
    assert default.runtime is Runtime.ONNX and default.variant is Variant.INT8
    # int8 quantization itself costs this much (the bounds test_embedders.py holds int8 to)
    cos = _cos(torch_fp32.encode(TEXTS), default.encode(TEXTS))
    real = np.array([bool(t) for t in TEXTS])
    assert cos[real].min() > 0.98 and cos[real].mean() > 0.99, cos
    assert cos[~real].min() > 0.95, cos  # the empty text: [CLS] [SEP] only


def test_empty_and_long_inputs_truncate_like_onnx(
    torch_fp32: LocalEmbedder, onnx_fp32: LocalEmbedder
) -> None:
    assert torch_fp32.count_tokens(LONG) > torch_fp32.max_tokens
    texts = ["", LONG, LONG + " and a tail far past the window"]
    ours = torch_fp32.encode(texts)
    assert _cos(ours, onnx_fp32.encode(texts)).min() >= 0.9999
    np.testing.assert_allclose(ours[1], ours[2], atol=1e-6)  # the tail is cut off
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_prefetching_the_tokenizer_changes_nothing(
    torch_fp32: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [*TEXTS, LONG] * 3
    shape = BertShape.from_config(json.loads((torch_fp32.model_dir / "config.json").read_text()))
    model = TorchBert.from_file(
        torch_fp32.model_dir / "model.safetensors",
        shape,
        device=torch.device("cpu"),
        dtype=torch.float32,
    )
    tokenizer = Tokenizer.from_file(str(torch_fp32.model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(torch_fp32.max_tokens)
    expected = torch_fp32.encode(texts)
    monkeypatch.setattr(torch_bert, "_FIRST_SLICE", 1)
    for prefetch in (True, False):
        # max_batch 4: slices of at most 8 texts; tokenized ahead, they start at 1 text
        runner = TorchRunner(model, batch_tokens=4096, max_batch=4, prefetch=prefetch)
        np.testing.assert_allclose(runner.encode(texts, tokenizer), expected, atol=2e-5)
    assert _slices(21, 8, 1) == [(0, 1), (1, 3), (3, 7), (7, 15), (15, 21)]
    assert _slices(16, 8, 8) == [(0, 8), (8, 16)]
    assert _slices(0, 8, 1) == []


# -- bucketing and batching ----------------------------------------------------------------------


def test_bucketed_batches_come_back_in_input_order(torch_fp32: LocalEmbedder) -> None:
    rng = np.random.default_rng(7)
    words = TEXTS[4].split()
    texts = [" ".join(words[: int(k)]) for k in rng.integers(0, len(words), size=16)]
    assert len({torch_fp32.count_tokens(t) for t in texts}) > 5  # shuffled lengths
    # one batch, texts longest first: no reordering inside the embedder
    by_length = sorted(range(len(texts)), key=lambda i: -torch_fp32.count_tokens(texts[i]))
    expected = np.empty((len(texts), torch_fp32.dim), dtype=np.float32)
    expected[by_length] = torch_fp32.encode([texts[i] for i in by_length])
    small = LocalEmbedder(
        runtime="torch", device="cpu", variant="fp32", batch_tokens=64, max_batch=5
    )
    unsorted = LocalEmbedder(
        runtime="torch", device="cpu", variant="fp32", max_batch=5, bucket=False
    )
    for embedder in (torch_fp32, small, unsorted):
        np.testing.assert_allclose(embedder.encode(texts), expected, atol=2e-5)


def test_packed_attention_matches_padded(torch_fp32: LocalEmbedder) -> None:
    packed = LocalEmbedder(
        runtime="torch", device="cpu", variant="fp32", attention="packed", max_batch=3
    )
    texts = [*TEXTS, LONG]
    np.testing.assert_allclose(packed.encode(texts), torch_fp32.encode(texts), atol=2e-5)


def test_bf16_stays_close(torch_fp32: LocalEmbedder) -> None:
    bf16 = LocalEmbedder(runtime="torch", device="cpu", variant="bf16")
    assert bf16.name.endswith(":bf16")
    assert _cos(bf16.encode(TEXTS), torch_fp32.encode(TEXTS)).min() >= 0.999


def test_plan_batches_is_a_permutation_within_budgets() -> None:
    lengths = np.array([5, 256, 12, 12, 256, 40, 3, 256, 7], dtype=np.int64)
    plan = plan_batches(lengths, batch_tokens=520, max_batch=4)
    assert sorted(plan.order.tolist()) == list(range(len(lengths)))
    assert lengths[plan.order].tolist() == sorted(lengths.tolist(), reverse=True)
    assert (plan.batches[0].start, plan.batches[0].end) == (0, 2)  # 520 // 256 rows
    assert plan.batches[-1].end == len(lengths)
    for b in plan.batches:
        rows = lengths[plan.order[b.start : b.end]]
        assert b.width == rows.max()
        assert b.uniform == (rows.min() == rows.max())
        assert b.end - b.start <= 4
        assert b.end - b.start == 1 or (b.end - b.start) * b.width <= 520
    plain = plan_batches(lengths, batch_tokens=520, max_batch=4, bucket=False)
    assert plain.order.tolist() == list(range(len(lengths)))
    assert [b.width for b in plain.batches] == [256, 256, 7]


# -- which runtime is chosen ---------------------------------------------------------------------

onnx_without_cuda = pytest.mark.skipif(
    cuda_available(), reason="onnxruntime-gpu with a GPU here: ONNX Runtime is chosen first"
)


@onnx_without_cuda
def test_torch_cuda_is_chosen_when_pytorch_has_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for device in (None, "cuda"):
        embedder = LocalEmbedder(device=device)  # built, not run: there is no GPU here
        assert (embedder.device, embedder.runtime) == (Device.CUDA, Runtime.TORCH)
        assert embedder.variant is Variant.FP16
        assert embedder.name.endswith(":fp16")
        assert (embedder.max_batch, embedder.batch_tokens) == (1024, 262144)
    assert LocalEmbedder(device="cuda", variant="bf16").runtime is Runtime.TORCH
    # asking for the CPU gets the CPU default (int8 ONNX, or bf16 PyTorch on AMX)
    cpu = LocalEmbedder(device="cpu")
    assert (cpu.device, (cpu.runtime, cpu.variant)) == (Device.CPU, cpu_default())


@onnx_without_cuda
def test_no_gpu_keeps_the_cpu_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    default = LocalEmbedder()
    assert (default.device, (default.runtime, default.variant)) == (Device.CPU, cpu_default())
    with pytest.raises(ConfigurationError, match="PyTorch with CUDA or the onnxruntime-gpu"):
        LocalEmbedder(device="cuda")
    with pytest.raises(ConfigurationError, match="CUDA build of PyTorch"):
        LocalEmbedder(device="cuda", runtime="torch")
    with pytest.raises(ConfigurationError, match="onnxruntime-gpu"):
        LocalEmbedder(device="cuda", runtime="onnx")
    assert LocalEmbedder(runtime="torch").device is Device.CPU


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"runtime": "torch", "variant": "int8"}, "'int8' does not run with torch on cpu"),
        ({"runtime": "torch", "device": "cpu", "variant": "fp16"}, "use one of bf16, fp32"),
        ({"runtime": "onnx", "variant": "bf16"}, "'bf16' does not run with onnx"),
        ({"device": "cpu", "variant": "fp16"}, "'fp16' does not run with onnx on cpu"),
        ({"runtime": "onnx", "attention": "packed"}, "needs runtime='torch'"),
        ({"runtime": "jax"}, "unknown embedder option"),
        ({"attention": "sparse"}, "unknown embedder option"),
    ],
)
def test_refused_combinations(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        LocalEmbedder(**options)  # type: ignore[arg-type]


def test_bastion_and_the_cpu_path_never_import_torch(model_cache: Path) -> None:
    code = (
        "import sys, bastion, bastion.knowledge.embedders as e\n"
        "from bastion.knowledge.embedders.local import LocalEmbedder\n"
        "assert 'torch' not in sys.modules, 'import'\n"
        "LocalEmbedder(device='cpu', variant='fp32').encode(['a text'])\n"
        "assert 'torch' not in sys.modules, 'cpu path'\n"
        "if not sys.argv[1:]:  # no NVIDIA device node: the automatic choice imports no torch\n"
        "    from bastion.knowledge.embedders.local import cpu_default\n"
        "    assert LocalEmbedder().runtime == cpu_default()[0]  # bf16 torch on AMX: not loaded\n"
        "    assert 'torch' not in sys.modules, 'automatic choice'\n"
    )
    gpu_node = Path("/dev/nvidiactl").exists()
    env = {**os.environ, "PYTHONPATH": str(SRC), "BASTION_CACHE_DIR": str(model_cache.parent)}
    subprocess.run(
        [sys.executable, "-c", code, *(["gpu"] if gpu_node else [])], check=True, env=env
    )
