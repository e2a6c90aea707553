"""Drive `kiln mock`'s Responses API and Azure OpenAI routes with the official OpenAI Python SDK.

The SDK parses every reply and stream event with its own typed models; if the mock's wire
drifted from the real service's, it would fail here. Usage: responses_sdk.py BASE_URL.
Prints one JSON object with what each SDK call saw.
"""

import json
import sys

import openai

base = sys.argv[1]
out = {}

oa = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-peer-test", max_retries=0)
tools = [{"type": "function", "name": "lookup", "description": "Find", "strict": False,
          "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}]
user = {"role": "user", "content": "Price of SKU-1 and SKU-2?"}

# 1: a whole reply: a reasoning item (encrypted, nothing stored) and two function calls
r = oa.responses.create(model="m", input=[user], tools=tools, store=False,
                        include=["reasoning.encrypted_content"])
calls = [o for o in r.output if o.type == "function_call"]
out["calls"] = [(c.name, json.loads(c.arguments)) for c in calls]
out["output_types"] = [o.type for o in r.output]
out["encrypted"] = [o.encrypted_content for o in r.output if o.type == "reasoning"]
out["usage"] = [r.usage.input_tokens, r.usage.output_tokens, r.usage.output_tokens_details.reasoning_tokens]
out["status"] = r.status

# 2: the outputs go back (reasoning included) with each call's function_call_output; streamed
follow = [user] + [o.model_dump(exclude_none=True) for o in r.output]
follow += [{"type": "function_call_output", "call_id": c.call_id, "output": "4.5"} for c in calls]
events, text, final = [], "", None
for ev in oa.responses.create(model="m", input=follow, tools=tools, store=False, stream=True,
                              include=["reasoning.encrypted_content"]):
    events.append(ev.type)
    if ev.type == "response.output_text.delta":
        text += ev.delta
    if ev.type == "response.completed":
        final = ev.response
out["stream_text"] = text
out["stream_final_text"] = final.output_text if final else None
out["stream_events"] = sorted(set(events))

# 3: a streamed function call, its arguments in pieces, then its output back, whole
args, item = "", None
for ev in oa.responses.create(model="m", input="Price of SKU-3?", tools=tools, stream=True):
    if ev.type == "response.function_call_arguments.delta":
        args += ev.delta
    if ev.type == "response.output_item.done" and ev.item.type == "function_call":
        item = ev.item
out["stream_call"] = [item.name, json.loads(args), json.loads(item.arguments)]
r4 = oa.responses.create(model="m", tools=tools, input=[
    {"role": "user", "content": "Price of SKU-3?"}, item.model_dump(exclude_none=True),
    {"type": "function_call_output", "call_id": item.call_id, "output": "4.5"}])
out["after_call"] = r4.output_text

# 4: Azure OpenAI, both routes, with an api-key and an api-version
az = openai.AzureOpenAI(azure_endpoint=base, api_key="sk-peer-test", api_version="2024-10-21", max_retries=0)
c = az.chat.completions.create(model="my-deployment", messages=[{"role": "user", "content": "hi"}])
out["azure_chat"] = c.choices[0].message.content
az2 = openai.AzureOpenAI(azure_endpoint=base, api_key="sk-peer-test", api_version="2025-04-01-preview", max_retries=0)
ar = az2.responses.create(model="my-deployment", input="hi", tools=tools)
out["azure_responses_calls"] = [(o.name, json.loads(o.arguments)) for o in ar.output if o.type == "function_call"]

# 5: a function_call_output whose call is not in the input is refused as OpenAI refuses it
try:
    oa.responses.create(model="m", input=[{"type": "function_call_output", "call_id": "call_x", "output": "1"}])
    out["orphan"] = None
except openai.BadRequestError as e:
    out["orphan"] = [e.status_code, e.message]

print(json.dumps(out))
