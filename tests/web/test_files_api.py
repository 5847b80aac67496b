"""What the Files tab reads beyond the plain file operations, over real HTTP: a document's
labels (``stat``) and a PDF's or Word file's text (``read`` with ``format=document``), for a
principal who may read the document and one who may not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bastion.server.demo import demo_app
from server.support import running

FIXTURES = Path(__file__).resolve().parents[1] / "knowledge" / "fixtures" / "ingest"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running(demo_app(tmp_path_factory.mktemp("demo"))) as url:
        yield url


def _client(site: str, user: str) -> httpx.Client:
    token = httpx.post(f"{site}/v1/auth/demo", json={"user": user}).json()["token"]
    return httpx.Client(base_url=site, headers={"Authorization": f"Bearer {token}"})


def test_stat_answers_a_documents_labels_to_who_may_read_it(site: str) -> None:
    with _client(site, "mei") as mei, _client(site, "ana") as ana:
        seen = mei.get("/v1/files/stat", params={"path": "/larkspur/hr/salary-bands.md"})
        assert seen.status_code == 200
        assert seen.json()["labels"] == {
            "tenant": "larkspur",
            "classification": "confidential",
            "roles": ["hr"],
            "tags": ["compensation"],
        }
        folder = mei.get("/v1/files/stat", params={"path": "/larkspur/hr"}).json()
        assert folder["kind"] == "directory" and folder["labels"] is None
        hidden = ana.get("/v1/files/stat", params={"path": "/larkspur/hr/salary-bands.md"})
        missing = ana.get("/v1/files/stat", params={"path": "/larkspur/hr/nothing.md"})
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["error"]["code"] == missing.json()["error"]["code"]
        assert "compensation" not in hidden.text


def test_a_pdf_reads_as_its_text_in_pages_of_lines(site: str) -> None:
    pdf = (FIXTURES / "report.pdf").read_bytes()
    with _client(site, "lena") as lena, _client(site, "gus") as gus:
        files = {"file": ("review.pdf", pdf, "application/pdf")}
        assert lena.post("/v1/ingest", data={"path": "/uploads"}, files=files).status_code == 201
        whole = lena.get(
            "/v1/files/read", params={"path": "/uploads/review.pdf", "format": "document"}
        )
        assert whole.status_code == 200
        text = whole.json()["content"]
        assert text.startswith("Quarterly Security Review\n")
        page = lena.get(
            "/v1/files/read",
            params={"path": "/uploads/review.pdf", "format": "document", "offset": 1, "limit": 2},
        ).json()["content"]
        assert page == "".join(text.splitlines(keepends=True)[1:3])
        raw = lena.get("/v1/files/read", params={"path": "/uploads/review.pdf", "format": "bytes"})
        assert raw.content == pdf
        # A Markdown file read as a document is its text; gus (public clearance) cannot read
        # the internal upload at all: the same answer as for a name that is not there.
        note = lena.get(
            "/v1/files/read",
            params={"path": "/larkspur/handbook/travel-and-expenses.md", "format": "document"},
        )
        assert note.status_code == 200 and note.json()["content"]
        hidden = gus.get(
            "/v1/files/read", params={"path": "/uploads/review.pdf", "format": "document"}
        )
        missing = gus.get(
            "/v1/files/read", params={"path": "/uploads/none.pdf", "format": "document"}
        )
        assert hidden.status_code == missing.status_code == 404
        assert "Quarterly" not in hidden.text
