"""Where a bench's report goes: ``bench/results/<name>-<stamp>.md`` (and ``.json``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def save_report(name: str, text: str, data: Any = None, folder: Path = RESULTS) -> Path:
    """Write ``text`` (and ``data`` as JSON, when given) under a time stamp; the ``.md`` path."""
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    report = base.with_suffix(".md")
    report.write_text(text + "\n", encoding="utf-8")
    if data is not None:
        base.with_suffix(".json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    return report
