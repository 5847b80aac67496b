"""The offline toxicity baseline, and the protocol that lets a model replace it.

No slur is written here: the slur check is exercised through a made-up term added by digest.
"""

from __future__ import annotations

import re

import pytest

from bastion.governance.guardrails import (
    TOXICITY_CATEGORIES,
    Guardrails,
    LexiconToxicityClassifier,
    ToxicityClassifier,
    slur_digest,
)

BASELINE = LexiconToxicityClassifier()

TOXIC = [
    ("I will kill you.", "threat"),
    ("I'm going to hurt your family.", "threat"),
    ("We are going to find and kill them", "threat"),
    ("You are going to die tonight.", "threat"),
    ("I know where you live.", "threat"),
    ("Watch your back.", "threat"),
    ("You deserve to die.", "threat"),
    ("I will beat you up.", "threat"),
    ("Go kill yourself.", "self-harm"),
    ("kys", "self-harm"),
    ("Nobody would miss you.", "self-harm"),
    ("Why don't you end your life.", "self-harm"),
    ("Do the world a favour and disappear.", "self-harm"),
    ("You are a worthless idiot.", "harassment"),
    ("you moron", "harassment"),
    ("You're such a pathetic loser", "harassment"),
    ("F*ck you.", "harassment"),
    ("Shut the hell up.", "harassment"),
    ("Nobody likes you.", "harassment"),
    ("Everyone hates you.", "harassment"),
    ("y0u 4re p4thetic", "harassment"),
    ("U R A L0SER", "harassment"),
    ("You are a waste of space.", "harassment"),
]


@pytest.mark.parametrize(("text", "category"), TOXIC)
def test_toxic_text_is_classified(text: str, category: str) -> None:
    assert category in BASELINE.classify(text)


BENIGN = [
    "Kill the process with kill -9.",
    "This bug will kill performance.",
    "I will beat you at chess tomorrow.",
    "Don't kill yourself over this bug; take a break.",
    "How to kill yourself is a question for a crisis line, not this wiki.",
    "When you trash a file it moves to the bin.",
    "Just cut yourself a slice of cake.",
    "If you are stuck, ask for help.",
    "The dumb terminal is an old device.",
    "We will shoot the product video tomorrow.",
    "Everyone loves you for your code reviews.",
    "You are useful to the team.",
    "The child process dies when the parent exits.",
    "Watch the logs for errors.",
    "Retry until the job is dead-lettered.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_ordinary_text_is_clean(text: str) -> None:
    assert BASELINE.classify(text) == ()


def test_categories_come_in_a_fixed_order() -> None:
    found = BASELINE.classify("You are an idiot. I will kill you. Go kill yourself.")
    assert found == ("threat", "self-harm", "harassment")
    assert set(found) <= set(TOXICITY_CATEGORIES)


def test_slurs_are_matched_by_digest_with_leetspeak_and_plurals() -> None:
    classifier = LexiconToxicityClassifier(extra_slur_digests={slur_digest("zorblax")})
    assert classifier.classify("they are zorblax") == ("slur",)
    assert classifier.classify("ZORBLAXES everywhere") == ("slur",)
    assert classifier.classify("z0rbl4x") == ("slur",)
    assert classifier.classify("zorblaxian pottery") == ()
    assert BASELINE.classify("they are zorblax") == ()


def test_the_built_in_slur_list_holds_digests_only() -> None:
    digests = LexiconToxicityClassifier()._slurs
    assert len(digests) == 9
    assert all(re.fullmatch(r"[0-9a-f]{16}", d) for d in digests)
    assert slur_digest("Word") == slur_digest("word")
    assert len(slur_digest("word")) == 16


class _Model:
    """A stand-in for a model-backed classifier: flags any text containing 'grr'."""

    def classify(self, text: str) -> tuple[str, ...]:
        return ("insult", "insult") if "grr" in text else ()


def test_a_classifier_plugs_in_through_the_protocol() -> None:
    assert isinstance(BASELINE, ToxicityClassifier)
    assert isinstance(_Model(), ToxicityClassifier)
    guard = Guardrails(toxicity=_Model())
    result = guard.check_answer("grr, that is all")
    assert not result.safe
    assert result.reasons == ("toxicity:insult",)
    assert guard.check_answer("I will kill you").safe  # the baseline is replaced, not added
