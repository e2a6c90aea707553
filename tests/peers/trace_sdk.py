"""The official OpenAI Python SDK calls `kiln serve` inside a trace of its own.

Usage: trace_sdk.py BASE_URL TRACEPARENT. Sends one chat completion to agent `shop` with the
W3C `traceparent` header and prints JSON: the answer and the `traceparent` kiln answered with.
"""

import json
import sys

import openai

base, traceparent = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
raw = client.chat.completions.with_raw_response.create(
    model="shop",
    messages=[{"role": "user", "content": "Price of SKU-1?"}],
    extra_headers={"traceparent": traceparent},
)
reply = raw.parse()
print(json.dumps({"text": reply.choices[0].message.content, "traceparent": raw.headers.get("traceparent")}))
