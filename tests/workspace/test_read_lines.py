"""``Workspace.read_lines``: the lines ``read_text`` gives, the file's info from the same read,
whether more follow; one operation, one audit record. And the read that takes labels known
for the open file's version still sees every relabelling."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import (
    Labels,
    LocalStore,
    MemoryAuditSink,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Workspace,
)
from bastion.core.errors import IsADirectoryError_, LimitError
from bastion.core.policy import FileLimits

PAGE = 64 * 1024


def _split(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _ws(store: object | None = None, **policy: object) -> Workspace:
    return Workspace(
        [Mount.of("/m", store or MemoryStore())],
        policy=Policy.allow_all(**policy),  # type: ignore[arg-type]
        audit=MemoryAuditSink(),
    )


TEXTS = [
    "",
    "one",
    "one\n",
    "one\ntwo\n\nfour",
    "a\r\nb\r\n",
    "é\n" * 40_000,  # two-byte characters across the 64 KiB page boundary
    ("x" * 100 + "\n") * 1500,  # several pages, lines across the boundary
    "\n" * (PAGE + 10),
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
@pytest.mark.parametrize(
    ("offset", "limit"),
    [(0, None), (0, 1), (1, 2), (3, 0), (650, 700), (0, 10**6), (39_999, 5), (10**6, 3)],
)
async def test_the_page_is_the_slice_of_the_lines(
    text: str, offset: int, limit: int | None
) -> None:
    ws = _ws()
    await ws.write("/m/f.txt", text)
    lines = _split(text)
    stop = None if limit is None else offset + limit
    page = await ws.read_lines("/m/f.txt", offset=offset, limit=limit)
    assert page.text == "".join(lines[offset:stop])
    assert page.more == (stop is not None and len(lines) > stop)
    assert page.text == await ws.read_text("/m/f.txt", offset=offset, limit=limit)
    assert page.info.version == (await ws.stat("/m/f.txt")).version
    assert str(page.info.path) == "/m/f.txt"
    # the rows: kept by the read that found the lines (one chunk or several), or split after
    assert page.rows == tuple(line.removesuffix("\n") for line in lines[offset:stop])


@pytest.mark.parametrize("size", [PAGE - 1, PAGE, PAGE + 1])
@pytest.mark.parametrize("cap", [10 * PAGE, 2 * PAGE])
async def test_one_chunk_or_several_the_same_page(size: int, cap: int) -> None:
    """A file read whole in its first chunk (its lines found in one split when it is surely
    within the read limit) gives the pages the chunked read gives, at the chunk's edge."""
    ws = _ws(limits=FileLimits(max_file_bytes=cap))
    text = ("ab\n" * size)[: size - 1] + "c"
    await ws.write("/m/f.txt", text)
    lines = _split(text)
    n = len(lines)
    for offset, limit in [(0, None), (0, n), (0, n - 1), (n - 1, 1), (n, 1), (n // 2, None)]:
        stop = None if limit is None else offset + limit
        page = await ws.read_lines("/m/f.txt", offset=offset, limit=limit)
        assert (page.text, page.more) == (
            "".join(lines[offset:stop]),
            stop is not None and n > stop,
        )
        assert page.rows == tuple(line.removesuffix("\n") for line in lines[offset:stop])


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=300)
    | st.text(alphabet="ab\n\r\u00e9\ufffd", max_size=300).map(str.encode),
    offset=st.integers(0, 40),
    limit=st.none() | st.integers(0, 40),
    encoding=st.sampled_from(["utf-8", "latin-1", "utf-16-le"]),
)
async def test_any_bytes_read_as_the_decoded_lines(
    data: bytes, offset: int, limit: int | None, encoding: str
) -> None:
    ws = _ws()
    await ws.write("/m/f.bin", data)
    lines = _split(data.decode(encoding, "replace"))
    stop = None if limit is None else offset + limit
    page = await ws.read_lines("/m/f.bin", offset=offset, limit=limit, encoding=encoding)
    assert page.text == "".join(lines[offset:stop])
    assert page.more == (stop is not None and len(lines) > stop)


async def test_one_operation_one_audit_record_and_the_read_limit() -> None:
    store = MemoryStore()
    ws = _ws(store, limits=FileLimits(max_file_bytes=1000))
    await _ws(store).write("/m/f.txt", "short\n" + "y" * 1500 + "\n" + "z\n" * 600)
    audit = ws.audit
    assert isinstance(audit, MemoryAuditSink)
    before = len(audit.records)
    page = await ws.read_lines("/m/f.txt", limit=1)
    assert (page.text, page.more) == ("short\n", True)
    assert [r.operation for r in audit.records[before:]] == ["read"]
    with pytest.raises(LimitError, match="ask for fewer lines"):
        await ws.read_lines("/m/f.txt", offset=1, limit=1)
    with pytest.raises(LimitError, match="ask for fewer lines"):
        await ws.read_lines("/m/f.txt", offset=2)
    await _ws(store).write("/m/g.txt", "short\n" + "y" * 1500)
    with pytest.raises(LimitError, match="single line is longer"):
        await ws.read_lines("/m/g.txt", offset=1)
    assert len((await ws.read_lines("/m/f.txt", offset=2, limit=400)).text) == 800
    with pytest.raises(IsADirectoryError_):
        await ws.read_lines("/m")
    with pytest.raises(ValueError):
        await ws.read_lines("/m/f.txt", limit=-1)
    assert (await ws.read_lines("/m/f.txt", offset=-1)).from_end == -1  # from the end


READER = Principal.of("reader", clearance="internal")


@pytest.mark.parametrize("local", [False, True])
async def test_labels_known_for_a_version_never_outlive_it(tmp_path, local: bool) -> None:
    store = LocalStore(tmp_path) if local else MemoryStore()
    owner = Workspace(
        [Mount.of("/m", store, labels=Labels(classification="internal"))],
        policy=Policy.allow_all(),
        principal=Principal.of("admin", clearance="restricted"),
    )
    reader = owner.with_principal(READER)
    await owner.write("/m/a.md", "# A\n")
    for _ in range(2):  # the second read takes the labels known for this version
        assert await reader.read_bytes("/m/a.md") == b"# A\n"
    await owner.write("/m/a.md.labels.yaml", "classification: confidential\n")
    with pytest.raises(NotFoundError):
        await reader.read_bytes("/m/a.md")
    await owner.delete("/m/a.md.labels.yaml")
    assert (await reader.read_lines("/m/a.md")).text == "# A\n"
    await owner.write("/m/a.md", "---\nclassification: confidential\n---\n# A\n")
    for read in (reader.read_bytes, reader.read_text, reader.read_lines):
        with pytest.raises(NotFoundError):
            await read("/m/a.md")
