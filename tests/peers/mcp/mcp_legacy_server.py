"""A legacy-only MCP server over stdio, written by hand as servers built on 2025-era SDKs
behave: `initialize` answers 2025-11-25, any other request before it is a JSON-RPC error
(so `server/discover` is refused), and its one tool answers the revision it negotiated.
For tests/it/mcp/mcp_peers.rs (kiln's mounts fall back to the 2025-11-25 handshake).
"""
import json, sys

TOOL = {"name": "revision", "description": "The protocol revision of this session",
        "inputSchema": {"type": "object", "properties": {}}}
initialized = False
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, reply = msg.get("method"), {"jsonrpc": "2.0", "id": msg["id"]}
    if method == "initialize":
        initialized = True
        reply["result"] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "legacy", "version": "1"}}
    elif not initialized:
        reply["error"] = {"code": -32600, "message": f"{method} before initialize"}
    elif method == "tools/list":
        reply["result"] = {"tools": [TOOL]}
    elif method == "tools/call":
        reply["result"] = {"content": [{"type": "text", "text": "2025-11-25"}]}
    else:
        reply["error"] = {"code": -32601, "message": f"no method {method}"}
    print(json.dumps(reply), flush=True)
