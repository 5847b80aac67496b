"""The records guardrails return: a verdict with its reasons, and one PII finding.

A verdict never carries the text it matched. Reasons name a category (``"pii:card"``,
``"injection:ignore-previous"``, ``"toxicity:threat"``) so they can be logged, audited and shown
to the asker without disclosing what they flag; a finding carries offsets into the caller's own
text, which the caller already holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ALL_PII_KINDS", "GuardrailResult", "PiiFinding", "PiiKind"]


class PiiKind(StrEnum):
    """What a PII finding is; its value names it in reasons and in ``[REDACTED:<kind>]``."""

    EMAIL = "email"
    PHONE = "phone"
    CARD = "card"
    """A payment card number that passes the Luhn check."""
    NATIONAL_ID = "national-id"
    """US SSN, UK NINO, Spanish DNI/NIE, French NIR (see ``PiiFinding.detail``)."""
    IBAN = "iban"
    """An IBAN of the right length for its country that passes the mod-97 check."""
    SECRET = "secret"  # noqa: S105 (a kind name, not a password)
    """A credential: cloud or service keys, tokens, JWTs, private keys, password assignments."""


ALL_PII_KINDS: frozenset[PiiKind] = frozenset(PiiKind)
"""Every kind: the default for :class:`~bastion.governance.guardrails.Guardrails`."""


@dataclass(frozen=True, slots=True)
class PiiFinding:
    """One piece of sensitive text, located by character offsets (end exclusive)."""

    kind: PiiKind
    start: int
    end: int
    detail: str = ""
    """The precise type within the kind: ``"us-ssn"``, ``"aws-access-key"``, ``"jwt"``..."""

    @property
    def reason(self) -> str:
        return f"pii:{self.kind.value}"

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.kind.value}]"


@dataclass(frozen=True, slots=True)
class GuardrailResult:
    """A guardrail's verdict on one text.

    ``safe`` says whether the original text may be used as it is. ``reasons`` lists everything
    found, blocking or not (PII in a question is reported but does not block). ``redacted`` is
    a copy with every finding replaced by ``[REDACTED:<kind>]``; when ``safe`` is False and
    ``redacted`` is set, the redacted copy resolves every blocking reason and may be used in
    the original's place. When ``safe`` is False and ``redacted`` is None, drop or withhold.
    """

    safe: bool
    reasons: tuple[str, ...] = ()
    """Short category names, never the matched text: ``"pii:email"``, ``"toxicity:threat"``."""
    redacted: str | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"safe": self.safe, "reasons": list(self.reasons)}
        if self.redacted is not None:
            out["redacted"] = self.redacted
        return out
