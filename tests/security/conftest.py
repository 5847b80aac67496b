"""Fixtures shared by the security suites."""

from security_stores import make_store  # noqa: F401 (a fixture, found by name)
