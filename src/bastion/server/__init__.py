"""``bastion serve``: the HTTP API, MCP per token and the web page over one workspace.

:func:`create_app` is the ASGI application (Starlette, run by uvicorn); see ``docs/server.md``.
"""

from bastion.server.app import create_app
from bastion.server.metrics import JsonFormatter, RequestIdFilter
from bastion.server.settings import ServerSettings

__all__ = ["JsonFormatter", "RequestIdFilter", "ServerSettings", "create_app"]
