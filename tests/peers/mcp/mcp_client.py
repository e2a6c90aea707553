"""Drives `kiln mcp` with the official Python MCP SDK (`mcp` 2.x) and prints what it saw as JSON.

usage: mcp_client.py TARGET MODE SCRIPTS_DIR
  TARGET: a JSON argv list to start kiln over stdio, or an http://127.0.0.1:PORT/mcp URL
  MODE:   2025-11-25 (the SDK's legacy mode) | 2026-07-28
  env MCP_TOKEN: bearer token for HTTP
Writes SCRIPTS_DIR/added.rhai mid-session and waits for the list-changed notification.
"""
import json, os, sys
import anyio, httpx2
import mcp_types as t
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

ADDED = 'tool("added").description("Added while serving").handler(|args| "new");\n'


def text_of(result):
    return "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")


async def main(target, mode, scripts):
    out = {}
    changed = anyio.Event()

    async def on_message(m):  # 2025-11-25: unscoped notifications arrive here
        if isinstance(m, t.ToolListChangedNotification):
            changed.set()

    if target.startswith("http"):
        token = os.environ.get("MCP_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        server = streamable_http_client(target, http_client=httpx2.AsyncClient(headers=headers))
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    sdk_mode = "legacy" if mode == "2025-11-25" else mode
    async with Client(server, mode=sdk_mode, message_handler=on_message) as c:
        out["protocol"] = c.protocol_version
        tools = (await c.list_tools()).tools
        out["tools"] = [x.name for x in tools]
        greet = next(x for x in tools if x.name == "greet")
        out["greet_schema"] = greet.input_schema
        out["greet_read_only"] = greet.annotations.read_only_hint if greet.annotations else None
        r = await c.call_tool("greet", {"name": "Ada"})
        out["ok"] = {"text": text_of(r), "is_error": bool(r.is_error)}
        r = await c.call_tool("greet", {"name": 5})
        out["invalid"] = {"text": text_of(r), "is_error": bool(r.is_error)}
        r = await c.call_tool("fetch_secret", {})
        out["ungranted"] = {"text": text_of(r), "is_error": bool(r.is_error)}
        try:
            await c.call_tool("no_such_tool", {})
            out["unknown"] = "no error"
        except Exception as e:  # a protocol error, as the spec has it for unknown tools
            out["unknown"] = str(e)

        def add_script():
            with open(os.path.join(scripts, "added.rhai"), "w") as f:
                f.write(ADDED)

        if c.protocol_version >= "2026-07-28":
            async with c.listen(tools_list_changed=True) as sub:
                add_script()
                with anyio.fail_after(20):
                    out["notified"] = type(await sub.__anext__()).__name__
        else:
            add_script()
            with anyio.fail_after(20):
                await changed.wait()
            out["notified"] = "ToolListChangedNotification"
        out["tools_after"] = [x.name for x in (await c.list_tools()).tools]
    print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
