"""What every command shares: the workspace file, who is asking, output and errors.

Every command takes the same options (:func:`common_options`):

- ``--config FILE``: the workspace file; without it, ``bastion.toml`` in the current folder;
- ``--as USER`` (a user of ``--users FILE``, else of the file's ``[users]``, else of the
  demo: :data:`DEFAULT_USERS`) or ``--token JWT`` / ``$BASTION_TOKEN`` verified with
  ``--identity FILE``; with neither, the file's ``[principal]``, else the workspace's owner;
- ``--json``: results as JSON on stdout; errors as ``{"error": CODE, "message": ...}`` on
  stderr (:data:`ERROR_CODES`, one table for the whole error tree);
- ``-q`` (no notes, no progress) and ``-v`` / ``-vv`` (log lines on stderr).

Exit codes: :data:`EXIT_OK`, :data:`EXIT_ERROR`, :data:`EXIT_USAGE`, :data:`EXIT_SKIPPED`
(an index run skipped files) and :data:`EXIT_UNVERIFIED` (``ask``: the answer failed its
verification). The options are stored on the click context (:func:`options`), so a command
function takes only its own arguments.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from bastion.core.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    BastionError,
    ConfigurationError,
    ConflictError,
    DirectoryNotEmptyError,
    EditError,
    InvalidPathError,
    InvalidPatternError,
    IsADirectoryError_,
    LabelError,
    LimitError,
    NotADirectoryError_,
    NotFoundError,
    OperationError,
    PolicyDeniedError,
    RateLimitError,
    ScopeError,
    StoreError,
    StoreUnavailableError,
    UnsupportedFileError,
)
from bastion.core.extras import needs
from bastion.core.principal import Principal

if TYPE_CHECKING:
    from bastion.config import WorkspaceConfig

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_USERS",
    "ERROR_CODES",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_SKIPPED",
    "EXIT_UNVERIFIED",
    "EXIT_USAGE",
    "BastionGroup",
    "CliError",
    "Options",
    "common_options",
    "emit",
    "error_code",
    "note",
    "options",
    "resolve_principal",
    "settings",
    "shown",
]

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_ERROR = 1
"""An error: the message (or the JSON ``error`` object) says which."""
EXIT_USAGE = 2
"""The command line itself is wrong (an unknown option, a missing argument, a bad value)."""
EXIT_SKIPPED = 3
"""An index run finished but skipped files (each named once, with its reason)."""
EXIT_UNVERIFIED = 4
"""``bastion ask``: an answer came back but failed its verification."""

CONFIG_NAME = "bastion.toml"
"""The workspace file a command reads from the current folder when ``--config`` is not given."""

ERROR_CODES: Mapping[type[BaseException], str] = {
    InvalidPathError: "invalid_path",
    NotFoundError: "not_found",  # NoMountError too: a hidden mount reads as no mount
    AlreadyExistsError: "already_exists",
    NotADirectoryError_: "not_a_directory",
    IsADirectoryError_: "is_a_directory",
    DirectoryNotEmptyError: "directory_not_empty",
    ConflictError: "conflict",
    EditError: "edit_failed",
    ScopeError: "scope_denied",
    PolicyDeniedError: "policy_denied",
    LimitError: "limit_exceeded",
    AccessDeniedError: "access_denied",
    RateLimitError: "rate_limited",
    UnsupportedFileError: "unsupported_file",
    LabelError: "bad_labels",
    InvalidPatternError: "invalid_pattern",
    StoreUnavailableError: "store_unavailable",
    StoreError: "store_failed",
    OperationError: "operation_failed",
    ConfigurationError: "configuration",
    BastionError: "error",
    click.UsageError: "usage",
    click.ClickException: "error",
}
"""The stable ``error`` code of each error class; a class not named here takes the code of
its nearest ancestor (``NoMountError`` is ``not_found``, every token refusal is
``authentication`` through :func:`error_code`). Codes never change once published."""

_AUTHENTICATION = "authentication"

DEFAULT_USERS: dict[str, Principal] = {
    "admin": Principal.of("admin", roles={"admin"}, clearance="restricted"),
    "engineer": Principal.of("engineer", roles={"engineer"}, clearance="internal"),
    "guest": Principal.of("guest"),
}
"""Who ``--as`` may name without ``--users`` or a ``[users]`` table: three generic users and
the people of the demo story (``bastion.demo.corpus``), added below."""


def _demo_users() -> dict[str, Principal]:
    from bastion.demo.corpus import users

    return {user.id: user.principal for user in users()}


_GENERIC = ", ".join(DEFAULT_USERS)
DEFAULT_USERS.update(_demo_users())
DEMO_USER_NAMES = f"{_GENERIC}, and the demo's people: " + ", ".join(
    name for name in DEFAULT_USERS if name not in _GENERIC.split(", ")
)


def error_code(exc: BaseException) -> str:
    """The stable code of ``exc`` (:data:`ERROR_CODES`), from its nearest listed class."""
    from bastion.governance.errors import AuthenticationError

    if isinstance(exc, AuthenticationError):
        return _AUTHENTICATION
    if isinstance(exc, CliError):
        return exc.code
    for cls in type(exc).__mro__:
        if cls in ERROR_CODES:
            return ERROR_CODES[cls]
    return "error"


class CliError(click.ClickException):
    """An error the command line itself finds (an unknown user, a missing index), with its
    stable code."""

    def __init__(self, message: str, code: str = "error") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Options:
    """The shared options of one command line."""

    config: Path | None = None
    user: str | None = None
    users_file: Path | None = None
    token: str | None = None
    identity: Path | None = None
    as_json: bool = False
    quiet: bool = False
    verbose: int = 0
    file_identity: Any = None
    """The workspace file's ``[identity]`` table (checked), which verifies ``--token`` when
    no ``--identity`` is given."""


def options() -> Options:
    """The shared options of the command running now."""
    ctx = click.get_current_context()
    found = ctx.find_object(Options)
    return found if found is not None else Options()


def _keep(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Store an option's value on the context's :class:`Options` (not passed to the command)."""
    opts = ctx.ensure_object(Options)
    assert param.name is not None
    if param.name == "verbose":
        _logging(value, opts.quiet)
    setattr(opts, param.name, value)
    return value


