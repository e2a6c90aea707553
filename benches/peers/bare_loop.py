"""The floor: a bare tool-calling loop over http.client against `kiln mock` (OpenAI wire).

Sends the same conversation kiln does (system-less, one tool, results appended) until the model
answers. Usage: bare_loop.py BASE_URL (e.g. http://127.0.0.1:PORT/v1).
"""

import http.client
import json
import sys
from urllib.parse import urlparse

TOOLS = [{"type": "function", "function": {
    "name": "calculator",
    "description": "Evaluates an arithmetic expression",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                   "required": ["expression"], "additionalProperties": False},
}}]


def main() -> None:
    url = urlparse(sys.argv[1])
    conn = http.client.HTTPConnection(url.hostname, url.port)
    messages = [{"role": "user", "content": "go"}]
    while True:
        body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS, "max_tokens": 1024})
        conn.request("POST", url.path + "/chat/completions", body,
                     {"content-type": "application/json", "authorization": "Bearer sk-bench"})
        reply = json.loads(conn.getresponse().read())
        msg = reply["choices"][0]["message"]
        messages.append(msg)
        calls = msg.get("tool_calls") or []
        if not calls:
            print(msg.get("content", ""))
            return
        for c in calls:
            args = json.loads(c["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": json.dumps({"expression": args["expression"]})})


main()
