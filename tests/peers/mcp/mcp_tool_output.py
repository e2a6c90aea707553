"""Calls kiln tools that return content blocks, report progress, log and ask the client's model,
with the official Python MCP SDK (`mcp` 2.x), and prints what the SDK saw as JSON.

usage: mcp_tool_output.py TARGET MODE LEVEL
  TARGET: a JSON argv list to start kiln over stdio, or an http://127.0.0.1:PORT/mcp URL
  MODE:   2025-11-25 (the SDK's legacy mode, level set with logging/setLevel) | 2026-07-28
          (level sent with each request)
  LEVEL:  the log level to ask for, or "none" to ask for none
"""
import json, os, sys, warnings
import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


warnings.simplefilter("ignore")  # the SDK warns that logging is deprecated (SEP-2577)


async def main(target, mode, level):
    out = {"logs": [], "progress": []}
    last_log = anyio.Event()

    async def on_log(params):
        out["logs"].append(f"{params.level}={params.data}")
        if params.data == "e":
            last_log.set()

    async def on_progress(progress, total, message):
        out["progress"].append([progress, total, message])

    async def on_sample(context, params):
        asked = params.messages[0].content.text
        return t.CreateMessageResult(
            role="assistant",
            content=t.TextContent(type="text", text=f"seen: {asked}"),
            model="peer-model",
        )

    if target.startswith("http"):
        server = streamable_http_client(target)
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    legacy = mode == "2025-11-25"
    wanted = None if level == "none" else level
    async with Client(
        server,
        mode="legacy" if legacy else mode,
        logging_callback=on_log,
        sampling_callback=on_sample,
        log_level=None if legacy else wanted,
    ) as c:
        out["protocol"] = c.protocol_version
        if legacy and wanted:
            await c.set_logging_level(wanted)
        r = await c.call_tool("mixed", {})
        out["mixed"] = [b.type for b in r.content]
        out["image_mime"] = r.content[1].mime_type
        out["resource_uri"] = str(r.content[2].resource.uri)
        r = await c.call_tool("steps", {}, progress_callback=on_progress)
        out["steps"] = r.content[0].text
        r = await c.call_tool("summarize", {"text": "a long story"})
        out["summarize"] = r.content[0].text
        r = await c.call_tool("chatty", {})
        out["chatty"] = r.content[0].text
        if wanted:
            # On a 2025 HTTP session log messages travel on the session's GET stream, so the
            # last may come just after the answer.
            with anyio.fail_after(10):
                await last_log.wait()
    print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