_F = TypeVar("_F", bound=Callable[..., Any])

_EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def common_options(*, identity: bool = True) -> Callable[[_F], _F]:
    """Add the shared options to a command; ``identity=False`` leaves out who asks (``init``)."""

    def decorate(f: _F) -> _F:
        shared: list[Callable[[_F], _F]] = [
            click.option(
                "--config",
                type=_EXISTING_FILE,
                default=None,
                expose_value=False,
                callback=_keep,
                help=f"The workspace file (default: ./{CONFIG_NAME} when there is one).",
            ),
            click.option(
                "--json",
                "as_json",
                is_flag=True,
                expose_value=False,
                callback=_keep,
                help="Results as JSON on stdout; errors as a JSON object on stderr.",
            ),
            click.option(
                "-q",
                "--quiet",
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_keep,
                help="No notes and no progress on stderr.",
            ),
            click.option(
                "-v",
                "--verbose",
                count=True,
                expose_value=False,
                callback=_keep,
                help="Log lines on stderr (-vv: debug).",
            ),
        ]
        if identity:
            shared += [
                click.option(
                    "--as",
                    "user",
                    default=None,
                    metavar="USER",
                    expose_value=False,
                    callback=_keep,
                    help="Act as USER of --users, else of the file's [users], else of the "
                    f"defaults: {DEMO_USER_NAMES}.",
                ),
                click.option(
                    "--users",
                    "users_file",
                    type=_EXISTING_FILE,
                    default=None,
                    expose_value=False,
                    callback=_keep,
                    help="TOML or YAML file: user -> tenant, roles, clearance, tags.",
                ),
                click.option(
                    "--token",
                    default=None,
                    envvar="BASTION_TOKEN",
                    metavar="JWT",
                    expose_value=False,
                    callback=_keep,
                    help="Act as the subject of a JWT verified with --identity "
                    "(also $BASTION_TOKEN).",
                ),
                click.option(
                    "--identity",
                    type=_EXISTING_FILE,
                    default=None,
                    expose_value=False,
                    callback=_keep,
                    help="Identity configuration for --token (keys, issuer, audience, claims).",
                ),
            ]
        for option in reversed(shared):
            f = option(f)
        return f

    return decorate


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now (a test runner swaps it)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        return None


