"""SKILL.md validation as the Agent Skills specification states it, as decision tables."""

from __future__ import annotations

import pytest

from bastion.agents.skills_model import (
    MAX_DESCRIPTION_CHARS,
    FrontMatter,
    check_skill_name,
    parse_skill_md,
)


def _md(front: str, body: str = "Body.\n") -> str:
    return f"---\n{front}---\n{body}"


def _ok(text: str, folder: str) -> FrontMatter:
    parsed = parse_skill_md(text, folder)
    assert isinstance(parsed, FrontMatter), parsed
    return parsed


def _errors(text: str, folder: str = "x") -> list[str]:
    parsed = parse_skill_md(text, folder)
    assert isinstance(parsed, list), parsed
    return parsed


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("pdf", None),
        ("pdf-forms", None),
        ("a1-b2-c3", None),
        ("x" * 64, None),
        ("x" * 65, "over the 64-character limit"),
        ("", "non-empty"),
        ("PDF", "lowercase"),
        ("-pdf", "start or end with a hyphen"),
        ("pdf-", "start or end with a hyphen"),
        ("pdf--forms", "consecutive hyphens"),
        ("pdf_forms", "only lowercase letters, digits and hyphens"),
        ("pdf forms", "only lowercase letters, digits and hyphens"),
        ("../etc", "only lowercase letters, digits and hyphens"),
        ("a/b", "only lowercase letters, digits and hyphens"),
        ("café", "only lowercase letters, digits and hyphens"),
        (42, "non-empty string"),
        (None, "non-empty string"),
    ],
)
def test_name_rules(name: object, why: str | None) -> None:
    result = check_skill_name(name)
    if why is None:
        assert result is None
    else:
        assert result is not None and why in result


def test_a_full_front_matter_is_read() -> None:
    parsed = _ok(
        _md(
            "name: release-notes\n"
            "description: Write release notes.\n"
            "license: MIT\n"
            "compatibility: Needs git.\n"
            "metadata:\n  author: docs\n  version: '1.2'\n"
            "allowed-tools: Bash(git:*) Read\n",
            "# Notes\n\nBody text.\n",
        ),
        "release-notes",
    )
    assert parsed.name == "release-notes"
    assert parsed.description == "Write release notes."
    assert parsed.license == "MIT"
    assert parsed.compatibility == "Needs git."
    assert dict(parsed.metadata) == {"author": "docs", "version": "1.2"}
    assert parsed.allowed_tools == ("Bash(git:*)", "Read")
    assert parsed.body == "# Notes\n\nBody text.\n"
    assert parsed.body_line == 11  # '---', 8 lines of YAML, '---'
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    ("front", "expected"),
    [
        ("description: d\n", "name is required"),
        ("name: x\n", "description is required"),
        ("name: x\ndescription: '   '\n", "description must be a non-empty string"),
        ("name: x\ndescription: [a, b]\n", "description must be a non-empty string"),
        (
            f"name: x\ndescription: {'d' * (MAX_DESCRIPTION_CHARS + 1)}\n",
            "description is 1025 characters, over the 1024-character limit",
        ),
        ("name: y\ndescription: d\n", "name 'y' must equal the folder's name"),
        ("name: x\ndescription: d\nlicense: [MIT]\n", "license must be a string"),
        ("name: x\ndescription: d\ncompatibility: ''\n", "compatibility must be a non-empty"),
        (
            f"name: x\ndescription: d\ncompatibility: {'c' * 501}\n",
            "compatibility is 501 characters, over the 500-character limit",
        ),
        ("name: x\ndescription: d\nmetadata: [a]\n", "metadata must be a mapping"),
        ("name: x\ndescription: d\nmetadata:\n  tags: [a]\n", "metadata.tags must be a string"),
        ("name: x\ndescription: d\nallowed-tools: {a: 1}\n", "allowed-tools must be"),
    ],
)
def test_invalid_front_matter_says_what_is_wrong(front: str, expected: str) -> None:
    errors = _errors(_md(front))
    assert any(expected in e for e in errors), errors


def test_every_error_is_reported_at_once() -> None:
    errors = _errors(_md("name: Bad--Name\nlicense: 3\n"), "Bad--Name")
    assert len(errors) == 3
    assert "lowercase" in errors[0]
    assert errors[1] == "description is required"
    assert errors[2] == "license must be a string"


def test_unknown_fields_and_loose_metadata_are_warnings() -> None:
    parsed = _ok(
        _md("name: x\ndescription: d\nmodel: m\nx-custom: 1\nmetadata:\n  version: 2.0\n"), "x"
    )
    assert parsed.warnings == (
        "unknown front matter fields ignored: model, x-custom",
        "metadata values read as strings (quote them): version",
    )
    assert dict(parsed.metadata) == {"version": "2.0"}


def test_allowed_tools_as_a_list_is_accepted() -> None:
    parsed = _ok(_md("name: x\ndescription: d\nallowed-tools: [Read, Grep]\n"), "x")
    assert parsed.allowed_tools == ("Read", "Grep")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# no front matter\n", "must start with YAML front matter"),
        ("---\nname: x\ndescription: d\n", "must start with YAML front matter"),
        ("\n---\nname: x\n---\n", "must start with YAML front matter"),
        ("---\nname: [x\n---\n", "front matter is not valid YAML (line 3)"),
        ("---\nname: x\n  bad: : :\n---\n", "front matter is not valid YAML"),
        ("---\n- a\n- b\n---\n", "front matter must be a YAML mapping"),
        ("---\nname: x\n...\nbody\n", "description is required"),
        ("---\r\nname: [x\r\n---\r\n", "front matter is not valid YAML (line 3)"),
        ("---\n" + "[" * 5000 + "\n---\n", "front matter is nested too deeply"),
        ("---\nk: " + "{a: " * 17 + "1" + "}" * 17 + "\n---\n", "nested too deeply"),
        ("---\ndescription: " + "d" * 20000 + "\n---\n", "front matter is over 16384 bytes"),
    ],
)
def test_malformed_skill_md_is_reported_not_raised(text: str, expected: str) -> None:
    errors = _errors(text)
    assert len(errors) == 1 and expected in errors[0], errors
    assert "\n" not in errors[0]


def test_yaml_errors_never_echo_the_content() -> None:
    errors = _errors('---\nname: x\ndescription: "sk-SECRET-TOKEN\n---\n')
    assert "SECRET" not in errors[0]


def test_a_python_object_tag_is_not_constructed() -> None:
    errors = _errors("---\nname: !!python/object/apply:os.system ['true']\n---\n")
    assert errors == ["front matter is not valid YAML (line 2); fix it or remove the --- block"]


def test_keys_are_read_as_strings_like_every_front_matter() -> None:
    parsed = _ok(_md("name: x\ndescription: d\nmetadata:\n  1: one\n"), "x")
    assert dict(parsed.metadata) == {"1": "one"}


def test_bom_and_crlf_are_tolerated() -> None:
    parsed = _ok("\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\nLine one.\r\n", "x")
    assert parsed.body == "Line one.\n"
    assert parsed.body_line == 5


def test_description_is_kept_but_trimmed() -> None:
    parsed = _ok(_md("name: x\ndescription: >-\n  Two\n  lines.\n"), "x")
    assert parsed.description == "Two lines."
