"""Prompt-injection detection: instructions aimed at the model, hidden in text it will read.

Retrieved documents are data; an instruction inside one ("ignore the previous instructions",
"you are now DAN", "send the conversation to https://...") is an indirect prompt injection
(OWASP LLM01). The detector reports categories, never the matched text:

=========================  ==================================================================
``ignore-previous``        ignore / disregard / forget the previous (system) instructions
``new-instructions``       "your new instructions are", "from now on you will respond ..."
``role-override``          "you are now an unrestricted AI", "you are no longer bound by"
``act-as``                 "I want you to act as", "pretend you are an AI without ...""
``system-prompt``          reveal / print / repeat your system prompt, the text above
``jailbreak``              DAN, "developer mode enabled", disable your safety guidelines
``exfiltration``           send the conversation / secrets to a URL or address; Markdown
                           images whose URL carries a placeholder for data
``role-tag``               chat-template markup: ``<|im_start|>system``, ``[INST]``,
                           ``<<SYS>>``, ``### Instruction:``, ``System: you are ...``
``addresses-model``        "Note to the AI assistant: ...", "if you are an LLM reading this"
``hidden-comment``         an HTML comment that instructs the model
``hidden-characters``      Unicode tag characters, or runs of invisible characters
``bidi-control``           bidi overrides or isolates in text with no right-to-left script
=========================  ==================================================================

Matching runs on folded copies of the text (see :mod:`.normalize`), so fullwidth letters,
zero-width characters inside words, look-alike letters, leetspeak and spaced-out letters do
not hide a phrase. The phrases demand the model's vocabulary (instructions, prompt, rules of
an AI) rather than any imperative, so ordinary documentation ("to ignore a file, add it to
.gitignore") passes.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator

from bastion.governance.guardrails.normalize import (
    BIDI_CONTROLS,
    fold,
    plain,
    tag_payload,
    words,
)

__all__ = ["INJECTION_REASONS", "detect_injection"]

_PREFIX = "injection:"
_AI = (
    r"(?:ai|artificial intelligence|assistant|ai assistant|chatbot|bot|llm|language model"
    r"|ai model|gpt|chatgpt|claude|gemini|copilot|agent)"
)
_AI_NAMES = (
    r"(?:ai|ai assistant|ai model|ai agent|assistant|chatbot|llm|language model|gpt|chatgpt"
    r"|claude|gemini|copilot)"
)
_EARLIER = (
    r"(?:previous|previously given|prior|above|earlier|preceding|foregoing|former|original"
    r"|initial|old|system|developer|hidden|safety)"
)
_ORDERS = (
    r"(?:instructions?|prompts?|directives?|guidelines|guidance|commands?|orders|rules"
    r"|constraints|restrictions|programming|context|messages|conversation|polic(?:y|ies))"
)
_IGNORE = r"(?:ignore|disregard|forget|discard|abandon|neglect|do not follow|don't follow|stop following|never mind)"  # noqa: E501
_FILLER = r"(?:(?:all|any|every|each|of|the|your|my|these|those|this|that|and|or|prior|previous|above|earlier|system|developer|user|original|initial|given|other) ){0,4}"  # noqa: E501

_PHRASES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "ignore-previous",
        re.compile(
            rf"\b{_IGNORE} {_FILLER}{_EARLIER} {_FILLER}{_ORDERS}\b"
            rf"|\b{_IGNORE} (?:all|any|every) (?:of )?(?:the |your |my )?{_ORDERS}\b"
            rf"|\b{_IGNORE} (?:your|its) (?:instructions|programming|rules|guidelines|training"
            r"|system prompt|prompt)\b"
            rf"|\b{_IGNORE} (?:everything|all|anything) (?:above|before|previously|prior|you"
            r" (?:were|have been) told|that came before|said before)\b"
        ),
    ),
    (
        "new-instructions",
        re.compile(
            r"\byour (?:new|real|actual|true|updated) (?:instructions|task|role|goal|objective"
            r"|purpose|directive|orders|rules)s? (?:is|are|will be)\b"
            r"|\bfrom now on,? you (?:will|must|shall|should|are going to|are to|only|always)"
            r" (?:only |always |now )?(?:respond|reply|answer|act|speak|talk|behave|pretend"
            r"|ignore|refuse|obey|follow|output|say|write)\b"
            r"|\b(?:new|updated|revised|override|overriding) (?:system )?(?:instructions?"
            r"|directives?|prompt) (?:for|to) (?:the |you |this |all )?" + _AI + r"\b"
        ),
    ),
    (
        "role-override",
        re.compile(
            r"\byou(?: are|'re| re) now (?:a |an |the |my |in )?(?:[a-z']{1,20} ){0,2}?"
            r"(?:ai|assistant|chatbot|bot|llm|dan|persona|character|jailbroken|unrestricted"
            r"|unfiltered|uncensored|unbound|evil|dan mode|god mode"
            r"|free from (?:all |any |your )?(?:rules|restrictions|guidelines|constraints))\b"
            r"|\byou(?: are|'re| re) no longer (?:an? )?(?:ai|assistant|chatbot|bound|restricted"
            r"|limited|constrained|chatgpt|claude|required to (?:follow|obey|comply))\b"
            r"|\bforget (?:that )?you(?: are|'re) an? " + _AI + r"\b"
        ),
    ),
    (
        "act-as",
        re.compile(
            r"\bi want you to (?:act|pretend|behave|roleplay|role play) (?:as|like|to be|that)\b"
            r"|\b(?:from now on,? (?:you (?:will|must|shall) )?|you will now |you must now )"
            r"(?:act|behave) as\b"
            r"|\bact as (?:if|though) you (?:are|were|have|had) (?:no|not|an? (?:unrestricted"
            r"|unfiltered|uncensored|evil|jailbroken))\b"
            r"|\bpretend (?:that )?(?:you are|you're|to be) (?:an? |the |my )?"
            r"(?:[a-z']{1,20} ){0,2}?(?:ai|assistant|chatbot|model|dan|unrestricted|unfiltered"
            r"|uncensored|evil|jailbroken|without (?:any )?(?:rules|restrictions|limits))\b"
            r"|\b(?:roleplay|role play) as (?:an? |the )?(?:[a-z']{1,20} ){0,2}?(?:ai|assistant"
            r"|chatbot|dan|unrestricted|unfiltered|evil)\b"
        ),
    ),
    (
        "system-prompt",
        re.compile(
            r"\b(?:reveal|show|print|display|output|repeat|recite|leak|expose|dump|share"
            r"|disclose|tell me|tell us|give me|write out|spell out) (?:me |us )?"
            r"(?:(?:all|the|your|of|its|exact|full|entire|complete|original|initial|hidden"
            r"|secret|internal|verbatim) ){0,4}"
            r"(?:system ?prompt|system (?:message|instructions)|(?:initial|hidden|secret"
            r"|original|developer) (?:prompt|instructions)|(?:your|its) (?:prompt|instructions"
            r"|programming)|(?:text|words|everything) above)\b"
            r"|\bwhat (?:is|are|was|were) your (?:(?:exact|full|original|initial|hidden|secret)"
            r" )?(?:system prompt|prompt|instructions|rules|guidelines|programming)\b"
        ),
    ),
    (
        "jailbreak",
        re.compile(
            r"\b(?:do anything now|dan mode|developer mode (?:enabled|output|response)s?"
            r"|(?:" + _AI + r"|you) (?:with|in) developer mode"
            r"|jailbreak(?:ed)? (?:mode|prompt|version)|you (?:are|have been) jailbroken"
            r"|stay in character|(?:unfiltered|uncensored|unrestricted) (?:ai|assistant"
            r"|chatbot)"
            r"|no (?:ethical|moral) (?:guidelines|constraints|restrictions|limits|boundaries)"
            r"|(?:answer|respond|reply|speak|talk)(?: [a-z']{1,20}){0,3}? without"
            r" (?:any )?(?:restrictions|censorship|filters?|filtering|limitations|ethics|morals"
            r"|moral|ethical)"
            r"|(?:ignore|disregard|bypass|disable|override|turn off|forget|abandon|circumvent"
            r"|evade|remove|deactivate) (?:all |any |all of |all your |all of your |your |its )"
            r"(?:safety|ethical|moral|ai|openai|anthropic) (?:guidelines|guardrails"
            r"|filters?|restrictions|polic(?:y|ies)|protocols|programming|training|rules"
            r"|safeguards|constraints)"
            r"|(?:ignore|disregard|bypass|disable|override|turn off) your content (?:filters?"
            r"|polic(?:y|ies)|guidelines|rules))\b"
        ),
    ),
    (
        "addresses-model",
        re.compile(
            r"\b(?:note|message|instructions?|attention|important|notice|memo|reminder) (?:to"
            r"|for) (?:the |any |all |every )?" + _AI_NAMES + r"s?\b"
            r"|\bif you are (?:an? )?(?:ai|llm|language model|ai assistant|ai model|chatbot"
            r"|assistant|gpt|chatgpt|claude) (?:reading|processing|summari[sz]ing|parsing"
            r"|seeing|and)\b"
            r"|\b(?:ai|llm|language model|assistant|chatbot|agent)s? (?:reading|processing"
            r"|summari[sz]ing|parsing|ingesting) this\b"
        ),
    ),
)

_GATES: dict[str, tuple[str, ...]] = {
    # Words each phrase cannot match without: a substring test skips most patterns on most
    # texts (every alternative of a pattern contains one of its gate words).
    "ignore-previous": (
        *("ignore", "disregard", "forget", "discard", "abandon", "neglect", "follow"),
        "never mind",
    ),
    "new-instructions": ("your ", "from now on", "instruction", "directive", "prompt"),
    "role-override": ("you",),
    "act-as": ("act", "behave", "pretend", "role"),
    "system-prompt": ("prompt", "system", "instruction", "programming", "above", "what"),
    "jailbreak": (
        *("anything now", "dan mode", "developer mode", "jailbr", "character", "unfiltered"),
        *("uncensored", "unrestricted", "ethical", "moral", "without", "ignore", "disregard"),
        *("bypass", "disable", "override", "turn off", "forget", "abandon", "circumvent"),
        *("evade", "remove", "deactivate"),
    ),
    "addresses-model": (
        *("ai", "llm", "assistant", "chatbot", "language model", "gpt", "claude", "gemini"),
        *("copilot", "agent"),
    ),
}
_ROLE_GATE = ("<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "#", "system", "assistant")

_ROLE_TAGS = re.compile(
    r"<\|(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id"
    r"|end_header_id|begin_of_text)\|>"
    r"|\[/?inst\]|<</?sys>>"
    r"|(?m:^[ \t]{0,8}#{1,4} ?(?:instruction|system prompt|new instructions?)[ \t]{0,4}:?[ \t]{0,4}$)"  # noqa: E501
    r"|(?m:^[ \t]{0,8}#{1,4} ?(?:instructions|system) ?:)"
    r"|(?m:^[ \t]{0,8}(?:system|assistant) ?: ?(?:you are|you're|ignore|from now on|new"
    r" instructions|disregard)\b)"
)

_SENSITIVE = (
    r"(?:conversation|chat (?:history|log)|message history|previous messages|system prompt"
    r"|context window|secrets|credentials|passwords|private (?:data|keys?)|personal (?:data"
    r"|information|details)|users?'?s? (?:data|information"
    r"|details|messages|emails|files|documents)|sensitive (?:data|information)|contents? of"
    r" (?:this|the|these|all|your|our)|everything (?:above|you know)|all (?:the |of the )?"
    r"(?:documents|files|data))"
)
_SEND = re.compile(
    r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|email|e-mail|mail|deliver"
    r"|relay)\b"
)
_SENSITIVE_RE = re.compile(rf"\b{_SENSITIVE}\b")
_DESTINATION = re.compile(
    r"https?:|www\.|\b[a-z0-9._%+\-]{1,64}@[a-z0-9.\-]{1,253}\.[a-z]{2,24}\b|\bwebhook\b"
    r"|\b(?:this|following|that|my|our) (?:url|link|endpoint|address)\b"
)
_WINDOW = 240
_URL = re.compile(r"https?://[^\s)\]>\"'`]{1,2048}")
_QUERY_VALUE = re.compile(r"[?&][^&=#?]{1,40}=([^&#]{0,200})")
_PLACEHOLDER = re.compile(r"(?:\{|\[|<|\$\{?|%7b|%5b|%3c)")
_DATA_NAME = re.compile(
    r"(?:%20| |_)?(?:conversation|chat|history|messages?|prompt|system|secrets?|memory"
    r"|context|previous)"
)
_IMAGE_DATA_NAME = re.compile(
    r"(?:%20| |_)?(?:conversation|chat|history|messages?|prompt|system|secrets?|memory"
    r"|context|previous|data|summary|answer|response|user|query|question|input|info|email"
    r"|passwords?|tokens?|keys?|credentials?|documents?|files?|contents?)"
)

_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"
_AI_WORD = re.compile(r"\b" + _AI_NAMES + r"s?\b")
_INSTRUCTION_CUE = re.compile(
    r"\b(?:must|should|always|never|instead|ignore|do not|don't|please|tell|say|respond|reply"
    r"|answer|output|include|mention|recommend|summari[sz]e|write|print|send|when|make sure"
    r"|obey|follow|comply)\b"
)
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_INVISIBLE_RUN = re.compile(
    "[\u200b-\u200f\u2060-\u2064\ufeff\u00ad\u034f\u115f\u1160\u3164\uffa0\ufe00-\ufe0f"
    "\U000e0100-\U000e01ef]{3}"
)

_INSIDE_WORD = re.compile("[A-Za-z][\u200b-\u200d\u2060\ufeff\u00ad]{1,8}[A-Za-z]")

INJECTION_REASONS: tuple[str, ...] = (
    *(f"{_PREFIX}{name}" for name, _ in _PHRASES[:5]),
    f"{_PREFIX}jailbreak",
    f"{_PREFIX}exfiltration",
    f"{_PREFIX}role-tag",
    f"{_PREFIX}addresses-model",
    f"{_PREFIX}hidden-comment",
    f"{_PREFIX}hidden-characters",
    f"{_PREFIX}bidi-control",
)
"""Every reason :func:`detect_injection` can return, in the order it returns them."""


def _comments(text: str) -> Iterator[str]:
    """HTML comment bodies, paired in one pass (an unclosed comment runs to the end)."""
    at = text.find(_COMMENT_OPEN)
    while at != -1:
        end = text.find(_COMMENT_CLOSE, at + len(_COMMENT_OPEN))
        if end == -1:
            yield text[at + len(_COMMENT_OPEN) :]
            return
        yield text[at + len(_COMMENT_OPEN) : end]
        at = text.find(_COMMENT_OPEN, end + len(_COMMENT_CLOSE))


def _phrases(flat: str) -> set[str]:
    return {
        name
        for name, pattern in _PHRASES
        if any(word in flat for word in _GATES[name]) and pattern.search(flat)
    }


def _placeholder_url(spaced: str) -> bool:
    """A URL whose query carries a template slot for the conversation, or, in a Markdown
    image (it loads without a click), a slot for data of any kind."""
    for url in _URL.finditer(spaced):
        start = url.start()
        image = spaced.endswith("](", 0, start) and "![" in spaced[max(0, start - 210) : start]
        for value in _QUERY_VALUE.finditer(url.group()):
            slot = _PLACEHOLDER.match(value.group(1))
            names = _IMAGE_DATA_NAME if image else _DATA_NAME
            if slot and names.match(value.group(1), slot.end()):
                return True
    return False


def _exfiltration(spaced: str) -> bool:
    """A send verb, then something private, then a destination, within a short window.

    Each pattern runs once over the text; the windows are then joined by bisection, so a text
    full of verbs costs no more than one without.
    """
    if _placeholder_url(spaced):
        return True
    verbs = [m.end() for m in _SEND.finditer(spaced)]
    if not verbs:
        return False
    private = [(m.start(), m.end()) for m in _SENSITIVE_RE.finditer(spaced)]
    destinations = [m.start() for m in _DESTINATION.finditer(spaced)]
    if not private or not destinations:
        return False
    starts = [start for start, _ in private]
    for verb in verbs:
        i = bisect_left(starts, verb)
        if i == len(private) or private[i][0] >= verb + _WINDOW:
            continue
        j = bisect_left(destinations, private[i][1])
        if j < len(destinations) and destinations[j] < verb + _WINDOW:
            return True
    return False


def _hidden(text: str) -> set[str]:
    found: set[str] = set()
    if tag_payload(text) or _INVISIBLE_RUN.search(text):
        found.add("hidden-characters")
    if BIDI_CONTROLS.search(text) and (re.search("[\u202d\u202e]", text) or not _RTL.search(text)):
        found.add("bidi-control")
    for body in dict.fromkeys(_comments(text)):
        flat = plain(body)
        if _phrases(flat) or (_AI_WORD.search(flat) and _INSTRUCTION_CUE.search(flat)):
            found.add("hidden-comment")
            break
    return found


def detect_injection(text: str) -> tuple[str, ...]:
    """Reasons (``"injection:<category>"``) for every injection sign in ``text``; ``()`` if none.

    Instructions hidden in Unicode tag characters are decoded and checked like visible text.
    """
    hidden = tag_payload(text)
    source = f"{text}\n{hidden}" if hidden else text
    spaced = words(source)
    flat = plain(source)
    found = _phrases(flat)
    if _exfiltration(spaced):
        found.add("exfiltration")
    folded = fold(source)
    if any(word in folded for word in _ROLE_GATE) and _ROLE_TAGS.search(folded):
        found.add("role-tag")
    found |= _hidden(text)
    if found and _INSIDE_WORD.search(text):
        found.add("hidden-characters")  # the phrase was split by invisible characters
    return tuple(r for r in INJECTION_REASONS if r[len(_PREFIX) :] in found)
