"""Plain tool arguments checked without the input model give exactly what the model gives,
and anything the plain checks are not sure of is left to the model (its values, its error)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pydantic import Field, field_validator

from bastion.agents.tools import (
    EXECUTE_TOOLS,
    GRANULAR_TOOLS,
    INTENT_TOOLS,
    Output,
    Tool,
    ToolArgumentError,
    ToolSession,
    ok,
    tool,
)

TOOLS: tuple[Tool, ...] = (*GRANULAR_TOOLS, *INTENT_TOOLS, *EXECUTE_TOOLS)
NAMES = sorted({name for t in TOOLS for name in t.args.model_fields} | {"unknown"})

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=5_002),
    st.sampled_from([2**63 - 1, 2**63, -(2**63) + 1, -(2**63), 10**30]),
    st.text(max_size=8),
    st.text(alphabet="\ud800\udc00é€a/.", max_size=4),
    st.sampled_from(["", "/", "/docs/a.md", "5", "read", "bm25", "list", "stdout", "hybrid"]),
    st.floats(allow_nan=False, max_value=10, min_value=-10),
    st.lists(st.text(max_size=3), max_size=2),
)


def _outcome(t: Tool, arguments: Any) -> tuple[str, Any]:
    try:
        return "ok", t._validated(arguments)
    except ToolArgumentError as exc:
        return "error", str(exc)


def _fitting(t: Tool, name: str) -> st.SearchStrategy[Any]:
    """Values of the argument's own kind, near its bounds (most of them plain)."""
    plain = t._plain
    f = next((f for f in plain.fields if f.name == name), None) if plain else None
    if f is None or f.kind is None:
        return _VALUES
    if f.kind is bool:
        return st.booleans()
    if f.kind is int:
        low, high = max(f.low, -(2**64)), min(f.high, 2**64)
        return st.sampled_from([low - 1, low, low + 1, high - 1, high, high + 1, 0, 1])
    choices = sorted(f.choices or []) or ["", "/", "/docs/a.md", "a b"]
    return st.one_of(st.sampled_from([*choices, "other"]), st.text(alphabet="ab/ é", max_size=3))


@st.composite
def _calls(draw: st.DrawFn) -> tuple[Tool, dict[str, Any]]:
    """A tool and arguments mostly of its own names and kinds (sometimes not)."""
    t = draw(st.sampled_from(TOOLS))
    own = sorted(t.args.model_fields)
    arguments: dict[str, Any] = {}
    names = draw(st.lists(st.sampled_from(own), unique=True))
    if draw(st.integers(0, 3)) > 0:  # mostly with every required argument
        names += [n for n, info in t.args.model_fields.items() if info.is_required()]
    for name in dict.fromkeys(names):
        fits = draw(st.integers(0, 4)) > 0
        arguments[name] = draw(_fitting(t, name) if fits else _VALUES)
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(st.sampled_from(NAMES))] = draw(_VALUES)
    return t, arguments


@settings(max_examples=600, deadline=None)
@given(_calls())
def test_plain_checks_agree_with_the_model(call: tuple[Tool, dict[str, Any]]) -> None:
    t, arguments = call
    plain = t._plain
    fast = plain.check(arguments) if plain is not None else None
    by_model = _outcome(t, arguments)
    event("plain" if fast is not None else "model")
    if fast is not None:
        assert by_model[0] == "ok", (arguments, by_model)
        assert list(fast.items()) == list(by_model[1].items())
        assert [type(v) for v in fast.values()] == [type(v) for v in by_model[1].values()]
    # Whichever path answers, parse gives the model's values or the model's error.
    try:
        assert ("ok", t.parse(arguments)) == by_model
    except ToolArgumentError as exc:
        assert ("error", str(exc)) == by_model


def test_the_read_tool_takes_plain_arguments_without_the_model() -> None:
    read_file = next(t for t in GRANULAR_TOOLS if t.name == "read_file")
    assert read_file._plain is not None
    assert read_file._plain.check({"path": "/docs/a.md"}) == {
        "path": "/docs/a.md",
        "offset": 0,
        "limit": None,
    }
    assert read_file._plain.check({"path": "/a", "offset": 3, "limit": 5000}) == {
        "path": "/a",
        "offset": 3,
        "limit": 5000,
    }
    for unsure in (
        {"path": "/a", "limit": 5001},  # out of bounds: the model's error
        {"path": "/a", "offset": True},  # a bool for an int: the model's conversion
        {"path": "/a", "offset": "3"},
        {"path": "/ä"},  # non-ASCII: the model and the surrogate check
        {"path": "/a", "other": 1},
        {"offset": 1},
        [("path", "/a")],
    ):
        assert read_file._plain.check(unsure) is None  # type: ignore[arg-type]
    assert read_file.parse({"path": "/a", "offset": True})["offset"] == 1
    with pytest.raises(ToolArgumentError, match=r"limit: Input should be less than or equal"):
        read_file.parse({"path": "/a", "limit": 5001})
    with pytest.raises(ToolArgumentError, match="lone surrogate"):
        read_file.parse({"path": "/\ud800"})


def test_a_model_with_checks_of_its_own_always_goes_through_the_model() -> None:
    @tool
    async def when(s: ToolSession, at: datetime | None = None, n: int = 1) -> Output:
        """A tool with an argument the plain checks do not know."""
        return ok(at=at, n=n)

    assert when._plain is not None
    assert when._plain.check({"n": 2}) == {"at": None, "n": 2}
    assert when._plain.check({"at": "2026-11-26T00:00:00Z"}) is None
    assert when.parse({"at": "2026-11-26T00:00:00Z"})["at"] == datetime.fromisoformat(
        "2026-11-26T00:00:00+00:00"
    )

    from pydantic import BaseModel, ConfigDict

    class Stripped(BaseModel):
        model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
        name: str

    class Checked(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: Annotated[str, Field(pattern="^a")]

        @field_validator("name")
        @classmethod
        def _lower(cls, value: str) -> str:
            return value.lower()

    async def run(s: ToolSession, **arguments: Any) -> Output:
        return ok(**arguments)

    for model, given_name, parsed in ((Stripped, " x ", "x"), (Checked, "aBC", "abc")):
        custom = Tool(name="custom", description="d", args=model, fn=run)
        assert custom._plain is None
        assert custom.parse({"name": given_name}) == {"name": parsed}
