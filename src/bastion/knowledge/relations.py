"""The document relation graph: which workspace documents point at which.

:func:`extract_relations` reads one Markdown document's links and front matter;
:class:`RelationGraph` keeps them and answers one-hop questions both ways. It knows paths, not
permissions: every path it returns must pass the access guard (see ``docs/relations.md``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import unquote

from bastion.core.errors import ConfigurationError, InvalidPathError
from bastion.core.paths import VPath

__all__ = [
    "Direction",
    "Neighbor",
    "Relation",
    "RelationGraph",
    "RelationKind",
    "extract_relations",
]

EXTRACTION_BUDGET_S = 2.0
"""Seconds one document's link extraction may take. Every pattern here is linear, so only a
document of many megabytes gets near it; the relations found by then are kept, the rest are
left out, and a warning names the document in the log."""
MAX_RELATIONS = 10_000
"""Most relations kept for one document; later ones are left out, with a warning."""

_log = logging.getLogger(__name__)


RelationKind = Literal["link", "parent", "child", "related"]
"""``link``: a Markdown link in the body; ``parent``, ``child``, ``related``: front matter."""
Direction = Literal["out", "in"]
"""``out``: the document declares the relation; ``in``: the neighbour points at the document."""

# Most specific first: a neighbour reached several ways is reported once, with its best kind.
_RANK: dict[str, int] = {"parent": 0, "child": 1, "related": 2, "link": 3}
_FRONT_MATTER: dict[str, RelationKind]
_FRONT_MATTER = {"parent": "parent", "children": "child", "related": "related"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Relation:
    """One edge, ``source`` -> ``target``. Both paths are normalized on construction."""

    source: str
    """The document that declares the relation (``/docs/a.md``)."""
    target: str
    """The document it points at: absolute, normalized, and possibly missing."""
    kind: RelationKind
    """``link``, ``parent``, ``child`` or ``related``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", str(VPath.parse(self.source)))
        object.__setattr__(self, "target", str(VPath.parse(self.target)))
        if self.kind not in _RANK:
            raise ConfigurationError(f"unknown relation kind {self.kind!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Neighbor:
    """A document one hop away. Not access-checked: pass ``path`` through the guard."""

    path: str
    """The neighbour's normalized path."""
    kind: RelationKind
    """As its source declared it: an incoming ``parent`` names the document asked about."""
    direction: Direction
    """``out``: the document points at the neighbour; ``in``: the neighbour points at it."""


_FENCE = re.compile(r" {0,3}(`{3,}+|~{3,}+)(.*)")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_BACKTICKS = re.compile(r"`+")
# Every repetition below is possessive (``*+``) or atomic: each has one way to match, so giving
# characters back can never help, and refusing to makes every pattern linear in its input.
# (A greedy ``\(\s*`` before an optional title took quadratic time on a run of whitespace.)
# Link text may hold balanced brackets and images, but no link: the innermost link wins.
_INNER = r"(?:[^\[\]\\]|\\.)*+"
_LABEL = rf"(?:[^\[\]\\!]|!(?!\[)|\\.|!\[{_INNER}\]|\[{_INNER}\](?!\())*+"
_DEST = r"(?:<([^<>\n]*+)>|((?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*+\))*+))"
_TITLE = r"""(?:\s++(?:"[^"]*+"|'[^']*+'|\([^()]*+\)))?"""
# A link starts at a "[" after an even run of backslashes (an odd run escapes it), so the
# pattern is never tried at an escaped "["; "(!)" marks an image and "\\!" is a literal "!".
_START = r"(?<!\\)(?:\\\\)*+(?:(!)|\\!)?\["
_INLINE = re.compile(rf"{_START}{_LABEL}\]\(\s*+{_DEST}{_TITLE}\s*+\)", re.DOTALL)
_REF_DEF = re.compile(
    rf" {{0,3}}\[(?!\^)(?:[^\[\]\\]|\\.)++\]:\s*+(?:<([^<>]*+)>|(\S++)){_TITLE}\s*+"
)
_HEADING = re.compile(r" {0,3}#{1,6}(?:\s|$)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def extract_relations(path: str, text: str, metadata: Mapping[str, Any]) -> tuple[Relation, ...]:
    """The outgoing relations of one document: front matter first, then links in text order.

    Targets resolve against the document's directory. External URLs, anchors, images, links in
    code, self links and invalid targets are skipped; only an invalid ``path`` raises. Bounded
    work: at most :data:`MAX_RELATIONS` relations and :data:`EXTRACTION_BUDGET_S` seconds."""
    source = VPath.parse(path)
    found: dict[Relation, None] = {}
    seen: set[tuple[str, RelationKind]] = set()

    def add(raw: str, kind: RelationKind) -> None:
        if (raw, kind) in seen:  # resolve each distinct target once
            return
        seen.add((raw, kind))
        target = _resolve(source.parent, raw)
        if target is not None and target != str(source):
            found.setdefault(Relation(source=str(source), target=target, kind=kind), None)
            if len(found) >= MAX_RELATIONS:
                raise _Stop(f"{MAX_RELATIONS} relations kept")

    try:
        for key, kind in _FRONT_MATTER.items():
            value = metadata.get(key)
            for raw in value if isinstance(value, list | tuple) else [value]:
                if isinstance(raw, str):
                    add(raw, kind)
        for raw in _markdown_targets(text, _Clock(time.monotonic() + EXTRACTION_BUDGET_S)):
            add(_ESCAPE.sub(r"\1", raw), "link")
    except _Stop as stop:
        _log.warning("%s: relation extraction stopped (%s); split the document", source, stop)
    return tuple(found)


class _Stop(Exception):
    """Extraction hit a bound; what was found so far is kept."""


@dataclass(frozen=True, slots=True)
class _Clock:
    deadline: float

    def check(self) -> None:
        if time.monotonic() >= self.deadline:
            raise _Stop(f"over the {EXTRACTION_BUDGET_S}s time budget")


def _resolve(base: VPath, raw: str) -> str | None:
    """``raw`` as a normalized absolute path, or ``None`` when it is no workspace document."""
    target = re.split(r"[?#]", raw.strip(), maxsplit=1)[0]
    if not target or target.startswith("//") or _SCHEME.match(target):
        return None
    absolute = target.startswith("/")
    try:
        target = unquote(target, errors="strict")
        resolved = VPath.parse(target if absolute else "/".join((*base.parts, target)))
    except (InvalidPathError, UnicodeDecodeError):
        return None
    return None if resolved.is_root else str(resolved)


def _markdown_targets(text: str, clock: _Clock) -> Iterator[str]:
    """Link destinations outside code, in text order (images left out).

    An escaped ``[`` starts no link; an escaped ``!`` starts a link, not an image."""
    text = _strip_fences(text.replace("\r\n", "\n").replace("\r", "\n"), clock)
    for block in _BLANK_LINE.split(text):
        if "[" not in block:  # neither a link nor a definition
            continue
        clock.check()
        spans = _blank_code_spans(block)
        links = [(m.start(), m[2] or m[3] or "") for m in _INLINE.finditer(spans) if not m[1]]
        yield from (raw for _, raw in sorted([*_definitions(spans), *links]))


def _definitions(block: str) -> Iterator[tuple[int, str]]:
    """Reference definitions (``[id]: target``); one cannot interrupt a paragraph."""
    offset, in_paragraph = 0, False
    for line in block.split("\n"):
        m = None if in_paragraph else _REF_DEF.fullmatch(line)
        if m:
            yield offset, m[1] or m[2] or ""
        else:
            in_paragraph = bool(line.strip()) and not _HEADING.match(line)
        offset += len(line) + 1


def _strip_fences(text: str, clock: _Clock) -> str:
    """``text`` with fenced code blocks (```` ``` ```` and ``~~~``) blanked out."""
    if "```" not in text and "~~~" not in text:
        return text
    lines, fence = text.split("\n"), ""
    for i, line in enumerate(lines):
        if not i & 4095:
            clock.check()
        m = _FENCE.fullmatch(line)
        if fence:
            if m and m[1][0] == fence[0] and len(m[1]) >= len(fence) and not m[2].strip():
                fence = ""
            lines[i] = ""
        elif m and not (m[1][0] == "`" and "`" in m[2]):
            fence, lines[i] = m[1], ""
    return "\n".join(lines)


def _blank_code_spans(block: str) -> str:
    """``block`` with inline code spans replaced by spaces (same length)."""
    if "`" not in block:
        return block
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(block)]
    by_width: dict[int, list[int]] = {}  # run indices by length: finds a closer in log time
    for j, (start, end) in enumerate(runs):
        by_width.setdefault(end - start, []).append(j)
    pieces: list[str] = []
    last = i = 0
    while i < len(runs):
        start = runs[i][0] + _escaped(block, runs[i][0])  # "\`" is a literal backtick
        same = by_width.get(runs[i][1] - start, [])
        close = same[k] if (k := bisect_right(same, i)) < len(same) else i
        if close > i:
            pieces += [block[last:start], " " * (runs[close][1] - start)]
            last = runs[close][1]
        i = close + 1
    pieces.append(block[last:])
    return "".join(pieces)


class RelationGraph:
    """Every document's outgoing relations, indexed both ways; in memory and thread-safe.

    The graph never checks access: a neighbour may be hidden from the caller, or missing. The
    caller must pass every path it returns through the access guard and an existence check.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._out: dict[str, tuple[Relation, ...]] = {}
        self._in: dict[str, dict[Relation, None]] = {}

    def set_document(self, path: str | VPath, relations: Iterable[Relation]) -> None:
        """Replace the outgoing relations of ``path`` (all must have it as their source)."""
        key, rels = str(VPath.parse(path)), tuple(relations)
        if stray := next((r for r in rels if r.source != key), None):
            raise ConfigurationError(f"relation from {stray.source} given for {key}")
        with self._lock:
            self._drop(key)
            self._put(key, rels)

    def remove_document(self, path: str | VPath) -> None:
        """Forget the outgoing relations of ``path``; links to it from others stay."""
        with self._lock:
            self._drop(str(VPath.parse(path)))

    def rename_document(self, old: str | VPath, new: str | VPath) -> None:
        """Move ``old``'s relations to ``new`` (replacing ``new``'s); retarget links to ``old``."""
        src, dst = str(VPath.parse(old)), str(VPath.parse(new))
        with self._lock:
            moved = self._drop(src)
            self._drop(dst)
            for source in sorted({r.source for r in self._in.get(src, {})}):
                rels = self._drop(source)
                self._put(source, [replace(r, target=dst) if r.target == src else r for r in rels])
            self._put(dst, [replace(r, source=dst) for r in moved])

    def relations(self, path: str | VPath) -> tuple[Relation, ...]:
        """The outgoing relations stored for ``path``."""
        with self._lock:
            return self._out.get(str(VPath.parse(path)), ())

    def neighbors(self, path: str | VPath) -> list[Neighbor]:
        """One hop either way, each path once with its most specific kind; out first, then in."""
        with self._lock:
            return self._neighbors(str(VPath.parse(path)))

    def expand(self, paths: Sequence[str | VPath], *, limit: int | None = None) -> list[Neighbor]:
        """The neighbours of ``paths`` that are not among them, each once, as first reached."""
        if isinstance(paths, str) or (limit is not None and limit < 0):
            raise ValueError("expand() takes a sequence of paths and a non-negative limit")
        hits = dict.fromkeys(str(VPath.parse(p)) for p in paths)
        found: dict[str, Neighbor] = {}
        with self._lock:
            for key in hits:
                for neighbor in self._neighbors(key):
                    if neighbor.path not in hits:
                        found.setdefault(neighbor.path, neighbor)
        return list(found.values())[:limit]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible snapshot: ``{"version": 1, "documents": {source: [...]}}``."""
        with self._lock:
            items = sorted(self._out.items())
        documents = {s: [{"target": r.target, "kind": r.kind} for r in rels] for s, rels in items}
        return {"version": 1, "documents": documents}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RelationGraph:
        """Rebuild a graph from :meth:`to_dict`; malformed data raises ConfigurationError."""
        documents = data.get("version") == 1 and data.get("documents")
        if not isinstance(documents, Mapping):
            raise ConfigurationError("relation graph data needs version 1 and a documents map")
        graph = cls()
        try:
            for source, items in documents.items():
                rels = [Relation(source=source, target=i["target"], kind=i["kind"]) for i in items]
                graph.set_document(source, rels)
        except (InvalidPathError, KeyError, TypeError) as exc:
            raise ConfigurationError(f"invalid relation graph data: {exc}") from exc
        return graph

    def _neighbors(self, key: str) -> list[Neighbor]:
        incoming = sorted(self._in.get(key, {}), key=lambda r: (r.source, _RANK[r.kind]))
        out = self._out.get(key, ())
        cands = [Neighbor(path=r.target, kind=r.kind, direction="out") for r in out]
        cands += [Neighbor(path=r.source, kind=r.kind, direction="in") for r in incoming]
        best: dict[str, Neighbor] = {}
        for cand in cands:
            held = best.get(cand.path)
            if cand.path != key and (held is None or _RANK[cand.kind] < _RANK[held.kind]):
                best[cand.path] = cand
        return list(best.values())

    def _drop(self, key: str) -> tuple[Relation, ...]:
        rels = self._out.pop(key, ())
        for rel in rels:
            del self._in[rel.target][rel]
            if not self._in[rel.target]:
                del self._in[rel.target]
        return rels

    def _put(self, key: str, relations: Iterable[Relation]) -> None:
        rels = tuple(dict.fromkeys(r for r in relations if r.target != key))
        if rels:
            self._out[key] = rels
            for rel in rels:
                self._in.setdefault(rel.target, {})[rel] = None


def _escaped(text: str, index: int) -> bool:
    """True when an odd number of backslashes precedes ``text[index]``."""
    start = index
    while start and text[start - 1] == "\\":
        start -= 1
    return (index - start) % 2 == 1
