"""Loading configuration files: policies in TOML or YAML."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from bastion.core.errors import ConfigurationError
from bastion.core.policy import Policy

__all__ = ["load_policy"]


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Load a policy from ``.toml``, ``.yaml`` or ``.yml`` (see ``docs/policy.md``)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix == ".toml":
        return Policy.from_toml(file)
    if suffix in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigurationError(f"cannot load policy {file}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"policy {file} must be a mapping at the top level")
        try:
            return Policy.from_dict(data)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{file}: {exc}") from None
    raise ConfigurationError(f"policy file {file} must end in .toml, .yaml or .yml")
