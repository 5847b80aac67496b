"""The answer evaluation set: questions over two governed corpora, each with the roles that ask
it, the roles that may read its answer, the answer spans and the documents a right answer
cites; and the pure scoring of one answer (:func:`judge`) and of a run (:class:`AnswerTally`).

The data ships in the package (``answer_cases/``): ``cases.json`` and the corpora's files,
labelled by front matter and sidecars. ``governed`` is the Mastra Governed RAG demo corpus
(Apache-2.0, its licence beside it) with labels written from its manifest; ``harbour`` was
written for this evaluation (Markdown, HTML, plain text and DOCX; tables, lists, figures,
British spellings asked in American English and the other way round, two-part questions).

Running the questions composes a whole workspace, so it lives with the command
(:mod:`bastion.cli.eval_answers`). See ``docs/evaluation.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "AnswerCase",
    "AnswerCorpus",
    "AnswerSet",
    "AnswerTally",
    "Outcome",
    "Pair",
    "judge",
    "load_answer_set",
    "normalize",
    "tally",
]


class Outcome(StrEnum):
    RIGHT_ANSWER = "right_answer"
    """Answerable for the role; answered with every expected span and a right citation, whose
    cited lines hold every expected span."""
    FALSE_REFUSAL = "false_refusal"
    """Answerable for the role; refused."""
    WRONG_ANSWER = "wrong_answer"
    """Answered, but not right: a span or a right citation missing, or an answer where the
    role should have been refused (without leaking)."""
    RIGHT_REFUSAL = "right_refusal"
    """Not answerable for the role (hidden from it, or absent); refused."""
    LEAK = "leak"
    """The answer cites a document the role may not read, or states an expected span that no
    document the role may read holds."""


@dataclass(frozen=True, slots=True)
class AnswerCorpus:
    name: str
    root: Path
    """The corpus's folder (files and their label sidecars)."""
    roles: dict[str, list[str]]
    """Role -> the roles it inherits."""
    classifications: tuple[str, ...]
    clearance: dict[str, str]
    """Clearance of each asking role."""

    def files(self) -> list[Path]:
        """The corpus's documents (sidecars and licence notes aside), sorted."""
        return sorted(
            p
            for p in self.root.rglob("*")
            if p.is_file()
            and not p.name.endswith(".labels.yaml")
            and not p.name.startswith("LICENSE")
        )


@dataclass(frozen=True, slots=True)
class AnswerCase:
    id: str
    corpus: str
    question: str
    kind: str
    """``visible`` (every asker may read it), ``hidden`` (some may not) or ``absent``."""
    split: str
    may_see: frozenset[str]
    ask_as: tuple[str, ...]
    spans: tuple[str, ...]
    cites: frozenset[str]
    """Paths relative to the corpus root."""


@dataclass(frozen=True, slots=True)
class Pair:
    """One question asked by one role."""

    case: AnswerCase
    role: str

    @property
    def answerable(self) -> bool:
        return self.role in self.case.may_see


@dataclass(frozen=True, slots=True)
class AnswerSet:
    corpora: dict[str, AnswerCorpus]
    cases: tuple[AnswerCase, ...]

    def pairs(self, split: str = "all", corpus: str | None = None) -> list[Pair]:
        return [
            Pair(case, role)
            for case in self.cases
            if split in ("all", case.split) and corpus in (None, case.corpus)
            for role in case.ask_as
        ]


def _data_root() -> Path:
    return Path(str(resources.files("bastion.knowledge.eval") / "answer_cases"))


