"""Agent tools defined once: typed async functions, a session that keeps the safety rules,
and the tool set of one principal. The MCP and OpenAI adapters (``bastion.agents.mcp``,
``bastion.agents.openai``) only convert these."""

from bastion.agents.tools.changes import CHANGE_TOOLS
from bastion.agents.tools.commands import CommandRule
from bastion.agents.tools.execute import EXECUTE_TOOLS
from bastion.agents.tools.granular import GRANULAR_TOOLS
from bastion.agents.tools.intent import INTENT_TOOLS
from bastion.agents.tools.outputs import OutputLimits, Scratch, dumps, fail, ok
from bastion.agents.tools.prompt import agent_instructions
from bastion.agents.tools.session import (
    Approval,
    ApprovalDeniedError,
    ApprovalRequest,
    PathLocks,
    ReadFirstError,
    StaleFileError,
    ToolSession,
)
from bastion.agents.tools.skills import skill_tools
from bastion.agents.tools.spec import Capability, Output, Tool, ToolArgumentError, tool
from bastion.agents.tools.toolset import PERMISSIONS, Toolset, capabilities

__all__ = [
    "CHANGE_TOOLS",
    "EXECUTE_TOOLS",
    "GRANULAR_TOOLS",
    "INTENT_TOOLS",
    "PERMISSIONS",
    "Approval",
    "ApprovalDeniedError",
    "ApprovalRequest",
    "Capability",
    "CommandRule",
    "Output",
    "OutputLimits",
    "PathLocks",
    "ReadFirstError",
    "Scratch",
    "StaleFileError",
    "Tool",
    "ToolArgumentError",
    "ToolSession",
    "Toolset",
    "agent_instructions",
    "capabilities",
    "dumps",
    "fail",
    "ok",
    "skill_tools",
    "tool",
]
