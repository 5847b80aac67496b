"""Load a BEIR-format retrieval dataset: a corpus, queries and graded relevance judgements.

A BEIR dataset is one folder::

    corpus.jsonl        {"_id": "d1", "title": "...", "text": "...", "metadata": {...}} per line
    queries.jsonl       {"_id": "q1", "text": "..."} per line
    qrels/<split>.tsv   "query-id<TAB>corpus-id<TAB>score", a header line first (LF or CRLF)

:func:`load_dataset` reads the judgements of one split and the queries they judge (both small)
and checks that the corpus file is there; the corpus itself is read only on demand, one line at
a time (:meth:`BeirDataset.iter_corpus`), or whole (:meth:`BeirDataset.load_corpus`).

Malformed input raises :class:`DatasetError`, a :class:`~bastion.core.errors.ConfigurationError`
whose one-line message names the file and the line: ``corpus.jsonl:12: invalid JSON (...)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bastion.core.errors import ConfigurationError

__all__ = [
    "BeirDataset",
    "DatasetError",
    "Document",
    "iter_corpus",
    "load_corpus",
    "load_dataset",
    "load_qrels",
    "load_queries",
]

_SPLIT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_QRELS_HEADER = "query-id"


class DatasetError(ConfigurationError):
    """A dataset file is missing or malformed; the message names the file and the line."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Document:
    """One corpus entry."""

    doc_id: str
    """The ``_id`` of the line."""
    title: str = ""
    """The title; ``""`` when the line has none."""
    text: str
    """The body text."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """The line's ``metadata`` object, as read (``{}`` when absent)."""

    @property
    def title_and_text(self) -> str:
        """``title + " " + text``, stripped: what BEIR models embed for a document."""
        return f"{self.title} {self.text}".strip()


@dataclass(frozen=True, kw_only=True, slots=True)
class BeirDataset:
    """One split of a BEIR dataset: its judged queries and judgements; the corpus on demand."""

    name: str
    """The dataset's name (by default the folder's name, e.g. ``scifact``)."""
    root: Path
    """The dataset folder."""
    split: str
    """The qrels split evaluated (``test``, ``dev``, ``train``...)."""
    queries: Mapping[str, str]
    """query id -> text, only the queries judged in the split, in ``queries.jsonl`` order."""
    qrels: Mapping[str, Mapping[str, int]]
    """query id -> {doc id: grade}, every row of ``qrels/<split>.tsv`` (grade 0 included)."""

    @property
    def corpus_path(self) -> Path:
        """The corpus file, ``<root>/corpus.jsonl``."""
        return self.root / "corpus.jsonl"

    def iter_corpus(self) -> Iterator[Document]:
        """Stream the corpus, one document per line, in file order (re-reads the file)."""
        return iter_corpus(self.corpus_path)

    def load_corpus(self) -> dict[str, Document]:
        """The whole corpus, doc id -> document, in file order; duplicate ids are an error."""
        return load_corpus(self.corpus_path)


def load_dataset(root: Path | str, *, split: str = "test", name: str | None = None) -> BeirDataset:
    """Read the judgements of ``split`` and the queries they judge; check the corpus exists.

    Every query id in the qrels must be in ``queries.jsonl``. Queries without judgements in
    the split are not kept. Raises :class:`DatasetError` for a missing or malformed file and
    :class:`~bastion.core.errors.ConfigurationError` for an unusable split name.
    """
    folder = Path(root)
    if not _SPLIT.fullmatch(split):
        raise ConfigurationError(
            f"split {split!r} is not a plain name; use one like 'test', 'dev' or 'train'"
        )
    if not folder.is_dir():
        raise DatasetError(f"{folder}: dataset folder not found")
    corpus = folder / "corpus.jsonl"
    if not corpus.is_file():
        raise DatasetError(f"{corpus}: file not found; a BEIR dataset needs corpus.jsonl")
    qrels_path = folder / "qrels" / f"{split}.tsv"
    qrels = load_qrels(qrels_path)
    if not qrels:
        raise DatasetError(f"{qrels_path}: no judgements; nothing to evaluate")
    queries_path = folder / "queries.jsonl"
    queries = load_queries(queries_path, only=qrels.keys())
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise DatasetError(
            f"{qrels_path}: {len(missing)} judged query id(s) not in {queries_path.name}, "
            f"first {missing[0]!r}"
        )
    return BeirDataset(
        name=name if name is not None else folder.resolve().name,
        root=folder,
        split=split,
        queries=MappingProxyType(queries),
        qrels=MappingProxyType({qid: MappingProxyType(docs) for qid, docs in qrels.items()}),
    )


