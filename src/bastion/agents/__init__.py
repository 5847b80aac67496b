"""Agents: one tool definition for every framework, scoped workspaces, and skills."""
