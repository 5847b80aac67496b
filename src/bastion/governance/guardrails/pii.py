"""PII detection and redaction: emails, phones, payment cards, IBANs, national ids, secrets.

Every pattern is a standard :mod:`re` expression whose repetitions are bounded and whose
alternatives cannot split the same text in many ways, so a hostile megabyte costs linear time.
Shapes alone flag too much (years, versions, order numbers), so each finding is checked where a
check exists: the Luhn digit for cards, mod-97 and the country's length for IBANs, issued
ranges and check letters for national ids, entropy for password values.

Phones: international numbers start with ``+`` and a country code (8 to 15 digits, grouped by
spaces, dots, dashes or a bracketed area code); national numbers are the North American
``(555) 123-4567`` / ``555-123-4567`` forms (3-3-4 digits, separated) and trunk-prefixed
numbers such as ``020 7946 0958`` or ``01 23 45 67 89`` (leading 0, one separator used
throughout, 10 to 12 digits). A bare digit run is never a phone, nor is a national-format
number that directly continues another digit group ("2024 0958 4111 1111").

Patterns begin with a character (or a character class) and check what precedes it with a
lookbehind placed after it: :mod:`re` then skips quickly to the positions that can match,
instead of trying every position.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from bastion.governance.guardrails.credentials import find_secrets
from bastion.governance.guardrails.models import ALL_PII_KINDS, PiiFinding, PiiKind
from bastion.governance.guardrails.national_ids import find_national_ids

__all__ = ["find_pii", "luhn_ok", "mod97_ok", "redact"]

_EMAIL = re.compile(
    r"[A-Za-z0-9](?<![\w.+%\-][A-Za-z0-9])[A-Za-z0-9._%+\-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){1,8}([A-Za-z]{2,24})"
    r"(?![\w\-]|\.[A-Za-z0-9]|:[^\s])"
)
_NOT_TLDS = frozenset(
    {
        *("png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "js", "mjs", "ts", "tsx", "jsx"),
        *("json", "yaml", "yml", "toml", "ini", "cfg", "txt", "css", "html", "lock"),
    }
)
"""File extensions that follow ``@`` in names like ``icon@2x.png``: never an email's TLD."""

_END = r"(?![\w\-/:]|[.,]\d)"
_PHONES = (
    re.compile(
        r"\+(?<![\w+]\+)(?:\d{8,15}|[1-9]\d{0,2}(?:[ .\-]?\(\d{1,4}\)\d{0,4})?"
        r"(?:[ .\-]\d{1,10}){1,7})" + _END
    ),
    re.compile(
        r"(?:1(?<![\w+.\-/]1)(?<!\d[ .\-]1)[ .\-](?:\(\d{3}\) ?|\d{3}[ .\-])"
        r"|\((?<![\w+.\-/]\()(?<!\d[ .\-]\()\d{3}\) ?"
        r"|\d(?<![\w+.\-/]\d)(?<!\d[ .\-]\d)\d{2}[ .\-])\d{3}[ .\-]\d{4}" + _END
    ),
    re.compile(r"0(?<![\w+.\-/]0)(?<!\d[ .\-]0)\d{1,4}([ .\-])\d{2,8}(?:\1\d{2,8}){0,3}" + _END),
    re.compile(
        r"\((?<![\w+.\-/]\()(?<!\d[ .\-]\()0\d{1,4}\) ?\d{2,8}(?:[ .\-]\d{2,8}){0,3}" + _END
    ),
)
_PHONE_DIGITS = ((8, 15), (10, 11), (10, 12), (10, 12))
"""Digits allowed per phone pattern; a "(0)" trunk digit is not counted."""
_GROUP_START = re.compile(r"(?=[ .\-])")

_CARD = re.compile(r"[2-6](?<![\w\-.+/][2-6])\d{3}(?:[ \-]?\d){9,15}" + _END)

_IBAN = re.compile(
    r"([A-Z](?<!\w[A-Z])[A-Z])(\d{2}) ?([A-Z0-9]{4}(?: ?[A-Z0-9]{4}){1,6}(?: ?[A-Z0-9]{1,3})?)\b"
)
_IBAN_LENGTHS = {
    pair[:2]: int(pair[2:])
    for pair in str.split(
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 "
        "DJ27 DK18 DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HN28 "
        "HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 "
        "MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 "
        "RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 "
        "VA22 VG24 XK20 YE30"
    )
}
"""IBAN lengths per country (ISO 13616 registry)."""

