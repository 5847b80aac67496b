"""A hostile principal against ``stat``'s labels, sidecar writes and ``read`` with
``format=document``, over real HTTP on the demo server: a hidden document and its sidecar
answer as missing ones do; labels are never loosened without the ``label`` permission, by any
route that writes, moves, copies, uploads or deletes a sidecar; a malformed PDF or DOCX, a zip
bomb and a file over the read limit are one-line refusals that quote nothing of the file."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bastion.server.demo import demo_app
from server.support import running

from .people import demo_token

FIXTURES = Path(__file__).resolve().parents[1] / "knowledge" / "fixtures" / "ingest"
SECRET = "QUILLWORT-7731"
HIDDEN = "/uploads/board-memo.md"
MEMO = f"---\nclassification: restricted\nroles: [legal]\n---\n# Board memo\n\n{SECRET}\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def site(folder: Path) -> Iterator[str]:
    with running(demo_app(folder)) as url:
        lena = _as(url, "lena")
        assert lena.post("/v1/files/write", json={"path": HIDDEN, "content": MEMO}).status_code
        side = {"path": HIDDEN + ".labels.yaml", "content": "tags: [board]\n"}
        assert lena.post("/v1/files/write", json=side).status_code == 201
        lena.close()
        yield url


def _as(site: str, user: str) -> httpx.Client:
    bearer = {"Authorization": f"Bearer {demo_token(site, user)}"}
    return httpx.Client(base_url=site, timeout=60, headers=bearer)


def _answer(r: httpx.Response, path: str) -> tuple[int, str]:
    return r.status_code, r.text.replace(path, "PATH")


def _stat(client: httpx.Client, path: str) -> Any:
    return client.get("/v1/files/stat", params={"path": path})


@pytest.mark.parametrize("suffix", ["", ".labels.yaml", ".labels.yaml.labels.yaml"])
def test_a_hidden_document_and_its_sidecars_answer_as_missing_ones(site: str, suffix: str) -> None:
    hidden, missing = HIDDEN + suffix, "/uploads/no-such-memo.md" + suffix
    with _as(site, "ana") as ana:
        for call in (
            lambda p: ana.get("/v1/files/stat", params={"path": p}),
            lambda p: ana.get("/v1/files/read", params={"path": p}),
            lambda p: ana.get("/v1/files/read", params={"path": p, "format": "document"}),
            lambda p: ana.get("/v1/files/read", params={"path": p, "format": "bytes"}),
        ):
            seen, absent = call(hidden), call(missing)
            assert _answer(seen, hidden) == _answer(absent, missing)
            assert seen.status_code == 404
            assert SECRET not in seen.text and "restricted" not in seen.text
            assert "board" not in seen.text.replace(hidden, "")


def test_a_sidecar_write_of_a_hidden_document_changes_nothing_and_tells_no_labels(
    site: str,
) -> None:
    sidecar = HIDDEN + ".labels.yaml"
    with _as(site, "ana") as ana, _as(site, "lena") as lena:
        before = _stat(lena, HIDDEN).json()["labels"]
        version = _stat(lena, sidecar).json()["version"]
        for body in (
            {"path": sidecar, "content": "classification: public\n"},
            {"path": sidecar, "content": "classification: restricted\nroles: [legal]\n"},
            {"path": sidecar, "content": "tags: [x]\n", "mode": "append"},
        ):
            r = ana.post("/v1/files/write", json=body)
            # a change onto a hidden name: refused as a write of the document itself would be
            assert r.status_code == 403, r.text
            assert r.json()["error"]["message"] == f"write on {sidecar} is not allowed by policy"
            told = r.text.replace(sidecar, "PATH")
            assert "restricted" not in told and "legal" not in told and "board" not in told
        assert ana.post("/v1/files/delete", json={"path": sidecar}).status_code == 404
        assert _stat(lena, HIDDEN).json()["labels"] == before
        assert _stat(lena, sidecar).json()["version"] == version


def test_labels_are_never_loosened_without_the_label_permission(site: str) -> None:
    doc, sidecar = "/uploads/plan.md", "/uploads/plan.md.labels.yaml"
    strict = {"tenant": None, "classification": "confidential", "roles": ["legal"], "tags": []}
    with _as(site, "lena") as lena:
        assert lena.post("/v1/files/write", json={"path": doc, "content": "# Plan\n"}).is_success
        tighten = {"path": sidecar, "content": "classification: confidential\nroles: [legal]\n"}
        assert lena.post("/v1/files/write", json=tighten).status_code == 201
        assert _stat(lena, doc).json()["labels"] == strict
        loose = "classification: public\n"
        assert lena.post("/v1/files/write", json={"path": "/uploads/loose.txt", "content": loose})
        attempts = [
            lena.post("/v1/files/write", json={"path": sidecar, "content": loose}),
            lena.post("/v1/files/write", json={"path": sidecar, "content": "tags: [x]\n"}),
            lena.post(
                "/v1/files/edit", json={"path": sidecar, "old": "confidential", "new": "public"}
            ),
            lena.post("/v1/files/edit", json={"path": sidecar, "old": "roles: [legal]", "new": ""}),
            lena.post("/v1/files/delete", json={"path": sidecar}),
            lena.post("/v1/files/move", json={"src": sidecar, "dst": "/uploads/elsewhere.yaml"}),
            lena.post(
                "/v1/files/copy",
                json={"src": "/uploads/loose.txt", "dst": sidecar, "overwrite": True},
            ),
            lena.post(
                "/v1/files/move",
                json={"src": "/uploads/loose.txt", "dst": sidecar, "overwrite": True},
            ),
            lena.post(
                "/v1/ingest",
                data={"path": "/uploads", "overwrite": "true"},
                files={"file": ("plan.md.labels.yaml", loose.encode(), "application/yaml")},
            ),
        ]
        for r in attempts:
            assert r.status_code in (403, 409), r.text
            assert r.json()["error"]["code"] in ("policy_denied", "already_exists"), r.text
        assert sum(r.json()["error"]["code"] == "policy_denied" for r in attempts) >= 8
        assert _stat(lena, doc).json()["labels"] == strict
        # moving the document takes its sidecar (and so its labels) with it
        moved = lena.post("/v1/files/move", json={"src": doc, "dst": "/uploads/plan-2.md"})
        assert moved.status_code == 200, moved.text
        assert _stat(lena, "/uploads/plan-2.md").json()["labels"] == strict


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def _bomb() -> bytes:
    """A DOCX whose one extra part unpacks to 201 MiB of zeros (about 200 KiB packed)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", "<a/>")
        with archive.open("word/media.xml", "w") as part:
            zeros = b"\0" * (1 << 20)
            for _ in range(201):
                part.write(zeros)
    return out.getvalue()


