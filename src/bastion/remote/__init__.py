"""Talking to remote services over HTTP: retries with back-off, shared by the embedders and
the chat models that call OpenAI-compatible endpoints. Depends on ``bastion.core`` only."""
