"""Each bad configuration value is one line that names the key, never a silent fail-open
(red-team variants of issue 10's classes; pins variants that held; the control-character ids pin
a gap fixed in the configuration's principal and users)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bastion.config import WorkspaceConfig
from bastion.core.errors import ConfigurationError

_P = {"rules": [{"effect": "allow", "actions": ["read"], "paths": ["/**"]}]}
_M = [{"prefix": "/docs", "url": "memory://"}]


def _with(**changes: Any) -> dict[str, Any]:
    return {"policy": _P, "mounts": _M, **changes}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_with(principal={"id": "a\nb"}), "principal id holds a control"),
        (_with(principal={"id": "a\u200bb"}), "principal id holds a control"),
        (_with(users={"a\u2028b": {"roles": ["hr"]}}), "users: principal id holds a control"),
        (_with(users={"ana": {"roles": ["hr\x00"]}}), "principal roles holds a control"),
        (_with(principal={"id": "a", "roles": "hr"}), "principal: roles must be a list"),
        (_with(principal={"id": "a", "tenant": 5}), "principal: tenant must be"),
        (_with(principal={"id": "a", "clearance": True}), "principal: clearance must be"),
        (_with(users={"ana": {"roles": "hr"}}), "roles and tags must be lists"),
        (_with(users={"ana": {"role": ["hr"]}}), "unknown keys role"),
        (_with(server={"x": 1}), "unknown keys server"),
        (_with(knowledge={"indx": "x"}), "unknown keys indx"),
        (_with(audit=5), "audit must be"),
        ({"policy": {"default": "allow"}, "mounts": _M}, "unknown keys default"),
        (
            {"policy": {"rules": [{**_P["rules"][0], "rolez": ["x"]}]}, "mounts": _M},
            "unknown keys rolez",
        ),
        (
            {"policy": {"rules": [{**_P["rules"][0], "actions": "read"}]}, "mounts": _M},
            "not a string",
        ),
        (
            {"policy": {"rules": [{**_P["rules"][0], "paths": ["docs/**"]}]}, "mounts": _M},
            "must be absolute",
        ),
        (
            {"policy": {"rules": [{**_P["rules"][0], "paths": ["/docs/**/"]}]}, "mounts": _M},
            "can never match",
        ),
        (
            {"policy": {"rules": [{**_P["rules"][0], "effect": "Deny"}]}, "mounts": _M},
            "effect must be",
        ),
        (_with(mounts=[*_M, {"prefix": "/docs/", "url": "memory://"}]), "mounted twice"),
        (
            _with(
                mounts=[
                    {"prefix": "/caf\u00e9", "url": "memory://"},
                    {"prefix": "/cafe\u0301", "url": "memory://"},
                ]
            ),
            "mounted twice",
        ),
        (_with(mounts=[{**_M[0], "scop": "read_only"}]), "unknown keys scop"),
        (_with(mounts=[{**_M[0], "labels": "confidential"}]), "labels must be a table"),
        (_with(mounts=[{**_M[0], "labels": {"roles": "hr"}}]), "labels.roles must be a list"),
        (
            _with(mounts=[{**_M[0], "labels": {"clasification": "x"}}]),
            "unknown keys clasification",
        ),
        (_with(mounts=[{"prefix": "/docs", "url": "${NOPE}"}]), "NOPE is not set"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(
    tmp_path: Path, data: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        WorkspaceConfig.from_dict(data, base=tmp_path, env={})
    message = str(caught.value)
    assert words in message and "\n" not in message, message


def test_an_expanded_variable_is_not_expanded_again(tmp_path: Path) -> None:
    """Class: environment expansion. A value that itself holds ``${...}`` stays as it is."""
    data = _with(mounts=[{"prefix": "${P}", "url": "memory://"}])
    config = WorkspaceConfig.from_dict(data, base=tmp_path, env={"P": "/${SECRET}"})
    assert [str(m.prefix) for m in config.mounts] == ["/${SECRET}"]