def load_answer_set(root: str | Path | None = None) -> AnswerSet:
    """The set shipped in the package, or the one in ``root`` (a folder with ``cases.json``
    and one sub-folder per corpus)."""
    folder = Path(root) if root is not None else _data_root()
    raw: dict[str, Any] = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    corpora = {
        name: AnswerCorpus(
            name=name,
            root=folder / name,
            roles={k: list(v) for k, v in spec["roles"].items()},
            classifications=tuple(spec["classifications"]),
            clearance=dict(spec["clearance"]),
        )
        for name, spec in raw["corpora"].items()
    }
    cases = tuple(
        AnswerCase(
            id=c["id"],
            corpus=c["corpus"],
            question=c["question"],
            kind=c["kind"],
            split=c["split"],
            may_see=frozenset(c["may_see"]),
            ask_as=tuple(c["ask_as"]),
            spans=tuple(c["spans"]),
            cites=frozenset(c["cites"]),
        )
        for c in raw["cases"]
    )
    return AnswerSet(corpora=corpora, cases=cases)


_MARKUP = re.compile(r"[*_`]+")


def normalize(text: str) -> str:
    """Text as spans are compared: case folded, Markdown emphasis out, whitespace collapsed."""
    return " ".join(_MARKUP.sub("", text).casefold().split())


def judge(
    pair: Pair,
    *,
    answered: bool,
    text: str,
    cited: Iterable[str],
    readable: Iterable[str],
    visible_text: str,
    cited_text: str | None = None,
) -> Outcome:
    """The outcome of one answer. ``cited``: the cited paths relative to the corpus root;
    ``readable``: the paths the role may read; ``visible_text``: all they hold, concatenated
    (a span found there is no leak); ``cited_text``: the text of the lines the citations
    point at, when known: a right answer's cited lines hold every expected span."""
    cited_paths = set(cited)
    said = normalize(text)
    if cited_paths - set(readable):
        return Outcome.LEAK
    seen = normalize(visible_text)
    if answered and any(normalize(s) in said and normalize(s) not in seen for s in pair.case.spans):
        return Outcome.LEAK
    if not pair.answerable:
        return Outcome.WRONG_ANSWER if answered else Outcome.RIGHT_REFUSAL
    if not answered:
        return Outcome.FALSE_REFUSAL
    spans = all(normalize(s) in said for s in pair.case.spans)
    if cited_text is not None:
        lines = normalize(cited_text)
        spans = spans and all(normalize(s) in lines for s in pair.case.spans)
    return Outcome.RIGHT_ANSWER if spans and cited_paths & pair.case.cites else Outcome.WRONG_ANSWER


@dataclass
class AnswerTally:
    """Outcomes and latencies of one role (or all roles together)."""

    outcomes: dict[Outcome, int] = field(default_factory=lambda: dict.fromkeys(Outcome, 0))
    answerable: int = 0
    refusable: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, pair: Pair, outcome: Outcome, seconds: float) -> None:
        self.outcomes[outcome] += 1
        if pair.answerable:
            self.answerable += 1
        else:
            self.refusable += 1
        self.seconds.append(seconds)

    def rate(self, outcome: Outcome) -> float:
        base = self.answerable if outcome is Outcome.RIGHT_ANSWER else self.refusable
        return self.outcomes[outcome] / base if base else 1.0

    def latency_ms(self, q: float) -> float:
        if not self.seconds:
            return 0.0
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "answerable": self.answerable,
            "refusable": self.refusable,
            **{o.value: n for o, n in self.outcomes.items()},
            "right_answer_rate": self.rate(Outcome.RIGHT_ANSWER),
            "right_refusal_rate": self.rate(Outcome.RIGHT_REFUSAL),
            "latency_p50_ms": self.latency_ms(0.5),
            "latency_p95_ms": self.latency_ms(0.95),
        }


def tally(results: Sequence[tuple[Pair, Outcome, float]]) -> dict[str, AnswerTally]:
    """Per role (``corpus/role``) and ``all``."""
    out: dict[str, AnswerTally] = {"all": AnswerTally()}
    for pair, outcome, seconds in results:
        key = f"{pair.case.corpus}/{pair.role}"
        out.setdefault(key, AnswerTally()).add(pair, outcome, seconds)
        out["all"].add(pair, outcome, seconds)
    return out
