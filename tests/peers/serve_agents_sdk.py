"""Drive `kiln serve`'s `POST /v1/responses` with the OpenAI Agents SDK (openai-agents).

Usage: serve_agents_sdk.py BASE_URL MODEL. MODEL is a kiln agent that first runs its own kiln
tool (inside kiln: an `mcp_call` item) and then calls this SDK agent's `discount`, a
`@function_tool` that runs here in Python; its output goes back (the SDK resends the whole
conversation each turn) and the kiln agent answers. The SDK's own Responses model
(`OpenAIResponsesModel`) talks to kiln through an `AsyncOpenAI` client; tracing is off, so
nothing leaves 127.0.0.1. Runs once whole and once streamed; prints one JSON object.
"""

import asyncio
import json
import sys

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

base, model = sys.argv[1], sys.argv[2]
set_tracing_disabled(True)
asked = []


@function_tool
def discount(sku: str) -> str:
    """The discount on a SKU."""
    asked.append(sku)
    return f"10% off {sku}"


def summary(result):
    """What a run saw: its items, the kiln tool calls among them, the model's raw outputs."""
    kiln_calls = [[i.raw_item.name, json.loads(i.raw_item.output)] for i in result.new_items
                  if i.type == "tool_call_item" and getattr(i.raw_item, "type", None) == "mcp_call"]
    return {"final": result.final_output, "asked": list(asked), "items": [i.type for i in result.new_items],
            "kiln_calls": kiln_calls,
            "raw_outputs": [[o.type for o in r.output] for r in result.raw_responses],
            "tool_outputs": [i.output for i in result.new_items if i.type == "tool_call_output_item"]}


async def main():
    client = AsyncOpenAI(base_url=f"{base}/v1", api_key="sk-peer-test", max_retries=0)
    agent = Agent(name="Clerk", instructions="Price SKUs with their discount.",
                  model=OpenAIResponsesModel(model=model, openai_client=client), tools=[discount])
    out = {"run": summary(await Runner.run(agent, "Price of SKU-1 with its discount?"))}
    asked.clear()
    streamed = Runner.run_streamed(agent, "Price of SKU-1 with its discount?")
    deltas = ""
    async for ev in streamed.stream_events():
        if ev.type == "raw_response_event" and ev.data.type == "response.output_text.delta":
            deltas += ev.data.delta
    out["streamed"] = summary(streamed)
    out["streamed"]["deltas"] = deltas
    await client.close()
    print(json.dumps(out))


asyncio.run(main())
