"""A tiny MCP server written with the official Python SDK (`mcp` 2.x), for kiln to mount
(tests/it/mcp/mcp_peers.rs).

usage: mcp_server.py            serve over stdio
       mcp_server.py http PORT  serve streamable HTTP at http://127.0.0.1:PORT/mcp
"""
import sys

from pydantic import BaseModel
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import TextResource
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("py")


@app.tool()
def add(a: int, b: int) -> int:
    """Adds two integers"""
    return a + b


@app.tool()
def fail() -> str:
    """Always fails"""
    raise ToolError("the python server refuses")


class Stats(BaseModel):
    sum: int
    count: int


@app.tool()
def stats(values: list[int]) -> Stats:
    """Sum and count of a list (structured content)"""
    return Stats(sum=sum(values), count=len(values))


@app.resource("py://greeting", mime_type="text/plain")
def greeting() -> str:
    """A greeting from the python server"""
    return "hello from python"


@app.resource("py://items/{item}")
def item(item: str) -> str:
    """One item by name"""
    return f"item {item}"


@app.prompt()
def review(code: str) -> str:
    """Asks for a review of some code"""
    return f"Please review: {code}"


@app.tool()
async def add_note(text: str, ctx: Context) -> str:
    """Adds a resource py://note and tells the client its resource list changed"""
    app.add_resource(TextResource(uri="py://note", name="note", text=text))
    await ctx.notify_resources_changed()
    return "added"


@app.completion()
async def complete(ref, argument, context):
    """Completes a prompt's code and a template's item from fixed lists."""
    from mcp.types import Completion

    options = {"code": ["x = 1", "xs = []"], "item": ["7", "70", "8"]}.get(argument.name, [])
    return Completion(values=[o for o in options if o.startswith(argument.value)])


if sys.argv[1:2] == ["http"]:
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    app.run()
