"""Drive `kiln serve`'s `POST /v1/responses` with the official OpenAI Python SDK.

Usage: serve_responses_sdk.py BASE_URL. The server's agents (tests/it/wires/responses_support.rs):
`greeter` answers, `shop` runs its kiln tool `lookup` then answers, `clerk` calls the client's
function `discount` then answers, `slow` answers after 4 s. The SDK parses every reply and
event with its own typed models. Prints one JSON object with what each SDK call saw.
"""

import json
import sys
import time

import openai

base = sys.argv[1]
oa = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-peer-test", max_retries=0)
discount = {"type": "function", "name": "discount", "description": "The discount on a SKU", "strict": False,
            "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}
out = {}


def error_of(f):
    """The SDK's error for a call that must fail: [class, HTTP status, error code]."""
    try:
        f()
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return [type(e).__name__, e.status_code, body.get("code")]
    return None


def message_texts(items):
    """The text of each message item: role and its parts' text."""
    return [[i.role, "".join(getattr(c, "text", "") for c in i.content)] for i in items if i.type == "message"]


# 1: a plain answer
r = oa.responses.create(model="greeter", input="Say hello.")
out["plain"] = {"id": r.id, "object": r.object, "status": r.status, "model": r.model, "text": r.output_text,
                "types": [o.type for o in r.output],
                "usage": [r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens]}

# 2: the agent runs its own kiln tool: an mcp_call item before the answer
shop = oa.responses.create(model="shop", input="Price of SKU-1?")
out["kiln_tool"] = {"types": [o.type for o in shop.output], "text": shop.output_text,
                    "calls": [[c.server_label, c.name, json.loads(c.arguments), json.loads(c.output), c.error, c.status]
                              for c in shop.output if c.type == "mcp_call"]}

# 3: the client's function tool: the run stops at its call; the output goes back by previous_response_id
first = oa.responses.create(model="clerk", input="Price of SKU-1 after its discount?", tools=[discount])
calls = [o for o in first.output if o.type == "function_call"]
then = oa.responses.create(model="clerk", previous_response_id=first.id, tools=[discount],
                           input=[{"type": "function_call_output", "call_id": c.call_id, "output": "10% off"}
                                  for c in calls])
out["function"] = {"status": first.status, "types": [o.type for o in first.output],
                   "calls": [[c.name, json.loads(c.arguments), c.call_id.startswith("call"), c.id.startswith("fc")]
                             for c in calls],
                   "text": then.output_text, "previous": then.previous_response_id == first.id,
                   "then_types": [o.type for o in then.output]}

# 4: streamed: text deltas assembled, the final response from the stream helper
events, text, seq = [], "", []
with oa.responses.stream(model="shop", input="Price of SKU-1?") as stream:
    for ev in stream:
        events.append(ev.type)
        seq.append(ev.sequence_number)
        if ev.type == "response.output_text.delta":
            text += ev.delta
    final = stream.get_final_response()
out["stream"] = {"text": text, "final_text": final.output_text, "final_types": [o.type for o in final.output],
                 "final_status": final.status, "events": events, "sequence_numbers_rise": seq == sorted(set(seq)),
                 "mcp_output": [json.loads(o.output) for o in final.output if o.type == "mcp_call"]}

# 5: a streamed call of the client's function, its arguments in deltas
args = ""
with oa.responses.stream(model="clerk", input="Price of SKU-1 after its discount?", tools=[discount]) as stream:
    for ev in stream:
        if ev.type == "response.function_call_arguments.delta":
            args += ev.delta
    final = stream.get_final_response()
fcs = [o for o in final.output if o.type == "function_call"]
out["stream_function"] = {"args": json.loads(args) if args else None,
                          "calls": [[c.name, json.loads(c.arguments)] for c in fcs], "status": final.status}

# 6: stored responses: retrieve, input items, delete
got = oa.responses.retrieve(shop.id)
out["retrieve"] = {"same_id": got.id == shop.id, "text": got.output_text, "types": [o.type for o in got.output]}
items = oa.responses.input_items.list(shop.id)
out["input_items"] = message_texts(items.data)
then_items = oa.responses.input_items.list(then.id)
out["then_input_items"] = [[i.type, getattr(i, "output", None)] for i in then_items.data]
deleted = oa.responses.delete(r.id)
out["deleted"] = [deleted is None, error_of(lambda: oa.responses.retrieve(r.id))]
unstored = oa.responses.create(model="greeter", input="Say hello.", store=False)
out["unstored"] = [unstored.output_text, error_of(lambda: oa.responses.retrieve(unstored.id))]

# 7: cancelled while the model is still thinking (the slow agent answers after 4 s)
t0 = time.monotonic()
cancel, after, ended = None, [], None
try:
    with oa.responses.stream(model="slow", input="Take your time.") as stream:
        for ev in stream:
            if ev.type == "response.created" and cancel is None:
                cancel = oa.responses.cancel(ev.response.id)
            elif cancel is not None:
                after.append(ev.type)
                if ev.type in ("response.failed", "response.incomplete", "response.completed"):
                    ended = ev.response.status
except openai.APIError as e:
    after.append(f"raised {type(e).__name__}")
out["cancel"] = {"status": cancel.status if cancel else None, "after": after, "ended": ended,
                 "seconds": round(time.monotonic() - t0, 2),
                 "retrieved": oa.responses.retrieve(cancel.id).status if cancel else None}

# 9: a long conversation compacted, then continued from the compacted output
convo = []
for n in range(6):
    convo += [{"role": "user", "content": f"Question {n}"},
              {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Answer {n}"}]}]
compacted = oa.responses.compact(model="greeter", input=convo)
carried = [o.model_dump(exclude_none=True) for o in compacted.output]
then = oa.responses.create(model="greeter", input=carried + [{"role": "user", "content": "And now?"}])
out["compact"] = {"object": compacted.object, "types": [o.type for o in compacted.output],
                  "usage": [compacted.usage.input_tokens, compacted.usage.output_tokens],
                  "then": then.output_text}

# 8: errors the SDK maps to its own exceptions
out["unknown_model"] = error_of(lambda: oa.responses.create(model="nope", input="hi"))
out["unknown_id"] = error_of(lambda: oa.responses.retrieve("resp_nope"))
print(json.dumps(out))
