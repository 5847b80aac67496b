"""The chunker: text in, :class:`Chunk` records out, under a token cap, with stable ids."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from bastion.core.errors import ConfigurationError
from bastion.core.text import TokenCounter, Tokens
from bastion.knowledge.chunking.model import Chunk, ChunkingConfig, HeadingLike, Strategy
from bastion.knowledge.chunking.packing import pack, refine
from bastion.knowledge.chunking.segments import SEGMENT_CHARS, segment_bounds, tokenize
from bastion.knowledge.chunking.structure import (
    HEADING_RANK,
    SENTENCE_RANK,
    Context,
    Kind,
    Layout,
    analyze,
    rank_table,
)
from bastion.knowledge.chunking.tokens import minilm_token_counter

__all__ = ["Chunker", "chunk_id", "chunk_text", "token_spans"]

SECTION_SEPARATOR = " > "
BATCH_SIZE = 256


def chunk_id(doc_id: str, seq: int, char_start: int, char_end: int, text: str) -> str:
    """The stable id of a chunk: 32 hex digits of BLAKE2b over its identity and text."""
    # each part followed by a NUL, hashed in one call (the same bytes as one update per part)
    identity = f"{doc_id}\x00{seq}\x00{char_start}:{char_end}\x00{text}\x00"
    return hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class _Span:
    """A chunk before it becomes a record: characters ``start..end``, own content from ``own``."""

    start: int
    own: int
    end: int
    tokens: int
    """Content tokens, or -1 when a cut fell inside a word and the text must be recounted."""


class Chunker:
    """Chunks documents with one configuration and one token counter.

    >>> from bastion.knowledge.chunking import WhitespaceTokenCounter
    >>> chunker = Chunker(ChunkingConfig(max_tokens=8), WhitespaceTokenCounter())
    >>> [c.text for c in chunker.chunk("# A\\n\\none two three.", "doc")]
    ['# A\\n\\none two three.']
    """

    def __init__(
        self, config: ChunkingConfig | None = None, counter: TokenCounter | None = None
    ) -> None:
        self.config = config or ChunkingConfig()
        self.counter = counter if counter is not None else minilm_token_counter()
        self._budget = self.config.max_tokens - self.counter.special_tokens
        if self._budget < 1:
            raise ConfigurationError(
                f"max_tokens={self.config.max_tokens} leaves no room for text: the model adds "
                f"{self.counter.special_tokens} special tokens"
            )
        self._min = max(0, self.config.min_size - self.counter.special_tokens)
        self._overlap = min(round(self.config.overlap * self._budget), self._budget - 1)

    def chunk(
        self, text: str, doc_id: str, *, headings: Sequence[HeadingLike] | None = None
    ) -> list[Chunk]:
        """The chunks of one document, in order. ``headings`` (from a parser) replaces the
        detection of Markdown ``#`` headings."""
        return self.chunk_many([text], [doc_id], [headings])[0]

    def chunk_many(
        self,
        texts: Sequence[str],
        doc_ids: Sequence[str],
        headings: Sequence[Sequence[HeadingLike] | None] | None = None,
    ) -> list[list[Chunk]]:
        """The chunks of many documents, tokenized in batches (much faster than one by one)."""
        if len(texts) != len(doc_ids) or (headings is not None and len(headings) != len(texts)):
            raise ConfigurationError("chunk_many needs one doc id (and heading list) per text")
        result: list[list[Chunk]] = []
        with ThreadPoolExecutor(1, thread_name_prefix="bastion-tokenize") as pool:
            for lo in range(0, len(texts), BATCH_SIZE):
                batch = texts[lo : lo + BATCH_SIZE]
                # the tokenizer (it leaves the GIL) runs while the layouts are worked out
                ahead = pool.submit(tokenize, self.counter, batch)
                layouts = [
                    analyze(text, headings[lo + offset] if headings is not None else None)
                    for offset, text in enumerate(batch)
                ]
                ids = doc_ids[lo : lo + BATCH_SIZE]
                result.extend(self._batch(batch, ids, layouts, ahead.result()))
        return result

    def _batch(
        self,
        batch: Sequence[str],
        doc_ids: Sequence[str],
        layouts: list[Layout],
        tokenized: list[Tokens],
    ) -> list[list[Chunk]]:
        spans = [
            (text, layout, self._spans(text, layout, tokens))
            for text, layout, tokens in zip(batch, layouts, tokenized, strict=True)
        ]
        return [
            self._records(text, doc_ids[offset], layout, doc_spans)
            for offset, (text, layout, doc_spans) in enumerate(self._verify(spans))
        ]

    def chunk_stream(
        self,
        text: str,
        doc_id: str,
        *,
        headings: Sequence[HeadingLike] | None = None,
        segment_chars: int = SEGMENT_CHARS,
    ) -> Iterator[list[Chunk]]:
        """The chunks of one long document, a segment at a time (``segments.segment_bounds``:
        at most ``segment_chars`` characters, cut at paragraph breaks). Heading paths and open
        code blocks carry from one segment to the next; positions, lines, sequence numbers and
        ids are the document's. Work and memory per step stay bounded whatever the size; a
        text of one segment gives exactly :meth:`chunk`'s chunks."""
        context: Context | None = None
        seq = line = 0
        bounds = segment_bounds(text, segment_chars)
        with ThreadPoolExecutor(1, thread_name_prefix="bastion-tokenize") as pool:
            # the next segment is tokenized (the tokenizer leaves the GIL) while this one is
            # analyzed and packed
            ahead = pool.submit(tokenize, self.counter, [text[bounds[0][0] : bounds[0][1]]])
            for n, (start, end) in enumerate(bounds):
                [tokens] = ahead.result()
                if n + 1 < len(bounds):
                    a, b = bounds[n + 1]
                    ahead = pool.submit(tokenize, self.counter, [text[a:b]])
                part = text[start:end]
                chunks = self._segment(part, doc_id, headings, context, tokens, start, line, seq)
                context, seq, line = chunks[1], seq + len(chunks[0]), line + part.count("\n")
                yield chunks[0]

    def _segment(
        self,
        part: str,
        doc_id: str,
        headings: Sequence[HeadingLike] | None,
        context: Context | None,
        tokens: Tokens,
        start: int,
        line: int,
        seq: int,
    ) -> tuple[list[Chunk], Context]:
        """The chunks of one segment of a document at ``start`` (line ``line + 1``, chunk
        number ``seq``), and the context the next segment continues."""
        lines = part.count("\n")
        shifted = None
        if headings is not None:
            shifted = [
                _Heading(h.level, h.text, h.line - line)
                for h in headings
                if line < h.line <= line + lines + 1
            ]
        layout = analyze(part, shifted, context=context)
        [(_, _, spans)] = self._verify([(part, layout, self._spans(part, layout, tokens))])
        out = self._records(part, doc_id, layout, spans, at=(start, line, seq))
        return out, layout.end

    # -- spans ------------------------------------------------------------------------------

    def _spans(self, text: str, layout: Layout, tokens: Tokens) -> list[_Span]:
        if self.config.strategy is Strategy.TOKEN:
            return self._windows(text, tokens)
        positions, kinds, before = refine(
            layout.positions,
            layout.kinds,
            tokens.starts,
            tokens.words,
            self._budget,
            word_kind=Kind.WORD,
            mid_word_kind=Kind.MID_WORD,
        )
        strategy = self.config.strategy
        pieces = pack(
            before,
            list(map(rank_table(strategy).__getitem__, kinds)),
            budget=self._budget,
            min_size=self._min,
            overlap=self._overlap,
            overlap_rank=SENTENCE_RANK,
            no_overlap_rank=HEADING_RANK if strategy is Strategy.SECTION else 1 << 30,
        )
        return [
            _Span(
                positions[start],
                positions[own],
                positions[end],
                -1 if Kind.MID_WORD in (kinds[start], kinds[end]) else before[end] - before[start],
            )
            for start, own, end in pieces
        ]

    def _windows(self, text: str, tokens: Tokens) -> list[_Span]:
        """Fixed windows of ``budget`` tokens, each starting ``budget - overlap`` tokens after the
        one before. Windows whose edge splits a word are recounted in one batch; in the rare
        case the halves tokenize longer alone, the document is redone window by window."""
        spans = self._slide(text, tokens, verify=False)
        unclean = [i for i, span in enumerate(spans) if span.tokens < 0]
        if not unclean:
            return spans
        special = self.counter.special_tokens
        counts = self.counter.count_batch([text[spans[i].start : spans[i].end] for i in unclean])
        if max(counts) - special > self._budget:
            return self._slide(text, tokens, verify=True)
        for i, count in zip(unclean, counts, strict=True):
            spans[i] = replace(spans[i], tokens=count - special)
        return spans

    def _slide(self, text: str, tokens: Tokens, *, verify: bool) -> list[_Span]:
        starts, words, count = tokens.starts, tokens.words, len(tokens)
        if count == 0:
            return [_Span(0, 0, len(text), 0)]
        stride, special = self._budget - self._overlap, self.counter.special_tokens
        spans = []
        first = previous_end = 0
        while True:
            last = min(first + self._budget, count)
            while True:
                start = starts[first] if first else 0
                end = starts[last] if last < count else len(text)
                size = last - first
                if (first == 0 or words[first] != words[first - 1]) and (
                    last == count or words[last] != words[last - 1]
                ):
                    break
                if not verify:
                    size = -1
                    break
                size = self.counter.count(text[start:end]) - special
                if size <= self._budget or last - first == 1:
                    break
                last -= 1  # the halves of a cut word came out longer alone
            spans.append(
                _Span(start, max(start, previous_end), end, size if size <= self._budget else -1)
            )
            if last == count:
                return spans
            previous_end = end
            first = min(first + stride, last)

    def _verify(
        self, docs: list[tuple[str, Layout, list[_Span]]]
    ) -> list[tuple[str, Layout, list[_Span]]]:
        """Recount spans cut inside a word; split any that the recount puts over the cap."""
        todo = [(d, s) for d, (_, _, spans) in enumerate(docs) for s, span in enumerate(spans)]
        todo = [(d, s) for d, s in todo if docs[d][2][s].tokens < 0]
        if not todo:
            return docs
        texts = [docs[d][0][docs[d][2][s].start : docs[d][2][s].end] for d, s in todo]
        counts = self.counter.count_batch(texts)
        replaced: dict[tuple[int, int], list[_Span]] = {}
        special = self.counter.special_tokens
        for (d, s), count in zip(todo, counts, strict=True):
            span = docs[d][2][s]
            if count <= self.config.max_tokens:
                replaced[(d, s)] = [_Span(span.start, span.own, span.end, count - special)]
            else:
                replaced[(d, s)] = self._fit(docs[d][0], span)
        out = []
        for d, (text, layout, spans) in enumerate(docs):
            new_spans: list[_Span] = []
            for s, span in enumerate(spans):
                new_spans.extend(replaced.get((d, s), [span]))
            out.append((text, layout, new_spans))
        return out

    def _fit(self, text: str, span: _Span) -> list[_Span]:
        """Split a span the cap does not hold, by the longest prefixes that fit (rare: a cut
        inside a word that tokenizes longer once alone). Binary search with real counts."""
        pieces: list[_Span] = []
        start, cap, special = span.start, self.config.max_tokens, self.counter.special_tokens
        while start < span.end:
            lo, hi = start + 1, span.end
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.counter.count(text[start:mid]) <= cap:
                    lo = mid
                else:
                    hi = mid - 1
            size = self.counter.count(text[start:lo]) - special
            pieces.append(_Span(start, max(start, span.own) if not pieces else start, lo, size))
            start = lo
        return pieces

    # -- records ----------------------------------------------------------------------------

    def _records(
        self,
        text: str,
        doc_id: str,
        layout: Layout,
        spans: list[_Span],
        *,
        at: tuple[int, int, int] = (0, 0, 0),
    ) -> list[Chunk]:
        """The chunks of ``text``; ``at`` is where it lies in its document (character, line and
        chunk number of its start: a segment of a long one)."""
        chunks: list[Chunk] = []
        special = self.counter.special_tokens
        shift, lines, first = at
        for span in spans:
            start, end = _trim(text, span.start, span.end)
            own_start, own_end = _trim(text, max(span.own, start), end)
            if own_start >= own_end:
                continue  # whitespace only: nothing to cover
            section = SECTION_SEPARATOR.join(layout.section_of(own_start, own_end))
            seq = first + len(chunks)
            body = text[start:end]
            a, b = start + shift, end + shift
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(doc_id, seq, a, b, body),
                    doc_id=doc_id,
                    seq=seq,
                    text=body,
                    start_line=layout.line_of(start) + lines,
                    end_line=layout.line_of(end - 1) + lines,
                    char_start=a,
                    char_end=b,
                    section=section,
                    token_count=span.tokens + special,
                )
            )
        return chunks


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    text: str
    line: int


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def chunk_text(
    text: str,
    doc_id: str,
    *,
    config: ChunkingConfig | None = None,
    counter: TokenCounter | None = None,
    headings: Sequence[HeadingLike] | None = None,
) -> list[Chunk]:
    """Chunk one document (default: section strategy, 256-token cap, the local tokenizer)."""
    return Chunker(config, counter).chunk(text, doc_id, headings=headings)


def token_spans(text: str, max_tokens: int, counter: TokenCounter) -> list[tuple[int, int]]:
    """Character spans of consecutive windows of ``text`` that each fit ``max_tokens``
    (special tokens included), with no overlap: the ``token`` strategy's cuts."""
    config = ChunkingConfig(strategy=Strategy.TOKEN, max_tokens=max_tokens, overlap=0.0)
    return [(c.char_start, c.char_end) for c in Chunker(config, counter).chunk(text, "")]
