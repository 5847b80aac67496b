"""The audit export's formula guard (admin.js ``csvCell``), run in Chromium: a cell a
spreadsheet would run as a formula is written as text, and every value round-trips through
a CSV reader (quotes, commas, line breaks, a path named like a formula)."""

from __future__ import annotations

import csv
import io

from playwright.sync_api import Browser

FORMULAS = ["=1+1", "+SUM(A1:A9)", "-2+3", "@cmd", "\tleading tab", "\rleading return"]
PLAIN = [
    '/reports/=HYPERLINK("http://evil").md',  # a path: it starts with / and stays as it is
    '/a, b/"quoted".md',
    "line one\nline two",
    "mei",
    "",
    "2026-01-01T00:00:00.000Z",
]


def _cells(browser: Browser, site: str, values: list[str]) -> list[str]:
    page = browser.new_page()
    try:
        page.goto(site)
        return list(
            page.evaluate(
                "async (values) => { const { csvCell } = await import('/static/admin.js');"
                " return values.map(csvCell); }",
                values,
            )
        )
    finally:
        page.close()


def test_a_formula_is_written_as_text(browser: Browser, site: str) -> None:
    cells = _cells(browser, site, FORMULAS)
    row = next(csv.reader(io.StringIO(",".join(cells) + "\r\n", newline="")))
    assert row == ["'" + v for v in FORMULAS]
    assert not any(cell.lstrip('"').startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells)


def test_other_values_round_trip_unchanged(browser: Browser, site: str) -> None:
    cells = _cells(browser, site, PLAIN)
    row = next(csv.reader(io.StringIO(",".join(cells) + "\r\n", newline="")))
    assert row == PLAIN
    assert cells[0] == PLAIN[0].replace('"', '""').join('""')  # quoted: it holds a quote
    assert cells[3] == "mei"  # nothing to quote: as it is
