"""The two worlds of the parity suite: folders on disk with one ``bastion.toml`` each, which
differ only by what the acting principal (``ana``) may not see.

Both worlds hold the same visible files. The *full* world adds, and the *bare* world lacks:

- documents hidden by their labels (front matter ``classification: restricted``), beside
  visible ones (``/docs/mixed``) and alone in a folder (``/docs/team``), some of them matching
  the grep and search words (``kestrel``);
- files in a folder the policy denies (``/docs/vault``);
- a mount hidden by its labels (``/board``, for the ``board`` role) against no mount at all;
- in the write-only drop box (``/drop``), files someone else left there, at the names the
  principal will write to;
- in the overlay mount ``/work`` (a layer over the folder ``work``): a hidden file the layer
  holds, and the deletion of a hidden file of the base.

Operations that change files work in a *lane* of their own (``/docs/lanes/<lane>``, and
``/drop/<lane>-...`` names), one per front end, so the front ends never see each other's
changes and the order of the tests does not matter. Every world file is made on disk before
any front end opens the workspace: nothing reaches the audit log but the principal's calls.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt

from bastion.governance.identity import IdentityConfig, VerificationKey
from bastion.stores.overlay_layers import layer_folder

SECRET = "TOPSECRET"
"""A word only hidden files hold: no answer may ever contain it."""

WORD = "kestrel"
"""A word visible and hidden files both hold (grep, search and ask look for it)."""

USER = "ana"
TENANT = "acme"
ROLES = ("staff",)
CLEARANCE = "internal"

OPERATOR = "olga"
"""An operator: ``ana``'s reach, plus the ``audit`` and ``reindex`` actions on ``/``."""
PEOPLE = {USER: ROLES, OPERATOR: (*ROLES, "ops")}

ISSUER = "https://id.parity.test"
AUDIENCE = "bastion-parity"

HIDDEN_HEAD = "---\nclassification: restricted\n---\n"

VISIBLE: dict[str, str] = {
    "docs/handbook.md": (
        f"# Handbook\n\nThe {WORD} rota starts on Monday.\nPages are answered within 15 minutes.\n"
    ),
    "docs/notes/plan.md": "line 1\nline 2\nline 3\nline 4\nline 5\n",
    "docs/mixed/visible.md": f"# Visible\n\nThe {WORD} feeder is cleaned on Fridays.\n",
    "docs/empty/.keep": "",
}

HIDDEN: dict[str, str] = {
    "docs/mixed/secret.md": f"{HIDDEN_HEAD}# Secret\n\nThe {WORD} {SECRET} code is 4471.\n",
    "docs/mixed/zz-last.md": f"{HIDDEN_HEAD}{SECRET} {WORD} {WORD} {WORD}\n",
    "docs/team/plan.md": f"{HIDDEN_HEAD}# Plan\n\nThe {WORD} {SECRET} merger.\n",
    "docs/team/deep/more.md": f"{HIDDEN_HEAD}{SECRET}\n",
    "docs/vault/keys.md": f"# Keys\n\n{WORD} {SECRET} vault keys.\n",
    "board/minutes.md": f"# Minutes\n\nThe board discussed the {WORD} {SECRET}.\n",
}

LANE_VISIBLE: dict[str, str] = {
    "a.md": "alpha lane file\nsecond line\n",
    "mixed/b.md": "bravo lane file\n",
    "sub/c.md": "charlie lane file\n",
    "sub/d.md": "delta lane file\n",
    "mv/e.md": "echo lane file\n",
}
"""Files of each lane (under ``docs/lanes/<lane>/``), in both worlds."""

LANE_HIDDEN: dict[str, str] = {
    "mixed/h.md": f"{HIDDEN_HEAD}{SECRET} lane\n",
    "only/h.md": f"{HIDDEN_HEAD}{SECRET} lane\n",
}
"""Hidden files of each lane, in the full world only."""

DROP_HIDDEN = ("left.md", "report.md", "create.md", "append.md", "edit.md", "delete.md")
DROP_HIDDEN += ("move.md", "copy.md", "run.md")
"""Names ``/drop/<lane>-NAME`` someone else wrote in the full world's drop box: ``left.md``
for the calls that change nothing, one name for each call that changes the drop box (a
change in the bare world would otherwise make the next call's file exist there too)."""


WORK_LAYER = "layers" + str(layer_folder(None, TENANT))
"""Where the overlay mount ``/work`` keeps the tenant's shared layer (``overlay =
"file:layers"``): the principals' tenant's, outside any thread."""


