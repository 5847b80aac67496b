"""document_labels as a decision table: front matter may only make a document harder to read."""

from __future__ import annotations

from typing import Any

import pytest

from bastion.core.models import Labels
from bastion.core.principal import Classifications, Principal, labels_admit
from bastion.labels.resolve import document_labels

LEVELS = Classifications(("public", "internal", "confidential", "restricted"))
NOBODY = frozenset({"\x00nobody"})


def labels(base: Labels, **metadata: Any) -> Labels:
    return document_labels(base, metadata, LEVELS)


@pytest.mark.parametrize(
    ("base", "wanted", "result"),
    [
        ("public", "confidential", "confidential"),  # raised
        ("internal", "restricted", "restricted"),
        ("confidential", "public", "confidential"),  # never lowered
        ("restricted", "internal", "restricted"),
        ("internal", "internal", "internal"),
        ("public", "top-secret", "restricted"),  # unknown: the highest level
        ("confidential", "Public", "restricted"),  # levels are exact names
        ("public", "  confidential ", "confidential"),
        ("internal", "", "internal"),  # nothing asked
        ("internal", None, "internal"),
        ("custom-level", "public", "custom-level"),  # an unknown base admits nobody: kept
        ("custom-level", "restricted", "custom-level"),
    ],
)
def test_classification(base: str, wanted: object, result: str) -> None:
    assert labels(Labels(classification=base), classification=wanted).classification == result


def test_no_front_matter_keeps_the_base() -> None:
    base = Labels(
        tenant="acme",
        classification="internal",
        roles=frozenset({"eng"}),
        tags=frozenset({"t"}),
    )
    assert document_labels(base, {}, LEVELS) == base


@pytest.mark.parametrize(
    ("base", "asked", "result"),
    [
        (frozenset(), ["eng"], frozenset({"eng"})),  # everyone -> only eng
        (frozenset(), "eng, ops", frozenset({"eng", "ops"})),  # a comma-separated string
        (frozenset({"eng", "ops"}), ["eng", "sales"], frozenset({"eng"})),  # intersected
        (frozenset({"eng"}), ["eng", "sales"], frozenset({"eng"})),  # never widened
        (frozenset({"eng"}), ["sales"], NOBODY),  # disjoint: nobody
        (frozenset({"eng"}), [], frozenset({"eng"})),  # nothing asked
        (frozenset({"eng"}), " , ", frozenset({"eng"})),
        (frozenset(), None, frozenset()),
    ],
)
def test_roles(base: frozenset[str], asked: object, result: frozenset[str]) -> None:
    assert labels(Labels(roles=base), roles=asked).roles == result


@pytest.mark.parametrize(
    ("base", "added", "result"),
    [
        (frozenset({"a"}), ["b", "c"], frozenset({"a", "b", "c"})),
        (frozenset({"a"}), "b,  c", frozenset({"a", "b", "c"})),
        (frozenset(), ("x",), frozenset({"x"})),
        (frozenset({"a"}), None, frozenset({"a"})),
        (frozenset({"a"}), [1, " "], frozenset({"a", "1"})),
    ],
)
def test_tags_are_a_union(base: frozenset[str], added: object, result: frozenset[str]) -> None:
    assert labels(Labels(tags=base), tags=added).tags == result


def test_a_tenant_is_never_changed_only_given_where_there_was_none() -> None:
    assert labels(Labels(tenant="acme"), tenant="acme").tenant == "acme"
    assert labels(Labels(), tenant=" acme ").tenant == "acme"  # tighter: one tenant only
    moved = labels(Labels(tenant="acme"), tenant="evil", classification="public")
    assert moved.tenant == "acme" and moved.undetermined  # another tenant: admits nobody


@pytest.mark.parametrize(
    "metadata",
    [
        {"classification": 3},
        {"classification": ["public"]},
        {"roles": 5},
        {"roles": {"a": 1}},
        {"roles": [["nested"]]},
        {"tags": {"a": 1}},
        {"tenant": ""},
        {"tenant": 7},
    ],
)
def test_a_field_of_the_wrong_shape_fails_closed(metadata: dict[str, object]) -> None:
    out = document_labels(Labels(classification="internal"), metadata, LEVELS)
    assert out.undetermined
    assert not labels_admit(out, Principal.of("root", clearance="restricted"), frozenset(), LEVELS)


def test_everything_at_once() -> None:
    base = Labels(tenant="acme", classification="internal", roles=frozenset({"eng", "ops"}))
    out = labels(base, classification="confidential", roles=["ops", "hr"], tags="q3", tenant="acme")
    assert out == Labels(
        tenant="acme",
        classification="confidential",
        roles=frozenset({"ops"}),
        tags=frozenset({"q3"}),
    )
