# A2A 1.0 peer server: the A2A server kiln's a2a_agent(...) calls in
# tests/it/a2a/client.rs. Built with the official Python SDK, a2a-sdk 1.3.0
# (PyPI), on its own server side: an AgentExecutor, the default request handler,
# an in-memory task store, the SDK's Starlette JSON-RPC and agent-card routes,
# served by uvicorn.
# pip: a2a-sdk[http-server]==1.3.0 uvicorn
#
#   python3 server.py PORT
#
# Serves one agent, "echoer", on http://127.0.0.1:PORT (127.0.0.1 only):
#   GET  /.well-known/agent-card.json   the agent card (always public); its one
#                                       interface is JSONRPC 1.0 at
#                                       http://127.0.0.1:PORT/
#   POST /                              A2A 1.0 JSON-RPC (SendMessage, GetTask,
#                                       SendStreamingMessage, ...); the SDK
#                                       wants the `A2A-Version: 1.0` header
# Behaviour:
#   text containing "ask me"  -> a new task, TASK_STATE_INPUT_REQUIRED, agent
#                                status message "Which colour?"
#   follow-up on that task    -> TASK_STATE_COMPLETED, one artifact
#   (message.taskId set)         "colour: <the follow-up's text>"
#   anything else             -> a new task, TASK_STATE_COMPLETED at once, one
#                                artifact "echo: <text>"
# A new task is enqueued as one Task already in its final (or input-required)
# state, so SendMessage answers with that state even when the client asks for
# configuration.returnImmediately; GetTask returns the same.
#
# ECHOER_TOKEN set -> every request except GET of the card must carry
# `Authorization: Bearer <token>`, else HTTP 401 (JSON-RPC error body: id null,
# code -32000; not an A2A code, -32001 would read as TaskNotFound).
#
# stdout: exactly one line, `listening http://127.0.0.1:PORT`, once the socket
# accepts connections. SDK and uvicorn logs go to stderr (warnings only).
import asyncio
import hmac
import json
import logging
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_text_artifact, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

HOST = "127.0.0.1"
RPC_PATH = "/"
QUESTION = "Which colour?"


def make_card(base_url):
    return AgentCard(
        name="echoer",
        description="Echoes what it is told.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=base_url + RPC_PATH,
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="echo",
                description="Echoes what it is told; \"ask me\" asks for a colour first.",
                tags=["echo", "test"],
                examples=["hello", "ask me"],
                input_modes=["text/plain"],
                output_modes=["text/plain"],
            )
        ],
    )


class Echoer(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # The answer to "Which colour?": finish the existing task.
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.add_artifact([new_text_part(f"colour: {text}")], name="answer")
            await updater.complete()
            return

        task_id = context.task_id
        context_id = context.context_id
        user = context.message
        if "ask me" in text:
            status = TaskStatus(
                state=TaskState.TASK_STATE_INPUT_REQUIRED,
                message=new_text_message(
                    QUESTION, context_id=context_id, task_id=task_id, role=Role.ROLE_AGENT
                ),
            )
            artifacts = []
        else:
            status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
            artifacts = [new_text_artifact("answer", f"echo: {text}")]
        status.timestamp.GetCurrentTime()
        # One Task event carrying the whole outcome: with returnImmediately the
        # handler answers with the first Task it sees, so it is already final.
        await event_queue.enqueue_event(
            Task(
                id=task_id,
                context_id=context_id,
                status=status,
                artifacts=artifacts,
                history=[user] if user is not None else [],
            )
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


class BearerGate:
    """ASGI middleware: require `Authorization: Bearer <token>` on everything but the card."""

    def __init__(self, app, token):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not (
            scope["method"] in ("GET", "HEAD") and scope["path"] == AGENT_CARD_WELL_KNOWN_PATH
        ):
            got = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": None,
                        "error": {"code": -32000, "message": "unauthorized: bearer token required"},
                    }
                ).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"www-authenticate", b'Bearer realm="echoer"'),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def build_app(port):
    card = make_card(f"http://{HOST}:{port}")
    handler = DefaultRequestHandler(
        agent_executor=Echoer(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url=RPC_PATH)
    )
    token = os.environ.get("ECHOER_TOKEN")
    return BearerGate(app, token) if token else app


async def main(port):
    # Bind here so a taken port is one clear error line and exit 1.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as e:
        print(f"server.py: cannot bind {HOST}:{port}: {e}", file=sys.stderr)
        sys.exit(1)
    config = uvicorn.Config(
        build_app(port),
        log_level="warning",
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving
            sys.exit(1)
        await asyncio.sleep(0.02)
    print(f"listening http://{HOST}:{port}", flush=True)
    await serving


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print("usage: server.py PORT", file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    asyncio.run(main(int(sys.argv[1])))
