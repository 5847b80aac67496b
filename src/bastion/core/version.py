"""The version of Bastion: the one place it is written (``pyproject.toml`` reads it from here
when the distribution is built, so the installed metadata says the same)."""

__version__ = "0.1.0"
