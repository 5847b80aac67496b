"""Governance: identities (JWT), guardrails, and governed answers with citations."""
