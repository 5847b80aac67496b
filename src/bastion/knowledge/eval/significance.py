"""Is one run better than another on the same queries, or is the difference noise?

:func:`paired_test` is the paired randomization (sign-flip) test that IR evaluation uses
(Smucker, Allan and Carterette, CIKM 2007): under the null hypothesis the two systems are
exchangeable on every query, so each per-query difference is as likely to have either sign;
the p-value is the share of random sign assignments whose mean difference is at least as far
from zero as the observed one (two-sided). It needs no assumption about the distribution of
the differences, and with a fixed seed it gives the same answer on every run.

A retrieval option chosen on a train split is kept only when its gain there is larger than
noise: ``bench/hybrid_levers.py`` reports the p-value of each option against the default on
SciFact's train claims (``docs/benchmarks.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from bastion.core.errors import ConfigurationError

__all__ = ["PairedTest", "paired_test"]

_BATCH = 1024
"""Sign assignments drawn per batch (bounds the memory of one draw: batch x queries)."""


@dataclass(frozen=True, kw_only=True)
class PairedTest:
    """The outcome of :func:`paired_test` for ``b`` against ``a``."""

    difference: float
    """Mean of ``b - a`` over the shared queries (positive: ``b`` scored higher)."""
    p_value: float
    """Two-sided: the share of sign assignments at least as extreme as the observed one,
    counting the observed assignment itself (never 0)."""
    queries: int
    """The number of queries both runs scored."""
    rounds: int


def paired_test(
    a: Mapping[str, float], b: Mapping[str, float], *, rounds: int = 10_000, seed: int = 0
) -> PairedTest:
    """Paired randomization test of per-query scores ``b`` against ``a`` (query id -> score,
    e.g. ``evaluate(..., per_query=True)``'s nDCG@10), over the queries both hold."""
    if rounds < 1:
        raise ConfigurationError(f"rounds must be at least 1, got {rounds!r}")
    shared = [qid for qid in a if qid in b]
    if not shared:
        raise ConfigurationError("the two runs share no query")
    diff = np.array([float(b[q]) - float(a[q]) for q in shared], dtype=np.float64)
    if not np.isfinite(diff).all():
        raise ConfigurationError("per-query scores must be finite numbers")
    observed = abs(math.fsum(diff.tolist())) / len(diff)
    rng = np.random.default_rng(seed)
    extreme = 0
    left = rounds
    while left:
        n = min(left, _BATCH)
        signs = rng.integers(0, 2, size=(n, len(diff)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diff) / len(diff)
        # a tolerance: sums of the same numbers in another order differ in the last bits
        extreme += int(np.count_nonzero(means >= observed - 1e-12))
        left -= n
    return PairedTest(
        difference=float(diff.mean()),
        p_value=(extreme + 1) / (rounds + 1),
        queries=len(diff),
        rounds=rounds,
    )
