"""The tool set of one agent: the tools one principal can use in one workspace, and the one
place every call goes through (argument validation, approval, flat errors).

Which tools exist follows the workspace's mounts, scopes and policy for the principal: no
write tools where nothing is writable, no search without an index. Hiding a tool is not
enforcement: every call still goes through the workspace's guard, which refuses a path the
principal may not use whatever tools exist.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from bastion.agents.tools.execute import EXECUTE_TOOLS
from bastion.agents.tools.granular import GRANULAR_TOOLS
from bastion.agents.tools.intent import INTENT_TOOLS
from bastion.agents.tools.outputs import OutputLimits, fail
from bastion.agents.tools.session import Approval, PathLocks, ToolSession
from bastion.agents.tools.spec import Capability, Output, Tool
from bastion.core.errors import BastionError, ConfigurationError
from bastion.core.models import Action
from bastion.core.visibility import may_reach
from bastion.sandbox.result import RunLimits
from bastion.workspace.workspace import Workspace

__all__ = ["PERMISSIONS", "Toolset", "capabilities", "may_allow", "mount_capabilities"]

log = logging.getLogger(__name__)

PERMISSIONS: Mapping[str, frozenset[Capability]] = {
    "read": frozenset({Capability.READ}),
    "write": frozenset({Capability.WRITE, Capability.DELETE}),
    "list": frozenset({Capability.LIST}),
    "search": frozenset({Capability.SEARCH, Capability.ASK}),
    "delete": frozenset({Capability.DELETE}),
    "ask": frozenset({Capability.ASK}),
    "execute": frozenset({Capability.EXECUTE}),
}
"""Permission names a tool set may be limited to, and the capabilities each one grants."""

_ACTIONS: tuple[tuple[Action, Capability], ...] = (
    (Action.READ, Capability.READ),
    (Action.WRITE, Capability.WRITE),
    (Action.DELETE, Capability.DELETE),
    (Action.LIST, Capability.LIST),
    (Action.SEARCH, Capability.SEARCH),
    (Action.EXECUTE, Capability.EXECUTE),
)


class Toolset:
    """The tools of one agent acting for the workspace's principal.

    ``style`` picks the granular tools (``read_file``, ``write_file``, ...) or the intent
    tools (``access``, ``discover``, ``update``); ``extra`` adds tools (skills...);
    ``permissions`` limits the set further (``["read", "list"]``); ``approval`` asks a human
    before chosen tools, changes under chosen paths or chosen commands. Either style adds
    ``execute`` when the policy grants the principal the ``execute`` action somewhere;
    ``run_limits`` are its commands' limits (the operator's: ``network`` with a list of
    domains lets them reach those through Bastion's proxy).
    """

    def __init__(
        self,
        workspace: Workspace,
        *,
        style: Literal["granular", "intent"] = "granular",
        tools: Iterable[Tool] | None = None,
        extra: Iterable[Tool] = (),
        permissions: Iterable[str] | None = None,
        approval: Approval | None = None,
        limits: OutputLimits | None = None,
        locks: PathLocks | None = None,
        run_limits: RunLimits | None = None,
    ) -> None:
        if style not in ("granular", "intent"):
            raise ConfigurationError(f"unknown tool style {style!r}; use granular or intent")
        self.workspace = workspace
        self.session = ToolSession(
            workspace, limits=limits, approval=approval, locks=locks, run_limits=run_limits
        )
        granted = _granted(permissions)
        per_mount = [caps & granted for caps in mount_capabilities(workspace)]
        self.capabilities: frozenset[Capability] = frozenset().union(*per_mount)
        """What the principal may do somewhere (after the permission list)."""
        style_tools = GRANULAR_TOOLS if style == "granular" else INTENT_TOOLS
        base = tools if tools is not None else (*style_tools, *EXECUTE_TOOLS)
        fitted = [_fit(t, per_mount) for t in (*base, *extra)]
        self.tools: tuple[Tool, ...] = tuple(t for t in fitted if t is not None)
        self._by_name: dict[str, Tool] = {}
        for t in self.tools:
            if t.name in self._by_name:
                raise ConfigurationError(f"two tools are named {t.name!r}")
            self._by_name[t.name] = t

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def get(self, name: str) -> Tool | None:
        return self._by_name.get(name) if isinstance(name, str) else None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._by_name

    def __len__(self) -> int:
        return len(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        """Name, description and parameters of each tool (what every adapter converts)."""
        return [
            {"name": t.name, "description": t.description, "parameters": t.schema()}
            for t in self.tools
        ]

    def filesystem_map(self) -> str:
        """The workspace's map for this principal, for a system prompt."""
        return self.workspace.filesystem_map()

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> Output:
        """Run one tool call. Never raises for anything the agent did: a bad argument, a
        refusal, a missing file or an unexpected failure all come back as
        ``{"success": false, "error": "..."}``."""
        # a name of any type (a list from a hostile client) is unknown; inline: the hot path
        found = self._by_name.get(name) if isinstance(name, str) else None
        if found is None:
            return fail(f"unknown tool {name!r:.100}; use one of: {', '.join(self.names)}")
        session = self.session
        try:
            args = found.parse(arguments)
            # Parsed before the tool runs (a malformed one refused and audited as this call)
            parse = session.workspace.parse_path
            paths = [
                parse(args[p], operation=name) for p in found.paths if isinstance(args.get(p), str)
            ]
            if session.approval is not None:  # else nothing to ask (no coroutine made)
                await session.approve(found, args, paths)
            return await found.fn(session, **args)
        except BastionError as exc:
            return fail(str(exc))
        except Exception:
            log.exception("tool %s failed", name)
            return fail(f"{name} failed unexpectedly; try again, or another way")


