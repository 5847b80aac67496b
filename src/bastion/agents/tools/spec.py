"""The tool definition record: one typed async function, its docstring and its signature.

A tool is written once, as a function whose first parameter is the :class:`ToolSession` and
whose other parameters are the tool's arguments, each ``Annotated`` with a pydantic ``Field``
that carries its description and bounds. :func:`tool` turns the function into a :class:`Tool`:
the first paragraph of the docstring is the description, the signature becomes a pydantic
input model, and the model's JSON schema (made compact) is what every adapter (MCP, OpenAI,
LangChain, Pydantic AI) hands to the model. Adapters only convert; they never re-describe.

Adding a tool is one function and one registration::

    @tool(needs={Capability.READ})
    async def word_count(s: ToolSession, path: Path) -> Output:
        \"\"\"Count the words of a text file.\"\"\"
        text = await s.workspace.read_text(path)
        return ok(path=path, words=len(text.split()))

    toolset = Toolset(ws, extra=[word_count])
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from bastion.agents.tools.plainargs import MAX_INT, PlainArgs
from bastion.core.errors import OperationError
from bastion.workspace.operations import DECLARED, operation

__all__ = [
    "Capability",
    "Output",
    "Tool",
    "ToolArgumentError",
    "compact_schema",
    "tool",
]

Output = dict[str, Any]
"""A tool's result: flat, ``success`` first, data fields at the top level."""

ToolFn = Callable[..., Awaitable[Output]]

_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9_-]{0,63}$")
_MAX_ARGUMENT_ERROR = 300


class Capability(StrEnum):
    """What a principal can do somewhere in a workspace; a tool exists only when the
    capabilities it needs are all there."""

    READ = "read"
    WRITE = "write"
    DELETE = "delete"
    LIST = "list"
    SEARCH = "search"
    """Search is allowed and the workspace keeps an index."""
    ASK = "ask"
    """Search, plus a workspace that answers questions (``Workspace.ask``)."""
    EXECUTE = "execute"
    """Run commands in the sandbox (``Workspace.run``): the policy grants ``execute``."""


class ToolArgumentError(OperationError):
    """The arguments of a tool call do not fit the tool's input schema."""