def config_text(*, full: bool) -> str:
    board = (
        """
[[mounts]]
prefix = "/board"
url = "file:board"
scope = "read_write"
labels = { tenant = "acme", classification = "internal", roles = ["board"] }
"""
        if full
        else ""
    )
    return f"""audit = "audit.jsonl"

[knowledge]
folder = "index"
embedder = "none"

[[mounts]]
prefix = "/docs"
url = "file:docs"
scope = "read_write"
labels = {{ tenant = "acme", classification = "internal" }}
{board}
[[mounts]]
prefix = "/work"
url = "file:work"
scope = "read_write"
overlay = "file:layers"
labels = {{ tenant = "acme", classification = "internal" }}

[[mounts]]
prefix = "/drop"
url = "file:drop"
scope = "write_only"
labels = {{ tenant = "acme", classification = "internal" }}

[policy]
rules = [
  {{ effect = "deny", actions = ["*"], paths = ["/docs/vault/**"] }},
  {{ effect = "allow", actions = ["execute"], paths = ["/**"] }},
  {{ effect = "allow", actions = ["audit", "reindex"], paths = ["/**"], roles = ["ops"] }},
  {{ effect = "allow", actions = ["*"], paths = ["/**"] }},
]

{_users()}""".replace("'", '"')


def _users() -> str:
    return "".join(
        f'\n[users.{user}]\ntenant = "{TENANT}"\nroles = {list(roles)!r}\n'
        f'clearance = "{CLEARANCE}"\n'
        for user, roles in PEOPLE.items()
    )


@dataclass(frozen=True)
class World:
    """One world on disk."""

    name: str
    """``full`` or ``bare``."""
    root: Path
    config: Path

    @property
    def full(self) -> bool:
        return self.name == "full"


def _put(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def make_world(root: Path, *, full: bool, lanes: Iterable[str]) -> World:
    """Write one world under ``root`` (the same layout for both, so that only the hidden
    entries differ) and return it."""
    root.mkdir(parents=True)
    for folder in ("docs", "drop", "board", "work", WORK_LAYER):
        (root / folder).mkdir(parents=True)
    for rel, text in VISIBLE.items():
        _put(root, rel, text)
    gone: list[str] = []
    for lane in lanes:
        for rel, text in LANE_VISIBLE.items():
            _put(root, f"docs/lanes/{lane}/{rel}", text)
        _put(root, f"work/{lane}/gone.md", "deleted in the layer\n")
        _put(root, f"{WORK_LAYER}/{lane}/a.md", "alpha in the layer\n")
        _put(root, f"{WORK_LAYER}/{lane}/b.md", "bravo in the layer\n")
        gone.append(f"/{lane}/gone.md")
    if full:
        for rel, text in HIDDEN.items():
            _put(root, rel, text)
        for lane in lanes:
            for rel, text in LANE_HIDDEN.items():
                _put(root, f"docs/lanes/{lane}/{rel}", text)
            for name in DROP_HIDDEN:
                _put(root, f"drop/{lane}-{name}", f"{SECRET} left by someone else\n")
            _put(root, f"{WORK_LAYER}/{lane}/h.md", f"{HIDDEN_HEAD}{SECRET} in the layer\n")
            _put(root, f"work/{lane}/hidden-gone.md", f"{HIDDEN_HEAD}{SECRET} deleted\n")
            gone.append(f"/{lane}/hidden-gone.md")
    manifest = {"taken": {}, "gone": sorted(gone)}  # what the layer deleted from the base
    _put(root, f"{WORK_LAYER}/.bastion-overlay.json", json.dumps(manifest))
    config = root / "bastion.toml"
    config.write_text(config_text(full=full), encoding="utf-8")
    return World("full" if full else "bare", root, config)


class Tokens:
    """Signed tokens for the server front ends (one key, made per run)."""

    def __init__(self) -> None:
        self.key = secrets.token_bytes(64)
        self.identity = IdentityConfig(
            issuer=ISSUER,
            audience=AUDIENCE,
            keys=(VerificationKey.hmac(self.key, algorithm="HS256", kid="k1"),),
        )

    def token(self, user: str = USER) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": user,
            "tenant": TENANT,
            "roles": list(PEOPLE[user]),
            "clearance": CLEARANCE,
            "iat": now,
            "exp": now + 3600,
        }
        return jwt.encode(claims, self.key, algorithm="HS256", headers={"kid": "k1"})
