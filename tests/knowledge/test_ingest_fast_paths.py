"""The ASCII fast paths of cleaning and type detection give what the full steps give."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.knowledge.ingest import clean, detect
from bastion.knowledge.ingest.clean import clean_text

_ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=80)
_MOSTLY_PLAIN = st.text(
    st.sampled_from("ab c\n\t.-") | st.characters(min_codepoint=0, max_codepoint=0x7F),
    max_size=80,
)


def _full_steps(text: str) -> str:
    text = clean._NEWLINES.sub("\n", text)
    text = unicodedata.normalize("NFC", text)
    text = clean._SOFT_HYPHEN_BREAK.sub("", text)
    return clean._DROP.sub("", text)


@settings(max_examples=400, deadline=None)
@given(_ASCII | _MOSTLY_PLAIN)
def test_character_steps_of_ascii_text_are_the_full_steps(text: str) -> None:
    assert clean._character_steps(text) == _full_steps(text)


def test_plain_ascii_text_is_cleaned_as_before() -> None:
    text = "# Title\n\nA line  with   spaces.\tTab\n\n\n\nlast inter-\nnational line   \n"
    assert clean_text(text) == "# Title\n\nA line with spaces.\tTab\n\nlast international line"
    assert clean_text("a\r\nb\x07c\x0cd") == "a\nbc\nd"


def _looks_like_text_slowly(data: bytes) -> bool:
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return True
    sample = data[:8192]
    if b"\x00" in sample:
        return False
    text = sample.decode("utf-8")
    return len(detect._CONTROLS.findall(text)) <= len(text) // 100


@settings(max_examples=400, deadline=None)
@given(_ASCII | _MOSTLY_PLAIN, st.integers(0, 300))
def test_text_detection_of_ascii_counts_controls_as_the_expression_does(
    text: str, padding: int
) -> None:
    data = (text + "x" * padding).encode()
    assert detect._looks_like_text(data) == _looks_like_text_slowly(data)
