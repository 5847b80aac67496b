"""What a chunk adds to its document: its text less the part it repeats of the chunk before.

Consecutive chunks overlap (``ChunkingConfig.overlap``: the next chunk opens with the last
words of the one before), so the chunks of a document hold some of its words twice. Keyword
search scores a document from its chunks (:mod:`bastion.knowledge.index.bm25`), and counts
each word once only if each chunk contributes its *own* part: :func:`own_text`.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.knowledge.index.models import IndexedChunk, searchable_text

__all__ = ["overlap", "own_text", "own_texts"]

_PROBE = 12
"""Characters of the chunk's opening looked for in the previous chunk."""


def overlap(previous: str, text: str) -> int:
    """The length of the longest proper suffix of ``previous`` that ``text`` opens with and
    goes on from (0 when there is none at least 12 characters long: chance matches of a few
    characters do not count; a chunk that repeats the one before whole is not an overlap)."""
    head = text[:_PROBE]
    if len(head) < _PROBE:
        return 0
    at = previous.find(head, 1)
    while at >= 0:
        shared = len(previous) - at
        if shared < len(text) and text.startswith(previous[at:]):
            return shared
        at = previous.find(head, at + 1)
    return 0


def own_text(chunk: IndexedChunk, previous: IndexedChunk | None) -> str:
    """What keyword search indexes for ``chunk`` (:func:`searchable_text`: the heading path
    when the chunk does not open with it, then the text) without the opening it shares with
    ``previous``, the chunk before it in the same document (``None`` for the first)."""
    full = searchable_text(chunk)
    if previous is None:
        return full
    shared = overlap(previous.text, chunk.text)
    if not shared:
        return full
    return full[: len(full) - len(chunk.text)] + chunk.text[shared:]


def own_texts(chunks: Sequence[IndexedChunk]) -> list[str]:
    """:func:`own_text` of each chunk, the previous one taken from the same batch (a
    document's chunks are written together; the segments of a streamed document, written
    apart, do not overlap)."""
    batch = {(c.doc.doc_id, c.seq): c for c in chunks}
    return [own_text(c, batch.get((c.doc.doc_id, c.seq - 1))) for c in chunks]
