"""The world of the oracle tests: a workspace ``dana`` reads, with or without documents she
may not see (``test_cli_oracle.py``, ``test_cli_audit_view.py``)."""

from __future__ import annotations

import os
from pathlib import Path

TOML = """\
audit = ".bastion/audit.jsonl"

[knowledge]
folder = ".bastion/index"
embedder = "none"

[[mounts]]
prefix = "/drive"
url = "file:drive"
scope = "read_write"
labels = { tenant = "acme" }

[policy]
rules = [{ effect = "allow", actions = ["*"], paths = ["/**"] }]

[users.dana]
tenant = "acme"
roles = ["staff"]
clearance = "internal"
"""

VISIBLE = {
    "plan.md": "---\nclassification: internal\n---\n# Plan\n\n"
    "We may acquire a telematics firm this year.\nOsprey is one name on the list.\n",
    "public/careers.md": "# Careers\n\nWe hire engineers in Leeds.\n",
    "notes/todo.txt": "buy milk\nask about Osprey\n",
}

HIDDEN = {
    "deals.md": "---\nclassification: restricted\nroles: [board]\n---\n# Deals\n\n"
    "The board agreed to acquire Osprey Telematics for 22 million.\n",
    "hr/reorg-plan.md": "---\nclassification: restricted\n---\n# Reorg\n\n"
    "The Osprey team moves to Leeds.\n",
    "notes/pay.txt": "Osprey bonus 12 percent\nacquire Osprey Telematics for 22 million\n",
    "notes/pay.txt.labels.yaml": "classification: restricted\n",
    "public/board-minutes.md": "---\nclassification: internal\nroles: [board]\n---\n# Minutes\n\n"
    "Globex will acquire Osprey Telematics for 22 million.\n",
}

STAMP = 1_700_000_000
"""Every entry's modification time (a folder's time moves when a file is added to it)."""


def world(root: Path, *, hidden: bool) -> Path:
    root.mkdir()
    (root / "bastion.toml").write_text(TOML)
    files = {**VISIBLE, **(HIDDEN if hidden else {})}
    for rel, text in files.items():
        target = root / "drive" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for folder, dirs, names in os.walk(root / "drive", topdown=False):
        for name in [*names, *dirs]:
            os.utime(Path(folder) / name, (STAMP, STAMP))
    os.utime(root / "drive", (STAMP, STAMP))
    return root
