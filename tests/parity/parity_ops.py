"""The operations of the parity suite and the scenarios that drive each one.

An operation is a name every front end understands (``read``, ``grep``, ...) with generic
arguments (``path``, ``pattern``, ...); each front end's driver translates it into its own
call. A scenario is one operation with its arguments, aimed at what the principal may not see
in the full world (``parity_world``). ``{lane}`` in an argument is the front end's lane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity_world import WORD

OPERATIONS = (
    "describe",  # what the principal is told of the workspace: map, tools, /v1/me
    "read",
    "read_bytes",
    "stat",
    "exists",
    "list",
    "glob",
    "grep",
    "search",
    "ask",
    "write",
    "create",
    "append",
    "edit",
    "mkdir",
    "delete",
    "move",
    "copy",
    "run",
    "processes",
    "audit",
    "index",
    "reindex",
    "index_dir",
    "overlay_changes",
    "overlay_diff",
    "overlay_apply",
    "overlay_discard",
)


CHANGING = frozenset(
    {"write", "create", "append", "edit", "mkdir", "delete", "move", "copy"}
    | {"overlay_apply", "overlay_discard"}
)
LATE = frozenset({"audit", "index", "reindex", "index_dir", "processes"})


@dataclass(frozen=True)
class Scenario:
    name: str
    op: str
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def phase(self) -> int:
        """0: changes nothing; 1: changes files (in the front end's lane, the hidden folder,
        the drop box); 2: reads what every call before left (the audit log, the index).
        Every front end runs phase 0 before any runs phase 1, so that a change one front end
        makes differently in the two worlds cannot change another's listing."""
        if self.op in CHANGING or self.name.startswith("run-write"):
            return 1
        return 2 if self.op in LATE else 0

    def bound(self, lane: str) -> dict[str, Any]:
        """The arguments with ``{lane}`` filled in."""
        return {k: _filled(v, lane) for k, v in self.args.items() if k != "reads"}

    def reads(self, lane: str) -> list[str]:
        """Files an agent reads first (its tools change only files it has read)."""
        return [path.replace("{lane}", lane) for path in self.args.get("reads", ())]


def _filled(value: Any, lane: str) -> Any:
    if isinstance(value, str):
        return value.replace("{lane}", lane)
    if isinstance(value, list):
        return [_filled(v, lane) for v in value]
    return value


def _s(name: str, op: str, **args: Any) -> Scenario:
    return Scenario(name, op, args)


LANE = "/docs/lanes/{lane}"

