# A2A 1.0 peer check: drives kiln serve's /a2a/helper and /a2a/clerk with the
# official Python SDK, a2a-sdk 1.3.0 (PyPI; the newest release, speaks A2A 1.0).
# pip: a2a-sdk==1.3.0
#
#   python3 -m venv VENV && VENV/bin/pip install 'a2a-sdk==1.3.0'
#   VENV/bin/python client.py http://localhost:8787 [--binding JSONRPC|HTTP+JSON|all]
#
# Needs the agents of tests/fixtures/a2a (helper, clerk) served on `kiln mock`
# with scenario.json. For each protocol binding (default: both that the cards
# advertise, JSONRPC then HTTP+JSON) it runs three steps, all through the SDK:
# the card is resolved with A2ACardResolver and the client made by ClientFactory.
#   send      helper, non-streaming "Quick question" -> COMPLETED, artifact "A quick answer."
#   stream    helper, streaming "Stream test message" -> task, status-update,
#             artifact-update "Streaming works.", ending COMPLETED
#   approval  clerk, "Refund order A-1" -> INPUT_REQUIRED with the approval
#             question (text + data part), then "yes" on the same task ->
#             COMPLETED, artifact "Done: the refund of A-1 is settled."
# Each step prints one JSON line {"step": ..., "binding": ..., "ok": true, ...};
# the first failure prints {"ok": false, "error": ...}, a message on stderr, and
# exits 1 (2 for bad usage).
#
# The A2A-Version header: not set here. a2a-sdk 1.3.0's ClientFactory adds
# `A2A-Version: 1.0` to the default headers of the httpx client it is given
# (ClientConfig.httpx_client) or makes, so every call carries it (kiln answers
# -32009 without it, so a passing run also shows the SDK sends it).
import argparse
import asyncio
import importlib.metadata
import json
import sys

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_data_parts, get_text_parts, new_text_message
from a2a.types.a2a_pb2 import Role, SendMessageRequest, TaskState
from a2a.utils.constants import TransportProtocol

SDK_VERSION = importlib.metadata.version("a2a-sdk")
BINDINGS = [TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value]  # "JSONRPC", "HTTP+JSON"
TIMEOUT = 30.0

QUICK_ANSWER = "A quick answer."
STREAM_ANSWER = "Streaming works."
REFUND_DONE = "Done: the refund of A-1 is settled."


class StepFailed(Exception):
    pass


def emit(obj):
    print(json.dumps(obj), flush=True)


def state_name(state):
    return TaskState.Name(state)


def check(cond, msg):
    if not cond:
        raise StepFailed(msg)


def task_texts(task):
    return [get_artifact_text(a, "") for a in task.artifacts]


async def make_client(http, agent_url, binding, streaming):
    # The card resolver fetches AGENT_URL/.well-known/agent-card.json.
    card = await A2ACardResolver(http, agent_url).get_agent_card()
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        supported_protocol_bindings=[binding],
        use_client_preference=True,
    )
    return ClientFactory(config).create(card), card


async def send_one(client, message):
    """Non-streaming send: the SDK yields exactly one StreamResponse."""
    out = [r async for r in client.send_message(SendMessageRequest(message=message))]
    check(len(out) == 1, f"non-streaming send gave {len(out)} responses")
    check(out[0].HasField("task"), f"expected a Task, got {out[0]}")
    return out[0].task


async def step_send(http, base, binding):
    client, _ = await make_client(http, f"{base}/a2a/helper", binding, streaming=False)
    task = await send_one(client, new_text_message("Quick question", role=Role.ROLE_USER))
    state = state_name(task.status.state)
    texts = task_texts(task)
    check(state == "TASK_STATE_COMPLETED", f"task {task.id} is {state}, want TASK_STATE_COMPLETED")
    check(QUICK_ANSWER in texts, f"artifact texts {texts!r}, want {QUICK_ANSWER!r}")
    return {"task_id": task.id, "state": state, "artifact": QUICK_ANSWER}


