"""An MCP server written with the official Python SDK (`mcp` 2.x, which speaks 2026-07-28 and
the 2025-11-25 handshake) whose one tool answers the protocol revision of the call, so a test can
see which revision kiln's mount negotiated (tests/it/mcp/mcp_peers.rs).

usage: mcp_revision_server.py            serve over stdio
       mcp_revision_server.py http PORT  serve streamable HTTP at http://127.0.0.1:PORT/mcp
"""
import sys

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("rev")


@app.tool()
def revision(ctx: Context) -> str:
    """The protocol revision this call came in on"""
    return ctx.protocol_version or "unknown"


if sys.argv[1:2] == ["http"]:
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    app.run()
