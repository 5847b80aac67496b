"""Worst cases of hostile input, before and after bounding them (issue 10, item 6).

.venv/bin/python bench/hostile_regex.py [--quick] [--parts links,passes,grep]

Three parts, each printed as a Markdown table:

* **link extraction** (``extract_relations``) on hostile Markdown of 16k to 1M characters.
  "before" runs the link pattern of the previous release (kept below, verbatim) over the same
  text; its run is skipped, and extrapolated from the two sizes before it as quadratic, once a
  projection passes 20 s. "after" is the whole extraction as it ships.
* **sentence boundaries, ATX headings and HTML sniffing**: the previous patterns against the
  current ones (the first two were quadratic or worse, HTML sniffing exponential in the comments).
* **grep**: RE2 patterns on one line of 300 KB and of 10 MB. "before" compiles them the way
  grep did (no program-size cap) and searches the whole line in one call, on the calling
  thread; "after" is ``Workspace.grep`` as it ships (program-size cap, matching budget,
  windows, worker thread). For each, the longest stall of a 1 ms ticker on the event loop is
  reported: how long every other caller waited.

Figures are wall-clock seconds of one run; the machine is printed first.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import re
import time
from collections.abc import Callable, Coroutine
from typing import Any

import re2

from bastion.core.errors import InvalidPatternError
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import Policy
from bastion.knowledge.chunking import structure
from bastion.knowledge.ingest import detect
from bastion.knowledge.relations import extract_relations
from bastion.stores.memory import MemoryStore
from bastion.workspace import Workspace

# -- the patterns of the previous release, verbatim ------------------------------------------

_INNER = r"(?:[^\[\]\\]|\\.)*"
_LABEL = rf"(?:[^\[\]\\!]|!(?!\[)|\\.|!\[{_INNER}\]|\[{_INNER}\](?!\())*"
_DEST = r"(?:<([^<>\n]*)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*))"
_TITLE = r"""(?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?"""
OLD_INLINE = re.compile(rf"(!?)\[{_LABEL}\]\(\s*{_DEST}{_TITLE}\s*\)", re.DOTALL)
OLD_SENTENCE = re.compile(
    rf"[.!?\u2026]+{structure._CLOSERS}\s+(?=[^\sa-z])"
    rf"|[\u3002\uff01\uff1f]+{structure._CLOSERS}\s*(?=\S)"
)
OLD_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
OLD_HTML_START = re.compile(
    rb"\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.I | re.S
)
LIMIT_S = 20.0

LINKS: dict[str, Callable[[int], str]] = {
    "whitespace in a destination": lambda n: "[a](" + "\t" * n + "x",
    "escaped brackets": lambda n: "[\\" * (n // 2),
    "image starts": lambda n: "![a](" * (n // 5),
    "open titles": lambda n: '[a](b "' * (n // 7),
}


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def before_after(
    cases: dict[str, Callable[[int], Any]],
    sizes: list[int],
    before: Callable[[Any], object],
    after: Callable[[Any], object],
    *,
    growth: Callable[[float, int, int], float] = lambda t, n, m: t * (n / m) ** 2,
) -> list[str]:
    rows = ["| input | size | before (s) | after (s) |", "|---|---:|---:|---:|"]
    for name, make in cases.items():
        history: list[float] = []
        for n in sizes:
            text = make(n)
            projected = growth(history[-1], n, sizes[len(history) - 1]) if history else 0.0
            if projected > LIMIT_S:
                old = f"~{projected:,.3g} (projected)"
                history.append(projected)
            else:
                seconds = timed(lambda text=text: before(text))
                history.append(seconds)
                old = f"{seconds:.3f}"
            rows.append(f"| {name} | {n:,} | {old} | {timed(lambda t=text: after(t)):.3f} |")
    return rows


def links_table(sizes: list[int]) -> list[str]:
    return before_after(
        LINKS,
        sizes,
        lambda text: list(OLD_INLINE.finditer(text)),
        lambda text: extract_relations("/docs/a.md", text, {}),
    )


def passes_table(sizes: list[int]) -> list[str]:
    rows = before_after(
        {"sentence marks '!' x n": lambda n: "!" * n},
        sizes,
        lambda text: list(OLD_SENTENCE.finditer(text)),
        lambda text: list(structure._SENTENCE.finditer(text)),
    )
    rows += before_after(
        {"heading '# a' + n spaces + 'x'": lambda n: "# a" + " " * n + "x"},
        sizes,
        OLD_ATX.fullmatch,
        structure._ATX.fullmatch,
    )[2:]
    comments: dict[str, Callable[[int], bytes]] = {
        "k HTML comments, then text": lambda k: b"<!--a-->" * k + b"x"
    }
    rows += before_after(
        comments,
        [16, 20, 24, 128],
        OLD_HTML_START.match,
        lambda data: detect.detect_type(data, "/a.txt"),
        growth=lambda t, k, j: t * 2.0 ** (k - j),  # each comment doubles the work
    )[2:]
    return rows


# -- grep ------------------------------------------------------------------------------------

GREP = [r"(\w|\s){1,999}ZZ", r"(?i)(?:\pL|\s){1,100}ZZ", r"a[a-j ]{900}Z"]


def line_of(size: int) -> bytes:
    rng = random.Random(7)
    return "".join(rng.choice("abcdefghij ") for _ in range(size)).encode()


async def stall(work: Coroutine[Any, Any, object]) -> tuple[float, float, object]:
    """(seconds, longest ticker stall, result) of ``work`` run beside a 1 ms ticker."""
    worst = 0.0

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, now - last)
            last = now

    beat = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    start = time.perf_counter()
    try:
        result: object = await work
    except InvalidPatternError as exc:
        result = exc
    seconds = time.perf_counter() - start
    await asyncio.sleep(0.01)  # the ticker records the stall the work caused
    beat.cancel()
    return seconds, worst, result


async def old_grep(pattern: str, line: bytes) -> object:
    """grep as it was: no program-size cap, one search of the whole line, on the loop."""
    options = re2.Options()
    options.max_mem = 8 << 20
    options.log_errors = False
    return re2.compile(pattern, options).search(line.decode())


async def grep_table(sizes: list[int]) -> list[str]:
    rows = [
        "| pattern | line | before (s) | before: loop stalled (s) | after (s) "
        "| after: loop stalled (s) | after: outcome |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    measured: dict[str, tuple[int, float]] = {}
    for size in sizes:
        line = line_of(size)
        store = MemoryStore()
        await store.write(VPath.parse("/long.txt"), line)
        ws = Workspace([Mount.of("/h", store)], policy=Policy.allow_all())
        for pattern in GREP:
            program = re2.compile(pattern).programsize
            # RE2 is linear in the line: project from the smaller line when over the limit
            first_size, first_s = measured.get(pattern, (size, 0.0))
            projected = first_s * size / first_size
            if projected > LIMIT_S:
                old_s = old_stall = f"~{projected:,.0f} (projected)"
            else:
                seconds, worst, _ = await stall(old_grep(pattern, line))
                measured.setdefault(pattern, (size, seconds))
                old_s, old_stall = f"{seconds:.2f}", f"{worst:.2f}"
            seconds, worst, result = await stall(ws.grep(pattern, "/h", regex=True))
            if isinstance(result, InvalidPatternError):
                outcome = "refused: too complex"
            else:
                outcome = "budget exhausted" if result.budget_exhausted else "searched whole"  # type: ignore[attr-defined]
            cell = pattern.replace("|", "\\|")  # a Markdown table cell
            rows.append(
                f"| `{cell}` ({program:,} instructions) | {size / 1e6:g} MB | {old_s} "
                f"| {old_stall} | {seconds:.2f} | {worst:.3f} | {outcome} |"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument(
        "--parts", default="links,passes,grep", help="comma-separated: links, passes, grep"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    sizes = [4_000, 16_000] if args.quick else [16_000, 64_000, 256_000, 1_000_000]
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    if "links" in parts:
        print("\n## link extraction\n")
        print("\n".join(links_table(sizes)), flush=True)
    if "passes" in parts:
        print("\n## sentence boundaries, headings, HTML sniffing\n")
        print("\n".join(passes_table(sizes)), flush=True)
    if "grep" in parts:
        print("\n## grep\n")
        grep_sizes = [30_000] if args.quick else [300_000, 10_000_000]
        print("\n".join(asyncio.run(grep_table(grep_sizes))), flush=True)


if __name__ == "__main__":
    main()
