"""Drive `kiln mock` with the official OpenAI and Anthropic Python SDKs.

The SDKs parse every reply and stream with their own typed models; if kiln mock's wire format
drifted from the real services', they would fail here. Usage: sdk_check.py BASE_URL.
Prints one JSON object with what each SDK call saw.
"""

import json
import sys

import anthropic
import openai

base = sys.argv[1]
out = {}

oa = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-peer-test", max_retries=0)
tools = [{"type": "function", "function": {"name": "lookup", "description": "Find", "parameters": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}}}]

# 1: OpenAI, whole reply with two parallel tool calls
r = oa.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], tools=tools)
calls = r.choices[0].message.tool_calls
out["openai_calls"] = [(c.function.name, json.loads(c.function.arguments)) for c in calls]
out["openai_finish"] = r.choices[0].finish_reason

# 2: OpenAI, streamed text answer after sending the tool results back
msgs = [{"role": "user", "content": "hi"}, r.choices[0].message.model_dump(exclude_none=True)]
msgs += [{"role": "tool", "tool_call_id": c.id, "content": "4.5"} for c in calls]
with oa.chat.completions.stream(model="m", messages=msgs, tools=tools, stream_options={"include_usage": True}) as s:
    final = s.get_final_completion()
out["openai_stream_text"] = final.choices[0].message.content
out["openai_stream_usage"] = final.usage.completion_tokens if final.usage else None

# 3: Anthropic, streamed tool use (input_json_delta fragments)
an = anthropic.Anthropic(base_url=base, api_key="sk-peer-test", max_retries=0)
atools = [{"name": "lookup", "description": "Find", "input_schema": {"type": "object", "properties": {"sku": {"type": "string"}}}}]
with an.messages.stream(model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}], tools=atools) as s:
    msg = s.get_final_message()
out["anthropic_stream_blocks"] = [b.type for b in msg.content]
out["anthropic_stream_input"] = [b.input for b in msg.content if b.type == "tool_use"]
out["anthropic_stop"] = msg.stop_reason

# 4: Anthropic, whole reply after the tool result
follow = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in msg.content]},
          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "4.5"} for b in msg.content if b.type == "tool_use"]}]
m2 = an.messages.create(model="m", max_tokens=100, messages=follow, tools=atools)
out["anthropic_text"] = m2.content[0].text

# 5: the mock's 429 reaches the SDK as its RateLimitError
try:
    an.messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "again"}])
    out["anthropic_429"] = None
except anthropic.RateLimitError as e:
    out["anthropic_429"] = e.status_code

print(json.dumps(out))