def _granted(permissions: Iterable[str] | None) -> frozenset[Capability]:
    if permissions is None:
        return frozenset(Capability)
    granted: set[Capability] = set()
    for name in permissions:
        if name not in PERMISSIONS:
            known = ", ".join(PERMISSIONS)
            raise ConfigurationError(f"unknown permission {name!r}; known: {known}")
        granted |= PERMISSIONS[name]
    return frozenset(granted)


def _fit(tool: Tool, per_mount: list[frozenset[Capability]]) -> Tool | None:
    """``tool`` as it can be offered where each mount gives the capabilities in
    ``per_mount``: ``None`` when it cannot be, and with only the servable values of each
    enumerated argument."""

    def met(needs: frozenset[Capability], *, together: bool = True) -> bool:
        if together:
            return any(needs <= caps for caps in per_mount)
        return needs <= frozenset().union(*per_mount)

    if not met(tool.needs, together=tool.same_mount):
        return None
    for argument, per_value in tool.choices.items():
        allowed = [value for value, needs in per_value.items() if met(needs)]
        if not allowed:
            return None
        if len(allowed) < len(per_value):
            tool = tool.restrict(argument, allowed)
    return tool


# -- what a principal can do -----------------------------------------------------------------


def capabilities(workspace: Workspace) -> frozenset[Capability]:
    """What the workspace's principal may do somewhere (see :func:`mount_capabilities`)."""
    return frozenset().union(*mount_capabilities(workspace))


def mount_capabilities(workspace: Workspace) -> list[frozenset[Capability]]:
    """What the workspace's principal may do on each mount: each action the mount's scope
    allows, when its labels admit the principal and a policy rule may allow it there (search
    and ask also need an index, and ask a workspace that answers).

    It may say yes where every path turns out refused (a rule can be narrower than a mount);
    it says no only where nothing can be allowed. The guard decides each call.
    """
    policy, principal = workspace.policy, workspace.principal
    roles = policy.effective_roles(principal)
    answers = workspace.has_index and callable(getattr(workspace, "ask", None))
    result: list[frozenset[Capability]] = []
    view = workspace.view
    for mount in workspace.mounts:
        if not view.sees(mount):  # a mount it may see nothing of is not there for it
            continue
        found = {
            capability
            for action, capability in _ACTIONS
            if mount.scope.allows(action)
            and may_allow(policy, principal, roles, action, mount.prefix)
        }
        if Capability.SEARCH in found and not workspace.has_index:
            found.discard(Capability.SEARCH)
        if Capability.SEARCH in found and answers:
            found.add(Capability.ASK)
        result.append(frozenset(found))
    return result


may_allow = may_reach
"""True when some path at or under a prefix may be allowed an action (``core.visibility``)."""
