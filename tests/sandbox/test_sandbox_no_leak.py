"""The no-leak proof, extended to the sandbox: a command sees exactly what the guarded read
paths show, as random principals over randomly labelled documents.

Hypothesis draws a world (ideas from ``tests/governance/test_no_leak_randomized.py``): a tenant
mount, a shared read-only mount, a read-only local folder (bound from the host when it hides
nothing, copied otherwise), a write-only drop box and a scratch mount; documents with labels
from the mount, Markdown front matter and ``<name>.labels.yaml`` sidecars, some in ``locked``
folders a policy rule hides from interns, one always ``restricted``; principals with a tenant,
roles and a clearance below ``restricted``. Every document carries its own canary (``cnry07x``)
and a file name found nowhere else (``memo07q``).

For each principal, inside the sandbox: ``ls /`` and ``find <mounts> -type f``, ``cat`` of every
document and sidecar by name (visible or not), and ``grep -rn cnry``; the test asserts they
give exactly the files, contents and lines of the guarded ``list(recursive)``, ``read_bytes``
and ``grep``; that a hidden name fails like a name that never existed; and that no canary or
name of a document the principal may not read, nor a hidden mount's name, is in any output.

Real bubblewrap, real processes, a real local folder. Derandomized, few examples (each runs
three commands per principal); skipped only where bubblewrap cannot run here.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sandbox_support import require_bwrap

from bastion import (
    Labels,
    LocalStore,
    MemoryStore,
    Mount,
    NotFoundError,
    Policy,
    Principal,
    Rule,
    Workspace,
)
from bastion.core.paths import VPath
from bastion.sandbox.bwrap import SYSTEM_NAMES

pytestmark = pytest.mark.usefixtures("bwrap")


@pytest.fixture
def bwrap() -> None:
    require_bwrap()


LEVELS = ("public", "internal", "confidential", "restricted")
ROLES = ("staff", "hr", "eng", "intern")
TENANT = "/acme"
SHARED = "/shared"
CORPUS = "/corpus"
DROPBOX = "/drop"
SCRATCH = "/scratch"
HOLDERS = (TENANT, SHARED, CORPUS, CORPUS, SCRATCH)
FOLDERS = ("", "d0", "locked")

POLICY = Policy(
    rules=(
        Rule.deny("*", "/**/locked/**", roles={"intern"}, description="locked folders"),
        Rule.allow("execute", "/**"),
        Rule.allow("*", "/**"),
    )
)


@dataclass(frozen=True)
class Doc:
    n: int
    mount: str
    folder: str
    ext: str
    front: str | None
    """Front matter lines (Markdown only)."""
    sidecar: str | None

    @property
    def canary(self) -> str:
        return f"cnry{self.n:02d}x"

    @property
    def stem(self) -> str:
        return f"memo{self.n:02d}q"

    @property
    def path(self) -> str:
        folder = f"{self.mount}/{self.folder}" if self.folder else self.mount
        return f"{folder}/{self.stem}{self.ext}"

    def text(self) -> str:
        head = f"---\n{self.front}---\n" if self.front is not None else ""
        return f"{head}# Memo {self.canary}\n\nThe {self.canary} figure is {self.n} units.\n"


@dataclass(frozen=True)
class World:
    tenant_level: str
    shared_level: str
    docs: tuple[Doc, ...]
    principals: tuple[Principal, ...]


def _labels(level: str | None, roles: list[str]) -> str:
    lines = [f"classification: {level}\n"] if level is not None else []
    if roles:
        lines.append(f"roles: [{', '.join(roles)}]\n")
    return "".join(lines) or "tags: [ops]\n"


LABELS = st.builds(
    _labels,
    st.sampled_from((None, None, *LEVELS)),
    st.lists(st.sampled_from(ROLES), max_size=2, unique=True),
)


@st.composite
def worlds(draw: st.DrawFn) -> World:
    docs = []
    for n in range(draw(st.integers(3, 8))):
        ext = draw(st.sampled_from((".md", ".md", ".txt")))
        docs.append(
            Doc(
                n=n,
                mount=draw(st.sampled_from(HOLDERS)),
                folder=draw(st.sampled_from(FOLDERS)),
                ext=ext,
                front=draw(st.none() | LABELS) if ext == ".md" else None,
                sidecar=draw(st.none() | LABELS),
            )
        )
    # one document nobody drawn here may read (every clearance is below restricted)
    restricted = _labels("restricted", [])
    docs.append(Doc(len(docs), draw(st.sampled_from(HOLDERS)), "", ".txt", None, restricted))
    principal = st.builds(
        lambda i, tenant, roles, level: Principal.of(
            f"p{i}", tenant=tenant, roles=roles, clearance=level
        ),
        st.integers(0, 99),
        st.sampled_from(("acme", "acme", "globex")),
        st.lists(st.sampled_from(ROLES), max_size=2, unique=True),
        st.sampled_from(LEVELS[:3]),
    )
    return World(
        draw(st.sampled_from(("public", "internal"))),
        draw(st.sampled_from(("public", "internal"))),
        tuple(docs),
        tuple(draw(st.lists(principal, min_size=2, max_size=2))),
    )


async def build(world: World, folder: Path) -> tuple[Workspace, dict[str, str]]:
    """The world's workspace and every file written (documents and sidecars, by path)."""
    stores = {TENANT: MemoryStore(), SHARED: MemoryStore(), SCRATCH: MemoryStore()}
    files: dict[str, str] = {}
    for doc in world.docs:
        texts = {doc.path: doc.text()}
        if doc.sidecar is not None:
            texts[doc.path + ".labels.yaml"] = doc.sidecar
        files.update(texts)
        for path, text in texts.items():
            inner = path[len(doc.mount) :]
            if doc.mount == CORPUS:  # a folder filled by others, readable by the sandbox user
                host = folder / inner.lstrip("/")
                host.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                host.parent.chmod(0o755)
                host.write_text(text)
                host.chmod(0o644)
            else:  # written by others straight into the store
                target = VPath.parse(inner)
                if not target.parent.is_root:
                    await stores[doc.mount].makedirs(target.parent)
                await stores[doc.mount].write(target, text.encode())
    ws = Workspace(
        [
            Mount.of(
                TENANT,
                stores[TENANT],
                labels=Labels(tenant="acme", classification=world.tenant_level),
            ),
            Mount.of(
                SHARED,
                stores[SHARED],
                scope="read_only",
                labels=Labels(classification=world.shared_level),
            ),
            Mount.of(CORPUS, LocalStore(folder), scope="read_only"),
            Mount.of(DROPBOX, MemoryStore(), scope="write_only"),
            Mount.of(SCRATCH, stores[SCRATCH]),
        ],
        policy=POLICY,
    )
    return ws, files


