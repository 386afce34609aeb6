"""MCP over streamable HTTP: memdsl's tools, resources and prompts for every workspace
the caller may use, served by the daemon at `/mcp` beside the JSON API.

A thin door: everything it answers comes from `memhubd.service`.
"""

from __future__ import annotations

from memhubd.mcp.server import MCP_PATH, McpEndpoint, MemhubMCP, build_mcp_server, mount_mcp

__all__ = ["MCP_PATH", "McpEndpoint", "MemhubMCP", "build_mcp_server", "mount_mcp"]
