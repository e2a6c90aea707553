"""Read `GET /v1/runs/{id}/events` of `kiln serve` with a real SSE client (httpx2's EventSource,
installed with the openai SDK). Usage: sse_events.py URL. Prints [[event, data], ...] as JSON.
"""

import json
import sys

import httpx2

events = []
with httpx2.Client(timeout=30) as client:
    with client.stream("GET", sys.argv[1]) as resp:
        resp.raise_for_status()
        for ev in httpx2.EventSource(resp):
            events.append([ev.event, json.loads(ev.data)])
print(json.dumps(events))
