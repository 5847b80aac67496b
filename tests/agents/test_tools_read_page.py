"""The read tools' numbered page is the plain ``cat -n`` of the lines, whichever short cut makes
it: the same text byte for byte as numbering each line, cutting and fitting one by one."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.agents.tools import OutputLimits, ToolSession, Toolset
from bastion.agents.tools.granular import _cut, _may_be_longer, _numbered
from bastion.agents.tools.session import split_lines


def _reference(rows: list[str], offset: int, more: bool, limits: OutputLimits) -> dict[str, object]:
    """Each line on its own: ``\\r`` ends dropped, long lines cut, numbered, and as many as
    fit in the cap (at least one)."""
    numbered = [
        f"{offset + 1 + i:>6}\t{_cut(row.rstrip(chr(13)), limits.max_line_chars)}"
        for i, row in enumerate(rows)
    ]
    shown, size = 0, 0
    for i, line in enumerate(numbered):
        if i and size + len(line) + 1 > limits.max_chars:
            break
        size += len(line) + 1
        shown += 1
    content = "\n".join(numbered[:shown])
    if shown < len(rows) or more:
        resume = offset + shown
        return {
            "content": f"{content}\n[... more lines: call again with offset={resume}]",
            "next_offset": resume,
        }
    return {"content": content}


def _session(limits: OutputLimits) -> ToolSession:
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
    return ToolSession(ws, limits=limits)


_LINE = st.one_of(
    st.text(alphabet="x\r é\t", max_size=12),
    st.integers(0, 300).map(lambda n: "y" * n),
    st.integers(0, 300).map(lambda n: "z" * n + "\r"),
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(_LINE, min_size=1, max_size=40),
    offset=st.sampled_from([0, 1, 7, 9_960, 9_998, 9_999, 10_000, 999_990, 999_999]),
    more=st.booleans(),
    max_chars=st.sampled_from([20, 200, 2_000, 20_000]),
    width=st.sampled_from([5, 100, 127, 128, 200, 2_000]),
)
def test_the_numbered_page_is_each_line_numbered(
    rows: list[str], offset: int, more: bool, max_chars: int, width: int
) -> None:
    limits = OutputLimits(max_chars=max_chars, max_line_chars=width)
    s = _session(limits)
    expected = _reference(rows, offset, more, limits)
    assert _numbered(list(rows), offset, more, s) == expected
    assert _numbered(list(rows), offset, more, s, "\n".join(rows)) == expected
    assert _numbered(list(rows), offset, more, s, "\n".join(rows) + "\n") == expected


def test_an_empty_page_has_no_lines() -> None:
    s = _session(OutputLimits())
    assert _numbered([], 0, False, s, "") == {"content": ""}
    assert _numbered([""], 0, False, s, "") == {"content": "     1\t"}


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 700), min_size=1, max_size=30),
    width=st.sampled_from([127, 128, 200, 255, 512]),
)
def test_a_long_line_is_never_missed(lengths: list[int], width: int) -> None:
    body = "\n".join("w" * n for n in lengths)
    if max(lengths) > width:
        assert _may_be_longer(body, width)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet="ab\n\r é", max_size=40),
    offset=st.integers(0, 6),
    limit=st.one_of(st.none(), st.integers(1, 4)),
)
def test_the_read_tool_numbers_the_lines_of_the_file(
    text: str, offset: int, limit: int | None
) -> None:
    """Through the whole tool: the rows are the file's lines (a last ``\\n`` ends the last
    line; an empty file has none), numbered from ``offset + 1``."""
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())
    tools = Toolset(ws, limits=OutputLimits(max_chars=60))
    asyncio.run(ws.write("/m/a.txt", text))
    out = asyncio.run(
        tools.call("read_file", {"path": "/m/a.txt", "offset": offset, "limit": limit})
    )
    lines = split_lines(text)
    page = lines[offset : offset + (limit or 500)]
    rows = [line[:-1] if line.endswith("\n") else line for line in page]
    if not rows and offset > 0:
        assert out == {
            "success": False,
            "error": f"/m/a.txt: offset {offset} is past the end of the file; read from offset 0",
        }
        return
    more = len(lines) > offset + len(page)
    assert out == {
        "success": True,
        "path": "/m/a.txt",
        **_reference(rows, offset, more, tools.session.limits),
    }
