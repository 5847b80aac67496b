"""Mount table construction and longest-prefix routing."""

from __future__ import annotations

import pytest

from bastion.core.errors import ConfigurationError, NoMountError
from bastion.core.mounts import Mount, MountTable
from bastion.core.paths import VPath
from bastion.stores.memory import MemoryStore


def _table(*prefixes: str) -> MountTable:
    return MountTable([Mount.of(p, MemoryStore()) for p in prefixes])


@pytest.mark.parametrize(
    ("path", "prefix"),
    [
        ("/docs/a.md", "/docs"),
        ("/docs", "/docs"),
        ("/docs2/a.md", "/docs2"),
        ("/docs.bak/a", "/docs.bak"),
        ("/docs/api/x", "/docs/api"),
        ("/docs/apix/x", "/docs"),
        ("/other", "/"),
    ],
)
def test_longest_prefix_per_segment(path: str, prefix: str) -> None:
    table = _table("/", "/docs", "/docs2", "/docs.bak", "/docs/api")
    assert str(table.resolve(VPath.parse(path)).prefix) == prefix


def test_no_fallback_without_a_root_mount() -> None:
    table = _table("/docs")
    with pytest.raises(NoMountError, match="not under any mount; mounted: /docs"):
        table.resolve(VPath.parse("/doc"))
    with pytest.raises(NoMountError):
        table.resolve(VPath.parse("/docs2/x"))


def test_validation() -> None:
    with pytest.raises(ConfigurationError, match="two mounts at /docs"):
        _table("/docs", "/docs/")
    with pytest.raises(ConfigurationError, match="two mounts"):
        _table("/docs", "/x/../docs")
    with pytest.raises(ConfigurationError, match="at least one"):
        MountTable([])
    with pytest.raises(ConfigurationError, match="unknown scope"):
        Mount.of("/d", MemoryStore(), "read_mostly")
    with pytest.raises(ConfigurationError, match="mount prefix"):
        Mount.of("/d/../..", MemoryStore())


def test_virtual_directories() -> None:
    table = _table("/a/b/c", "/a/d")
    assert table.is_virtual_dir(VPath.parse("/a"))
    assert table.is_virtual_dir(VPath.ROOT)
    assert not table.is_virtual_dir(VPath.parse("/a/d"))