def iter_corpus(path: Path | str) -> Iterator[Document]:
    """Stream ``corpus.jsonl``: one :class:`Document` per non-blank line, in file order."""
    for _, doc in _documents(Path(path)):
        yield doc


def load_corpus(path: Path | str) -> dict[str, Document]:
    """The whole ``corpus.jsonl``, doc id -> document in file order; a repeated id is an error."""
    file = Path(path)
    docs: dict[str, Document] = {}
    for lineno, doc in _documents(file):
        if doc.doc_id in docs:
            raise DatasetError(f"{file}:{lineno}: document id {doc.doc_id!r} appears twice")
        docs[doc.doc_id] = doc
    return docs


def load_queries(path: Path | str, *, only: Container[str] | None = None) -> dict[str, str]:
    """``queries.jsonl`` as query id -> text, in file order; ``only`` keeps just those ids."""
    file = Path(path)
    queries: dict[str, str] = {}
    for lineno, obj in _json_lines(file):
        qid = _id_of(obj, file, lineno)
        text = _str_field(obj, "text", file, lineno)
        if qid in queries:
            raise DatasetError(f"{file}:{lineno}: query id {qid!r} appears twice")
        if only is None or qid in only:
            queries[qid] = text
    return queries


def load_qrels(path: Path | str) -> dict[str, dict[str, int]]:
    """``qrels/<split>.tsv`` as query id -> {doc id: grade}; LF or CRLF, header line optional.

    A pair listed twice with the same grade is kept once; with two grades it is an error.
    """
    file = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in _lines(file):
        fields = line.split("\t")
        if lineno == 1 and fields[0] == _QRELS_HEADER:
            continue
        if len(fields) != 3:
            raise DatasetError(
                f"{file}:{lineno}: expected 3 tab-separated fields "
                f"(query-id, corpus-id, score), found {len(fields)}"
            )
        qid, did, raw_grade = (f.strip() for f in fields)
        if not qid or not did:
            raise DatasetError(f"{file}:{lineno}: empty query-id or corpus-id")
        try:
            grade = int(raw_grade)
        except ValueError:
            raise DatasetError(f"{file}:{lineno}: score {raw_grade!r} is not an integer") from None
        judged = qrels.setdefault(qid, {})
        if judged.get(did, grade) != grade:
            raise DatasetError(
                f"{file}:{lineno}: pair ({qid!r}, {did!r}) judged twice with different scores"
            )
        judged[did] = grade
    return qrels


def _lines(file: Path) -> Iterator[tuple[int, str]]:
    """Non-blank lines without their line end, numbered from 1; I/O errors become DatasetError.

    Bytes are decoded one line at a time, so a bad byte is reported on its own line.
    """
    try:
        with file.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    raise DatasetError(f"{file}:{lineno}: not valid UTF-8") from None
                if lineno == 1:
                    line = line.removeprefix("\ufeff")
                if line.strip():
                    yield lineno, line
    except FileNotFoundError:
        raise DatasetError(f"{file}: file not found") from None
    except IsADirectoryError:
        raise DatasetError(f"{file}: is a directory, expected a file") from None
    except OSError as exc:
        raise DatasetError(f"{file}: cannot be read ({exc.strerror or exc})") from exc


def _documents(file: Path) -> Iterator[tuple[int, Document]]:
    for lineno, obj in _json_lines(file):
        metadata = obj.get("metadata", {})
        if not isinstance(metadata, dict):
            raise DatasetError(f'{file}:{lineno}: "metadata" must be a JSON object')
        yield (
            lineno,
            Document(
                doc_id=_id_of(obj, file, lineno),
                title=_str_field(obj, "title", file, lineno, default=""),
                text=_str_field(obj, "text", file, lineno),
                metadata=metadata,
            ),
        )


def _json_lines(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in _lines(file):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{file}:{lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{file}:{lineno}: expected a JSON object")
        yield lineno, obj


def _id_of(obj: Mapping[str, Any], file: Path, lineno: int) -> str:
    value = obj.get("_id")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise DatasetError(f'{file}:{lineno}: missing "_id" (a non-empty string)')
    return value


def _str_field(
    obj: Mapping[str, Any], key: str, file: Path, lineno: int, *, default: str | None = None
) -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        missing = value is None and key not in obj
        what = "missing" if missing else "must be a string"
        raise DatasetError(f'{file}:{lineno}: "{key}" {what}')
    return value
