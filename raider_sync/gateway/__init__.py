"""The MCP gateway: MCP servers behind one URL, reached with customer keys.

``protocol`` holds the wire rules as plain functions, ``config`` the checked config, ``relay``
the WSGI application; ``raider-sync gateway --config FILE --listen HOST:PORT`` serves it.
"""
from . import protocol
from .config import GatewayConfig
from .relay import Relay, make_app

__all__ = ["GatewayConfig", "Relay", "make_app", "protocol"]
