"""The change journal: every change through the workspace recorded, reviewable and undoable
(docs/changes.md)."""

from bastion.workspace.journal.db import (
    Change,
    Checkpoint,
    Entry,
    Journal,
    JournalError,
    Retention,
    State,
)
from bastion.workspace.journal.postgres import PgJournal
from bastion.workspace.journal.recording import JournalledStore, Threads
from bastion.workspace.journal.review import ChangeReview, Rollback

__all__ = [
    "Change",
    "ChangeReview",
    "Checkpoint",
    "Entry",
    "Journal",
    "JournalError",
    "JournalledStore",
    "PgJournal",
    "Retention",
    "Rollback",
    "State",
    "Threads",
]
