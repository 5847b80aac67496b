"""Fixtures of the sandbox tests (helpers are in ``sandbox_support.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def full_load() -> Iterator[None]:
    """Two processes burning CPU per core for the whole test (the old kill, process by
    process, let a shell print ``done`` in about 1 run in 40 under this load)."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 2))
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
        for burner in burners:
            burner.wait()
