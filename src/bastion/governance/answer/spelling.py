"""British and American spellings folded to one form, so that a question written in one
matches a document written in the other (``authorise``/``authorize``, ``programme``/``program``,
``licence``/``license``, ``counselling``/``counseling``).

Folding is applied to the question and to the passages alike, before the keyword analyzer: a
fold that merged two unrelated words would only merge them on both sides. The rules are
suffix rules where the pattern is regular (``-ise``/``-yse`` to ``-ize``/``-yze``, ``-our`` to
``-or`` in words of six letters or more) and a word list where it is not.
"""

from __future__ import annotations

import re

__all__ = ["fold_spelling"]

_WORDS = {
    "programme": "program",
    "programmes": "programs",
    "licence": "license",
    "licences": "licenses",
    "defence": "defense",
    "offence": "offense",
    "catalogue": "catalog",
    "catalogues": "catalogs",
    "dialogue": "dialog",
    "centre": "center",
    "centres": "centers",
    "metre": "meter",
    "metres": "meters",
    "litre": "liter",
    "litres": "liters",
    "theatre": "theater",
    "fibre": "fiber",
    "grey": "gray",
    "enquiry": "inquiry",
    "enquiries": "inquiries",
    "enrolment": "enrollment",
    "enrol": "enroll",
    "enrolled": "enrolled",
    "fulfil": "fulfill",
    "instalment": "installment",
    "judgement": "judgment",
    "ageing": "aging",
    "practise": "practice",
    "practised": "practiced",
    "sceptical": "skeptical",
    "mould": "mold",
    "jewellery": "jewelry",
    "aeroplane": "airplane",
    "cheque": "check",
    "tyre": "tire",
    "aluminium": "aluminum",
    "manoeuvre": "maneuver",
    "paediatric": "pediatric",
    "oestrogen": "estrogen",
    "anaesthetic": "anesthetic",
    "haemorrhage": "hemorrhage",
    "orthopaedic": "orthopedic",
    "whilst": "while",
    "amongst": "among",
}
_DOUBLED_L = re.compile(
    r"^(travel|cancel|counsel|label|model|fuel|signal|level|total|channel|marshal|quarrel|"
    r"dial|equal|jewel|tunnel|panel|pedal|rival|shovel|snorkel|barrel|libel|initial)"
    r"l(ed|ing|er|ers|or|ors|ation)$"
)
_ISE = re.compile(r"^(\w{3,}?)([iy])s(e|es|ed|ing|ation|ations|er|ers|able)$")
_OUR = re.compile(r"^(\w{3,})our(s|ed|ing|ite|ites|able|ful|less)?$")
_OUR_KEEP = frozenset({"detour", "devour", "devours", "flour", "contour", "contours"})
_TOKEN = re.compile(r"\w+")


def _fold(word: str) -> str:
    low = word.lower()
    if low in _WORDS:
        return _WORDS[low]
    doubled = _DOUBLED_L.match(low)
    if doubled:
        return doubled.group(1) + doubled.group(2)
    ise = _ISE.match(low)
    if ise and len(low) >= 6:
        return f"{ise.group(1)}{ise.group(2)}z{ise.group(3)}"
    our = _OUR.match(low)
    if our and len(low) >= 6 and low not in _OUR_KEEP:
        return f"{our.group(1)}or{our.group(2) or ''}"
    return word


def fold_spelling(text: str) -> str:
    """``text`` with British spellings replaced by American ones, word by word."""
    return _TOKEN.sub(lambda m: _fold(m.group(0)), text)
