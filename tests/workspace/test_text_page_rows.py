"""``TextPage.rows``: the page's lines without their ``\\n``, the same whether the read split
them already (a small file read from its start) or they are split on demand."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import MemoryStore, Mount, Policy, Workspace
from bastion.workspace.files import TextPage, rows_of


def _by_newline(text: str) -> list[str]:
    out, start = [], 0
    while (end := text.find("\n", start)) >= 0:
        out.append(text[start : end + 1])
        start = end + 1
    if start < len(text):
        out.append(text[start:])
    return out


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab\n\r é", max_size=30),
    offset=st.integers(0, 5),
    limit=st.one_of(st.none(), st.integers(0, 6)),
)
def test_rows_are_the_lines_of_the_page(text: str, offset: int, limit: int | None) -> None:
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())

    async def read() -> tuple[TextPage, str]:
        await ws.write("/m/a.txt", text)
        page = await ws.read_lines("/m/a.txt", offset=offset, limit=limit)
        return page, await ws.read_text("/m/a.txt", offset=offset, limit=limit)

    page, same = asyncio.run(read())
    lines = _by_newline(text)
    wanted = lines[offset:] if limit is None else lines[offset : offset + limit]
    assert page.text == same == "".join(wanted)
    assert page.more == (len(lines) > offset + len(wanted))
    assert page.rows == tuple(line.removesuffix("\n") for line in wanted)
    assert page.rows == rows_of(page.text)


def test_a_whole_small_file_comes_split_once() -> None:
    ws = Workspace([Mount.of("/m", MemoryStore())], policy=Policy.allow_all())

    async def read(limit: int | None) -> TextPage:
        return await ws.read_lines("/m/a.txt", limit=limit)

    asyncio.run(ws.write("/m/a.txt", "one\ntwo\nthree\n"))
    for limit in (None, 3, 500):
        page = asyncio.run(read(limit))
        assert page.split == ("one", "two", "three") == page.rows
        assert not page.more
    short = asyncio.run(read(2))
    assert (short.text, short.more, short.rows) == ("one\ntwo\n", True, ("one", "two"))
    assert TextPage(short.info, short.text, short.more) == short  # the rows are not compared
    assert rows_of("") == () and rows_of("\n") == ("",) and rows_of("a\r\nb") == ("a\r", "b")
