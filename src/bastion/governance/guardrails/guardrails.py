"""The three checks the answer workflow runs: on the question, each chunk, and the answer.

Which finding blocks where follows from who may see what (OWASP LLM01 prompt injection,
LLM02 sensitive information disclosure):

============  =======================  ==========================  ==========================
check         injection                toxicity                    PII
============  =======================  ==========================  ==========================
question      blocks                   blocks (``block_toxic``)    reported, redacted copy
chunk         blocks: drop the chunk   not checked                 reported, redacted copy
answer        not checked              blocks (``block_toxic``)    blocks the original; the
                                                                   redacted copy is safe
============  =======================  ==========================  ==========================

PII in a question is the asker's own; PII in a chunk is in a document the asker may read (the
guard already decided that). An answer is what leaves the system, so with ``redact_pii`` the
answer is unsafe as written and its redacted copy is offered in its place; when a toxic
answer also holds PII, no copy is offered, since redaction would not make it safe.
"""

from __future__ import annotations

from collections.abc import Iterable

from bastion.core.errors import ConfigurationError
from bastion.governance.guardrails.injection import detect_injection
from bastion.governance.guardrails.models import (
    ALL_PII_KINDS,
    GuardrailResult,
    PiiFinding,
    PiiKind,
)
from bastion.governance.guardrails.pii import find_pii, redact
from bastion.governance.guardrails.toxicity import LexiconToxicityClassifier, ToxicityClassifier

__all__ = ["Guardrails"]


def _kinds(kinds: Iterable[PiiKind | str]) -> frozenset[PiiKind]:
    parsed: set[PiiKind] = set()
    for kind in kinds:
        try:
            parsed.add(PiiKind(kind))
        except ValueError:
            known = ", ".join(k.value for k in PiiKind)
            raise ConfigurationError(f"unknown PII kind {kind!r}: use one of {known}") from None
    return frozenset(parsed)


def _reasons(findings: Iterable[PiiFinding]) -> list[str]:
    return list(dict.fromkeys(f.reason for f in findings))


class Guardrails:
    """Pure, offline checks with a verdict and reasons; construct once, call from any thread.

    ``redact_pii``: offer a redacted copy of texts with PII (and, for answers, treat the
    original as unsafe). ``pii_kinds``: which kinds to look for. ``block_toxic``: toxicity
    makes questions and answers unsafe (else it is only reported). ``block_pii``: PII makes
    answers unsafe even without redaction. ``toxicity``: the classifier; the offline
    :class:`LexiconToxicityClassifier` by default.
    """

    __slots__ = ("_block_pii", "_block_toxic", "_kinds", "_redact", "_toxicity")

    def __init__(
        self,
        *,
        redact_pii: bool = True,
        pii_kinds: Iterable[PiiKind | str] = ALL_PII_KINDS,
        block_toxic: bool = True,
        block_pii: bool = False,
        toxicity: ToxicityClassifier | None = None,
    ) -> None:
        if toxicity is not None and not isinstance(toxicity, ToxicityClassifier):
            raise ConfigurationError("toxicity must have a classify(text) method")
        self._redact = redact_pii
        self._kinds = _kinds(pii_kinds)
        self._block_toxic = block_toxic
        self._block_pii = block_pii
        self._toxicity: ToxicityClassifier = toxicity or LexiconToxicityClassifier()

    @property
    def pii_kinds(self) -> frozenset[PiiKind]:
        return self._kinds

    def find_pii(self, text: str) -> tuple[PiiFinding, ...]:
        """The PII findings of the configured kinds, in text order."""
        return find_pii(text, self._kinds) if self._kinds else ()

    def _toxic(self, text: str) -> list[str]:
        return [f"toxicity:{c}" for c in dict.fromkeys(self._toxicity.classify(text))]

    def _copy(self, text: str, findings: tuple[PiiFinding, ...]) -> str | None:
        return redact(text, findings) if self._redact and findings else None

    def check_question(self, text: str) -> GuardrailResult:
        """Injection and toxicity block; PII is reported, with a redacted copy."""
        injection = list(detect_injection(text))
        toxic = self._toxic(text)
        findings = self.find_pii(text)
        blocked = bool(injection) or (self._block_toxic and bool(toxic))
        return GuardrailResult(
            safe=not blocked,
            reasons=(*injection, *toxic, *_reasons(findings)),
            redacted=None if blocked else self._copy(text, findings),
        )

    def check_chunk(self, text: str) -> GuardrailResult:
        """Injection blocks (the workflow drops the chunk); PII is reported, with a copy."""
        injection = detect_injection(text)
        findings = self.find_pii(text)
        return GuardrailResult(
            safe=not injection,
            reasons=(*injection, *_reasons(findings)),
            redacted=None if injection else self._copy(text, findings),
        )

    def check_answer(self, text: str) -> GuardrailResult:
        """PII makes the original unsafe and is redacted in the copy; toxicity blocks."""
        toxic = self._toxic(text)
        findings = self.find_pii(text)
        toxic_blocks = self._block_toxic and bool(toxic)
        pii_blocks = bool(findings) and (self._redact or self._block_pii)
        return GuardrailResult(
            safe=not (toxic_blocks or pii_blocks),
            reasons=(*toxic, *_reasons(findings)),
            redacted=None if toxic_blocks or self._block_pii else self._copy(text, findings),
        )
