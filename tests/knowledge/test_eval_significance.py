"""The paired randomization test: exact p-values on cases small enough to enumerate."""

from __future__ import annotations

import itertools

import pytest

from bastion.core.errors import ConfigurationError
from bastion.knowledge.eval import paired_test


def _exact_p(diff: list[float]) -> float:
    """Every sign assignment enumerated: the share at least as extreme as the observed."""
    observed = abs(sum(diff)) / len(diff)
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, diff, strict=True))) / len(diff) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(diff))
    )
    return hits / 2 ** len(diff)


def test_identical_runs_are_not_different() -> None:
    a = {"q1": 0.5, "q2": 0.9, "q3": 0.0}
    result = paired_test(a, dict(a), rounds=500)
    assert result.difference == 0.0
    assert result.p_value == 1.0  # every assignment is as extreme as a zero difference
    assert result.queries == 3


def test_a_consistent_gain_on_many_queries_is_significant() -> None:
    a = {f"q{i}": 0.5 for i in range(40)}
    b = {f"q{i}": 0.5 + 0.01 * (1 + i % 3) for i in range(40)}
    result = paired_test(a, b, rounds=4000)
    assert result.difference == pytest.approx(sum(0.01 * (1 + i % 3) for i in range(40)) / 40)
    assert result.p_value < 0.001
    # the same gain the other way round: same p-value, negative difference
    back = paired_test(b, a, rounds=4000)
    assert back.p_value == result.p_value and back.difference == pytest.approx(-result.difference)


def test_one_lucky_query_is_noise() -> None:
    """A mean gain carried by one query out of eight: half the sign assignments match it."""
    a = {f"q{i}": 0.4 for i in range(8)}
    b = dict(a, q0=1.0)
    result = paired_test(a, b, rounds=20_000, seed=3)
    assert result.difference == pytest.approx(0.6 / 8)
    assert result.p_value == pytest.approx(_exact_p([0.6] + [0.0] * 7), abs=0.02)  # 1.0
    assert result.p_value > 0.5


def test_p_value_matches_full_enumeration() -> None:
    diff = [0.3, 0.1, -0.05, 0.2, 0.15, -0.1, 0.25, 0.05, 0.1, -0.02]
    a = {f"q{i}": 0.5 for i in range(len(diff))}
    b = {f"q{i}": 0.5 + d for i, d in enumerate(diff)}
    exact = _exact_p(diff)
    got = paired_test(a, b, rounds=50_000, seed=11).p_value
    assert got == pytest.approx(exact, abs=0.006)  # 3 standard errors of 50,000 draws
    assert paired_test(a, b, rounds=2000, seed=1) == paired_test(a, b, rounds=2000, seed=1)


def test_only_shared_queries_count() -> None:
    a = {"q1": 0.2, "q2": 0.4, "only-a": 1.0}
    b = {"q1": 0.3, "q2": 0.5, "only-b": 0.0}
    result = paired_test(a, b, rounds=100)
    assert result.queries == 2
    assert result.difference == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("a", "b", "rounds", "message"),
    [
        ({"q": 1.0}, {"r": 1.0}, 10, "share no query"),
        ({"q": 1.0}, {"q": float("nan")}, 10, "finite"),
        ({"q": 1.0}, {"q": 0.5}, 0, "rounds"),
    ],
)
def test_bad_input_is_one_clear_error(
    a: dict[str, float], b: dict[str, float], rounds: int, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        paired_test(a, b, rounds=rounds)
