"""Drive `kiln serve` with the official OpenAI Python SDK.

Usage: serve_sdk.py BASE_URL TOKEN. The server has agents `shop` (a tool loop against kiln mock)
and `slow` (one slow reply), `--max-runs 1 --queue 0`, and TOKEN as its only bearer token.
Prints one JSON object with what each SDK call saw.
"""

import json
import sys
import threading
import time
import urllib.request

import openai

base, token = sys.argv[1], sys.argv[2]
out = {}
client = openai.OpenAI(base_url=f"{base}/v1", api_key=token, max_retries=0)

out["models"] = sorted(m.id for m in client.models.list())

r = client.chat.completions.create(
    model="shop",
    messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Price of SKU-1?"}],
    user="web-user-7",
    extra_body={"kiln": {"include_tool_calls": True}},
)
out["text"] = r.choices[0].message.content
out["finish"] = r.choices[0].finish_reason
out["usage"] = [r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens]
out["tool_calls"] = [c["name"] for c in r.model_extra["kiln"]["tool_calls"]]

stream = client.chat.completions.create(
    model="shop",
    messages=[{"role": "user", "content": "Price of SKU-1?"}],
    stream=True,
    stream_options={"include_usage": True},
)
parts, usage, finish = [], None, None
for chunk in stream:
    if chunk.usage:
        usage = chunk.usage.total_tokens
    for c in chunk.choices:
        if c.delta.content:
            parts.append(c.delta.content)
        finish = c.finish_reason or finish
out["stream_text"] = "".join(parts)
out["stream_finish"] = finish
out["stream_usage"] = usage


def error_of(f):
    try:
        f()
    except openai.APIStatusError as e:
        return [type(e).__name__, e.status_code, e.response.headers.get("retry-after")]
    return None


out["unknown_agent"] = error_of(
    lambda: client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
)
bad = openai.OpenAI(base_url=f"{base}/v1", api_key="not-the-token", max_retries=0)
out["bad_token"] = error_of(lambda: bad.models.list())

# Fill the only run slot with the slow agent, then ask again: 429 (no queue).
slow = threading.Thread(
    target=lambda: client.chat.completions.create(model="slow", messages=[{"role": "user", "content": "hi"}])
)
slow.start()
deadline = time.time() + 10
while time.time() < deadline:
    with urllib.request.urlopen(f"{base}/readyz") as resp:
        if json.load(resp)["runs_active"] == 1:
            break
    time.sleep(0.01)
out["busy"] = error_of(
    lambda: client.chat.completions.create(model="shop", messages=[{"role": "user", "content": "hi"}])
)
slow.join()
print(json.dumps(out))