async def step_stream(http, base, binding):
    client, card = await make_client(http, f"{base}/a2a/helper", binding, streaming=True)
    check(card.capabilities.streaming, "helper's card does not say capabilities.streaming")
    kinds = []
    task_id = None
    artifacts = {}  # artifact_id -> text, appended chunks joined
    final_state = None
    msg = new_text_message("Stream test message", role=Role.ROLE_USER)
    async for ev in client.send_message(SendMessageRequest(message=msg)):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "task":
            task_id = task_id or ev.task.id
            final_state = ev.task.status.state
            for a in ev.task.artifacts:
                artifacts[a.artifact_id] = get_artifact_text(a, "")
        elif kind == "status_update":
            check(not task_id or ev.status_update.task_id == task_id,
                  f"status update for task {ev.status_update.task_id}, stream is {task_id}")
            final_state = ev.status_update.status.state
        elif kind == "artifact_update":
            u = ev.artifact_update
            check(not task_id or u.task_id == task_id,
                  f"artifact update for task {u.task_id}, stream is {task_id}")
            text = get_artifact_text(u.artifact, "")
            if u.append:
                artifacts[u.artifact.artifact_id] = artifacts.get(u.artifact.artifact_id, "") + text
            else:
                artifacts[u.artifact.artifact_id] = text
        elif kind == "message":
            raise StepFailed(f"stream answered with a bare Message, want task events: {ev.message}")
    check(kinds, "the stream had no events")
    check(kinds[0] == "task", f"first event is {kinds[0]}, want task")
    for want in ("task", "status_update", "artifact_update"):
        check(want in kinds, f"no {want} event in the stream {kinds}")
    check(STREAM_ANSWER in artifacts.values(),
          f"streamed artifacts {list(artifacts.values())!r}, want {STREAM_ANSWER!r}")
    state = state_name(final_state)
    check(state == "TASK_STATE_COMPLETED", f"stream ended with {state}, want TASK_STATE_COMPLETED")
    return {"task_id": task_id, "events": kinds, "state": state, "artifact": STREAM_ANSWER}


async def step_approval(http, base, binding):
    client, _ = await make_client(http, f"{base}/a2a/clerk", binding, streaming=False)
    task = await send_one(client, new_text_message("Refund order A-1", role=Role.ROLE_USER))
    state = state_name(task.status.state)
    check(state == "TASK_STATE_INPUT_REQUIRED", f"task {task.id} is {state}, want TASK_STATE_INPUT_REQUIRED")
    check(task.status.HasField("message"), "input-required status has no message")
    question = task.status.message
    check(question.role == Role.ROLE_AGENT, f"status message role is {Role.Name(question.role)}")
    texts = get_text_parts(question.parts)
    check(texts and texts[0].strip(), f"status message has no question text: {question}")
    data = get_data_parts(question.parts)
    check(data and isinstance(data[0], dict), f"status message has no data part: {question}")
    missing = [k for k in ("approval", "capability", "tool", "args") if k not in data[0]]
    check(not missing, f"data part {data[0]!r} lacks {missing}")

    reply = new_text_message("yes", role=Role.ROLE_USER, task_id=task.id, context_id=task.context_id)
    done = await send_one(client, reply)
    check(done.id == task.id, f"the answer went to task {done.id}, want {task.id}")
    done_state = state_name(done.status.state)
    arts = task_texts(done)
    check(done_state == "TASK_STATE_COMPLETED", f"after yes task is {done_state}, want TASK_STATE_COMPLETED")
    check(REFUND_DONE in arts, f"artifact texts {arts!r}, want {REFUND_DONE!r}")
    return {
        "task_id": task.id,
        "asked": texts[0],
        "tool": data[0].get("tool"),
        "state": done_state,
        "artifact": REFUND_DONE,
    }


STEPS = [("send", step_send), ("stream", step_stream), ("approval", step_approval)]


async def run(base, bindings):
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for binding in bindings:
            for name, fn in STEPS:
                try:
                    detail = await fn(http, base, binding)
                except Exception as e:  # noqa: BLE001 - any failure ends the run
                    err = str(e) if isinstance(e, StepFailed) else f"{type(e).__name__}: {e}"
                    emit({"step": name, "binding": binding, "ok": False, "error": err})
                    print(f"client.py: step {name} ({binding}) failed: {err}", file=sys.stderr)
                    return 1
                emit({"step": name, "binding": binding, "ok": True, "sdk": SDK_VERSION, **detail})
    return 0


def main():
    ap = argparse.ArgumentParser(description="A2A 1.0 peer check of kiln serve with a2a-sdk")
    ap.add_argument("base_url", help="kiln serve's base URL, e.g. http://localhost:8787")
    ap.add_argument("--binding", default="all", choices=["all", *BINDINGS])
    args = ap.parse_args()
    bindings = BINDINGS if args.binding == "all" else [args.binding]
    return asyncio.run(run(args.base_url.rstrip("/"), bindings))


if __name__ == "__main__":
    sys.exit(main())
