"""Fault injection: full disk, read-only remount, permissions changed under the store, a
PostgreSQL restart mid-transaction, an S3 endpoint failing then recovering."""
