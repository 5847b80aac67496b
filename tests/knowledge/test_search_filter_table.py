"""The search filters a caller may pass are one table (``knowledge.index.filters``): every
name there is a field of ``IndexFilter``, the declared operations describe exactly those
names, and a name or shape outside the table is one clear error."""

from __future__ import annotations

import dataclasses

import pytest

from bastion.core.errors import ConfigurationError
from bastion.knowledge.index.filters import CALLER_FILTERS, caller_conditions
from bastion.knowledge.index.models import IndexFilter
from bastion.workspace.operations.knowledge import SearchParams


def test_every_filter_in_the_table_is_a_field_of_the_index_filter() -> None:
    fields = {f.name for f in dataclasses.fields(IndexFilter)}
    assert set(CALLER_FILTERS) <= fields


def test_the_declared_operation_describes_the_table() -> None:
    described = SearchParams.model_fields["filter"].description or ""
    assert [name.strip() for name in described.split(",")] == list(CALLER_FILTERS)


def test_values_take_their_shape_and_wrong_ones_are_one_line() -> None:
    assert caller_conditions({"tags": "a", "doc_ids": ["x", "y"], "section": "Intro"}) == {
        "tags": frozenset({"a"}),
        "doc_ids": frozenset({"x", "y"}),
        "section": "Intro",
    }
    with pytest.raises(ConfigurationError, match=r"^unknown search filter colour; use "):
        caller_conditions({"colour": "red"})
    with pytest.raises(ValueError, match="tags must be a string or a list of strings"):
        caller_conditions({"tags": 3})
    with pytest.raises(ValueError, match="section must be a string"):
        caller_conditions({"section": ["a"]})
