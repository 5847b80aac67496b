"""One answer at every edge: each scenario, through each front end that offers its operation,
in two worlds that differ only by what the principal may not see, must give the same answer:
the same result or error, words, exit code, count, score and audit record. Only what
legitimately differs between two folders is made equal first (``parity_support.normal``:
the world's folder, times, versions).

The table is operations x front ends (``parity_ops.SCENARIOS`` x ``parity_fronts.FRONTS``);
a front end offers the operations its driver maps, and ``test_parity_coverage.py`` fails when
a front end exposes something no scenario drives.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from parity_fronts import FRONTS, Worlds
from parity_ops import SCENARIOS, Scenario
from parity_support import normal
from parity_world import SECRET

CASES = [
    pytest.param(front, scenario, id=f"{front}-{scenario.name}")
    for phase in (0, 1, 2)
    for front, driver in FRONTS.items()
    for scenario in SCENARIOS
    if scenario.phase == phase and scenario.op in driver.offers()
]


_SHOWN = 120
"""Lines of a difference shown (an audit log's can run to thousands)."""


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worlds]:
    both = Worlds(tmp_path_factory.mktemp("parity"))
    try:
        yield both
    finally:
        both.close()


def _shown(value: object) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=repr)


@pytest.mark.parametrize(("front", "scenario"), CASES)
def test_the_same_answer_with_and_without_what_the_principal_may_not_see(
    worlds: Worlds, front: str, scenario: Scenario
) -> None:
    answers = {}
    for name in ("full", "bare"):
        world = worlds.worlds[name]
        driver = worlds.driver(front, name)
        driver.prepare(scenario.reads(front))
        answer = driver.call(scenario.op, scenario.bound(front))
        answers[name] = normal(answer, str(world.root))
    full, bare = _shown(answers["full"]), _shown(answers["bare"])
    echoed = full  # the caller's own words may come back (a query, a pattern, a command)
    for given in scenario.bound(front).values():
        echoed = echoed.replace(json.dumps(given)[1:-1], "") if isinstance(given, str) else echoed
    assert SECRET not in echoed, f"{front} {scenario.name} shows hidden content:\n{full}"
    if full != bare:
        lines = list(
            difflib.unified_diff(bare.splitlines(), full.splitlines(), "bare", "full", lineterm="")
        )
        more = (
            f"\n... {len(lines) - _SHOWN} more lines of difference" if len(lines) > _SHOWN else ""
        )
        diff = "\n".join(lines[:_SHOWN]) + more
        pytest.fail(f"{front} {scenario.name}: the hidden entries change the answer\n{diff}")


def test_the_worlds_differ_only_by_hidden_entries(tmp_path: Path) -> None:
    """The full world really holds what the bare one lacks (else every case passes for
    nothing): a reader with the board role and clearance reads the hidden documents the
    principal is told are not there (the denied folder and the drop box: on disk)."""
    from parity_world import HIDDEN, TENANT, make_world

    from bastion import Principal
    from bastion.config import WorkspaceConfig

    full = make_world(tmp_path / "full", full=True, lanes=["x"])
    config = WorkspaceConfig.from_file(full.config)
    board = Principal.of("b", tenant=TENANT, roles={"board"}, clearance="restricted")
    with config.opened(principal=board, index_on_open=False) as ws:
        sync = ws.sync()
        for rel in HIDDEN:
            if "vault" not in rel:
                assert SECRET in sync.read_text("/" + rel)
    assert SECRET in (full.root / "docs/vault/keys.md").read_text()
    assert SECRET in (full.root / "drop/x-report.md").read_text()


CONTROLS = {
    "read-visible": "kestrel rota",
    "grep-word": "/docs/mixed/visible.md",
    "search-word": "/docs/handbook.md",
    "list-docs": "handbook.md",
    "describe": "/docs",
    "run-read": "/docs/mixed/visible.md",
    "index-status": "bm25",
    "overlay-changes": '"action": "write"',
    "overlay-diff": "alpha in the layer",
}
"""What a working front end shows for these scenarios: each driver must really reach the
workspace, or two equal failures would pass for parity."""

OPERATOR_CONTROLS = {"audit-own": '"principal": "ana"'}
"""An operator reads every principal's records."""


@pytest.mark.parametrize("front", list(FRONTS))
def test_each_front_end_really_answers(worlds: Worlds, front: str) -> None:
    checked = 0
    controls = OPERATOR_CONTROLS if front.endswith("-operator") else CONTROLS
    for scenario in SCENARIOS:
        if scenario.name in controls and scenario.op in FRONTS[front].offers():
            answer = worlds.driver(front, "full").call(scenario.op, scenario.bound(front))
            assert controls[scenario.name] in _shown(answer), (front, scenario.name, answer)
            checked += 1
    assert checked >= 1, front
