"""``bastion audit``: the workspace's audit log, as the acting principal may read it.

The log is the file named by ``audit = "FILE"`` in ``bastion.toml`` (JSON lines). The owner
reads every record; a principal reads its own records as it was told them (not the checks
made on its behalf), or every record when the policy grants it the ``audit`` action on ``/``
(``Workspace.audit``). ``--limit N`` reads a page: the newest N matching records before
``--cursor`` (the end without it), and the cursor of the older page (``next``), as
``GET /v1/audit`` does (``bastion.core.audit_sinks.audit_page``).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

import click

from bastion.cli.common import common_options, resolve_principal, settings
from bastion.cli.declared import click_type
from bastion.cli.errors import CliError
from bastion.cli.output import emit, note, printable
from bastion.cli.session import open_session
from bastion.core.audit import AuditRecord
from bastion.core.audit_sinks import audit_page

__all__ = ["audit_command"]

_AGO = re.compile(r"^(\d+)([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, *, now: float | None = None) -> float:
    """``30m``, ``2h``, ``7d`` ago, or an ISO 8601 date or time (UTC when no zone is given)."""
    ago = _AGO.match(text)
    if ago:
        return (time.time() if now is None else now) - int(ago.group(1)) * _SECONDS[ago.group(2)]
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: use an ISO 8601 time (2026-11-25T10:00) or an age such as 30m, 2h, 7d"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class _When(click.ParamType):  # type: ignore[type-arg]
    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value if isinstance(value, float) else parse_time(str(value))


@click.command("audit")
@click.option("--principal", "who", default=None, help="Only records of this principal id.")
@click.option("--action", default=None, help="Only this operation (read, write, search...).")
@click.option(
    "--outcome",
    type=click.Choice(["allowed", "refused"]),
    default=None,
    help="Only allowed or only refused operations.",
)
@click.option("--since", type=_When(), default=None, help="From this time (or age: 2h, 7d).")
@click.option("--until", type=_When(), default=None, help="Up to this time (or age).")
@click.option("--path", "prefix", default=None, help="Only operations on or under this path.")
@click.option(
    "--limit",
    type=click_type("audit", "limit"),
    default=None,
    help="A page: the newest N matching records (as GET /v1/audit: 1 to 1000).",
)
@click.option(
    "--cursor", default=None, help="The page before this cursor (the 'next' of the last page)."
)
@common_options()
def audit_command(
    who: str | None,
    action: str | None,
    outcome: str | None,
    since: float | None,
    until: float | None,
    prefix: str | None,
    limit: int | None,
    cursor: str | None,
) -> None:
    """Records of the audit log (`audit = "FILE"` in bastion.toml), oldest first; with
    --limit, a page of them and the cursor of the older page."""
    config = settings()
    assert config is not None
    if config.audit is None:
        raise CliError(
            'this workspace keeps no audit log; add audit = ".bastion/audit.jsonl" to its '
            "bastion.toml",
            code="no_audit_log",
        )
    with open_session(config, resolve_principal(config), owner_note=False) as session:
        records = list(getattr(session.ws.audit, "records", ()))
    under = prefix.rstrip("/") + "/" if prefix else None

    def keep(r: AuditRecord) -> bool:
        return (
            (who is None or r.principal == who)
            and (action is None or r.operation == action)
            and (outcome is None or r.allowed == (outcome == "allowed"))
            and (since is None or r.time >= since)
            and (until is None or r.time <= until)
            and (under is None or r.path == prefix or r.path.startswith(under))
        )

    try:
        page = audit_page(records, limit=limit, cursor=cursor or None, keep=keep)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--cursor") from None

    def line(r: AuditRecord) -> str:
        when = datetime.fromtimestamp(r.time, UTC).isoformat(timespec="seconds")
        where = r.path + (f" -> {r.target}" if r.target else "")
        verdict = "allowed" if r.allowed else f"refused: {r.reason}"
        text = f"{when.replace('+00:00', 'Z')} {r.principal}@{r.tenant} {r.operation} {where} "
        return printable(text + verdict)

    emit(page.to_dict(), lambda: "\n".join(map(line, page.records)))
    if page.next is not None:
        note(f"note: older records: add --cursor {page.next}")
