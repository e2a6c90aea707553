"""Lists `kiln mcp`'s tools and calls some with the official Python MCP SDK (`mcp` 2.x); prints
what it saw of titles, output schemas, annotations and structured content as JSON.

usage: mcp_meta_client.py ARGV_JSON MODE     (MODE: 2025-11-25 | 2026-07-28)
"""
import json, os, sys
import anyio
from mcp import Client, StdioServerParameters


async def main(target, mode):
    argv = json.loads(target)
    server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    out = {}
    sdk_mode = "legacy" if mode == "2025-11-25" else mode
    async with Client(server, mode=sdk_mode) as c:
        out["protocol"] = c.protocol_version
        for tool in (await c.list_tools()).tools:
            a = tool.annotations
            out[tool.name] = {
                "title": tool.title,
                "output_schema": tool.output_schema,
                "annotations": None if a is None else {
                    "read_only": a.read_only_hint, "destructive": a.destructive_hint,
                    "idempotent": a.idempotent_hint, "open_world": a.open_world_hint,
                },
            }
        for name, args in [("sum", {"a": 2, "b": 40}), ("count", {})]:
            r = await c.call_tool(name, args)
            out["call_" + name] = {"structured": r.structured_content, "is_error": bool(r.is_error)}
    print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
