"""The workspace layer: orchestration over guarded stores, and its blocking facade."""

from bastion.workspace.grep import GrepMatch, GrepResult
from bastion.workspace.sync import SyncWorkspace
from bastion.workspace.workspace import EditResult, TextPage, Workspace

__all__ = ["EditResult", "GrepMatch", "GrepResult", "SyncWorkspace", "TextPage", "Workspace"]
