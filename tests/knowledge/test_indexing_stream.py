"""Knowledge.index_files: ordinary files in one pass, a large document a segment at a time,
with a progress report after every index write and file line numbers kept."""

from __future__ import annotations

import asyncio

from bastion.knowledge.chunking import Chunker, ChunkingConfig, WhitespaceTokenCounter
from bastion.knowledge.engine import FileToIndex, IndexProgress, Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.knowledge.ingest import stable_doc_id


def _knowledge(stream_chars: int = 1_000) -> Knowledge:
    chunker = Chunker(ChunkingConfig(max_tokens=64), WhitespaceTokenCounter())
    return Knowledge(MemoryIndex(), chunker=chunker, stream_chars=stream_chars)


def _large(paragraphs: int) -> str:
    return "".join(
        f"Paragraph {n} speaks of harbor number w{n}x and of ships.\n\n" for n in range(paragraphs)
    )


def test_a_large_document_is_indexed_a_segment_at_a_time() -> None:
    kb = _knowledge()
    text = _large(12_000)  # about 700,000 characters: three segments
    told: list[IndexProgress] = []
    [count] = asyncio.run(
        kb.index_files([FileToIndex("/docs/big.txt", text.encode())], progress=told.append)
    )
    expected = [
        c
        for part in kb.chunker.chunk_stream(text.rstrip("\n"), stable_doc_id("/docs/big.txt"))
        for c in part
    ]
    stored = kb.index.chunks_of(stable_doc_id("/docs/big.txt"))
    assert count == len(stored) == len(expected)
    assert [c.chunk_id for c in stored] == [c.chunk_id for c in expected]
    assert len(told) >= 4  # one per segment, then the end
    assert all(p.path == "/docs/big.txt" for p in told)
    assert [p.chunks for p in told] == sorted(p.chunks for p in told)
    assert [p.done for p in told] == sorted(p.done for p in told)
    assert told[-1].finished and told[-1].chunks == count
    assert not told[0].finished
    lines = text.split("\n")
    for word in ("w0x", "w6000x", "w11999x"):
        [hit] = kb.index.search_keyword(word, 1)
        assert word in hit.chunk.text
        number = int(word[1:-1])
        assert hit.chunk.start_line <= 2 * number + 1 <= hit.chunk.end_line
        assert word in "\n".join(lines[hit.chunk.start_line - 1 : hit.chunk.end_line])


def test_ordinary_files_are_told_once_each_and_a_rewrite_replaces_a_large_one() -> None:
    kb = _knowledge()
    told: list[IndexProgress] = []
    files = [
        FileToIndex("/docs/a.md", b"# A\n\nalpha text\n"),
        FileToIndex("/docs/b.md", b"# B\n\nbeta text\n"),
        FileToIndex("/docs/big.txt", _large(600).encode()),
    ]
    results = asyncio.run(kb.index_files(files, progress=told.append))
    assert results[:2] == [1, 1] and isinstance(results[2], int) and results[2] > 1
    assert [p.path for p in told if p.finished][:2] == ["/docs/a.md", "/docs/b.md"]
    assert all(p.finished for p in told[:2])
    big = stable_doc_id("/docs/big.txt")
    asyncio.run(kb.index_files([FileToIndex("/docs/big.txt", b"now small: gamma\n")]))
    assert [c.text for c in kb.index.chunks_of(big)] == ["now small: gamma"]
    assert not kb.index.search_keyword("harbor", 5)
    asyncio.run(kb.index_files([FileToIndex("/docs/big.txt", _large(600).encode())]))
    assert len(kb.index.chunks_of(big)) == results[2]
    assert not kb.index.search_keyword("gamma", 5)


def test_file_lines_survive_front_matter_and_cleaning() -> None:
    """Hits give lines of the file, not of the cleaned text, streamed or not."""
    body = "".join(f"Line {n}  with   spaces w{n}x.\n\n\n" for n in range(400))
    data = f"---\ntitle: Lines\n---\n{body}".encode()
    for stream_chars in (1_000, 10**9):
        kb = _knowledge(stream_chars)
        asyncio.run(kb.index_files([FileToIndex("/docs/lines.md", data)]))
        source = data.decode().split("\n")
        for n in (0, 199, 399):
            [hit] = kb.index.search_keyword(f"w{n}x", 1)
            file_line = 4 + 3 * n  # three lines of front matter, then three lines per entry
            assert f"w{n}x" in source[file_line - 1]
            assert hit.chunk.start_line <= file_line <= hit.chunk.end_line
