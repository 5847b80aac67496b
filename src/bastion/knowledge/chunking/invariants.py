"""The guarantees of chunking as a checkable function, for tests, benchmarks and ingest checks."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from bastion.knowledge.chunking.model import Chunk
from bastion.knowledge.chunking.tokens import TokenCounter

__all__ = ["violations"]

_HEX = re.compile(r"[0-9a-f]{32}")


def violations(
    text: str,
    chunks: Sequence[Chunk],
    *,
    counter: TokenCounter,
    max_tokens: int,
    doc_id: str | None = None,
) -> list[str]:
    """What is wrong with ``chunks`` of ``text`` (empty when every guarantee holds): each chunk
    is an exact, trimmed slice with a true token count within the cap and a correct line range;
    chunks are in order with unique well-formed ids; together they cover every non-whitespace
    character."""
    problems: list[str] = []
    counts = counter.count_batch([c.text for c in chunks])
    line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
    for i, (chunk, count) in enumerate(zip(chunks, counts, strict=True)):
        where = f"chunk {i}"
        if chunk.seq != i:
            problems.append(f"{where}: seq {chunk.seq}")
        if doc_id is not None and chunk.doc_id != doc_id:
            problems.append(f"{where}: doc_id {chunk.doc_id!r}")
        if not _HEX.fullmatch(chunk.chunk_id):
            problems.append(f"{where}: id {chunk.chunk_id!r} is not 32 hex digits")
        if text[chunk.char_start : chunk.char_end] != chunk.text:
            problems.append(f"{where}: text is not text[{chunk.char_start}:{chunk.char_end}]")
        if not chunk.text or chunk.text != chunk.text.strip():
            problems.append(f"{where}: empty or untrimmed text")
        if count != chunk.token_count:
            problems.append(f"{where}: token_count {chunk.token_count}, tokenizer says {count}")
        if count > max_tokens:
            problems.append(f"{where}: {count} tokens over the cap of {max_tokens}")
        first = bisect.bisect_right(line_starts, chunk.char_start)
        last = bisect.bisect_right(line_starts, max(chunk.char_end - 1, chunk.char_start))
        if (chunk.start_line, chunk.end_line) != (first, last):
            problems.append(
                f"{where}: lines {chunk.start_line}-{chunk.end_line}, not {first}-{last}"
            )
        if i and not (
            chunks[i - 1].char_start < chunk.char_start and chunks[i - 1].char_end < chunk.char_end
        ):
            problems.append(f"{where}: out of order")
    if len({c.chunk_id for c in chunks}) != len(chunks):
        problems.append("chunk ids are not unique")
    covered_to = 0
    for chunk in chunks:
        gap = text[covered_to : chunk.char_start]
        if covered_to < chunk.char_start and gap.strip():
            problems.append(f"characters {covered_to}..{chunk.char_start} are in no chunk")
        covered_to = max(covered_to, chunk.char_end)
    if text[covered_to:].strip():
        problems.append(f"characters from {covered_to} on are in no chunk")
    return problems
