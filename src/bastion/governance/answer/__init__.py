"""Governed answers with citations: the workflow behind ``Workspace.ask``.

retrieve (access filter pushed down, every chunk re-checked) -> relevance floor (chunks that do
not cover the question stay out, in every mode) -> rerank -> assemble a context within a token
budget, each block marked ``§chunk_id`` -> generate (the extractive answerer, or any chat
model) -> verify (every citation an authorized context, every sentence supported, the answer
addressing the question) -> audit. Guardrails, when given, screen the question, each chunk and
the answer.
"""

from bastion.governance.answer.chat import ChatModel, Message
from bastion.governance.answer.context import Assembly, assemble
from bastion.governance.answer.errors import (
    ChatError,
    ChatRequestError,
    ChatResponseError,
    ChatUnavailableError,
)
from bastion.governance.answer.extractive import ExtractiveAnswerer
from bastion.governance.answer.generate import ChatAnswerer, Draft, Generator
from bastion.governance.answer.guardrail_port import GuardrailsPort, GuardrailVerdict
from bastion.governance.answer.http_chat import HttpChatModel
from bastion.governance.answer.models import (
    NO_ANSWER,
    NO_CONTEXT,
    REFUSED,
    WITHHELD,
    Answer,
    AnswerStatus,
    Check,
    Citation,
    Context,
    DroppedChunk,
    GuardrailOutcome,
    GuardrailReport,
    Verification,
)
from bastion.governance.answer.rerank import ChatRerank, CrossEncoderRerank, NoRerank, Reranker
from bastion.governance.answer.verify import Verifier
from bastion.governance.answer.workflow import AnswerWorkflow, AuditTrail, Retrieval, Retriever

__all__ = [
    "NO_ANSWER",
    "NO_CONTEXT",
    "REFUSED",
    "WITHHELD",
    "Answer",
    "AnswerStatus",
    "AnswerWorkflow",
    "Assembly",
    "AuditTrail",
    "ChatAnswerer",
    "ChatError",
    "ChatModel",
    "ChatRequestError",
    "ChatRerank",
    "ChatResponseError",
    "ChatUnavailableError",
    "Check",
    "Citation",
    "Context",
    "CrossEncoderRerank",
    "Draft",
    "DroppedChunk",
    "ExtractiveAnswerer",
    "Generator",
    "GuardrailOutcome",
    "GuardrailReport",
    "GuardrailVerdict",
    "GuardrailsPort",
    "HttpChatModel",
    "Message",
    "NoRerank",
    "Reranker",
    "Retrieval",
    "Retriever",
    "Verification",
    "Verifier",
    "assemble",
]
