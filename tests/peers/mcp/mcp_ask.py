"""Calls an `ask`-granted tool of `kiln mcp` with the official Python MCP SDK and prints the result.

usage: mcp_ask.py TARGET MODE ANSWER [TOOL ARGS]
  TARGET: a JSON argv list to start kiln over stdio, or an http://127.0.0.1:PORT/mcp URL
  MODE:   2025-11-25 (the SDK's legacy mode: elicitation/create) | 2026-07-28 (input_required)
  ANSWER: accept | decline | none (the client offers no elicitation at all), or a
          comma-separated list of accept/decline answering the questions in turn
  TOOL, ARGS: the tool to call and its arguments as JSON (default: remember {"text": "kept"})
Prints {"protocol", "asked": [messages], "text", "is_error"} as JSON.
"""
import json, os, sys
import anyio
import mcp_types as t
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


async def main(target, mode, answer, tool="remember", args='{"text": "kept"}'):
    asked = []
    answers = answer.split(",")

    async def on_elicit(context, params):
        asked.append(params.message)
        if answers[min(len(asked), len(answers)) - 1] == "accept":
            return t.ElicitResult(action="accept", content={"approve": True})
        return t.ElicitResult(action="decline")

    if target.startswith("http"):
        server = streamable_http_client(target)
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=os.getcwd())
    sdk_mode = "legacy" if mode == "2025-11-25" else mode
    callback = None if answer == "none" else on_elicit
    async with Client(server, mode=sdk_mode, elicitation_callback=callback) as c:
        r = await c.call_tool(tool, json.loads(args))
        text = "\n".join(b.text for b in r.content if getattr(b, "type", "") == "text")
        out = {"protocol": c.protocol_version, "asked": asked, "text": text,
               "is_error": bool(r.is_error)}
    print(json.dumps(out))


anyio.run(main, *sys.argv[1:])
