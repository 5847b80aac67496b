"""line_map reads source lines as it goes (a window of keys, not a list of every line) and
looks at a long line's head only; it maps exactly as the plain greedy alignment it replaced,
written out here as the reference."""

from __future__ import annotations

import random
import re

from bastion.knowledge.linemap import line_map

_NOT_ALNUM = re.compile(r"[\W_]+")


def reference(source: str, clean: str) -> list[int]:
    def key(line: str) -> str:
        return _NOT_ALNUM.sub("", line.casefold())[:24]

    src_keys = [key(line) for line in source.split("\n")]
    out: list[int] = []
    cursor = last = 0
    for line in clean.split("\n"):
        k = key(line)
        found = None
        if k:
            for j in range(cursor, min(cursor + 500, len(src_keys))):
                c = src_keys[j]
                if c and (k.startswith(c) or c.startswith(k)):
                    found = j
                    break
        if found is None:
            guess = last + 1 if out else 0
            out.append(min(guess, max(len(src_keys) - 1, 0)) + 1)
            last = out[-1] - 1
            continue
        out.append(found + 1)
        last = found
        cursor = found + 1
    return out


WORDS = ["alpha", "Beta", "gam-", "ma", "", "  ", "---", "é", "Straße", "x" * 130, "# Head", "1."]


def test_matches_the_greedy_reference_on_random_texts() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        lines = [
            " ".join(rng.choices(WORDS, k=rng.randint(0, 30))) for _ in range(rng.randint(0, 30))
        ]
        clean = [
            line if rng.random() < 0.8 else " ".join(rng.choices(WORDS, k=3))
            for line in lines
            if rng.random() < 0.8
        ]
        if rng.random() < 0.3:
            rng.shuffle(clean)
        source, cleaned = "\n".join(lines), "\n".join(clean)
        assert list(line_map(source, cleaned)) == reference(source, cleaned)


def test_matches_past_the_window_and_at_the_end() -> None:
    source = "\n".join(f"line {n}" for n in range(3000))
    clean = "\n".join(f"line {n}" for n in range(0, 3000, 7)) + "\nno match\nline 2999"
    assert list(line_map(source, clean)) == reference(source, clean)
    assert list(line_map("", "")) == reference("", "") == [1]
