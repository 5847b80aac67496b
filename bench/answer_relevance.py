"""Honest answers: the relevance floor of ``ask`` and the extractive answerer, measured on the
labelled faithfulness set (``tests/governance/fixtures/faithfulness.jsonl``, the demo corpus)
and the governed-RAG manifest (``shared/data/governed-rag-demo``), in every retrieval mode.

1. **The floor.** Each (asker, question) pair is labelled *answerable* or *refuse*:

   * faithfulness set: its 19 cases are answerable; every demo user who may read none of the
     documents labelled for a question gets that question labelled *refuse* (derived negatives);
   * manifest: ``expect_refusal`` is *refuse*, a case with ``expected_docs`` is answerable.

   A pair's score is the best :func:`~bastion.governance.answer.relevance.relevance` among the
   chunks retrieval brings it (``k`` = 8, the asker's own view). The floor is fitted on one set
   (the threshold with the best accuracy, the middle of the widest such interval; the three
   modes pooled, since the measure does not depend on the mode) and reported on the other, in
   both directions.

2. **The answers**, with the shipped :data:`RELEVANCE_FLOOR`, against the peer: the previous
   extractive answerer (``LegacyExtractive`` below, a copy of the answerer this change replaced)
   without a floor, both given the same retrieved chunks. Per set: cases answered as labelled
   (manifest: the expected documents cited, the expected facts in the answer, refusals exact;
   faithfulness: the labelled document cited and its facts stated), answer sentences, and
   *off-topic* sentences by an independent proxy: a sentence is on topic when it, or a heading
   above it in its source file (the title aside), holds at least half of the question's content
   words (lower-cased, three letters or more, an English stop list, compared on their first
   five letters; no stemmer, none of the answerer's code).

Retrieval: the in-memory index, BM25, and the packaged all-MiniLM-L6-v2 (int8, CPU) for the
vector side; hybrid is the default fusion. Run: ``.venv/bin/python bench/answer_relevance.py``.
Prints Markdown; writes ``bench/results/answer_relevance-<stamp>.{md,json}``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bastion import Mount, Policy, Principal, Workspace
from bastion.core.models import Scope
from bastion.core.principal import Classifications, RoleGraph
from bastion.demo.corpus import corpus_mounts, demo_policy, documents, user, users, write_corpus
from bastion.governance.answer import NO_ANSWER, NO_CONTEXT, Context, Draft
from bastion.governance.answer.extractive import ExtractiveAnswerer
from bastion.governance.answer.relevance import RELEVANCE_FLOOR, relevance
from bastion.governance.answer.text import answer_sentences, chunk_sentences, terms
from bastion.knowledge.embedders import LocalEmbedder
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex
from bastion.stores.local import LocalStore

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "governance" / "fixtures" / "faithfulness.jsonl"
DATA = ROOT.parent / "shared" / "data" / "governed-rag-demo"
MODES = ("bm25", "vector", "hybrid")
K = 8


# -- the peer: the extractive answerer before this change --------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    rank: int
    position: int
    sentence: str
    chunk_id: str
    words: frozenset[str]


class LegacyExtractive:
    """The previous answerer: the best three sentences by IDF-weighted question-term overlap
    (over the candidate sentences), a BM25-style length normalization, 0.3 of the best score."""

    def compose(self, question: str, contexts: Sequence[Context]) -> Draft:
        wanted = terms(question)
        candidates = [
            _Candidate(rank, position, sentence, context.chunk_id, terms(sentence))
            for rank, context in enumerate(contexts)
            for position, sentence in enumerate(_legacy_sentences(context.text))
        ]
        n = len(candidates)
        if not wanted or not n:
            return Draft(text=NO_ANSWER, no_answer=True)
        df = Counter(word for c in candidates for word in c.words & wanted)
        average = sum(len(c.words) for c in candidates) / n or 1.0
        scored = []
        for c in candidates:
            matched = c.words & wanted
            if matched:
                weight = sum(math.log(1.0 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in matched)
                scored.append((weight / (0.5 + 0.5 * len(c.words) / average), c))
        if not scored:
            return Draft(text=NO_ANSWER, no_answer=True)
        scored.sort(key=lambda p: (-p[0], p[1].rank, p[1].position))
        best = scored[0][0]
        chosen: list[_Candidate] = []
        for score, c in scored:
            if len(chosen) == 3 or score < 0.3 * best:
                break
            if not any(
                c.sentence.casefold() == o.sentence.casefold()
                or len(c.words & o.words) / max(1, len(c.words | o.words)) >= 0.8
                for o in chosen
            ):
                chosen.append(c)
        return Draft(text="\n".join(f"{c.sentence} §{c.chunk_id}" for c in chosen))


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*)$")


def _legacy_sentences(text: str) -> list[str]:
    """The previous sentence splitter: questions and bold labels were sentences too."""
    kept = []
    for line in text.splitlines():
        label = re.fullmatch(r"\s*\*\*(.+?)\*\*\s*", line)
        kept.append(label.group(1) if label else line)
    return chunk_sentences("\n".join(kept))


# -- the independent "on topic" proxy ------------------------------------------------------------

_STOP_WORDS = (
    "the a an and or of to in on for with at by from is are was were be been do does did "
    "what which who whom when where why how many much long soon fast large there their "
    "this that these those it its our your any some can could should would must may might "
    "have has had"
)
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z][a-z0-9]+")


def _content(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def _headings_above(source: str, sentence: str) -> list[str]:
    """The headings above ``sentence`` in ``source`` (``##`` and deeper, innermost last)."""
    at = source.find(sentence[:40])
    if at < 0:
        return []
    path: list[tuple[int, str]] = []
    for line in source[:at].splitlines():
        match = _HEADING.match(line)
        if match and len(match.group(1)) > 1:
            level = len(match.group(1))
            path = [(lv, name) for lv, name in path if lv < level] + [(level, match.group(2))]
    return [name for _, name in path]


def on_topic(question: str, sentence: str, source: str) -> bool:
    asked = _content(question)
    seen = _content(sentence).union(*(_content(h) for h in _headings_above(source, sentence)))
    return bool(asked) and len(asked & seen) >= len(asked) / 2


# -- workspaces and retrieval ----------------------------------------------------------------------


@dataclass
class Corpus:
    ws: Workspace
    knowledge: Knowledge
    sources: dict[str, str]
    """Workspace path -> file text."""


async def _demo(folder: Path, embedder: LocalEmbedder) -> Corpus:
    write_corpus(folder)
    knowledge = Knowledge(MemoryIndex(), embedder=embedder)
    ws = Workspace(
        corpus_mounts(folder),
        policy=demo_policy(),
        knowledge=knowledge,
        principal=Principal.of("bench"),
    )
    await ws.rebuild_index()
    return Corpus(ws, knowledge, {d.path: d.text for d in documents()})


def _manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    return loaded


async def _governed(folder: Path, embedder: LocalEmbedder) -> Corpus:
    manifest = _manifest()
    folder.mkdir(parents=True)
    sources = {}
    for doc in manifest["v1_docs"]:
        roles = ", ".join(doc["upstream_indexer_allowed_roles"])
        text = (
            f"---\ntitle: {doc['title']}\nclassification: "
            f"{doc['upstream_indexer_classification']}\nroles: [{roles}]\n---\n"
            + (DATA / doc["path"]).read_text(encoding="utf-8")
        )
        (folder / f"{doc['doc_id']}.md").write_text(text, encoding="utf-8")
        sources[f"/corpus/{doc['doc_id']}.md"] = text
    policy = Policy.allow_all(
        roles=RoleGraph.from_mapping(manifest["role_hierarchy"]),
        classifications=Classifications(tuple(manifest["classification_order"])),
    )
    knowledge = Knowledge(MemoryIndex(), embedder=embedder)
    ws = Workspace(
        [Mount.of("/corpus", LocalStore(folder), Scope.READ_ONLY)],
        policy=policy,
        knowledge=knowledge,
        principal=Principal.of("bench"),
    )
    await ws.rebuild_index()
    return Corpus(ws, knowledge, sources)


async def contexts_for(corpus: Corpus, who: Principal, question: str, mode: str) -> list[Context]:
    """What ask's retrieval brings ``who`` (``k`` chunks, whole, in retrieval order)."""
    return await contexts(corpus.ws, corpus.knowledge.index, who, question, mode)


async def contexts(ws: Any, index: Any, who: Principal, question: str, mode: str) -> list[Context]:
    """:func:`contexts_for` of a workspace and its index (``bench/answer_eval.py`` too)."""
    result = await ws.with_principal(who).search(question, mode=mode, k=K)
    out = []
    for hit in result.hits:
        chunk = next(c for c in index.chunks_of(hit.doc_id) if c.chunk_id == hit.chunk_id)
        out.append(
            Context(
                chunk_id=hit.chunk_id,
                doc_id=hit.doc_id,
                path=hit.path,
                start_line=hit.start_line,
                end_line=hit.end_line,
                text=chunk.text,
                score=hit.score,
                retrieval_score=hit.score,
                section=chunk.section,
                title=chunk.doc.title,
            )
        )
    return out


# -- labelled pairs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    who: Principal
    label: str
    """Who asks (for the report)."""
    question: str
    answerable: bool
    docs: frozenset[str] = frozenset()
    """Paths an answer must cite."""
    facts: tuple[str, ...] = ()


async def faithfulness_pairs(corpus: Corpus) -> list[Pair]:
    cases = [json.loads(x) for x in FIXTURE.read_text(encoding="utf-8").splitlines() if x.strip()]
    pairs = [
        Pair(
            user(c["user"]).principal,
            c["user"],
            c["question"],
            True,
            frozenset({c["doc"]}),
            tuple(c["facts"]),
        )
        for c in cases
    ]
    for question in dict.fromkeys(c["question"] for c in cases):
        labelled = {c["doc"] for c in cases if c["question"] == question}
        for person in users():
            view = corpus.ws.with_principal(person.principal)
            if not any([await view.exists(p) for p in labelled]):
                pairs.append(Pair(person.principal, person.id, question, False))
    return pairs


def manifest_pairs() -> list[Pair]:
    manifest = _manifest()
    clearance = {"public": "public", "hr.admin": "confidential", "admin": "confidential"}
    pairs = []
    for case in manifest["v1_demo_queries"]:
        role = case["role"]
        who = Principal.of(f"user-{role}", roles={role}, clearance=clearance.get(role, "internal"))
        pairs.append(
            Pair(
                who,
                role,
                case["query"],
                not case.get("expect_refusal", False),
                frozenset(f"/corpus/{d}.md" for d in case["expected_docs"]),
                tuple(case.get("expected_answer_contains", [])),
            )
        )
    return pairs


# -- fitting the floor -----------------------------------------------------------------------------


def fit(scored: Sequence[tuple[float, bool]]) -> tuple[float, tuple[float, float]]:
    """The threshold with the best accuracy (answer when score >= it), in the middle of the
    widest interval of thresholds that reach it; and that interval."""
    cuts = sorted({0.0, 1.01, *(s for s, _ in scored)})
    best, where = -1.0, (0.0, 0.0)
    for low, high in itertools.pairwise(cuts):
        theta = (low + high) / 2
        accuracy = sum((s >= theta) == y for s, y in scored) / len(scored)
        if accuracy > best or (accuracy == best and high - low > where[1] - where[0]):
            best, where = accuracy, (low, high)
    return (where[0] + where[1]) / 2, where


def accuracy(scored: Sequence[tuple[float, bool]], theta: float) -> str:
    right = sum((s >= theta) == y for s, y in scored)
    wrong_answers = sum(s >= theta and not y for s, y in scored)
    wrong_refusals = sum(s < theta and y for s, y in scored)
    return f"{right}/{len(scored)} (answered {wrong_answers}, refused {wrong_refusals} wrongly)"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


# -- answers ---------------------------------------------------------------------------------------


@dataclass
class Tally:
    right: int = 0
    cases: int = 0
    sentences: int = 0
    off_topic: int = 0
    answered_refusals: int = 0
    examples: list[str] | None = None


def judge(pair: Pair, text: str, contexts: Sequence[Context], corpus: Corpus, tally: Tally) -> None:
    by_id = {c.chunk_id: c for c in contexts}
    sentences = answer_sentences(text) if text not in (NO_CONTEXT, NO_ANSWER) else []
    cited = {by_id[i].path for _, ids in sentences for i in ids if i in by_id}
    if pair.answerable:
        ok = pair.docs <= cited and all(f in text for f in pair.facts) and bool(sentences)
    else:
        ok = not sentences
    tally.cases += 1
    tally.right += ok
    if not pair.answerable:
        tally.answered_refusals += bool(sentences)
        return
    for sentence, ids in sentences:
        tally.sentences += 1
        source = corpus.sources[by_id[ids[0]].path] if ids and ids[0] in by_id else ""
        if not on_topic(pair.question, sentence, source):
            tally.off_topic += 1
            if tally.examples is not None and len(tally.examples) < 6:
                tally.examples.append(f"{pair.label}: {pair.question} -> {sentence}")


def new_answer(pair: Pair, contexts: Sequence[Context]) -> str:
    kept = [c for c in contexts if relevance(pair.question, c) >= RELEVANCE_FLOOR]
    if not kept:
        return NO_CONTEXT
    return ExtractiveAnswerer().compose(pair.question, kept).text


async def main() -> None:
    started = time.perf_counter()
    embedder = LocalEmbedder(variant="int8", device="cpu")
    embedder.load()
    with tempfile.TemporaryDirectory() as tmp:
        demo = await _demo(Path(tmp) / "demo", embedder)
        governed = await _governed(Path(tmp) / "governed", embedder)
        sets = {
            "faithfulness": (demo, await faithfulness_pairs(demo)),
            "manifest": (governed, manifest_pairs()),
        }
        scores: dict[str, dict[str, list[tuple[float, bool]]]] = {s: {} for s in sets}
        tallies: dict[tuple[str, str, str], Tally] = {}
        for name, (corpus, pairs) in sets.items():
            for mode in MODES:
                scores[name][mode] = []
                old = tallies[(name, mode, "previous answerer, no floor")] = Tally()
                new = tallies[(name, mode, "floor + new answerer")] = Tally(examples=[])
                for pair in pairs:
                    contexts = await contexts_for(corpus, pair.who, pair.question, mode)
                    best = max((relevance(pair.question, c) for c in contexts), default=0.0)
                    scores[name][mode].append((best, pair.answerable))
                    judge(
                        pair,
                        LegacyExtractive().compose(pair.question, contexts).text,
                        contexts,
                        corpus,
                        old,
                    )
                    judge(pair, new_answer(pair, contexts), contexts, corpus, new)
    pooled = {name: [x for mode in MODES for x in scores[name][mode]] for name in sets}
    counts = ", ".join(
        f"{name} {len(pairs)} ({sum(p.answerable for p in pairs)} answerable)"
        for name, (_, pairs) in sets.items()
    )
    lines = [
        "## Relevance floor and extractive answers (`bench/answer_relevance.py`)",
        "",
        f"Shipped floor: {RELEVANCE_FLOOR:.3f}. Pairs: {counts}; k = {K}; "
        f"modes {', '.join(MODES)}.",
        "",
        _row("fitted on", "widest best interval", "floor", "there", "reported on", "there"),
        _row(*["---"] * 6),
    ]
    for train, test in (("faithfulness", "manifest"), ("manifest", "faithfulness")):
        theta, (low, high) = fit(pooled[train])
        lines.append(
            _row(
                train,
                f"({low:.3f}, {high:.3f}]",
                f"{theta:.3f}",
                accuracy(pooled[train], theta),
                test,
                accuracy(pooled[test], theta),
            )
        )
    lines += ["", "At the shipped floor, per mode:", "", _row("set", "mode", "right"), _row(*"---")]
    for name in sets:
        for mode in MODES:
            lines.append(_row(name, mode, accuracy(scores[name][mode], RELEVANCE_FLOOR)))
    lines += [
        "",
        "Answers (the same retrieved chunks for both answerers):",
        "",
        _row(
            "set",
            "mode",
            "answerer",
            "cases right",
            "answered, should refuse",
            "sentences (answerable)",
            "off-topic sentences",
        ),
        _row(*["---"] * 7),
    ]
    for (name, mode, who), t in tallies.items():
        lines.append(
            _row(
                name,
                mode,
                who,
                f"{t.right}/{t.cases}",
                str(t.answered_refusals),
                str(t.sentences),
                str(t.off_topic),
            )
        )
    examples = [e for t in tallies.values() if t.examples for e in t.examples]
    if examples:
        lines += ["", "Off-topic by the proxy, new answerer (first few):", ""]
        lines += [f"- {e}" for e in examples[:10]]
    lines += ["", f"Ran in {time.perf_counter() - started:.0f} s."]
    report = "\n".join(lines)
    print(report)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"answer_relevance-{stamp}.md").write_text(report + "\n", encoding="utf-8")
    (out / f"answer_relevance-{stamp}.json").write_text(
        json.dumps({name: {m: scores[name][m] for m in MODES} for name in sets}, indent=1),
        encoding="utf-8",
    )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
