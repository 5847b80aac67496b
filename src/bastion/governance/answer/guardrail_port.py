"""What the answer workflow needs from guardrails, as a structural type.

``bastion.governance.guardrails.Guardrails`` fits it, and so does any object with the three
checks; the workflow never imports a guardrails implementation. A check may be a plain method
or a coroutine. Its verdict has ``safe``, ``reasons`` and ``redacted`` (the text with the
unsafe parts masked, when the guardrail can offer that).

How the workflow uses each check:

* ``check_question``: unsafe refuses the question (nothing is retrieved); safe with
  ``redacted`` retrieves and answers with the redacted question.
* ``check_chunk``: unsafe drops the chunk from the context and records why; safe with
  ``redacted`` puts the redacted text in the context.
* ``check_answer``: unsafe with ``redacted`` answers with the redacted text; unsafe without it
  withholds the answer (and its citations).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import Protocol

__all__ = ["GuardrailVerdict", "GuardrailsPort", "checked"]


class GuardrailVerdict(Protocol):
    @property
    def safe(self) -> bool: ...

    @property
    def reasons(self) -> tuple[str, ...]: ...

    @property
    def redacted(self) -> str | None: ...


Verdict = GuardrailVerdict | Awaitable[GuardrailVerdict]


class GuardrailsPort(Protocol):
    def check_question(self, text: str, /) -> Verdict: ...

    def check_chunk(self, text: str, /) -> Verdict: ...

    def check_answer(self, text: str, /) -> Verdict: ...


async def checked(verdict: Verdict) -> GuardrailVerdict:
    """The verdict, awaited when the check was a coroutine."""
    if inspect.isawaitable(verdict):
        return await verdict
    return verdict
