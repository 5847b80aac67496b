"""Guardrails on governed answers: PII, prompt injection and toxicity, offline and pure.

:class:`Guardrails` checks the question, each retrieved chunk and the answer, and returns a
:class:`GuardrailResult` (``safe``, ``reasons``, optionally ``redacted``). The detectors are also
usable on their own: :func:`find_pii` / :func:`redact`, :func:`detect_injection`, and the
:class:`ToxicityClassifier` protocol with its offline baseline. See ``docs/guardrails.md``.
"""

from bastion.governance.guardrails.guardrails import Guardrails
from bastion.governance.guardrails.injection import INJECTION_REASONS, detect_injection
from bastion.governance.guardrails.models import (
    ALL_PII_KINDS,
    GuardrailResult,
    PiiFinding,
    PiiKind,
)
from bastion.governance.guardrails.pii import find_pii, luhn_ok, mod97_ok, redact
from bastion.governance.guardrails.toxicity import (
    TOXICITY_CATEGORIES,
    LexiconToxicityClassifier,
    ToxicityClassifier,
    slur_digest,
)

__all__ = [
    "ALL_PII_KINDS",
    "INJECTION_REASONS",
    "TOXICITY_CATEGORIES",
    "GuardrailResult",
    "Guardrails",
    "LexiconToxicityClassifier",
    "PiiFinding",
    "PiiKind",
    "ToxicityClassifier",
    "detect_injection",
    "find_pii",
    "luhn_ok",
    "mod97_ok",
    "redact",
    "slur_digest",
]
