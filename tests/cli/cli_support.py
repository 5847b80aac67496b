"""Helpers of the command-line tests (the fixtures are in ``conftest.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from click.testing import Result

Run = Callable[..., Result]


def as_json(result: Result) -> Any:
    """The command's stdout, read as JSON."""
    return json.loads(result.stdout)


def error_of(result: Result) -> Any:
    """The command's stderr, read as the JSON error object."""
    return json.loads(result.stderr)