SCENARIOS: tuple[Scenario, ...] = (
    _s("describe", "describe"),
    # -- reading: hidden by labels, alone in a folder, denied folder, hidden mount, drop box
    _s("read-visible", "read", path="/docs/handbook.md"),
    _s("read-page", "read", path="/docs/notes/plan.md", offset=1, limit=2),
    _s("read-label-hidden", "read", path="/docs/mixed/secret.md"),
    _s("read-in-hidden-folder", "read", path="/docs/team/plan.md"),
    _s("read-denied-folder", "read", path="/docs/vault/keys.md"),
    _s("read-hidden-mount", "read", path="/board/minutes.md"),
    _s("read-drop-box", "read", path="/drop/{lane}-left.md"),
    _s("read-below-hidden-file", "read", path="/docs/mixed/secret.md/x"),
    _s("bytes-label-hidden", "read_bytes", path="/docs/mixed/secret.md", start=0, end=8),
    _s("bytes-drop-box", "read_bytes", path="/drop/{lane}-left.md", start=0, end=8),
    _s("stat-visible", "stat", path="/docs/handbook.md"),
    _s("stat-label-hidden", "stat", path="/docs/mixed/secret.md"),
    _s("stat-hidden-folder", "stat", path="/docs/team"),
    _s("stat-denied-folder", "stat", path="/docs/vault"),
    _s("stat-hidden-mount", "stat", path="/board"),
    _s("stat-drop-box", "stat", path="/drop/{lane}-left.md"),
    _s("exists-label-hidden", "exists", path="/docs/mixed/secret.md"),
    _s("exists-hidden-mount", "exists", path="/board/minutes.md"),
    _s("exists-drop-box", "exists", path="/drop/{lane}-left.md"),
    # -- listing and finding
    _s("list-root", "list", path="/"),
    _s("list-docs", "list", path="/docs"),
    _s("list-mixed", "list", path="/docs/mixed"),
    _s("list-hidden-folder", "list", path="/docs/team"),
    _s("list-denied-folder", "list", path="/docs/vault"),
    _s("list-hidden-mount", "list", path="/board"),
    _s("list-drop-box", "list", path="/drop"),
    _s("list-recursive", "list", path="/docs", recursive=True),
    _s("glob-everything", "glob", pattern="**/*.md"),
    _s("glob-hidden-mount", "glob", pattern="/board/**"),
    _s("glob-drop-box", "glob", pattern="/drop/*"),
    _s("glob-hidden-folder", "glob", pattern="/docs/team/**"),
    _s("grep-word", "grep", pattern=WORD, path="/"),
    _s("grep-secret", "grep", pattern="TOPSECRET", path="/"),
    _s("grep-regex-mixed", "grep", pattern=f"{WORD}.*", path="/docs/mixed", regex=True),
    _s("grep-hidden-mount", "grep", pattern=WORD, path="/board"),
    _s("grep-denied-folder", "grep", pattern=WORD, path="/docs/vault"),
    _s("search-word", "search", query=WORD),
    _s("search-secret", "search", query="TOPSECRET code merger minutes"),
    _s("search-hidden-mount", "search", query=WORD, path="/board"),
    _s("search-hidden-folder", "search", query=WORD, path="/docs/team"),
    _s("ask-word", "ask", question=f"When does the {WORD} rota start?"),
    _s("ask-secret", "ask", question=f"What is the {WORD} code?"),
    # -- changing: each in the front end's own lane
    _s("write-new", "write", path=f"{LANE}/new.md", content="new file\n"),
    _s("write-into-hidden-folder", "write", path="/docs/team/{lane}-new.md", content="x\n"),
    _s("write-hidden-mount", "write", path="/board/{lane}-new.md", content="x\n"),
    _s("write-denied-folder", "write", path="/docs/vault/{lane}-new.md", content="x\n"),
    _s("write-drop-box-over", "write", path="/drop/{lane}-report.md", content="mine\n"),
    _s("write-drop-box-new", "write", path="/drop/{lane}-fresh.md", content="mine\n"),
    _s("create-new", "create", path=f"{LANE}/created.md", content="new file\n"),
    _s("create-drop-box-over", "create", path="/drop/{lane}-create.md", content="mine\n"),
    _s("create-in-hidden-folder", "create", path="/docs/team/{lane}-c2.md", content="x\n"),
    _s("append-drop-box-over", "append", path="/drop/{lane}-append.md", content="more\n"),
    _s("append-hidden-mount", "append", path="/board/{lane}-log.md", content="more\n"),
    _s(
        "edit-visible",
        "edit",
        path=f"{LANE}/a.md",
        old="alpha",
        new="ALPHA",
        reads=[f"{LANE}/a.md"],
    ),
    _s("edit-label-hidden", "edit", path="/docs/mixed/secret.md", old=WORD, new="x"),
    _s("edit-drop-box", "edit", path="/drop/{lane}-edit.md", old="left", new="x"),
    _s("mkdir-in-hidden-folder", "mkdir", path="/docs/team/{lane}-dir"),
    _s("mkdir-hidden-mount", "mkdir", path="/board/{lane}-dir"),
    _s("delete-label-hidden", "delete", path="/docs/mixed/secret.md"),
    _s("delete-hidden-folder", "delete", path="/docs/team"),
    _s(
        "delete-mixed-folder",
        "delete",
        path=f"{LANE}/mixed",
        recursive=True,
        reads=[f"{LANE}/mixed/b.md"],
    ),
    _s("delete-drop-box", "delete", path="/drop/{lane}-delete.md"),
    _s("move-into-hidden-folder", "move", src=f"{LANE}/sub/c.md", dst="/docs/team/{lane}-c.md"),
    _s("move-folder-with-hidden", "move", src=f"{LANE}/only", dst=f"{LANE}/moved"),
    _s("move-hidden-mount", "move", src="/board/minutes.md", dst=f"{LANE}/minutes.md"),
    _s("copy-folder-with-hidden", "copy", src=f"{LANE}/mixed", dst=f"{LANE}/copied"),
    _s("copy-label-hidden", "copy", src="/docs/mixed/secret.md", dst=f"{LANE}/stolen.md"),
    _s("move-onto-drop-box", "move", src=f"{LANE}/sub/d.md", dst="/drop/{lane}-move.md"),
    _s("copy-onto-drop-box", "copy", src="/docs/handbook.md", dst="/drop/{lane}-copy.md"),
    # -- a hidden mount answers as no mount to every changing call (not only to reads)
    _s("edit-hidden-mount", "edit", path="/board/minutes.md", old=WORD, new="x"),
    _s("delete-hidden-mount", "delete", path="/board/minutes.md"),
    _s("copy-into-hidden-mount", "copy", src="/docs/handbook.md", dst="/board/{lane}-h.md"),
    _s("mkdir-hidden-mount-root", "mkdir", path="/board"),
    # landing on the very name of a document the principal may not see is the one documented
    # residual (docs/security.md, "Writes onto hidden names"): it is refused in policy words
    # and pinned in tests/security, not compared here
    # -- the sandbox sees what the principal may read
    _s(
        "run-read",
        "run",
        command=f"ls -R /docs/mixed /docs/team /board 2>&1; grep -rl {WORD} /docs /board 2>&1 | sort",
    ),
    _s(
        "run-write",
        "run",
        command="echo x > /docs/team/{lane}-run.md; echo $?; echo x > /drop/{lane}-run.md; echo $?",
    ),
    _s("processes", "processes"),
    # -- an overlay's review: only the changes the principal may read, by name or all
    _s("overlay-changes", "overlay_changes", prefix="/work"),
    _s("overlay-changes-hidden-mount", "overlay_changes", prefix="/board"),
    _s("overlay-diff", "overlay_diff", prefix="/work"),
    _s("overlay-diff-hidden", "overlay_diff", prefix="/work", paths=["/work/{lane}/h.md"]),
    _s("overlay-apply-own", "overlay_apply", prefix="/work", paths=["/work/{lane}/a.md"]),
    _s("overlay-apply-delete", "overlay_apply", prefix="/work", paths=["/work/{lane}/gone.md"]),
    _s("overlay-apply-hidden", "overlay_apply", prefix="/work", paths=["/work/{lane}/h.md"]),
    _s("overlay-discard-own", "overlay_discard", prefix="/work", paths=["/work/{lane}/b.md"]),
    _s(
        "overlay-discard-hidden-delete",
        "overlay_discard",
        prefix="/work",
        paths=["/work/{lane}/hidden-gone.md"],
    ),
    # -- what the principal may read of the log and the index
    _s("audit-own", "audit"),
    _s("index-status", "index"),
    _s("reindex", "reindex"),
    _s("index-dir-mixed", "index_dir", path="/docs/mixed"),
    _s("index-dir-hidden-mount", "index_dir", path="/board"),
)
"""Every scenario, in the order a front end runs them."""
