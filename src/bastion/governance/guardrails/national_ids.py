"""National identity numbers, each checked beyond its shape to keep false positives rare.

* US Social Security number: ``123-45-6789`` or ``123 45 6789``, or nine digits right after
  "SSN"; area 000, 666 and 900-999, group 00 and serial 0000 are never issued and are skipped,
  as are the two numbers famous from advertising (078-05-1120, 219-09-9999).
* UK National Insurance number: ``AB 12 34 56 C`` (spaces optional), with the prefixes HMRC
  never issues (D, F, I, Q, U, V first; D, F, I, O, Q, U, V second; BG, GB, KN, NK, NT, TN, ZZ).
* Spanish DNI (``12345678Z``) and NIE (``X1234567L``), with the mod-23 check letter.
* French NIR (social security number, 15 digits), with its mod-97 key (the Corsican
  departments 2A and 2B count as 19 and 18).

Only uppercase letters are matched (identity numbers are written that way).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bastion.governance.guardrails.models import PiiFinding, PiiKind

__all__ = ["find_national_ids"]

_DIGIT = re.compile(r"\d")
_SSN = re.compile(
    r"(\d(?<![\w\-.]\d)\d{2})([- ])(\d{2})\2(\d{4})(?![\w\-]|\.\d)"
    r"|[Ss](?<!\w[Ss])[Ss][Nn]\b[ #:.]{0,3}(\d{3})(\d{2})(\d{4})(?![\w\-]|\.\d)"
)
_SSN_NEVER = {"078051120", "219099999"}

_NINO = re.compile(
    r"([A-CEGHJ-PR-TW-Z](?<!\w[A-Z])[A-CEGHJ-NPR-TW-Z]) ?(\d{2}) ?(\d{2}) ?(\d{2}) ?([A-D])\b"
)
_NINO_DIGITS = re.compile(r"\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_NINO_NEVER = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}

_ES = re.compile(r"([XYZ]\d{7}|\d{8})(?<!\w.{8})-?([A-Z])\b")
_ES_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"

_NIR = re.compile(
    r"([12])(?<!\w[12])[ ]?(\d{2})[ ]?(\d{2})[ ]?(\d{2}|2[AB])[ ]?(\d{3})[ ]?(\d{3})[ ]?(\d{2})\b"
)


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    if area in {"000", "666"} or area[0] == "9":
        return False
    if group == "00" or serial == "0000":
        return False
    return area + group + serial not in _SSN_NEVER


def _es_ok(number: str, letter: str) -> bool:
    if number[0] in "XYZ":
        number = str("XYZ".index(number[0])) + number[1:]
    return _ES_LETTERS[int(number) % 23] == letter


def _nir_ok(groups: tuple[str, ...]) -> bool:
    month, dept, key = groups[2], groups[3], groups[6]
    m = int(month)
    if not (1 <= m <= 12 or 20 <= m <= 42 or 50 <= m <= 99):
        return False
    body = "".join(groups[:-1])
    number = int(body.replace("2A", "19", 1) if dept == "2A" else body.replace("2B", "18", 1))
    return 97 - number % 97 == int(key)


def _ninos(text: str) -> Iterator[PiiFinding]:
    for m in _NINO.finditer(text):
        if m.group(1) not in _NINO_NEVER:
            yield PiiFinding(PiiKind.NATIONAL_ID, m.start(), m.end(), "uk-nino")


def find_national_ids(text: str) -> Iterator[PiiFinding]:
    """Every national id in ``text`` whose checks pass, with ``detail`` naming its scheme."""
    if _DIGIT.search(text) is None:
        return
    for m in _SSN.finditer(text):
        parts = (m.group(1), m.group(3), m.group(4)) if m.group(1) else m.group(5, 6, 7)
        if _ssn_ok(*parts):
            start = m.start() if m.group(1) else m.start(5)
            yield PiiFinding(PiiKind.NATIONAL_ID, start, m.end(), "us-ssn")
    if _NINO_DIGITS.search(text):  # "12 34 56 C" first: the letter-led scan costs more
        yield from _ninos(text)
    for m in _ES.finditer(text):
        if _es_ok(m.group(1), m.group(2)):
            detail = "es-nie" if m.group(1)[0] in "XYZ" else "es-dni"
            yield PiiFinding(PiiKind.NATIONAL_ID, m.start(), m.end(), detail)
    for m in _NIR.finditer(text):
        if _nir_ok(m.groups()):
            yield PiiFinding(PiiKind.NATIONAL_ID, m.start(), m.end(), "fr-nir")
