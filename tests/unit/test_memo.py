"""The one bounded memo (``core.memo.Memo``): it answers like a dict, never holds more than its
bound, and forgets everything at once when a new entry would exceed it."""

from __future__ import annotations

import pytest

from bastion.core.memo import Memo


def test_answers_like_a_dict_until_full() -> None:
    memo: Memo[str, int] = Memo(3)
    memo["a"] = 1
    memo["b"] = 2
    assert memo.get("a") == 1
    assert memo["b"] == 2
    assert "c" not in memo
    assert memo.get("c") is None
    assert len(memo) == memo.size == 2


def test_a_new_entry_past_the_bound_clears_everything_first() -> None:
    memo: Memo[int, str] = Memo(3)
    for key in range(3):
        memo[key] = str(key)
    memo[3] = "3"
    assert dict(memo) == {3: "3"}
    assert memo.size == 1


def test_chained_assignment_is_bounded_too() -> None:
    memo: Memo[int, int] = Memo(2)
    for key in range(10):
        known = memo[key] = key * key
        assert known == key * key
        assert len(memo) <= 2


def test_replacing_an_entry_keeps_the_weight_right() -> None:
    memo: Memo[str, int] = Memo(2)
    memo["a"] = 1
    memo["a"] = 2
    memo["b"] = 3
    assert dict(memo) == {"a": 2, "b": 3}
    assert memo.size == 2


def test_weighed_entries_bound_the_total_weight() -> None:
    memo: Memo[str, list[int]] = Memo(10, weigh=len)
    memo["six"] = [0] * 6
    memo["four"] = [0] * 4
    assert memo.size == 10
    memo["one"] = [0]  # 11 > 10: everything is forgotten first
    assert list(memo) == ["one"]
    assert memo.size == 1
    del memo["one"]
    assert memo.size == 0


def test_an_entry_heavier_than_the_bound_is_still_kept_alone() -> None:
    memo: Memo[str, list[int]] = Memo(4, weigh=len)
    memo["small"] = [0]
    memo["big"] = [0] * 9
    assert list(memo) == ["big"]


def test_clear_resets_the_weight() -> None:
    memo: Memo[int, int] = Memo(5)
    memo[1] = 1
    memo.clear()
    assert len(memo) == memo.size == 0


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Memo(0)
