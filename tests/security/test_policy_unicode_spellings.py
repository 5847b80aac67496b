"""Policy data means what it says however it is spelt: a rule or a blocked segment written in
NFD applies to the NFC name, and every bidirectional control is refused in a name.

Bugs found by the security suite (once ``test_found_bugs.py``); each test's docstring says what
went wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from security_stores import caught, seed

from bastion.core.errors import InvalidPathError, LimitError, NotFoundError
from bastion.core.mounts import Mount
from bastion.core.paths import VPath
from bastion.core.policy import FileLimits, Policy, Rule
from bastion.core.ports import Store
from bastion.workspace import Workspace

# -- policy data that does not mean what it says --------------------------------------------


async def test_a_rule_written_in_nfd_still_applies(make_store: Callable[[str], Store]) -> None:
    """Paths are NFC-normalized but rule patterns are not: a deny rule typed as ``cafe`` +
    U+0301 (as macOS file names and some editors produce) never matches the NFC path
    ``/docs/café/...``, so the protected file is readable."""
    docs = make_store("docs")
    await seed(docs, {"/caf\u00e9/menu.txt": "TOPSECRET menu"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy(rules=(Rule.deny("*", "/docs/cafe\u0301/**"), Rule.allow("*", "/**"))),
    )
    exc = await caught(ws.read_text("/docs/caf\u00e9/menu.txt"))
    assert isinstance(exc, NotFoundError)
    assert await ws.list("/docs") == []


async def test_a_blocked_segment_written_in_nfd_still_blocks(
    make_store: Callable[[str], Store],
) -> None:
    """Blocked segments are case-folded but not NFC-normalized, so ``re\u0301sume\u0301``
    in the policy never blocks the NFC name ``résumé``."""
    docs = make_store("docs")
    await seed(docs, {"/r\u00e9sum\u00e9/cv.txt": "TOPSECRET cv"})
    ws = Workspace(
        [Mount.of("/docs", docs)],
        policy=Policy.allow_all(
            limits=FileLimits(blocked_segments=frozenset({"re\u0301sume\u0301"}))
        ),
    )
    exc = await caught(ws.read_text("/docs/r\u00e9sum\u00e9/cv.txt"))
    assert isinstance(exc, NotFoundError)
    exc = await caught(ws.write("/docs/r\u00e9sum\u00e9/new.txt", "x"))
    assert isinstance(exc, LimitError)


def test_arabic_letter_mark_is_refused_like_the_other_bidi_controls() -> None:
    """U+061C ARABIC LETTER MARK has the Unicode Bidi_Control property like LRM and RLM
    (which are refused), but is missing from the refused set, so it can reorder how a name
    is displayed."""
    with pytest.raises(InvalidPathError):
        VPath.parse("/docs/report\u061c.txt")