def _broken() -> dict[str, tuple[bytes, str]]:
    """Name -> (bytes, the one-line refusal after the path)."""
    report = (FIXTURES / "report.pdf").read_bytes()
    pdf = " is not a readable PDF (PdfStreamError); check the file"
    return {
        "header.pdf": (b"%PDF-1.7\n", pdf),
        "half.pdf": (report[: len(report) // 2], pdf),
        "junk.pdf": (f"%PDF-1.4\n{SECRET} ".encode() * 50, pdf),
        "broken.docx": (b"PK\x03\x04" + SECRET.encode(), " is not a valid DOCX (broken zip)"),
        "other.docx": (
            _zip({"notes.txt": SECRET.encode()}),
            " is a zip but not a DOCX (no word/document.xml); check the file",
        ),
        "badxml.docx": (
            _zip({"word/document.xml": f"<w:document {SECRET}".encode()}),
            " is not a readable DOCX (KeyError); check the file",
        ),
        "bomb.docx": (_bomb(), ": the DOCX unpacks to over 200 MiB (zip bomb?); not ingested"),
    }


def test_a_document_that_cannot_be_read_is_a_one_line_refusal(site: str, folder: Path) -> None:
    broken = _broken()
    for name, (data, _) in broken.items():  # arrived from outside, as a restored backup does
        (folder / "uploads" / name).write_bytes(data)
    with _as(site, "lena") as lena:
        for name, (_, told) in broken.items():
            path = f"/uploads/{name}"
            r = lena.get("/v1/files/read", params={"path": path, "format": "document"})
            assert r.status_code == 422, (name, r.text)
            assert r.json() == {"error": {"code": "unsupported_file", "message": path + told}}
            assert SECRET not in r.text


def test_a_text_file_named_as_a_document_reads_as_its_text(site: str, folder: Path) -> None:
    (folder / "uploads" / "plain.pdf").write_bytes(b"just words, named .pdf\n")
    with _as(site, "lena") as lena:
        r = lena.get("/v1/files/read", params={"path": "/uploads/plain.pdf", "format": "document"})
        assert r.status_code == 200 and r.json()["content"] == "just words, named .pdf"


def test_a_file_over_the_read_limit_is_refused_before_it_is_parsed(site: str, folder: Path) -> None:
    with (folder / "uploads" / "huge.pdf").open("wb") as out:
        out.write(b"%PDF-1.4\n")
        out.truncate(11 * 1024 * 1024)
    with _as(site, "lena") as lena:
        r = lena.get("/v1/files/read", params={"path": "/uploads/huge.pdf", "format": "document"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "limit_exceeded"
    assert len(r.content) < 1000


def _docx_of(paragraphs: list[str]) -> bytes:
    """A DOCX made by python-docx, its body replaced by ``paragraphs`` (fast to write)."""
    import docx

    out = io.BytesIO()
    docx.Document().save(out)
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    xml = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f"<w:body>{body}</w:body></w:document>"
    )
    packed = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(out.getvalue())) as source,
        zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for item in source.infolist():
            data = xml.encode() if item.filename == "word/document.xml" else source.read(item)
            target.writestr(item.filename, data)
    return packed.getvalue()


def test_a_documents_text_past_the_read_limit_is_read_in_pages(site: str, folder: Path) -> None:
    """A small DOCX whose text is over the 10 MiB read limit: refused whole, read in pages."""
    line = "plover " * 1500
    data = _docx_of([f"{n} {line}" for n in range(1100)])
    assert len(data) < 1024 * 1024  # packed: the file itself is small
    (folder / "uploads" / "long.docx").write_bytes(data)
    with _as(site, "lena") as lena:
        whole = lena.get(
            "/v1/files/read", params={"path": "/uploads/long.docx", "format": "document"}
        )
        page = lena.get(
            "/v1/files/read",
            params={"path": "/uploads/long.docx", "format": "document", "limit": 3},
        )
    assert whole.status_code == 413 and len(whole.content) < 1000
    assert whole.json()["error"] == {
        "code": "limit_exceeded",
        "message": "/uploads/long.docx: the document's lines asked for are over the "
        "10485760-byte read limit; ask for fewer lines (limit=...)",
    }
    assert page.status_code == 200
    assert page.json()["content"].startswith("0 plover plover")
