"""Secrets and keys: credentials with a recognisable shape, and password-like assignments.

Shapes (each a :attr:`PiiFinding.detail`): AWS access key ids (``AKIA``/``ASIA``... and 16
base-32 characters), GitHub tokens (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and
``github_pat_``), Slack tokens (``xoxb-``...) and webhook URLs, OpenAI-style keys (``sk-``,
``sk-proj-``...), JWTs (``eyJ...``.``eyJ...``.sig), and PEM private key blocks (``-----BEGIN
... PRIVATE KEY-----`` to its END line, or to the end of the base64 body when the END line was
cut off, as in a chunk).

Assignments: ``password=...``, ``api_key: ...``, ``client_secret = "..."`` and similar, when the
value looks like a real secret: at least 8 characters, at least two character classes
(lower, upper, digit, symbol), at least 3 bits of entropy per character, and not a
placeholder (``<...>``, ``${VAR}``, ``changeme``, ``xxxx``, ``os.environ[...]``). Only the value
is reported, so redaction keeps the key name readable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

from bastion.governance.guardrails.models import PiiFinding, PiiKind

__all__ = ["find_secrets", "looks_random"]

_SHAPES: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    # (detail, literals one of which must occur, pattern). Each pattern starts with its
    # literal prefix and looks behind it afterwards, so re jumps from prefix to prefix.
    (
        "aws-access-key",
        ("A",),
        re.compile(
            r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)(?<!\w.{4})"
            r"[A-Z2-7]{16}\b"
        ),
    ),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        re.compile(r"gh[pousr]_(?<!\w.{4})[A-Za-z0-9]{36,251}\b"),
    ),
    ("github-token", ("github_pat_",), re.compile(r"github_pat_(?<!\w.{11})\w{22,255}\b")),
    (
        "slack-token",
        ("xox",),
        re.compile(r"xox[abeoprs]-(?<!\w.{5})[A-Za-z0-9][A-Za-z0-9\-]{8,250}"),
    ),
    (
        "slack-webhook",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/services/[A-Z0-9]{8,12}/[A-Z0-9]{8,12}/\w{20,40}"),
    ),
    (
        "api-key",
        ("sk-",),
        re.compile(r"sk-(?<![\w\-]sk-)(?:[a-z]{2,8}-){0,2}[A-Za-z0-9_\-]{20,200}(?![\w\-])"),
    ),
    (
        "jwt",
        ("eyJ",),
        re.compile(
            r"eyJ(?<![\w\-]eyJ)[A-Za-z0-9_\-]{2,4096}\.eyJ[A-Za-z0-9_\-]{2,8192}\."
            r"[A-Za-z0-9_\-]{0,4096}(?![\w\-])"
        ),
    ),
)
_ASSIGNMENT_KEYS = ("pass", "pwd", "secret", "key", "token", "credential")

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,16} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(
    r"(?:[ \t]{0,8}\r?\n(?:[A-Za-z0-9+/=]{1,100}|[A-Za-z][A-Za-z\-]{0,19}: [^\r\n]{0,200})"
    r"[ \t]{0,8}(?=\r?\n|$)){0,512}"
)
_PEM_MAX = 16384

_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z0-9])"
    r"(?:password|passwd|passphrase|pwd|secret|secret[_\-]?key|client[_\-]?secret"
    r"|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|auth[_\-]?token"
    r"|access[_\-]?token|refresh[_\-]?token|bearer[_\-]?token|token|credentials?)"
    r"[\"']?[ \t]{0,3}(?::=|=>|[:=])[ \t]{0,3}"
    r"(?:\"([^\"\s]{8,200})\"|'([^'\s]{8,200})'|([^\s\"',;()\[\]{}<>]{8,200}))"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$|%|<|\{|\[|\*{3}|x{3}|\.{3})|changeme|example|placeholder|your[_\-]|redacted"
    r"|^[A-Za-z_][A-Za-z0-9_]{0,60}(?:\.[A-Za-z_][A-Za-z0-9_]{0,60}){1,8}$"
)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _random_token(value: str) -> bool:
    """A base-62 style key: digits, both cases, high entropy (``sk-learn-...`` is not)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and _entropy(value) >= 3.5
    )


def looks_random(value: str) -> bool:
    """True for a value that reads like a secret: long, mixed, high-entropy, no placeholder."""
    if len(value) < 8 or _PLACEHOLDER.search(value):
        return False
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    if classes < 2:
        return False
    if _IDENTIFIER.fullmatch(value) and not (
        any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
    ):
        return False  # `password = user_password`: a variable, not a value
    return _entropy(value) >= 3.0


def _pem_blocks(text: str) -> Iterator[tuple[int, int]]:
    """BEGIN/END pairs found in one pass each, so repeated BEGIN lines stay linear."""
    ends = [m.end() for m in _PEM_END.finditer(text)]
    at = 0
    after = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < after:
            continue
        while at < len(ends) and ends[at] <= begin.end():
            at += 1
        if at < len(ends) and ends[at] - begin.start() <= _PEM_MAX:
            after = ends[at]
        else:
            body = _PEM_BODY.match(text, begin.end())
            after = body.end() if body else begin.end()
        yield begin.start(), after


def find_secrets(text: str) -> Iterator[PiiFinding]:
    """Every credential in ``text``; ``detail`` names the shape, ``credential`` for assignments."""
    for detail, literals, pattern in _SHAPES:
        if not any(literal in text for literal in literals):
            continue
        for m in pattern.finditer(text):
            if detail != "api-key" or _random_token(m.group()[3:]):
                yield PiiFinding(PiiKind.SECRET, m.start(), m.end(), detail)
    if "PRIVATE KEY" in text:
        for start, end in _pem_blocks(text):
            yield PiiFinding(PiiKind.SECRET, start, end, "private-key")
    lowered = text.lower()
    if not any(key in lowered for key in _ASSIGNMENT_KEYS):
        return
    for m in _ASSIGNMENT.finditer(text):
        group = next(g for g in (1, 2, 3) if m.group(g) is not None)
        if group == 3 and text[m.end() : m.end() + 1] in ("(", "["):
            continue  # `password = read_secret(...)`: a call, not a value
        if looks_random(m.group(group)):
            yield PiiFinding(PiiKind.SECRET, m.start(group), m.end(group), "credential")
