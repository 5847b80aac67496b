"""An overlay mount from ``bastion.toml``, reviewed through the workspace: writes land in the
layer (a thread's own when the view acts in a thread) and the base folder is unchanged until
apply; the change list shows only what the viewer may read, apply and discard touch only what
it may also write, and every review action is audited."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from bastion import (
    ConfigurationError,
    NotFoundError,
    Policy,
    PolicyDeniedError,
    Principal,
    Rule,
    Workspace,
)
from bastion.config import MountConfig, WorkspaceConfig
from bastion.core.models import Action
from bastion.workspace.operations import operation
from bastion.workspace.overlay import OverlayReview

ADMIN = Principal.of("admin", tenant="acme", clearance="restricted")
READER = Principal.of("reader", tenant="acme", clearance="internal")
HIDDEN = "---\nclassification: restricted\n---\nTOPSECRET\n"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def base(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('base')\n")
    (root / "README.md").write_text("readme\n")
    (root / "secret.md").write_text(HIDDEN)
    (root / "private").mkdir()
    (root / "private" / "keys.md").write_text(HIDDEN)
    return root


def _ws(base: Path, *, policy: Policy | None = None, overlay: str = "file:layers") -> Workspace:
    mount = MountConfig("/code", "file:project", overlay=overlay).open(base.parent)
    return Workspace([mount], policy=policy or Policy.allow_all(), principal=ADMIN)


def test_writes_land_in_the_layer_and_apply_writes_the_base(base: Path) -> None:
    before = _tree(base)
    ws = _ws(base).sync()
    ws.write("/code/src/app.py", "print('mine')\n")
    ws.write("/code/src/new.py", "new\n")
    ws.delete("/code/README.md")
    assert ws.read_text("/code/src/app.py") == "print('mine')\n"
    assert not ws.exists("/code/README.md")
    assert _tree(base) == before  # the base folder is untouched until apply
    review = ws.overlay("/code")
    assert {(c.path, c.action) for c in review.changes()} == {
        ("/code/src/app.py", "write"),
        ("/code/src/new.py", "write"),
        ("/code/README.md", "delete"),
    }
    done = review.apply()
    assert set(done.applied) == {"/code/src/app.py", "/code/src/new.py", "/code/README.md"}
    assert done.conflicts == ()
    assert (base / "src" / "app.py").read_text() == "print('mine')\n"
    assert (base / "src" / "new.py").read_text() == "new\n"
    assert not (base / "README.md").exists()
    assert review.changes() == []


def test_overlay_true_keeps_the_layers_under_dot_bastion(base: Path) -> None:
    (base.parent / "bastion.toml").write_text(
        '[[mounts]]\nprefix = "/code"\nurl = "file:project"\noverlay = true\n'
        "[policy]\nrules = [{ effect = 'allow', actions = ['*'], paths = ['/**'] }]\n"
    )
    config = WorkspaceConfig.from_file(base.parent / "bastion.toml")
    with config.opened(index_on_open=False) as aio:
        aio.sync().write("/code/x.txt", "x\n")
    layer = base.parent / ".bastion" / "overlays" / "code" / "tenants" / "n-default" / "shared"
    assert (layer / "x.txt").read_text() == "x\n"
    assert not (base / "x.txt").exists()


@pytest.mark.parametrize("value", ["", 3, ["file:x"]])
def test_a_bad_overlay_value_is_one_clear_line(tmp_path: Path, value: object) -> None:
    shown = repr(value).replace("'", '"')
    (tmp_path / "bastion.toml").write_text(
        f'[[mounts]]\nprefix = "/code"\nurl = "memory://"\noverlay = {shown}\n'
        "[policy]\nrules = []\n"
    )
    with pytest.raises(ConfigurationError, match="overlay is true, false or the URL") as err:
        WorkspaceConfig.from_file(tmp_path / "bastion.toml")
    assert "\n" not in str(err.value)


def test_each_thread_works_on_its_own_layer(base: Path) -> None:
    ws = _ws(base).sync()
    one, two = ws.with_thread("one"), ws.with_thread("two/../x")
    one.write("/code/src/app.py", "one\n")
    two.write("/code/src/app.py", "two\n")
    assert ws.read_text("/code/src/app.py") == "print('base')\n"  # the shared layer: nothing
    assert one.read_text("/code/src/app.py") == "one\n"
    assert two.read_text("/code/src/app.py") == "two\n"
    assert [c.path for c in one.overlay("/code").changes()] == ["/code/src/app.py"]
    assert ws.overlay("/code").changes() == []
    assert one.overlay("/code").apply().applied == ("/code/src/app.py",)
    assert (base / "src" / "app.py").read_text() == "one\n"
    # the other thread took the base before it changed: its apply is a conflict, kept
    done = two.overlay("/code").apply()
    assert done.conflicts == ("/code/src/app.py",)
    assert (base / "src" / "app.py").read_text() == "one\n"
    assert two.read_text("/code/src/app.py") == "two\n"
    layers = base.parent / "layers" / "tenants" / "n-acme" / "threads"
    assert sorted(p.name for p in layers.iterdir()) == ["t-one", "t-two%2F%2E%2E%2Fx"]


def test_hidden_changes_are_not_told_nor_applied(base: Path) -> None:
    admin = _ws(base).sync()
    admin.write("/code/src/app.py", "visible change\n")
    admin.write("/code/hidden.md", HIDDEN)
    admin.delete("/code/secret.md")
    reader = admin.with_principal(READER)
    review = reader.overlay("/code")
    assert [c.path for c in review.changes()] == ["/code/src/app.py"]
    with pytest.raises(NotFoundError) as hidden:
        review.apply(["/code/hidden.md"])
    with pytest.raises(NotFoundError) as absent:
        review.apply(["/code/nothing.md"])
    assert str(hidden.value).replace("hidden", "nothing") == str(absent.value)
    with pytest.raises(NotFoundError):
        review.discard(["/code/secret.md"])
    assert review.apply().applied == ("/code/src/app.py",)
    assert (base / "secret.md").read_text() == HIDDEN  # the hidden whiteout stays unapplied
    assert not (base / "hidden.md").exists()
    assert {c.path for c in admin.overlay("/code").changes()} == {
        "/code/hidden.md",
        "/code/secret.md",
    }


def test_apply_needs_write_and_delete_on_every_path(base: Path) -> None:
    policy = Policy(
        rules=[
            Rule.deny(["write", "delete"], "/code/src/**", roles=["reader"]),
            Rule.allow(list(Action), "/**"),
        ]
    )
    admin = _ws(base, policy=policy).sync()
    admin.write("/code/src/app.py", "change\n")
    admin.write("/code/README.md", "readme 2\n")
    reader = admin.with_principal(Principal.of("r", tenant="acme", roles={"reader"}))
    before = _tree(base)
    with pytest.raises(PolicyDeniedError, match=r"write on /code/src/app\.py"):
        reader.overlay("/code").apply()
    with pytest.raises(PolicyDeniedError):
        reader.overlay("/code").discard(["/code/src/app.py"])
    assert _tree(base) == before  # one refusal: nothing applied
    assert reader.overlay("/code").apply(["/code/README.md"]).applied == ("/code/README.md",)
    assert (base / "README.md").read_text() == "readme 2\n"


def test_deleting_a_folder_that_holds_hidden_files_is_refused(base: Path) -> None:
    (base / "private" / "open.md").write_text("open\n")
    admin = _ws(base).sync()
    admin.delete("/code/private", recursive=True)
    reader = admin.with_principal(READER)
    assert [c.path for c in reader.overlay("/code").changes()] == ["/code/private"]
    with pytest.raises(PolicyDeniedError):
        reader.overlay("/code").apply()
    assert (base / "private" / "keys.md").read_text() == HIDDEN


def test_discard_brings_the_base_back(base: Path) -> None:
    ws = _ws(base).sync()
    ws.write("/code/src/app.py", "change\n")
    ws.write("/code/README.md", "change\n")
    review = ws.overlay("/code")
    assert review.discard(["/code/README.md"]).discarded == ("/code/README.md",)
    assert ws.read_text("/code/README.md") == "readme\n"
    assert ws.read_text("/code/src/app.py") == "change\n"
    review.discard()
    assert ws.read_text("/code/src/app.py") == "print('base')\n"
    assert review.changes() == []
    assert (base / "src" / "app.py").read_text() == "print('base')\n"


def test_every_review_action_is_audited(base: Path) -> None:
    ws = _ws(base).sync()
    ws.write("/code/a.txt", "a\n")
    review = ws.overlay("/code")
    review.changes()
    review.diff()
    review.apply()
    review.discard()
    records = [
        (r.operation, r.path, r.reason) for r in ws.audit.records if "overlay" in r.operation
    ]
    assert records == [
        ("overlay_changes", "/code", "allowed"),
        ("overlay_diff", "/code", "allowed"),
        ("overlay_apply", "/code", "applied 1, conflicts 0"),
        ("overlay_discard", "/code", "discarded 0"),
    ]


def test_a_mount_that_is_no_overlay_is_said_plainly(base: Path) -> None:
    ws = Workspace(
        [MountConfig("/plain", "file:project").open(base.parent)], policy=Policy.allow_all()
    ).sync()
    with pytest.raises(ConfigurationError, match="not an overlay mount"):
        ws.overlay("/plain").changes()
    with pytest.raises(NotFoundError):
        ws.overlay("/nowhere").changes()


def test_the_review_methods_take_the_declared_parameters_and_defaults() -> None:
    for name in ("changes", "diff", "apply", "discard"):
        declared = operation(f"overlay_{name}").fields
        taken = inspect.signature(getattr(OverlayReview, name)).parameters
        for param, info in declared.items():
            if param in ("prefix", "thread"):  # ws.with_thread(thread).overlay(prefix)
                continue
            assert taken[param].default == info.default, (name, param)
        assert set(taken) - {"self"} <= set(declared)


def test_applying_a_labels_sidecar_needs_the_label_action(base: Path) -> None:
    policy = Policy(
        rules=[
            Rule.allow(list(Action), "/**", principals=["admin"]),
            Rule.allow(["read", "write", "delete", "list"], "/**"),
        ]
    )
    admin = _ws(base, policy=policy).sync()
    admin.write("/code/README.md.labels.yaml", "tags: [team]\n")
    reader = admin.with_principal(READER)
    assert [c.path for c in reader.overlay("/code").changes()] == ["/code/README.md.labels.yaml"]
    with pytest.raises(PolicyDeniedError, match="label on"):
        reader.overlay("/code").apply()
    assert not (base / "README.md.labels.yaml").exists()
    assert admin.overlay("/code").apply().applied == ("/code/README.md.labels.yaml",)


def test_the_diff_shows_what_the_viewer_may_read_and_nothing_else(base: Path) -> None:
    admin = _ws(base).sync()
    admin.write("/code/src/app.py", "print('mine')\n")
    admin.write("/code/new.md", HIDDEN)
    admin.delete("/code/secret.md")
    admin.delete("/code/README.md")
    admin.write("/code/blob.bin", b"\x00\x01")
    reader = admin.with_principal(READER)
    shown = reader.overlay("/code").diff()
    assert "TOPSECRET" not in shown and "secret.md" not in shown and "new.md" not in shown
    assert shown == (
        "--- a/code/README.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-readme\n"
        "Binary files /dev/null and b/code/blob.bin differ\n"
        "--- a/code/src/app.py\n+++ b/code/src/app.py\n@@ -1 +1 @@\n"
        "-print('base')\n+print('mine')\n"
    )
    for hidden in ("/code/secret.md", "/code/new.md"):
        with pytest.raises(NotFoundError, match="no change at"):
            reader.overlay("/code").diff([hidden])
    full = admin.overlay("/code").diff(["/code/secret.md", "/code/new.md"])
    assert full.count("TOPSECRET") == 2


def test_a_folder_made_is_seen_and_applied_only_with_the_rights_a_mkdir_needs(base: Path) -> None:
    policy = Policy(
        rules=[
            Rule.deny(["read", "list"], "/code/private/**", principals=["reader"]),
            Rule.deny(["write", "delete"], "/code/**", principals=["reader"]),
            Rule.allow("*", "/**"),
        ]
    )
    admin = _ws(base, policy=policy).sync()
    admin.mkdir("/code/made")
    admin.mkdir("/code/private/made")
    reader = admin.with_principal(READER)
    review = reader.overlay("/code")
    assert [(c.path, c.action) for c in review.changes()] == [("/code/made", "mkdir")]
    assert review.diff() == "New folder /code/made\n"
    with pytest.raises(PolicyDeniedError):
        review.apply(["/code/made"])
    with pytest.raises(NotFoundError, match="no change at"):
        review.discard(["/code/private/made"])
    assert not (base / "made").exists()
    done = admin.overlay("/code").apply()
    assert sorted(done.applied) == ["/code/made", "/code/private/made"]
    assert (base / "made").is_dir() and (base / "private" / "made").is_dir()