_HANDLER = _Stderr()
_HANDLER.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
_LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)


def _logging(verbose: int, quiet: bool) -> None:
    """Log lines (ours and third-party libraries', pypdf's warnings included) go to stderr:
    warnings by default, info with ``-v``, debug with ``-vv``, errors only with ``-q``.
    Python warnings are routed to logging too, never printed raw."""
    logging.captureWarnings(True)
    root = logging.getLogger()
    if _HANDLER not in root.handlers:
        root.addHandler(_HANDLER)
    _HANDLER.setLevel(logging.ERROR if quiet else _LEVELS[min(verbose, 2)])
    root.setLevel(min(root.level or logging.WARNING, _HANDLER.level))


def _logging_done() -> None:
    logging.getLogger().removeHandler(_HANDLER)
    logging.captureWarnings(False)


# -- output ------------------------------------------------------------------------------------


def emit(data: Any, text: str | Callable[[], str]) -> None:
    """Print a result: ``data`` as JSON with ``--json``, else ``text`` (or what it returns)."""
    if options().as_json:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    else:
        shown_text = text() if callable(text) else text
        if shown_text:
            click.echo(shown_text)


def note(message: str) -> None:
    """A note for a person on stderr (not with ``-q`` nor ``--json``)."""
    opts = options()
    if not opts.quiet and not opts.as_json:
        click.echo(message, err=True)


def shown(principal: Principal) -> str:
    """``ana@larkspur``: how a note names a principal."""
    return f"{principal.id}@{principal.tenant}"


def principal_dict(principal: Principal) -> dict[str, Any]:
    return {
        "id": principal.id,
        "tenant": principal.tenant,
        "roles": sorted(principal.roles),
        "clearance": principal.clearance,
        "tags": sorted(principal.tags),
    }


def fail(exc: BaseException, *, as_json: bool, stream: IO[str] | None = None) -> int:
    """Report ``exc`` on stderr and return the exit code for it."""
    code = error_code(exc)
    if isinstance(exc, click.ClickException):
        message = exc.format_message()
        status = exc.exit_code
    else:
        message = str(exc)
        status = EXIT_ERROR
    if as_json:
        click.echo(json.dumps({"error": code, "message": message}, ensure_ascii=False), err=True)
    elif isinstance(exc, click.ClickException):
        exc.show(stream)
    else:
        click.echo(f"Error: {message}", err=True)
    return status


