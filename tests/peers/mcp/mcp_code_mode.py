"""Drives `kiln mcp --code-mode` with the official Python MCP SDK and prints what it saw.

usage: mcp_code_mode.py ARGV_JSON
  ARGV_JSON: the argv that starts kiln mcp over stdio
Lists the tools, then runs one program through run_code that calls a script tool and a
mounted server's tool, and asks search_tools for the mounted one.
"""
import json, os, sys
import anyio
from mcp import Client, StdioServerParameters

PROGRAM = """
let hello = greet(#{ name: "Ada" });
let now = time__get_current_time(#{ timezone: "UTC" });
`${hello} It is ${now.datetime} in ${now.timezone}.`
"""


def text_of(result):
    return "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")


async def main(argv):
    out = {}
    server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    async with Client(server) as c:
        out["tools"] = sorted(x.name for x in (await c.list_tools()).tools)
        r = await c.call_tool("run_code", {"code": PROGRAM})
        out["run_code"] = {"text": text_of(r), "is_error": bool(r.is_error)}
        r = await c.call_tool("search_tools", {"query": "current time"})
        out["search"] = json.loads(text_of(r))
    print(json.dumps(out))


anyio.run(main, json.loads(sys.argv[1]))
