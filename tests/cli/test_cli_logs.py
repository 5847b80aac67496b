"""Log lines of libraries go to stderr through logging, at the level -q/-v choose."""

from __future__ import annotations

import logging

import pytest

from bastion.cli.logs import configure_logging, reset_logging


def test_library_log_lines_reach_stderr_by_level(capsys: pytest.CaptureFixture[str]) -> None:
    before = logging.getLogger().level
    pdf = logging.getLogger("pypdf._reader")
    try:
        configure_logging(0, quiet=False)
        pdf.warning("incorrect startxref pointer(1)")
        pdf.info("not shown without -v")
        configure_logging(1, quiet=False)
        logging.getLogger("bastion.knowledge.routing").info("shown with -v")
        configure_logging(0, quiet=True)
        pdf.warning("not shown with -q")
    finally:
        reset_logging()
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "WARNING pypdf._reader: incorrect startxref pointer(1)",
        "INFO bastion.knowledge.routing: shown with -v",
    ]
    assert logging.getLogger().level == before
