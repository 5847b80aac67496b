"""Long documents: tokenized in pieces (the same tokens as whole), chunked a segment at a time
(heading paths and code blocks carried across segments, positions and lines the document's)."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from bastion.knowledge.chunking import Chunker, ChunkingConfig, WhitespaceTokenCounter
from bastion.knowledge.chunking.segments import segment_bounds, tokenize
from bastion.knowledge.chunking.tokens import minilm_token_counter

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


def _document(seed: int, sections: int = 30) -> str:
    rng = random.Random(seed)
    parts = ["# Manual\n"]
    for n in range(sections):
        parts.append(f"## Part {n}\n")
        for _ in range(rng.randint(1, 4)):
            sentences = [
                " ".join(rng.choices(WORDS, k=rng.randint(4, 14))).capitalize() + "."
                for _ in range(rng.randint(1, 6))
            ]
            parts.append(" ".join(sentences) + "\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def chunker() -> Chunker:
    return Chunker(ChunkingConfig(max_tokens=40), WhitespaceTokenCounter())


def _streamed(chunker: Chunker, text: str, size: int, **kw: object) -> list:
    return [c for part in chunker.chunk_stream(text, "doc", segment_chars=size, **kw) for c in part]


def test_one_segment_gives_the_chunks_of_the_whole(chunker: Chunker) -> None:
    text = _document(1)
    assert _streamed(chunker, text, len(text) + 1) == chunker.chunk(text, "doc")


def test_segments_keep_positions_lines_ids_and_headings(chunker: Chunker) -> None:
    text = _document(2, sections=60)
    whole = chunker.chunk(text, "doc")
    chunks = _streamed(chunker, text, 2_000)
    lines = text.split("\n")
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for c in chunks:
        assert text[c.char_start : c.char_end] == c.text
        assert c.text.split("\n")[0] in lines[c.start_line - 1]
        assert c.text.split("\n")[-1] in lines[c.end_line - 1]
        assert c.token_count <= 40
        heading = text.rfind("\n## ", 0, c.char_start + 1)
        if heading >= 0:  # the section in force, even when its heading is in another segment
            name = text[heading + 4 : text.index("\n", heading + 1)]
            assert c.section.split(" > ")[-1] in (name, "Manual") or c.section.startswith(
                "Manual > "
            )
    # where segment cuts do not interfere, the chunks are those of the whole document
    same = {(c.char_start, c.char_end): c for c in whole}
    shared = [c for c in chunks if (c.char_start, c.char_end) in same]
    assert len(shared) > len(chunks) // 2
    for c in shared:
        w = same[(c.char_start, c.char_end)]
        assert (c.section, c.start_line, c.end_line) == (w.section, w.start_line, w.end_line)
    covered = "".join(text[a:b] for (a, b) in segment_bounds(text, 2_000))
    assert covered == text


def test_the_heading_path_carries_into_the_next_segment(chunker: Chunker) -> None:
    body = " ".join(["word"] * 30) + ".\n\n"
    text = "# Top\n\n## Inner\n\n" + body * 40
    chunks = _streamed(chunker, text, 500)
    assert len(chunks) > 5
    assert all(c.section == "Top > Inner" for c in chunks[1:])


def test_a_code_block_open_across_a_cut_stays_code(chunker: Chunker) -> None:
    code = "\n\n".join(f"# comment {n}\nx = {n}" for n in range(60))
    text = "# Title\n\nIntro text.\n\n```python\n" + code + "\n```\n\nAfter the code.\n"
    chunks = _streamed(chunker, text, 300)
    assert {c.section for c in chunks} == {"Title"}  # "# comment" lines are not headings


def test_parser_headings_are_shifted_to_each_segment(chunker: Chunker) -> None:
    from bastion.knowledge.ingest.models import Heading

    body = "Some words in a paragraph here.\n\n" * 30
    text = "Alpha\n\n" + body + "Beta\n\n" + body
    headings = [
        Heading(1, "Alpha", 1),
        Heading(1, "Beta", text[: text.index("Beta")].count("\n") + 1),
    ]
    chunks = _streamed(chunker, text, 400, headings=headings)
    whole = chunker.chunk(text, "doc", headings=headings)
    assert chunks[0].section == whole[0].section == "Alpha"
    assert chunks[-1].section == whole[-1].section == "Beta"


def test_long_texts_tokenize_in_pieces_to_the_same_tokens() -> None:
    counter = minilm_token_counter()
    text = _document(3, sections=80) + " Ünïcode wörds, numbers 12,345 and CamelCase tokens."
    [whole] = counter.tokenize_batch([text])
    [pieced] = tokenize(counter, [text], piece=300)
    assert list(pieced.starts) == list(whole.starts)
    # word numbers differ in value, never in where a word changes
    assert [a != b for a, b in pairwise(pieced.words)] == [a != b for a, b in pairwise(whole.words)]
    assert tokenize(counter, ["short"])[0].starts == counter.tokenize_batch(["short"])[0].starts


def test_segment_bounds_cut_at_blank_lines_then_lines_then_spaces() -> None:
    text = ("para one.\n\n" * 50) + ("line\n" * 50) + ("word " * 200) + ("x" * 700)
    bounds = segment_bounds(text, 200)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(b - a <= 200 for a, b in bounds)
    assert all(b1 == a2 for (_, b1), (a2, _) in pairwise(bounds))
    first_cut = bounds[0][1]
    assert text[first_cut - 2 : first_cut] == "\n\n"
    assert segment_bounds("", 10) == [(0, 0)]
