"""PII detection and redaction: what each detector flags, what it must leave alone.

Credentials are assembled from pieces at run time so that this file never holds a string a
secret scanner would stop a push for.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.governance.guardrails import (
    ALL_PII_KINDS,
    PiiKind,
    find_pii,
    luhn_ok,
    mod97_ok,
    redact,
)


def _found(text: str, kind: PiiKind | None = None) -> list[str]:
    """The matched substrings (of one kind, if given)."""
    return [text[f.start : f.end] for f in find_pii(text) if kind is None or f.kind is kind]


def _details(text: str) -> list[str]:
    return [f.detail for f in find_pii(text)]


# -- emails ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "email"),
    [
        ("Write to jane.doe@example.com today.", "jane.doe@example.com"),
        ("cc: ops+alerts@mail.example.co.uk,", "ops+alerts@mail.example.co.uk"),
        ("<First_Last-99@sub.example.org>", "First_Last-99@sub.example.org"),
    ],
)
def test_emails_are_found(text: str, email: str) -> None:
    assert _found(text, PiiKind.EMAIL) == [email]


@pytest.mark.parametrize(
    "text",
    [
        "git clone git@github.com:acme/bastion.git",
        "Use logo@2x.png on retina screens.",
        "npm install @types/node",
        "ssh admin@localhost",
        "Decorators like @dataclass are fine.",
    ],
)
def test_email_look_alikes_are_not_emails(text: str) -> None:
    assert _found(text, PiiKind.EMAIL) == []


# -- phones ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "phone"),
    [
        ("Call +44 20 7946 0958 now", "+44 20 7946 0958"),
        ("Call +44 (0)20 7946 0958 now", "+44 (0)20 7946 0958"),
        ("US office: +1 (555) 123-4567.", "+1 (555) 123-4567"),
        ("Berlin +49-30-1234567", "+49-30-1234567"),
        ("mobile +4915123456789", "+4915123456789"),
        ("(555) 123-4567 is the desk", "(555) 123-4567"),
        ("or 555-123-4567.", "555-123-4567"),
        ("or 555.123.4567.", "555.123.4567"),
        ("toll free 1-800-555-0199", "1-800-555-0199"),
        ("London 020 7946 0958", "020 7946 0958"),
        ("Paris 01 23 45 67 89", "01 23 45 67 89"),
        ("Paris 01.23.45.67.89", "01.23.45.67.89"),
        ("Amsterdam 06-12345678", "06-12345678"),
    ],
)
def test_phones_are_found(text: str, phone: str) -> None:
    assert _found(text, PiiKind.PHONE) == [phone]


@pytest.mark.parametrize(
    "text",
    [
        "In 2023 we shipped 1.2.3, then 2024.1.",
        "Certified to ISO 27001 and ISO 9001:2015.",
        "Released 2023-10-15 at 10:30:00.",
        "Meeting on 01.02.2023 10:30.",
        "Order 123456789 and invoice 20231015.",
        "Host 192.168.100.200 on port 8080.",
        "Version 0.12.3, build 0042.",
        "Page 12 of 345, lines 10-20.",
        "Math: 3 + 4 = 7.",
        "Total: 1,234,567.89 USD",
        "x = 0.5 * 100 - 20",
    ],
)
def test_numbers_that_are_not_phones(text: str) -> None:
    assert _found(text) == []


# -- payment cards --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        "4111 1111 1111 1111",  # Visa test number
        "4111-1111-1111-1111",
        "4111111111111111",
        "5555 5555 5555 4444",  # Mastercard
        "2223003122003222",  # Mastercard 2-series
        "3782 822463 10005",  # Amex, 4-6-5
        "378282246310005",
        "6011111111111117",  # Discover
        "4222222222222",  # 13 digits
    ],
)
def test_cards_that_pass_luhn_are_found(number: str) -> None:
    assert _found(f"Card: {number}.", PiiKind.CARD) == [number]


@pytest.mark.parametrize(
    "text",
    [
        "Card: 4111 1111 1111 1112.",  # fails Luhn
        "Id: 41111111111111111111111.",  # longer than any card
        "Digits: 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1.",  # spaced digits
        "Mixed: 4111-1111 1111-1111.",  # two kinds of separator
        "Account 1111111111111117.",  # passes Luhn, but no card starts with 1
        "Years 2019 2020 2021 2022 2023 2024 2025",  # 2... is a card only in 2221-2720
    ],
)
def test_card_look_alikes_are_not_cards(text: str) -> None:
    assert _found(text, PiiKind.CARD) == []


def test_numbers_written_back_to_back_are_each_found() -> None:
    text = "+44 20 7946 0958 4111 1111 1111 1111, 020 7946 0958 4111 1111 1111 1111"
    assert _found(text) == [
        "+44 20 7946 0958",
        "4111 1111 1111 1111",
        "020 7946 0958",
        "4111 1111 1111 1111",
    ]
    assert _found("Codes 2024 0958 4111 1111") == []


def test_luhn_and_mod97() -> None:
    assert luhn_ok("79927398713")
    assert not luhn_ok("79927398710")
    assert mod97_ok("GB82WEST12345698765432")
    assert not mod97_ok("GB82WEST12345698765433")


# -- IBANs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "iban",
    [
        "DE89 3704 0044 0532 0130 00",
        "DE89370400440532013000",
        "GB82 WEST 1234 5698 7654 32",
        "NL91ABNA0417164300",
        "BE68 5390 0754 7034",
        "FR14 2004 1010 0505 0001 3M02 606",
        "CH93 0076 2011 6238 5295 7",
    ],
)
def test_ibans_are_found(iban: str) -> None:
    assert _found(f"Pay to {iban} please", PiiKind.IBAN) == [iban]


@pytest.mark.parametrize(
    "text",
    [
        "Pay to DE89 3704 0044 0532 0130 01 please",  # bad check digits
        "Pay to DE89 3704 0044 0532 0130 0 please",  # wrong length for DE
        "Pay to QQ12 3456 7890 1234 5678 please",  # no such country
        "Part number AB12CDEF3456GH",
    ],
)
def test_invalid_ibans_are_not_found(text: str) -> None:
    assert _found(text, PiiKind.IBAN) == []


# -- national ids ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("SSN 123-45-6789", "us-ssn"),
        ("ssn: 123 45 6789", "us-ssn"),
        ("SSN: 123456789", "us-ssn"),
        ("NI number AB 12 34 56 C", "uk-nino"),
        ("NI number AB123456C", "uk-nino"),
        ("DNI 12345678Z", "es-dni"),
        ("NIE X1234567L", "es-nie"),
        ("NIR 2 95 10 99 126 111 93", "fr-nir"),
        ("NIR 253072B07300470", "fr-nir"),
        ("NIR 2 53 07 2A 073 004 43", "fr-nir"),
    ],
)
def test_national_ids_are_found(text: str, detail: str) -> None:
    assert _details(text) == [detail]
    assert find_pii(text)[0].kind is PiiKind.NATIONAL_ID


@pytest.mark.parametrize(
    "text",
    [
        "SSN 000-12-3456",  # area 000 is never issued
        "SSN 666-12-3456",
        "SSN 912-34-5678",  # 900-999
        "SSN 123-00-4567",  # group 00
        "SSN 123-45-0000",  # serial 0000
        "SSN 078-05-1120",  # the wallet card number
        "id 123456789",  # nine digits without "SSN" before them
        "NI QQ 12 34 56 C",  # Q never starts a NINO
        "NI GB 12 34 56 A",  # GB is never issued
        "NI AB 12 34 56 E",  # suffix is A-D
        "DNI 12345678A",  # wrong check letter
        "NIR 2 95 10 99 126 111 99",  # wrong key
        "NIR 2 95 13 99 126 111 93",  # month 13
    ],
)
def test_invalid_national_ids_are_not_found(text: str) -> None:
    assert _found(text, PiiKind.NATIONAL_ID) == []


# -- secrets --------------------------------------------------------------------------------

_B62 = "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7"


def _github() -> str:
    return "gh" + "p_" + _B62[:36]


def _slack() -> str:
    return "xo" + "xb-" + "123456789012-1234567890123-" + _B62[:24]


def _openai() -> str:
    return "sk" + "-proj-" + _B62[:32]


def _jwt() -> str:
    return (
        "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0In0" + "." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r"
    )


def _pem(end: bool = True) -> str:
    head = "-----BEGIN RSA " + "PRIVATE KEY-----"
    body = "\nMIIEowIBAAKCAQEAx1y2z3\nQ29tZSBiYXNlNjQgYm9keQ==\n"
    return head + body + ("-----END RSA " + "PRIVATE KEY-----" if end else "")


@pytest.mark.parametrize(
    ("secret", "detail"),
    [
        ("AKIA" + "IOSFODNN7EXAMPLE", "aws-access-key"),
        (_github(), "github-token"),
        ("github_" + "pat_" + _B62[:30] + "_" + _B62[:20], "github-token"),
        (_slack(), "slack-token"),
        ("https://hooks.slack.com/services/" + "T0ABCDEFG/B0ABCDEFG/" + _B62[:24], "slack-webhook"),
        (_openai(), "api-key"),
        ("sk" + "-" + _B62[:40], "api-key"),
        (_jwt(), "jwt"),
    ],
)
def test_credential_shapes_are_found(secret: str, detail: str) -> None:
    text = f"value: {secret} (rotate it)"
    assert _details(text) == [detail]
    assert _found(text, PiiKind.SECRET) == [secret]


def test_private_key_blocks_are_found_whole() -> None:
    text = f"key:\n{_pem()}\nafter"
    assert _found(text, PiiKind.SECRET) == [_pem()]
    assert redact(text, find_pii(text)) == "key:\n[REDACTED:secret]\nafter"


def test_a_private_key_cut_off_before_its_end_line_is_found_to_the_end_of_its_body() -> None:
    text = f"{_pem(end=False)}\nThe next section explains rotation."
    assert redact(text, find_pii(text)) == (
        "[REDACTED:secret]\n\nThe next section explains rotation."
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('password = "S3cure!Passw0rd"', "S3cure!Passw0rd"),
        ("api_key: 9f8e7d6c5b4a3210fedcba", "9f8e7d6c5b4a3210fedcba"),
        ("DB_PASSWORD=hunter2abc", "hunter2abc"),
        ('{"client_secret": "q8Z!x2Lm-77pQ"}', "q8Z!x2Lm-77pQ"),
        ("aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG" + "/bPxRfiCYzKEYw3xq", None),
    ],
)
def test_secret_assignments_report_only_the_value(text: str, value: str | None) -> None:
    found = _found(text, PiiKind.SECRET)
    assert len(found) == 1
    if value is not None:
        assert found == [value]
    assert "[REDACTED:secret]" in redact(text, find_pii(text))
    key = text.split("=", maxsplit=1)[0].split(":", maxsplit=1)[0]
    assert key in redact(text, find_pii(text))


@pytest.mark.parametrize(
    "text",
    [
        'password = os.environ["DB_PASSWORD"]',
        "password = read_secret('db')",
        "password: <your-password>",
        "password=${DB_PASSWORD}",
        "password = user_password",
        "password: changeme123",
        "password: ********",
        "Passwordless login is supported.",
        "token_count = 12345678",
        "pip install sk-learn-compatible-estimator-api",
        "api_key = settings.API_KEY",
        "The password must be 12 characters long.",
    ],
)
def test_secret_look_alikes_are_not_secrets(text: str) -> None:
    assert _found(text, PiiKind.SECRET) == []


# -- redaction, kinds and invariants ---------------------------------------------------------


def test_redaction_replaces_each_finding_with_its_kind() -> None:
    text = "Mail jane@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111."
    assert redact(text, find_pii(text)) == (
        "Mail [REDACTED:email] or call [REDACTED:phone]; card [REDACTED:card]."
    )


def test_text_without_pii_is_returned_unchanged() -> None:
    text = "Nothing to see in release 2.4.1 (2024)."
    assert find_pii(text) == ()
    assert redact(text, ()) == text


def test_kinds_limit_what_is_looked_for() -> None:
    text = "jane@example.com, 4111 1111 1111 1111"
    assert [f.kind for f in find_pii(text, {PiiKind.CARD})] == [PiiKind.CARD]
    assert find_pii(text, ()) == ()
    assert {f.kind for f in find_pii(text, ALL_PII_KINDS)} == {PiiKind.EMAIL, PiiKind.CARD}


def test_overlapping_findings_become_one_that_covers_both() -> None:
    text = f"api_key={_openai()}"
    findings = find_pii(text)
    assert len(findings) == 1
    assert redact(text, findings) == "api_key=[REDACTED:secret]"


def test_findings_name_their_reason_and_placeholder() -> None:
    (finding,) = find_pii("SSN 123-45-6789")
    assert finding.reason == "pii:national-id"
    assert finding.placeholder == "[REDACTED:national-id]"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "jane@example.com",
                "+44 20 7946 0958",
                "4111 1111 1111 1111",
                "DE89 3704 0044 0532 0130 00",
                "123-45-6789",
                _github(),
                "password=hunter2abc",
                " ",
                "-",
                ".",
                "x",
                "7",
                "\n",
                "@",
                "+",
            ]
        ),
        max_size=12,
    )
)
def test_findings_are_ordered_disjoint_and_redaction_removes_them(parts: list[str]) -> None:
    text = ", ".join(parts)
    findings = find_pii(text)
    for a, b in itertools.pairwise(findings):
        assert a.end <= b.start
    for f in findings:
        assert 0 <= f.start < f.end <= len(text)
    redacted = redact(text, findings)
    assert find_pii(redacted) == ()
