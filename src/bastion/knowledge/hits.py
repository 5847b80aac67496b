"""What a search returns to its caller: small, flat records that point back to lines."""

from __future__ import annotations

from dataclasses import dataclass

from bastion.core.models import Labels

__all__ = ["SearchHit", "SearchResult"]

_PUBLIC = Labels()


@dataclass(slots=True)
class SearchHit:
    """One chunk that answers a query.

    Not frozen, unlike most records here: a search builds up to ``k`` of them per call and a
    frozen dataclass costs twice as much to build (``docs/decisions/``); for the same reason
    the fields may be given in order (a positional call costs half a keyword one). A hit is a
    copy; changing it changes nothing in the index.
    """

    path: str
    """Workspace path of the file."""
    start_line: int
    end_line: int
    """1-based, inclusive line range of the chunk in the document's text."""
    snippet: str
    """The chunk's text, cut to a few hundred characters."""
    score: float
    """Higher is better; BM25 scores, cosine similarity or fused scores depending on mode."""
    chunk_id: str
    doc_id: str
    section: str = ""
    """Heading path of the chunk (``"Setup > Install"``)."""
    title: str | None = None
    labels: Labels = _PUBLIC
    related_to: str | None = None
    """Set when the hit was added by following a relation from this hit path."""

    def format(self) -> str:
        """``path:start-end (score) snippet`` on one line."""
        head = f"{self.path}:{self.start_line}-{self.end_line} ({self.score:.3f})"
        if self.related_to:
            head += f" [related to {self.related_to}]"
        return f"{head} {' '.join(self.snippet.split())[:160]}"


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResult:
    """The hits of one query, best first."""

    query: str
    mode: str
    hits: tuple[SearchHit, ...]

    def __len__(self) -> int:
        return len(self.hits)

    def format(self) -> str:
        return "\n".join(hit.format() for hit in self.hits) or "(no results)"