_PRIORITY = {
    PiiKind.SECRET: 0,
    PiiKind.CARD: 1,
    PiiKind.IBAN: 2,
    PiiKind.NATIONAL_ID: 3,
    PiiKind.EMAIL: 4,
    PiiKind.PHONE: 5,
}


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check every payment card number passes."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def mod97_ok(iban: str) -> bool:
    """ISO 7064 mod 97-10 over an IBAN without spaces: country and check digits moved last."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _emails(text: str) -> Iterator[PiiFinding]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        if m.group(1).lower() not in _NOT_TLDS:
            yield PiiFinding(PiiKind.EMAIL, m.start(), m.end(), "email")


def _digits(text: str) -> int:
    return sum(c.isdigit() for c in text.replace("(0)", ""))


def _phone_length(raw: str, low: int, high: int) -> int:
    """Length of the phone number ``raw`` starts with, or 0.

    "+44 20 7946 0958 4111 1111": a pattern may run on into the next number, so trailing groups
    are dropped until the digit count fits. A candidate that fits nowhere is retried one
    character later (bounded work: a candidate is at most a few dozen characters), so it
    cannot swallow the start of a real number after it.
    """
    groups = _GROUP_START.split(raw)
    while len(groups) > 1 and _digits("".join(groups)) > high:
        groups.pop()
    kept = "".join(groups)
    return len(kept) if low <= _digits(kept) <= high else 0


def _phones(text: str) -> Iterator[PiiFinding]:
    for pattern, (low, high) in zip(_PHONES, _PHONE_DIGITS, strict=True):
        at = 0
        while m := pattern.search(text, at):
            length = _phone_length(m.group(), low, high)
            if length:
                yield PiiFinding(PiiKind.PHONE, m.start(), m.start() + length, "phone")
            at = m.start() + (length or 1)


def _card_length(raw: str) -> int:
    """Length of the card number ``raw`` starts with, or 0.

    Grouped numbers may run on into the next number ("4111 1111 1111 1111 020 7946 0958"), so
    whole trailing groups are dropped until a 13-19 digit prefix passes Luhn. Groups must all
    use one separator and hold 3 digits or more ("4 1 1 1 ..." is not a card as people write
    one).
    """
    if raw[0] == "2" and not 2221 <= int(raw[:4]) <= 2720:
        return 0  # the Mastercard 2-series; other 2... numbers are years (2019 2020 ...)
    if raw[:2] in ("31", "32", "33"):
        return 0  # no card network issues these
    separators = {c for c in raw if not c.isdigit()}
    if not separators:
        return len(raw) if 13 <= len(raw) <= 19 and luhn_ok(raw) else 0
    if len(separators) > 1:
        return 0
    (separator,) = separators
    groups = raw.split(separator)
    for count in range(len(groups), 1, -1):
        kept = groups[:count]
        digits = "".join(kept)
        if min(map(len, kept)) >= 3 and 13 <= len(digits) <= 19 and luhn_ok(digits):
            return len(separator.join(kept))
    return 0


def _cards(text: str) -> Iterator[PiiFinding]:
    at = 0
    while m := _CARD.search(text, at):
        length = _card_length(m.group())
        if length:
            yield PiiFinding(PiiKind.CARD, m.start(), m.start() + length, "card")
        at = m.start() + (length or 1)


def _ibans(text: str) -> Iterator[PiiFinding]:
    for m in _IBAN.finditer(text):
        compact = m.group().replace(" ", "")
        if _IBAN_LENGTHS.get(m.group(1)) == len(compact) and mod97_ok(compact):
            yield PiiFinding(PiiKind.IBAN, m.start(), m.end(), "iban")


_DETECTORS: dict[PiiKind, Callable[[str], Iterable[PiiFinding]]] = {
    PiiKind.SECRET: find_secrets,
    PiiKind.CARD: _cards,
    PiiKind.IBAN: _ibans,
    PiiKind.NATIONAL_ID: find_national_ids,
    PiiKind.EMAIL: _emails,
    PiiKind.PHONE: _phones,
}


def find_pii(text: str, kinds: Iterable[PiiKind] = ALL_PII_KINDS) -> tuple[PiiFinding, ...]:
    """Findings of the given kinds, in text order, never overlapping.

    Where two findings overlap, the one that starts first (then the longer, then the more
    specific kind) stands for both and is stretched to cover them, so redaction never leaves
    the tail of a secret behind.
    """
    wanted = set(kinds)
    found = [f for kind in _DETECTORS if kind in wanted for f in _DETECTORS[kind](text)]
    found.sort(key=lambda f: (f.start, f.start - f.end, _PRIORITY[f.kind]))
    kept: list[PiiFinding] = []
    for finding in found:
        if kept and finding.start < kept[-1].end:
            last = kept[-1]
            if finding.end > last.end:
                kept[-1] = PiiFinding(last.kind, last.start, finding.end, last.detail)
            continue
        kept.append(finding)
    return tuple(kept)


def redact(text: str, findings: Iterable[PiiFinding]) -> str:
    """``text`` with each (non-overlapping, ordered) finding replaced by its placeholder."""
    parts: list[str] = []
    at = 0
    for finding in findings:
        parts.append(text[at : finding.start])
        parts.append(finding.placeholder)
        at = finding.end
    parts.append(text[at:])
    return "".join(parts)
