"""The workspace file is looked at off the event loop, at most every ``CHECK_EVERY`` seconds
per process, and a request that begins that long after the file was replaced sees it
(``ConfigWatch`` driven with its own clock: the bound is exact, whatever the scheduler does)."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path

import anyio

from bastion.server.reload import CHECK_EVERY, ConfigWatch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class State:
    """What a reload changes, counted; the thread each file read ran in."""

    def __init__(self) -> None:
        self.generation = 0
        self.read_in: list[int] = []

    def reconfigure(self, server: object) -> list[str]:
        self.generation += 1
        return []


def _replace(path: Path, text: str) -> None:
    fresh = path.with_suffix(".new")
    fresh.write_text(text)
    os.replace(fresh, path)


def _watch(path: Path, clock: Clock, state: State) -> ConfigWatch:
    def read(p: Path, env: Mapping[str, str] | None) -> object:
        state.read_in.append(threading.get_ident())
        return p.read_text()

    return ConfigWatch(path, read, clock=clock)


async def test_a_replaced_file_applies_to_requests_beginning_a_quarter_second_later(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bastion.toml"
    path.write_text("one")
    clock, state = Clock(), State()
    watch = _watch(path, clock, state)

    _replace(path, "two")
    clock.now += CHECK_EVERY / 2
    await watch.follow(state)  # within the bound: not looked at yet
    assert state.generation == 0
    clock.now += CHECK_EVERY / 2
    await watch.follow(state)  # a quarter second on: looked at, reloaded
    assert state.generation == 1
    assert state.read_in and threading.get_ident() not in state.read_in  # off the loop

    for _ in range(5):  # unchanged: looked at once per quarter second, nothing reloaded
        clock.now += CHECK_EVERY
        await watch.follow(state)
    assert state.generation == 1


async def test_sighup_reloads_on_the_next_request_whatever_the_clock(tmp_path: Path) -> None:
    path = tmp_path / "bastion.toml"
    path.write_text("one")
    clock, state = Clock(), State()
    watch = _watch(path, clock, state)
    watch.forced = True
    await watch.follow(state)
    assert state.generation == 1 and not watch.forced


async def test_requests_arriving_during_a_reload_wait_for_it(tmp_path: Path) -> None:
    path = tmp_path / "bastion.toml"
    path.write_text("one")
    clock, state = Clock(), State()
    gate = threading.Event()

    def slow(p: Path, env: Mapping[str, str] | None) -> object:
        gate.wait(30)
        return p.read_text()

    watch = ConfigWatch(path, slow, clock=clock)
    _replace(path, "two")
    clock.now += CHECK_EVERY
    seen: list[int] = []

    async def request() -> None:
        await watch.follow(state)
        seen.append(state.generation)

    async with anyio.create_task_group() as group:
        group.start_soon(request)  # looks, finds the change, reads (held by the gate)
        await anyio.sleep(0.05)
        group.start_soon(request)  # arrives meanwhile: within the bound, yet waits
        await anyio.sleep(0.05)
        assert seen == []
        gate.set()
    assert seen == [1, 1]
