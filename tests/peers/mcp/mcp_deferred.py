"""Drives `kiln mcp --defer PATTERN` with the official Python MCP SDK (legacy 2025-11-25 mode)
and prints what it saw as JSON.

usage: mcp_deferred.py TARGET QUERY TOOL ARGS_JSON
  TARGET: a JSON argv list to start kiln over stdio, or an http://127.0.0.1:PORT/mcp URL
Lists the tools, searches with QUERY, waits for tools/list_changed, lists again and calls TOOL.
"""
import json, os, sys
import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def text_of(result):
    return "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")


async def main(target, query, tool, args):
    out = {}
    changed = anyio.Event()

    async def on_message(m):
        if isinstance(m, t.ToolListChangedNotification):
            changed.set()

    if target.startswith("http"):
        server = streamable_http_client(target)
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    async with Client(server, mode="legacy", message_handler=on_message) as c:
        out["tools"] = [x.name for x in (await c.list_tools()).tools]
        r = await c.call_tool("search_tools", {"query": query})
        out["found"] = [x["name"] for x in json.loads(text_of(r))["tools"]]
        with anyio.fail_after(20):
            await changed.wait()
        out["tools_after"] = [x.name for x in (await c.list_tools()).tools]
        r = await c.call_tool(tool, json.loads(args))
        out["called"] = {"text": text_of(r), "is_error": bool(r.is_error)}
    print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
