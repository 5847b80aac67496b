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
import types
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, overload

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from bastion.core.errors import OperationError

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
_MAX_INT = 2**63 - 1
"""Integer arguments beyond a 64-bit integer are refused: no tool means them, and numbers of
thousands of digits cannot even be written back in an error message."""


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

    _schema: dict[str, Any] = field(init=False, repr=False, compare=False)
    _plain: _PlainArgs | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {_NAME.pattern}")
        object.__setattr__(self, "_schema", compact_schema(self.args))
        object.__setattr__(self, "_plain", _PlainArgs.of(self.args))

    def schema(self) -> dict[str, Any]:
        """The input model's JSON schema, compact (see :func:`compact_schema`); a copy."""
        return copy.deepcopy(self._schema)

    def parse(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validated arguments, or :class:`ToolArgumentError` with a one-line reason.

        Plain arguments (a ``dict`` of ASCII strings, ``int`` and ``bool`` values within
        their bounds) are checked without building the input model (see :class:`_PlainArgs`);
        anything else goes through the model, which gives the same values or the error."""
        plain = self._plain
        if plain is not None:
            values = plain.check(arguments)
            if values is not None:
                return values
        return self._validated(arguments)

    def _validated(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments as the input model validates them (any input)."""
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
            if isinstance(value, int) and not -_MAX_INT <= value <= _MAX_INT:
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

_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class _PlainField:
    """What an argument accepts without the model: a value of exactly ``kind`` (``str``,
    ``int`` or ``bool``) within the bounds, or ``None`` when ``optional``. ``kind`` is
    ``None`` for an argument of another type: only its absence is handled here."""

    name: str
    kind: type | None
    required: bool
    default: Any
    optional: bool = False
    low: int = -_MAX_INT
    high: int = _MAX_INT
    min_length: int = 0
    max_length: int | None = None
    choices: frozenset[str] | None = None


class _PlainArgs:
    """The input model's checks for plain values, without building the model (about ten
    times faster than ``model_validate`` for a few arguments).

    :meth:`check` answers only when the outcome is certain: every value is exactly a
    ``str`` (ASCII, so no lone surrogate and one character per code point), an ``int`` (not a
    ``bool``) or a ``bool`` that the model would take unchanged, every required argument is
    there and no unknown one; the absent ones take their defaults, as the model gives them
    (defaults are not validated). Anything else (a string of digits for an integer, a value
    out of bounds, a float, a non-ASCII string) returns ``None``, and the model decides:
    the values or the error are then the model's own. Made only for a model with
    ``extra="forbid"``, no validators and arguments whose defaults are plain constants."""

    def __init__(self, fields: tuple[_PlainField, ...]) -> None:
        self.fields = fields
        self.names = frozenset(f.name for f in fields)

    @classmethod
    def of(cls, model: type[BaseModel]) -> _PlainArgs | None:
        """The plain checks of ``model``, or ``None`` when it has anything they do not
        cover (a configuration or a validator of its own, a default made by a factory)."""
        decorators = model.__pydantic_decorators__
        if dict(model.model_config) != {"extra": "forbid"} or any(
            (
                decorators.validators,
                decorators.field_validators,
                decorators.root_validators,
                decorators.model_validators,
            )
        ):
            return None
        fields = []
        for name, info in model.model_fields.items():
            plain = _plain_field(name, info)
            if plain is None:
                return None
            fields.append(plain)
        return cls(tuple(fields))

    def check(self, arguments: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The validated values of plain ``arguments``, or ``None`` (let the model decide)."""
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict or not arguments.keys() <= self.names:
            return None
        values: dict[str, Any] = {}
        for f in self.fields:
            value = arguments.get(f.name, _ABSENT)
            if value is _ABSENT:
                if f.required:
                    return None
                value = f.default
            elif value is None:
                if not f.optional:
                    return None
            elif (kind := type(value)) is not f.kind:
                return None
            elif kind is str:
                if not value.isascii() or len(value) < f.min_length:
                    return None
                if f.max_length is not None and len(value) > f.max_length:
                    return None
                if f.choices is not None and value not in f.choices:
                    return None
            elif kind is int and not f.low <= value <= f.high:
                return None
            values[f.name] = value
        return values


def _plain_field(name: str, info: FieldInfo) -> _PlainField | None:
    """How ``info`` is checked for plain values; ``None`` when its default is not a
    plain constant (then the model always decides)."""
    default = info.default
    required = info.is_required()
    if info.default_factory is not None or not (
        required or default is None or type(default) in (str, int, bool)
    ):
        return None
    absent_only = _PlainField(name, None, required, default)
    annotation: Any = info.annotation
    optional = False
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) != 1 or len(members) == len(get_args(annotation)):
            return absent_only
        annotation, optional = members[0], True
    choices: frozenset[str] | None = None
    if get_origin(annotation) is Literal:
        values = get_args(annotation)
        if not all(type(v) is str for v in values):
            return absent_only
        annotation, choices = str, frozenset(values)
    if annotation not in (str, int, bool):
        return absent_only
    bounds: dict[str, Any] = {}
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge) and annotation is int and type(meta.ge) is int:
            bounds["low"] = max(meta.ge, -_MAX_INT)
        elif isinstance(meta, annotated_types.Le) and annotation is int and type(meta.le) is int:
            bounds["high"] = min(meta.le, _MAX_INT)
        elif isinstance(meta, annotated_types.MinLen) and annotation is str:
            bounds["min_length"] = meta.min_length
        elif isinstance(meta, annotated_types.MaxLen) and annotation is str:
            bounds["max_length"] = meta.max_length
        else:  # a bound or a validator the plain checks do not know
            return absent_only
    return _PlainField(
        name, annotation, required, default, optional=optional, choices=choices, **bounds
    )


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
) -> Tool | Callable[[ToolFn], Tool]:
    """Make a :class:`Tool` of an async function ``fn(session, **arguments)``.

    The description is the docstring's first paragraph; each argument's type and ``Field``
    (description, bounds, default) become its schema. ``paths`` defaults to the arguments
    named ``path``, ``src`` and ``dst``.
    """

    def build(func: ToolFn) -> Tool:
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"tool {func.__name__} must be an async function")
        hints = get_type_hints(func, include_extras=True)
        params = list(inspect.signature(func).parameters.values())[1:]
        fields: dict[str, Any] = {}
        for param in params:
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[param.name] = (hints[param.name], default)
        model = create_model(f"{_camel(name or func.__name__)}Args", __config__=_CONFIG, **fields)
        names = [p.name for p in params]
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
        )

    return build(fn) if fn is not None else build


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