class BastionGroup(click.Group):
    """The ``bastion`` group: every error a command raises, whether ours or click's, is shown
    once on stderr (a JSON object with ``--json``) with its documented exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        raw = list(sys.argv[1:] if args is None else args)
        before = raw[: raw.index("--")] if "--" in raw else raw
        as_json = "--json" in before
        command = next((arg for arg in before if not arg.startswith("-")), "")
        try:
            with needs(f"bastion {command}".strip()):
                result = super().main(raw, prog_name, complete_var, False, **extra)
        except click.exceptions.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(EXIT_ERROR)
        except (click.ClickException, BastionError) as exc:
            sys.exit(fail(exc, as_json=as_json))
        finally:
            _logging_done()
        sys.exit(result if isinstance(result, int) else EXIT_OK)


# -- the workspace file and who is asking ------------------------------------------------------


def config_path(*, required: bool = True) -> Path | None:
    """``--config``, else ``./bastion.toml`` when it exists; ``None`` (or an error when
    ``required``) when there is neither."""
    given = options().config
    if given is not None:
        return given
    here = Path(CONFIG_NAME)
    if here.is_file():
        return here
    if required:
        raise CliError(
            f"no {CONFIG_NAME} in this folder; run `bastion init` to write one, or pass "
            "--config FILE",
            code="no_config",
        )
    return None


def settings(*, required: bool = True) -> WorkspaceConfig | None:
    """The checked workspace file of this command (see :func:`config_path`)."""

    path = config_path(required=required)
    return load_config(path) if path is not None else None


def load_config(path: Path) -> WorkspaceConfig:
    """The workspace of the file at ``path``. A file that ``bastion serve`` reads too keeps
    its ``[server]`` and ``[identity]`` tables, checked by their own parsers
    (``bastion.server.loading``); ``[identity]`` then verifies ``--token``."""
    from bastion.config import WorkspaceConfig

    if not _server_tables(path):
        return WorkspaceConfig.from_file(path)
    from bastion.server.loading import ServerFile

    found = ServerFile.read(path)
    options().file_identity = found.identity
    workspace: WorkspaceConfig = found.workspace
    return workspace


def _server_tables(path: Path) -> bool:
    import tomllib

    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        data = (
            yaml.safe_load(text)
            if path.suffix.lower() in (".yaml", ".yml")
            else tomllib.loads(text)
        )
    except (OSError, ValueError, yaml.YAMLError):
        return False  # the workspace file's own loader says what is wrong
    return isinstance(data, dict) and bool({"server", "identity"} & set(data))


def users_of(config: WorkspaceConfig | None) -> Mapping[str, Principal]:
    """Who ``--as`` may name: ``--users FILE``, else the file's ``[users]``, else
    :data:`DEFAULT_USERS`."""
    from bastion.config import load_users

    opts = options()
    if opts.users_file is not None:
        return load_users(opts.users_file)
    if config is not None and config.users:
        return config.users
    return DEFAULT_USERS


def resolve_principal(config: WorkspaceConfig | None) -> Principal | None:
    """Who this command acts for: the verified ``--token``, else ``--as USER``; ``None``
    when neither is given (the file's ``[principal]``, else the owner)."""
    opts = options()
    if opts.token is not None and opts.user is not None:
        raise click.UsageError("say who asks with --as USER or --token JWT, not both (one of them)")
    if opts.token is not None:
        return _from_token(opts.token, opts.identity, config)
    if opts.user is None:
        return None
    users = users_of(config)
    principal = users.get(opts.user)
    if principal is None:
        known = ", ".join(sorted(users)) or "(none)"
        raise CliError(f"unknown user {opts.user!r}; known users: {known}", code="unknown_user")
    return principal


def _from_token(token: str, identity: Path | None, config: WorkspaceConfig | None) -> Principal:
    """The principal of a verified JWT; every refusal is one line that shows no claim."""
    from bastion.governance.identity import JwtVerifier
    from bastion.governance.identity_config import IdentityConfig

    if identity is not None:
        verifier = JwtVerifier(IdentityConfig.from_file(identity))
    elif options().file_identity is not None:
        verifier = JwtVerifier(options().file_identity)
    else:
        raise click.UsageError(
            "--token needs --identity FILE (keys, issuer, audience) or an [identity] table "
            "in the workspace file"
        )
    return verifier.authenticate(token).principal


def acting(config: WorkspaceConfig | None, principal: Principal | None) -> Principal | None:
    """The principal a workspace built from ``config`` acts for (``None``: the owner)."""
    if principal is not None:
        return principal
    return config.principal if config is not None else None


def fatal(message: str, code: str = "error") -> NoReturn:
    raise CliError(message, code=code)


class Progress:
    """Progress of a long job on stderr: a bar on a terminal, else a line every 10% (and at
    the end); nothing with ``-q``. Call it as ``progress(done, total, path)``."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = not options().quiet
        self.tty = self.enabled and sys.stderr.isatty()
        self._bar: Any = None
        self._shown = -1

    def __call__(self, done: int, total: int, _path: str = "") -> None:
        if not self.enabled or total <= 0:
            return
        if self.tty:
            if self._bar is None:
                self._bar = click.progressbar(
                    length=total, label=self.label, show_pos=True, file=sys.stderr
                )
                self._bar.__enter__()
            self._bar.length = total
            self._bar.update(done - self._bar.pos)
            return
        tenth = done * 10 // total
        if tenth > self._shown:
            self._shown = tenth
            click.echo(f"{self.label}: {done}/{total}", err=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