async def guarded(view: Workspace) -> tuple[set[str], dict[str, bytes], set[str]]:
    """What the guarded read paths show: top-level names, files with contents, grep lines."""
    try:
        entries = await view.list("/", recursive=True)
    except NotFoundError:
        entries = []
    tops = {e.path.parts[0] for e in entries}
    contents = {str(e.path): await view.read_bytes(e.path) for e in entries if e.is_file}
    lines: set[str] = set()
    if entries:
        found = await view.grep("cnry", "/", max_total=100_000)
        lines = {f"{m.path}:{m.line}:{m.text}" for m in found.matches if not m.is_context}
    return tops, contents, lines


CAT = (
    'for f; do if cat -- "$f" > /tmp/c 2> /tmp/e; then echo "$f OK $(base64 -w0 /tmp/c)";'
    ' else echo "$f ERR $(cat /tmp/e)"; fi; done'
)


async def check(ws: Workspace, world: World, files: dict[str, str], who: Principal) -> None:
    view = ws.with_principal(who)
    tops, contents, lines = await guarded(view)
    where = f"{who} in {world}"
    outputs: list[str] = []

    listing = await view.run(["ls", "-A", "/"])
    outputs.append(listing.stdout + listing.stderr)
    assert set(listing.stdout.split()) - SYSTEM_NAMES == tops, where

    prefixes = sorted(f"/{t}" for t in tops)
    found = await view.run(["find", *prefixes, "-type", "f"]) if prefixes else None
    if found is not None:
        outputs.append(found.stdout + found.stderr)
        assert found.exit_code == 0, (found.stderr, where)
        assert set(found.stdout.split()) == set(contents), where

    # every name, visible or not, and a twin of each that never existed
    names = sorted(files)
    twins = {name: name.replace("/memo", "/zzzz") for name in names}
    cat = await view.run(["/bin/sh", "-c", CAT, "sh", *names, *twins.values()])
    outputs.append(cat.stdout + cat.stderr)
    said = dict(line.split(" ", 1) for line in cat.stdout.splitlines())
    for name in names:
        if name in contents:
            assert said[name] == "OK " + base64.b64encode(contents[name]).decode(), where
        else:  # hidden: exactly as missing as a name that never existed
            assert said[name].replace(name, "<P>") == said[twins[name]].replace(
                twins[name], "<P>"
            ), where
            assert said[name].startswith("ERR "), where

    if prefixes:
        grep = await view.run(["grep", "-rn", "cnry", *prefixes])
        outputs.append(grep.stdout + grep.stderr)
        assert set(grep.stdout.splitlines()) == lines, where
        assert grep.stderr == "", where

    assert all(r.changed == () and r.refused == {} for r in (listing, cat)), where
    hidden = [d for d in world.docs if d.path not in contents]
    event(f"documents visible: {'some' if len(hidden) < len(world.docs) else 'none'}")
    event(f"documents hidden beside the restricted one: {'some' if len(hidden) > 1 else 'none'}")
    forbidden = {d.canary for d in hidden} | {d.stem for d in hidden}
    forbidden |= {p for p in (TENANT, SHARED, CORPUS) if p.lstrip("/") not in tops}
    blob = "\n".join(outputs)
    for name in [*names, *twins.values()]:  # the names the test gave cat come back as given
        blob = blob.replace(f"{name} ", " ").replace(f"{name}:", ":")
    leaked = sorted(token for token in forbidden if token in blob)
    assert not leaked, (leaked, where)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(worlds())
def test_the_sandbox_shows_exactly_the_guarded_view(world: World) -> None:
    base = Path(tempfile.mkdtemp(prefix="bastion-noleak-"))
    try:
        base.chmod(0o755)
        folder = base / "corpus"
        folder.mkdir(mode=0o755)

        async def run() -> None:
            ws, files = await build(world, folder)
            for who in world.principals:
                await check(ws, world, files, who)

        asyncio.run(run())
    finally:
        shutil.rmtree(base, ignore_errors=True)
