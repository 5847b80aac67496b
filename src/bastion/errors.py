"""Bastion's exception tree (see :mod:`bastion.core.errors` for the drawing)."""

from bastion.core.errors import *  # noqa: F403
from bastion.core.errors import __all__ as __all__  # noqa: PLC0414
