"""Toxicity: an offline baseline classifier, and the protocol a model plugs in through.

:class:`LexiconToxicityClassifier` is a baseline, not a model. It catches explicit toxicity in
English aimed at a person, by pattern, after the same folding the injection detector uses
(leetspeak, look-alikes, spaced letters):

* ``threat`` — "I will kill you", "you are going to die", "I know where you live";
* ``self-harm`` — encouragement of self-harm aimed at someone: "go kill yourself", "kys",
  "nobody would miss you";
* ``harassment`` — insults aimed at the reader ("you are a worthless idiot", "f*** you",
  "shut the hell up", "nobody likes you");
* ``slur`` — a short list of unambiguous slurs, stored only as salted SHA-256 digests (so the
  source holds no slur); extend it with :func:`slur_digest`.

It misses sarcasm, coded language, implicit hate, toxicity in other languages and anything not
addressed in these shapes; "kill the process" and "this bug will kill performance" pass. For
better recall, implement :class:`ToxicityClassifier` over a model (a local classifier or a
moderation endpoint) and pass it to :class:`~bastion.governance.guardrails.Guardrails`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Protocol, runtime_checkable

from bastion.governance.guardrails.normalize import plain

__all__ = [
    "TOXICITY_CATEGORIES",
    "LexiconToxicityClassifier",
    "ToxicityClassifier",
    "slur_digest",
]

TOXICITY_CATEGORIES: tuple[str, ...] = ("threat", "self-harm", "harassment", "slur")
"""The categories the baseline reports, in the order it reports them."""

_SALT = b"bastion-toxicity-v1:"

_DEFAULT_SLURS: frozenset[str] = frozenset(
    {
        "26825be245a14640",
        "60f5690228b19940",
        "714ef522be66e2c0",
        "9d63d01f7c2a285e",
        "ac9ab495a9687f75",
        "acf8cc87f6fea6bc",
        "bafcfd140da51d67",
        "db7f8ba2258b0e50",
        "ef7f513d40fd686e",
    }
)
"""Nine racial, ethnic and homophobic slurs that have no everyday innocent meaning."""

_YOU = r"(?:you|u|ya|ye|yall|y'all)"
_PEOPLE = (
    r"(?:you|u|ya|your (?:family|kids|children|wife|husband|mother|mom|mum|dad|father|friends"
    r"|sister|brother)|him|her|them|everyone)"
)
_WILL = r"(?:i'll|ill|i will|i am going to|i'm going to|im going to|i'm gonna|im gonna|i am gonna|i gonna|i shall|i want to|i wanna|we'll|we will|we're going to|we are going to)"  # noqa: E501

_KILL_YOURSELF = "|".join(
    verb
    + "".join(f"(?<!{neg} {verb})" for neg in ("don't", "dont", "do not", "never", "not", "to"))
    for verb in ("kill", "hang", "unalive")
)
"""'kill yourself' unless negated ("don't kill yourself over it") or asked ("how to ...")."""

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "threat",
        re.compile(
            rf"\b{_WILL} (?:[a-z']{{1,20}} ){{0,2}}?(?:kill|murder|shoot|stab|strangle|hurt"
            rf"|choke|rape|slaughter|behead|torture|bomb|burn|find and kill) {_PEOPLE}\b"
            rf"|\b{_WILL} beat {_YOU} (?:up|to death|senseless|bloody)\b"
            rf"|\b{_YOU}(?: are|'re| re|re)? (?:going to|gonna|will) (?:die|be killed|get (?:hurt"
            r"|killed|shot|stabbed|raped)|pay for (?:this|that|it) with your life)\b"
            r"|\bi know where (?:you|u) (?:live|work|sleep)\b"
            r"|\bwatch your back\b"
            rf"|\b{_YOU} (?:deserve|ought|need) to (?:die|be (?:killed|shot|raped|hurt|hanged))\b"
            r"|\byou(?:'re| are) (?:dead meat|a dead (?:man|woman))\b"
        ),
    ),
    (
        "self-harm",
        re.compile(
            rf"\b(?:{_KILL_YOURSELF}) (?:yourself|urself|your self|yourselves)\b"
            r"|\bkys\b"
            r"|\b(?:go|just|should|ought to|why don't you|why dont you|please) (?:go )?(?:end"
            r" (?:your|ur) (?:life|self)|cut (?:yourself|urself)(?! (?:a|an|some|off|free"
            r"|loose|short)\b)|hurt yourself|drink bleach|jump off (?:a"
            r"|the) (?:bridge|building|roof|cliff))\b"
            rf"|\b(?:no one|nobody|noone) (?:would|will|is going to) (?:miss|care about) {_YOU}\b"
            rf"|\bthe world (?:would be|is) better (?:off )?without {_YOU}\b"
            r"|\bdo (?:the world|everyone|us all|us) a favou?r and (?:die|kill yourself"
            r"|disappear)\b"
        ),
    ),
    (
        "harassment",
        re.compile(
            rf"\b{_YOU} (?:idiot|moron|imbecile|loser|dumbass|bitch|bastard|asshole|dickhead"
            r"|cunt|scum|retard|piece of shit)\b"
            rf"|\b{_YOU}(?: are|'re| re|re| r) (?:an? |such an? |so |a complete |a total |an"
            r" absolute |the biggest |nothing but an? |a fucking |a stupid )?(?:idiot|moron"
            r"|imbecile|stupid|dumb|dumbass|loser|worthless|pathetic|useless|scum|trash"
            r"|subhuman|vermin|parasite|disgusting|bitch|bastard|asshole|dickhead|cunt"
            r"|retard|retarded|waste of (?:space|oxygen|air|skin)|piece of (?:shit|garbage"
            r"|trash|crap))\b"
            r"|\b(?:fuck|screw|f u c k|fck|fuk) (?:you|u|off|yourself)\b"
            r"|\b(?:shut (?:the fuck|the hell|your (?:fucking |stupid )?mouth) up|stfu|go to"
            r" hell|go die|eat shit|piss off)\b"
            rf"|\b(?:nobody|no one|noone) (?:likes|loves|wants) {_YOU}\b"
            rf"|\b(?:everyone|everybody) (?:hates|despises) {_YOU}\b"
        ),
    ),
)

_GATES: dict[str, tuple[str, ...]] = {
    # Words each pattern cannot match without (see the injection detector's gates).
    "threat": (
        *("kill", "murder", "shoot", "stab", "strangle", "hurt", "choke", "rape", "slaughter"),
        *("behead", "torture", "bomb", "burn", "beat", "die", "shot", "your life"),
        *("know where", "watch your back", "hanged", "dead"),
    ),
    "self-harm": (
        *("self", "kys", "end ", "bleach", "jump off", "miss", "care about", "without"),
        "favo",
    ),
    "harassment": (
        *("idiot", "moron", "imbecile", "loser", "dumb", "bitch", "bastard", "asshole"),
        *("dickhead", "cunt", "scum", "retard", "shit", "stupid", "worthless", "pathetic"),
        *("useless", "trash", "subhuman", "vermin", "parasite", "disgusting", "waste of"),
        *("piece of", "fuck", "screw", "fck", "fuk", "shut", "stfu", "go to hell", "go die"),
        *("piss off", "likes", "loves", "wants", "hates", "despises"),
    ),
}

_TOKEN = re.compile(r"[a-z]{3,24}")


def slur_digest(term: str) -> str:
    """The digest the slur list stores for ``term`` (lowercase, letters only)."""
    return _digest(term.casefold())


@lru_cache(maxsize=65536)
def _digest(token: str) -> str:
    """Cached: words repeat across texts, and every word of every text is hashed."""
    return hashlib.sha256(_SALT + token.encode()).hexdigest()[:16]


@runtime_checkable
class ToxicityClassifier(Protocol):
    """Anything that names the toxicity categories found in a text.

    Return ``()`` for clean text, else category names such as ``"threat"``; the guardrails
    report each as ``"toxicity:<category>"``. It must be pure and fast enough to run on every
    question and answer; a model-backed one should threshold its own scores.
    """

    def classify(self, text: str) -> tuple[str, ...]: ...


class LexiconToxicityClassifier:
    """The offline baseline: patterns for threats, self-harm, harassment; hashed slurs."""

    __slots__ = ("_slurs",)

    def __init__(self, *, extra_slur_digests: Iterable[str] = ()) -> None:
        self._slurs = _DEFAULT_SLURS | frozenset(extra_slur_digests)

    def _has_slur(self, flat: str) -> bool:
        for token in set(_TOKEN.findall(flat)):
            plural = token.endswith("s")
            for form in (token, token[:-1] if plural else "", token[:-2] if plural else ""):
                if form and _digest(form) in self._slurs:
                    return True
        return False

    def classify(self, text: str) -> tuple[str, ...]:
        flat = plain(text)
        found = [
            name
            for name, pattern in _PATTERNS
            if any(word in flat for word in _GATES[name]) and pattern.search(flat)
        ]
        if self._has_slur(flat):
            found.append("slur")
        return tuple(found)
