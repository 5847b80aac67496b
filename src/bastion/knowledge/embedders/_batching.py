"""Cut tokenized texts into batches: one pure function shared by every runtime.

Bucketing sorts the texts by token length (longest first, stable) and cuts the sorted list
into batches of at most ``batch_tokens`` padded tokens and ``max_batch`` rows, so neighbours
in a batch have nearly the same length and little compute goes into padding. The runtimes
embed the batches in this order and write each row back to its input position
(``out[order[start:end]] = rows``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

__all__ = ["Attention", "Batch", "BatchPlan", "plan_batches"]


class Attention(StrEnum):
    """How the PyTorch runtime lays a batch out for attention (see :mod:`.torch_bert`)."""

    PADDED = "padded"
    """Rows padded to the batch's longest, ``scaled_dot_product_attention`` with a key mask."""
    PACKED = "packed"
    """No padding: the rows' tokens one after the other, variable-length flash attention
    (``varlen_attn``) on CUDA."""


@dataclass(frozen=True, kw_only=True)
class Batch:
    """Rows ``order[start:end]`` of the input, padded to ``width`` tokens."""

    start: int
    end: int
    width: int
    """The longest row's length: the padded width of the batch."""
    uniform: bool
    """Every row has ``width`` tokens (no padding, so no attention mask is needed)."""


@dataclass(frozen=True, kw_only=True)
class BatchPlan:
    order: npt.NDArray[np.int64]
    """Input positions in the order they are embedded."""
    batches: tuple[Batch, ...]


def plan_batches(
    lengths: npt.NDArray[np.int64], *, batch_tokens: int, max_batch: int, bucket: bool = True
) -> BatchPlan:
    """The batches for texts of these token lengths.

    ``bucket=False`` keeps the input order and cuts it into batches of ``max_batch`` rows, each
    padded to its own longest row (what a plain encoder does); it exists to measure bucketing.
    """
    n = len(lengths)
    if bucket:
        order = np.argsort(-lengths, kind="stable").astype(np.int64)
    else:
        order = np.arange(n, dtype=np.int64)
    sorted_lengths = lengths[order]
    batches: list[Batch] = []
    start = 0
    while start < n:
        if bucket:
            width = int(sorted_lengths[start])
            end = min(n, start + max(1, min(max_batch, batch_tokens // max(width, 1))))
        else:
            end = min(n, start + max_batch)
            width = int(sorted_lengths[start:end].max())
        uniform = bool(sorted_lengths[start:end].min() == width)
        batches.append(Batch(start=start, end=end, width=width, uniform=uniform))
        start = end
    return BatchPlan(order=order, batches=tuple(batches))
