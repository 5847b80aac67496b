"""Third-party stores plug in by entry point (group ``bastion.stores``), as fsspec's
implementations do: a real distribution (its ``dist-info`` with ``entry_points.txt``, in a
folder put on ``sys.path``) declares a scheme; a workspace file mounts it by URL; the
plug-in's store passes the contract from ``bastion.testing``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from bastion import (
    ConfigurationError,
    LocalStore,
    Principal,
    Store,
    load_workspace,
    store_from_url,
)
from bastion.testing import StoreContract

PLUGIN = '''
"""A store plug-in as a third party ships it: a store class that takes the URL."""

from bastion import MemoryStore


class ShelfStore(MemoryStore):
    kind = "shelf"

    def __init__(self, url: str, *, shelves: int = 1) -> None:
        super().__init__()
        self.url = url
        self.shelves = shelves


def not_a_store(url: str) -> object:
    return {"url": url}


NOT_CALLABLE = 42
'''

ENTRY_POINTS = """
[bastion.stores]
shelf = shelf_plugin:ShelfStore
rack = shelf_plugin:not_a_store
gone = shelf_plugin_missing:ShelfStore
flat = shelf_plugin:NOT_CALLABLE
memory = shelf_plugin:ShelfStore
file = shelf_plugin:ShelfStore
"""


@pytest.fixture
def plugin(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the installed plug-in (its module and its dist-info), on sys.path."""
    site = tmp_path_factory.mktemp("site")
    (site / "shelf_plugin.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "shelf_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shelf-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "shelf_plugin", raising=False)
    return site


@pytest.fixture
def cleanup_module() -> Iterator[None]:
    yield
    sys.modules.pop("shelf_plugin", None)


def test_a_workspace_file_mounts_a_plugged_in_store(
    plugin: Path, tmp_path: Path, cleanup_module: None
) -> None:
    config = tmp_path / "bastion.toml"
    config.write_text(
        textwrap.dedent(
            """
            [[mounts]]
            prefix = "/shelf"
            url = "shelf://box"
            [mounts.options]
            shelves = 3

            [policy]
            rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]
            """
        ),
        encoding="utf-8",
    )
    ws = load_workspace(config, principal=Principal.of("agent")).sync()
    ws.write("/shelf/a.md", "on the shelf\n")
    assert ws.read_text("/shelf/a.md") == "on the shelf\n"
    (mount,) = ws.mounts
    store = mount.store
    while hasattr(store, "inner"):  # the wrappers the workspace puts around every store
        store = store.inner
    assert type(store).__name__ == "ShelfStore"
    assert (store.url, store.shelves) == ("shelf://box", 3)


def test_a_plugin_cannot_replace_bastions_own_schemes(plugin: Path, tmp_path: Path) -> None:
    assert type(store_from_url("memory://")).__name__ == "MemoryStore"
    assert isinstance(store_from_url(tmp_path.as_uri()), LocalStore)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "gone://x",
            "the store plug-in gone:// (shelf_plugin_missing:ShelfStore) cannot be loaded",
        ),
        ("rack://x", "the store plug-in rack:// (shelf_plugin:not_a_store) returned a dict"),
        ("flat://x", "the store plug-in flat:// (shelf_plugin:NOT_CALLABLE) names no callable"),
        ("shelf://x", "a shelf:// store does not take these options: colour"),
    ],
)
def test_a_broken_plugin_fails_in_one_line(
    plugin: Path, url: str, said: str, cleanup_module: None
) -> None:
    options = {"colour": "red"} if url.startswith("shelf") else {}
    with pytest.raises(ConfigurationError) as caught:
        store_from_url(url, **options)
    assert str(caught.value).startswith(said)
    assert "\n" not in str(caught.value)


def test_without_the_plugin_the_scheme_is_unknown_and_the_error_says_how_to_add_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        store_from_url("shelf://box")
    assert "unknown URL scheme 'shelf'" in str(caught.value)
    assert "entry points bastion.stores" in str(caught.value)


class TestPluggedInStore(StoreContract):
    """The plug-in checks itself with the contract Bastion's own stores pass."""

    @pytest.fixture
    def store(self, plugin: Path, cleanup_module: None) -> Store:
        return store_from_url("shelf://box")


def test_importing_bastion_testing_needs_no_pytest() -> None:
    code = (
        "import sys; sys.modules['pytest'] = None; import bastion.testing; "
        "assert 'pytest' not in dir(bastion.testing); print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "ok"
