"""When labels worked out for a version may be kept (``bastion.labels.settled``): only once
the version's stamp was safely past when the bytes were read."""

from __future__ import annotations

from bastion.core.models import EntryKind, FileInfo
from bastion.core.paths import VPath
from bastion.labels.settled import RACY_NS, settled

NOW = 1_800_000_000_123_456_789


def _stamped(changed_ns: int | None) -> FileInfo:
    return FileInfo(VPath.parse("/a.md"), EntryKind.FILE, 1, 0.0, "v", None, changed_ns)


def test_a_counter_version_is_always_settled() -> None:
    assert settled(NOW, _stamped(None))
    assert settled(NOW, None)


def test_a_stamp_within_the_racy_span_of_the_read_is_racy() -> None:
    assert not settled(NOW, _stamped(NOW))
    assert not settled(NOW, _stamped(NOW - RACY_NS + 1))
    assert settled(NOW, _stamped(NOW - RACY_NS - 1))


def test_a_stamp_after_the_read_is_racy() -> None:
    # a clock set back, or a write after the read began
    assert not settled(NOW, _stamped(NOW + 10**9))


def test_a_stamp_in_whole_seconds_is_racy_for_two_seconds() -> None:
    second = NOW // 10**9 * 10**9
    assert not settled(second + 1_900_000_000, _stamped(second))
    assert settled(second + 2_100_000_000, _stamped(second))


def test_every_version_read_must_be_settled() -> None:
    old = _stamped(NOW - 10**10)
    assert settled(NOW, old, old)
    assert not settled(NOW, old, _stamped(NOW))  # a sidecar just rewritten


def test_the_stamp_is_carried_but_not_compared() -> None:
    a, b = _stamped(1), _stamped(2)
    assert a == b and "changed_ns" not in repr(a)
    assert a.at(VPath.parse("/b.md")).changed_ns == 1