@dataclass(frozen=True, kw_only=True)
class Tool:
    """One tool: what a model sees (name, description, schema) and what runs (``fn``)."""

    name: str
    description: str
    args: type[BaseModel]
    """The input model; its compact JSON schema is the tool's parameters."""
    fn: ToolFn
    """``async fn(session, **arguments) -> Output``."""
    needs: frozenset[Capability] = frozenset()
    """Capabilities that must all be present for the tool to exist."""
    same_mount: bool = True
    """The needs must all hold on one mount (``edit_file`` reads and writes one file);
    ``False`` lets them be spread over mounts (``copy`` reads here and writes there)."""
    choices: Mapping[str, Mapping[str, frozenset[Capability]]] = field(default_factory=dict)
    """For an enumerated argument (``operation``), the capabilities each value needs; values
    that cannot be served are dropped from the schema, and a tool left with none is dropped."""
    changes: bool = False
    """True when the tool creates, changes or deletes files (approval path rules, MCP hints)."""
    paths: tuple[str, ...] = ()
    """Names of the arguments that hold workspace paths (approval, locks)."""
    trees: bool = False
    """True when the call can touch a whole tree: when the first path it names is a
    directory, everything under each named path counts for approval (a recursive delete,
    a move or copy of a directory)."""
    command: str | None = None
    """Name of the argument that holds a command to run (approval command rules)."""
    derived: Mapping[str, str] = field(default_factory=dict)
    """Arguments taken from a declared operation (``bastion.workspace.operations``): argument
    name -> ``"operation.parameter"``; their type, bounds and default are the declared ones
    (the description may be the tool's own)."""
    presets: frozenset[str] = frozenset()
    """Derived arguments whose default the tool sets itself (``list_files`` shows two levels
    of a tree by default); their bounds stay the declared ones."""

    _schema: dict[str, Any] = field(init=False, repr=False, compare=False)
    _plain: PlainArgs | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME.pattern}")
        object.__setattr__(self, "_schema", compact_schema(self.args))
        object.__setattr__(self, "_plain", PlainArgs.of(self.args))

    def schema(self) -> dict[str, Any]:
        """The input model's JSON schema, compact (see :func:`compact_schema`); a copy."""
        return copy.deepcopy(self._schema)

    def parse(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated arguments, or :class:`ToolArgumentError` with a one-line reason.

        Plain arguments (a ``dict`` of ASCII strings, ``int`` and ``bool`` values within
        their bounds) are checked without building the input model (see :class:`PlainArgs`);
        anything else goes through the model, which gives the same values or the error."""
        plain = self._plain
        if plain is not None:
            values = plain.check(arguments)
            if values is not None:
                return values
        return self._validated(arguments)

    def _validated(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments as the input model validates them (any input)."""
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ToolArgumentError(
                f"invalid arguments for {self.name}: they must be an object of the tool's "
                "parameters; fix them and call again"
            )
        try:
            model = self.args.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            raise ToolArgumentError(_argument_error(self.name, exc)) from None
        except (ValueError, RecursionError):  # input no validator could read
            raise ToolArgumentError(
                f"invalid arguments for {self.name}: they could not be read; fix them and call "
                "again"
            ) from None
        values = {name: getattr(model, name) for name in type(model).model_fields}
        for name, value in values.items():
            if isinstance(value, int) and not -MAX_INT <= value <= MAX_INT:
                raise ToolArgumentError(
                    f"invalid arguments for {self.name}: {name}: the number is out of range; "
                    "fix it and call again"
                )
            texts = value if isinstance(value, list | tuple) else (value,)
            if any(isinstance(t, str) and not _is_text(t) for t in texts):
                raise ToolArgumentError(
                    f"invalid arguments for {self.name}: {name}: holds a lone surrogate "
                    "(half a UTF-16 pair, not text); send text and call again"
                )
        return values

    def restrict(self, argument: str, allowed: Iterable[str]) -> Tool:
        """A copy whose ``argument`` accepts only the values in ``allowed`` (in schema order);
        an optional argument keeps its default when still allowed, else takes the first."""
        kept = [c for c in self.choices.get(argument, {}) if c in set(allowed)]
        if not kept:
            raise ValueError(f"{self.name}: no value of {argument!r} is left")
        fields: dict[str, Any] = {}
        for name, info in self.args.model_fields.items():
            if name == argument:
                if info.is_required():
                    default: Any = ...
                else:
                    default = info.default if info.default in kept else kept[0]
                narrowed = Field(default, description=info.description)
                fields[name] = (Literal[tuple(kept)], narrowed)
            else:
                fields[name] = (info.annotation, info)
        model = create_model(self.args.__name__, __config__=_CONFIG, **fields)
        choices = {**self.choices, argument: {c: self.choices[argument][c] for c in kept}}
        return replace(self, args=model, choices=choices)


_CONFIG = ConfigDict(extra="forbid")


@overload
def tool(fn: ToolFn, /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    needs: Iterable[Capability] = (),
    same_mount: bool = True,
    choices: Mapping[str, Mapping[str, Iterable[Capability]]] | None = None,
    changes: bool = False,
    paths: Iterable[str] | None = None,
    trees: bool = False,
    command: str | None = None,
    operation: str | None = None,
    renames: Mapping[str, str] | None = None,
    derive: Mapping[str, str] | None = None,
    presets: Iterable[str] = (),
) -> Callable[[ToolFn], Tool]: ...


def tool(
    fn: ToolFn | None = None,
    /,
    *,
    name: str | None = None,
    needs: Iterable[Capability] = (),
    same_mount: bool = True,
    choices: Mapping[str, Mapping[str, Iterable[Capability]]] | None = None,
    changes: bool = False,
    paths: Iterable[str] | None = None,
    trees: bool = False,
    command: str | None = None,
    operation: str | None = None,
    renames: Mapping[str, str] | None = None,
    derive: Mapping[str, str] | None = None,
    presets: Iterable[str] = (),
) -> Tool | Callable[[ToolFn], Tool]:
    """Make a :class:`Tool` of an async function ``fn(session, **arguments)``.

    The description is the docstring's first paragraph; each argument's type and ``Field``
    (description, bounds, default) become its schema. ``paths`` defaults to the arguments
    named ``path``, ``src`` and ``dst``.

    Arguments of a declared operation are derived from it (:mod:`bastion.workspace.operations`):
    ``operation`` takes every argument whose name (or its ``renames`` entry) the operation
    declares; ``derive`` names others one by one (``{"k": "search.k"}``). A derived argument
    has the declared type, bounds and default (write ``DECLARED`` as its default, or the same
    value); a different default must be named in ``presets``, else the tool is refused.
    """

    def build(func: ToolFn) -> Tool:
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"tool {func.__name__} must be an async function")
        tool_name = name or func.__name__
        hints = get_type_hints(func, include_extras=True)
        params = list(inspect.signature(func).parameters.values())[1:]
        names = [p.name for p in params]
        sources = _sources(tool_name, names, operation, renames or {}, derive or {})
        preset = frozenset(presets)
        fields: dict[str, Any] = {}
        for param in params:
            default = ... if param.default is inspect.Parameter.empty else param.default
            source = sources.get(param.name)
            if source is None:
                fields[param.name] = (hints[param.name], default)
            else:
                fields[param.name] = _derived(
                    tool_name, param.name, source, hints[param.name], default, preset
                )
        model = create_model(f"{_camel(tool_name)}Args", __config__=_CONFIG, **fields)
        return Tool(
            name=name or func.__name__,
            description=_summary(func),
            args=model,
            fn=func,
            needs=frozenset(needs),
            same_mount=same_mount,
            choices={
                arg: {value: frozenset(caps) for value, caps in per.items()}
                for arg, per in (choices or {}).items()
            },
            changes=changes,
            paths=tuple(paths)
            if paths is not None
            else tuple(n for n in names if n in ("path", "src", "dst")),
            trees=trees,
            command=command,
            derived=sources,
            presets=preset,
        )

    return build(fn) if fn is not None else build


