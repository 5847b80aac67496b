"""all-MiniLM-L6-v2 in PyTorch, for GPUs: the BERT encoder written out from its safetensors.

Imported only when :class:`~bastion.knowledge.embedders.LocalEmbedder` chooses the PyTorch
runtime (a CUDA machine without ``onnxruntime-gpu``, or ``runtime="torch"``), so that
``import bastion`` and the ONNX path never load torch. No ``transformers`` or
``sentence-transformers`` at run time: the weights are read with ``safetensors.numpy`` and the
encoder is the few lines of :class:`TorchBert`, the same arithmetic as the ONNX graph of
:mod:`._bert_graph` (token-type row 0 folded into the position table, exact GELU, post-layer
norm), then mean pooling over real tokens and L2 normalization, both in float32.

Two ways to run a batch:

* ``padded`` (default) — rows padded to the batch's longest row, attention through
  :func:`torch.nn.functional.scaled_dot_product_attention` with a key mask; a batch whose rows
  all have the same length gets no mask, so PyTorch may pick its flash kernel (which takes no
  mask); otherwise it picks the memory-efficient one. Which kernel runs is PyTorch's choice,
  or the caller's through :func:`torch.nn.attention.sdpa_kernel`.
* ``packed`` — no padding at all: the batch's tokens are concatenated and attention runs
  per sequence through :func:`torch.nn.attention.varlen.varlen_attn` (flash, variable length,
  CUDA with fp16/bf16). Elsewhere the same packed batch is padded just for the attention call,
  so every other step of this path also runs (and is tested) on CPU.

Token ids go to the device once per slice of texts; batches are cut from them on the device
and the vectors come back once at the end, so the host never waits on the GPU between batches
and tokenizes the next slice while the GPU embeds the last one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file
from tokenizers import Encoding, Tokenizer
from torch import Tensor

from bastion.knowledge.embedders._batching import Attention, plan_batches
from bastion.knowledge.embedders._bert_graph import BertShape
from bastion.knowledge.embedders.base import Vectors

__all__ = ["TorchBert", "TorchRunner"]


@dataclass(frozen=True, kw_only=True)
class _Layer:
    qkv_w: Tensor
    qkv_b: Tensor
    out_w: Tensor
    out_b: Tensor
    ln1_w: Tensor
    ln1_b: Tensor
    ff1_w: Tensor
    ff1_b: Tensor
    ff2_w: Tensor
    ff2_b: Tensor
    ln2_w: Tensor
    ln2_b: Tensor


Attend = Callable[[Tensor], Tensor]
"""Fused q/k/v projections ``[..., 3 * hidden]`` to the attention output ``[..., hidden]``."""


class TorchBert:
    """The encoder's weights on one device in one dtype, and its forward passes."""

    def __init__(
        self,
        weights: Mapping[str, np.ndarray],
        shape: BertShape,
        *,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.shape = shape
        self.device = device
        self.dtype = dtype
        self.heads = shape.num_heads
        self.head_dim = shape.hidden_size // shape.num_heads

        def t(value: np.ndarray) -> Tensor:
            tensor = torch.from_numpy(np.ascontiguousarray(value, dtype=np.float32))
            return tensor.to(device=device, dtype=dtype)

        def w(key: str) -> np.ndarray:
            return np.asarray(weights[key], dtype=np.float32)

        self.word = t(w("embeddings.word_embeddings.weight"))
        self.position = t(
            w("embeddings.position_embeddings.weight")
            + w("embeddings.token_type_embeddings.weight")[0]
        )
        self.emb_ln = (t(w("embeddings.LayerNorm.weight")), t(w("embeddings.LayerNorm.bias")))
        self.layers: list[_Layer] = []
        for i in range(shape.num_layers):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            qkv = ("query", "key", "value")
            self.layers.append(
                _Layer(
                    qkv_w=t(np.concatenate([w(f"{att}self.{n}.weight") for n in qkv])),
                    qkv_b=t(np.concatenate([w(f"{att}self.{n}.bias") for n in qkv])),
                    out_w=t(w(att + "output.dense.weight")),
                    out_b=t(w(att + "output.dense.bias")),
                    ln1_w=t(w(att + "output.LayerNorm.weight")),
                    ln1_b=t(w(att + "output.LayerNorm.bias")),
                    ff1_w=t(w(p + "intermediate.dense.weight")),
                    ff1_b=t(w(p + "intermediate.dense.bias")),
                    ff2_w=t(w(p + "output.dense.weight")),
                    ff2_b=t(w(p + "output.dense.bias")),
                    ln2_w=t(w(p + "output.LayerNorm.weight")),
                    ln2_b=t(w(p + "output.LayerNorm.bias")),
                )
            )

    @classmethod
    def from_file(
        cls, path: Path, shape: BertShape, *, device: torch.device, dtype: torch.dtype
    ) -> TorchBert:
        return cls(load_file(str(path)), shape, device=device, dtype=dtype)

    # -- forward passes ------------------------------------------------------------------------

    def padded(self, ids: Tensor, mask: Tensor | None) -> Tensor:
        """Sentence vectors of a padded batch: ``ids`` ``[batch, width]``, ``mask`` bool
        ``[batch, width]`` (True on real tokens; ``None`` when no row is padded). Returns
        ``[batch, hidden]`` float32, unit length."""
        batch, width = ids.shape
        positions = torch.arange(width, device=ids.device)
        x = self._embed(ids, positions)
        key_mask = mask[:, None, None, :] if mask is not None else None

        def attend(qkv: Tensor) -> Tensor:
            q, k, v = qkv.view(batch, width, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
            return out.transpose(1, 2).reshape(batch, width, -1)

        x = self._encode(x, attend).float()
        if mask is None:
            return F.normalize(x.mean(dim=1), p=2.0, dim=1, eps=1e-12)
        weights = mask.to(torch.float32)[:, :, None]
        summed = (x * weights).sum(dim=1)
        return _normalize(summed, weights.sum(dim=1))

    def packed(self, ids: Tensor, lengths: Tensor, max_len: int) -> Tensor:
        """Sentence vectors of a packed batch: ``ids`` ``[tokens]`` (the rows one after the
        other), ``lengths`` ``[batch]`` int64 on the same device, ``max_len`` their maximum."""
        batch = lengths.shape[0]
        ends = lengths.cumsum(0)
        starts = ends - lengths
        tokens = ids.shape[0]
        # output_size: the host knows the total, so the GPU need not be asked (no sync)
        row = torch.repeat_interleave(
            torch.arange(batch, device=ids.device), lengths, output_size=tokens
        )
        positions = torch.arange(tokens, device=ids.device) - starts[row]
        x = self._embed(ids, positions)
        attend: Attend
        if _varlen_ok(x):
            from torch.nn.attention.varlen import varlen_attn

            cu = torch.cat([ends.new_zeros(1), ends]).to(torch.int32)

            def attend(qkv: Tensor) -> Tensor:
                q, k, v = qkv.view(tokens, 3, self.heads, self.head_dim).unbind(1)
                out = varlen_attn(q, k, v, cu, cu, max_len, max_len)
                assert isinstance(out, Tensor)
                return out.reshape(tokens, -1)

        else:
            # No variable-length kernel here: pad for the attention call only.
            key_mask = torch.arange(max_len, device=ids.device)[None, :] < lengths[:, None]

            def attend(qkv: Tensor) -> Tensor:
                grid = qkv.new_zeros(batch, max_len, qkv.shape[-1])
                grid[row, positions] = qkv
                q, k, v = grid.view(batch, max_len, 3, self.heads, self.head_dim).permute(
                    2, 0, 3, 1, 4
                )
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask[:, None, None])
                return out.transpose(1, 2)[row, positions].reshape(tokens, -1)

        x = self._encode(x, attend).float()
        summed = x.new_zeros(batch, x.shape[-1]).index_add_(0, row, x)
        return _normalize(summed, lengths.to(torch.float32)[:, None])

    # -- the encoder ---------------------------------------------------------------------------

    def _embed(self, ids: Tensor, positions: Tensor) -> Tensor:
        x = F.embedding(ids, self.word) + F.embedding(positions, self.position)
        return self._norm(x, *self.emb_ln)

    def _encode(self, x: Tensor, attend: Attend) -> Tensor:
        for layer in self.layers:
            attended = attend(F.linear(x, layer.qkv_w, layer.qkv_b))
            x = self._norm(
                F.linear(attended, layer.out_w, layer.out_b) + x, layer.ln1_w, layer.ln1_b
            )
            hidden = F.gelu(F.linear(x, layer.ff1_w, layer.ff1_b))
            x = self._norm(F.linear(hidden, layer.ff2_w, layer.ff2_b) + x, layer.ln2_w, layer.ln2_b)
        return x

    def _norm(self, x: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
        return F.layer_norm(x, (self.shape.hidden_size,), weight, bias, self.shape.layer_norm_eps)


def _normalize(summed: Tensor, count: Tensor) -> Tensor:
    """Mean over real tokens, then unit length: the ONNX graph's pooling, step for step."""
    mean = summed / count.clamp_min(1e-9)
    return F.normalize(mean, p=2.0, dim=1, eps=1e-12)


def _varlen_ok(x: Tensor) -> bool:
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16):
        return False
    try:
        from torch.nn.attention import varlen
    except ImportError:  # pragma: no cover - an older PyTorch
        return False
    return hasattr(varlen, "varlen_attn")


class TorchRunner:
    """Embeds tokenized texts with a :class:`TorchBert`: bucketing, batching, input order."""

    def __init__(
        self,
        model: TorchBert,
        *,
        batch_tokens: int,
        max_batch: int,
        bucket: bool = True,
        attention: Attention = Attention.PADDED,
        prefetch: bool | None = None,
    ) -> None:
        self.model = model
        self.batch_tokens = batch_tokens
        self.max_batch = max_batch
        self.bucket = bucket
        self.attention = attention
        self.prefetch = model.device.type == "cuda" if prefetch is None else prefetch
        """Tokenize the next slice in a worker thread while this one is laid out and queued
        (on CUDA by default: there the host's work, not the GPU's, sets the pace)."""

    def encode(self, texts: Sequence[str], tokenizer: Tokenizer) -> Vectors:
        """Tokenize and embed ``texts``, one unit-length float32 row each, in input order.

        Texts are taken up to ``2 * max_batch`` at a time: on CUDA, kernels are queued without
        waiting, so the CPU tokenizes the next slice while the GPU embeds this one; the host
        waits once, at the end. With :attr:`prefetch`, the tokenizer (which lets go of the
        GIL) works on the next slice in a worker thread while this thread lays out and queues
        the current one, and the slices start small and double, so that the GPU starts early.
        Bucketing sorts within a slice.
        """
        out = np.empty((len(texts), self.model.shape.hidden_size), dtype=np.float32)
        step = 2 * self.max_batch
        bounds = _slices(len(texts), step, _FIRST_SLICE if self.prefetch else step)
        slices = [list(texts[start:end]) for start, end in bounds]
        pending: list[tuple[npt.NDArray[np.int64], Tensor]] = []
        for (first, _), encodings in zip(bounds, self._tokenized(slices, tokenizer), strict=True):
            order, vectors = self._enqueue(encodings)
            pending.append((order + first, vectors))
        for order, vectors in pending:
            out[order] = vectors.cpu().numpy()
        return out

    def _tokenized(
        self, slices: Sequence[list[str]], tokenizer: Tokenizer
    ) -> Iterator[list[Encoding]]:
        if not self.prefetch or len(slices) < 2:
            for piece in slices:
                yield tokenizer.encode_batch_fast(piece)
            return
        with ThreadPoolExecutor(1, thread_name_prefix="bastion-tokenize") as pool:
            ahead = pool.submit(tokenizer.encode_batch_fast, slices[0])
            for following in [*slices[1:], None]:
                encodings = ahead.result()
                if following is not None:
                    ahead = pool.submit(tokenizer.encode_batch_fast, following)
                yield encodings

    def run(self, encodings: Sequence[Encoding]) -> Vectors:
        """One unit-length float32 row per tokenized text, in input order."""
        out = np.empty((len(encodings), self.model.shape.hidden_size), dtype=np.float32)
        order, vectors = self._enqueue(encodings)
        out[order] = vectors.cpu().numpy()
        return out

    @torch.inference_mode()
    def _enqueue(self, encodings: Sequence[Encoding]) -> tuple[npt.NDArray[np.int64], Tensor]:
        """Queue the batches on the device; returns the embedding order and the vectors in
        that order (on the device, maybe not computed yet)."""
        n = len(encodings)
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=n)
        plan = plan_batches(
            lengths, batch_tokens=self.batch_tokens, max_batch=self.max_batch, bucket=self.bucket
        )
        if n == 0:
            return plan.order, torch.empty(0, self.model.shape.hidden_size)
        sorted_lengths = lengths[plan.order]
        total = int(sorted_lengths.sum())
        flat_ids = np.fromiter(
            itertools.chain.from_iterable(encodings[j].ids for j in plan.order),
            dtype=np.int64,
            count=total,
        )
        device = self.model.device
        flat = _to_device(flat_ids, device)
        lens = _to_device(sorted_lengths, device)
        offsets = np.concatenate([[0], np.cumsum(sorted_lengths)])
        row_starts = lens.cumsum(0) - lens
        pieces: list[Tensor] = []
        for b in plan.batches:
            first, last = int(offsets[b.start]), int(offsets[b.end])
            if self.attention is Attention.PACKED:
                pieces.append(self.model.packed(flat[first:last], lens[b.start : b.end], b.width))
                continue
            if b.uniform:
                ids = flat[first:last].view(b.end - b.start, b.width)
                pieces.append(self.model.padded(ids, None))
                continue
            starts = row_starts[b.start : b.end] - first
            positions = torch.arange(b.width, device=device)
            mask = positions[None, :] < lens[b.start : b.end, None]
            index = (starts[:, None] + positions[None, :]).clamp_max(last - first - 1)
            ids = torch.where(mask, flat[first:last][index], 0)
            pieces.append(self.model.padded(ids, mask))
        return plan.order, torch.cat(pieces)


_FIRST_SLICE = 256
"""Texts in the first slice when tokenizing ahead: the GPU waits only for these."""


def _slices(n: int, step: int, first: int) -> list[tuple[int, int]]:
    """``(start, end)`` of slices of ``n`` texts: ``first`` texts, then twice as many each
    time, up to ``step``."""
    bounds: list[tuple[int, int]] = []
    start, size = 0, max(1, min(first, step))
    while start < n:
        end = min(n, start + size)
        bounds.append((start, end))
        start, size = end, min(step, size * 2)
    return bounds


def _to_device(array: np.ndarray, device: torch.device) -> Tensor:
    tensor = torch.from_numpy(array)
    if device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor
