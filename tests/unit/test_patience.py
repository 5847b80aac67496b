"""Waiting out other writers (``bastion.core.patience``): a few pauses, then an end."""

from __future__ import annotations

from bastion.core.patience import Patience


async def test_it_pauses_again_and_again_until_its_time_is_spent() -> None:
    patience = Patience(0.05, longest=0.01)
    tries = 0
    while await patience.wait():
        tries += 1
        assert tries < 1000, "the time bound never ended the tries"
    assert tries >= 2  # more than one pause fits in the time: 1 ms, 2 ms, 4 ms...
    assert not await patience.wait()  # spent stays spent


async def test_no_time_at_all_still_allows_one_pause_before_giving_up() -> None:
    patience = Patience(0.0)
    assert await patience.wait()  # the first failure starts the clock
    assert not await patience.wait()