def _sources(
    tool_name: str,
    names: list[str],
    op_name: str | None,
    renames: Mapping[str, str],
    derive: Mapping[str, str],
) -> dict[str, str]:
    """Each derived argument's ``"operation.parameter"``."""
    found: dict[str, str] = {}
    if op_name is not None:
        declared = operation(op_name).fields
        for arg in names:
            if renames.get(arg, arg) in declared:
                found[arg] = f"{op_name}.{renames.get(arg, arg)}"
    for arg, where in derive.items():
        if arg not in names:
            raise TypeError(f"tool {tool_name}: derive names {arg!r}, which it does not take")
        found[arg] = where
    for where in found.values():
        op, _, param = where.partition(".")
        operation(op).field(param)  # KeyError naming what is not declared
    return found


def _derived(
    tool_name: str, arg: str, source: str, hint: Any, default: Any, presets: frozenset[str]
) -> tuple[Any, FieldInfo]:
    """The model field of a derived argument: the declared type and bounds, the tool's own
    description when it gives one, the declared default (or a named preset)."""
    op_name, _, param = source.partition(".")
    declared = operation(op_name).field(param)
    wanted = ... if declared.is_required() else declared.default
    if default is DECLARED:
        default = wanted
    elif default != wanted and arg not in presets:
        raise TypeError(
            f"tool {tool_name}: {arg} defaults to {default!r} but {source} declares "
            f"{'no default' if wanted is ... else repr(wanted)}; write DECLARED, or name it "
            "in presets"
        )
    about = _description(hint) or declared.description
    annotation: Any = declared.annotation
    if declared.metadata:
        annotation = Annotated[(annotation, *declared.metadata)]
    return annotation, Field(default, description=about)


def _description(hint: Any) -> str | None:
    if get_origin(hint) is not Annotated:
        return None
    for meta in reversed(get_args(hint)[1:]):
        if isinstance(meta, FieldInfo) and meta.description:
            return meta.description
    return None


def _is_text(value: str) -> bool:
    """False when ``value`` holds a lone surrogate (which no encoding can store)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _summary(func: Callable[..., Any]) -> str:
    doc = inspect.getdoc(func) or ""
    first = doc.split("\n\n", 1)[0]
    return " ".join(first.split())


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_-]", name))


def _argument_error(name: str, exc: ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown argument"
        elif error["type"] == "string_unicode":  # a bounded string is checked as UTF-8 first
            message = "holds a lone surrogate (half a UTF-16 pair, not text); send text"
        problems.append(f"{where}: {message}")
    text = f"invalid arguments for {name}: " + "; ".join(problems) + "; fix them and call again"
    text = " ".join(text.split())
    if len(text) > _MAX_ARGUMENT_ERROR:
        text = text[: _MAX_ARGUMENT_ERROR - 3] + "..."
    return text


# -- compact schemas ---------------------------------------------------------------------------


def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with what a model does not need taken out: titles, ``$defs``
    (inlined), and the ``anyOf [X, null]`` that pydantic writes for an optional argument
    (it becomes ``X``, not required). Every token here is paid on every request."""
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    return _compact(raw, defs)  # type: ignore[no-any-return]


def _compact(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_compact(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _compact(merged, defs)
    any_of = node.get("anyOf")
    if isinstance(any_of, list) and len(any_of) == 2 and {"type": "null"} in any_of:
        (inner,) = [s for s in any_of if s != {"type": "null"}]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if rest.get("default", 0) is None:
            rest.pop("default")
        return _compact({**inner, **rest}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":
            out[key] = {name: _compact(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _compact(value, defs)
    return out
