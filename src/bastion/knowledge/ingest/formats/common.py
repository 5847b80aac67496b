"""The adapter edge: failures inside third-party parsers become one ParseError."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bastion.knowledge.ingest.errors import IngestError, ParseError

__all__ = ["translated"]


@contextmanager
def translated(where: str, kind: str, *known: tuple[type[BaseException], str]) -> Iterator[None]:
    """Turn any exception raised in the block into a :class:`ParseError` about ``where``.

    Malformed input can raise nearly anything inside a parser (``KeyError``, ``struct.error``,
    ``zlib.error``, ``AssertionError``...), so the net is wide on purpose. ``known`` maps an
    exception type to a more helpful message tail. The message names the file and the
    exception's type, never the bytes; the original stays chained for developers' logs.
    """
    try:
        yield
    except IngestError:
        raise
    except RecursionError as exc:
        raise ParseError(path=where, reason=f"the {kind} is nested too deeply to read") from exc
    except Exception as exc:  # any type: see docstring
        for error_type, tail in known:
            if isinstance(exc, error_type):
                raise ParseError(f"{where} {tail}", path=where) from exc
        raise ParseError(
            f"{where} is not a readable {kind} ({type(exc).__name__}); check the file",
            path=where,
        ) from exc
