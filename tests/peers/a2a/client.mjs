// A2A 1.0 peer check: drives kiln serve's /a2a/helper with the official
// JavaScript SDK, @a2a-js/sdk 1.3.0 (npm; the newest release, speaks A2A 1.0).
// npm: @a2a-js/sdk@1.3.0
//
//   npm install --prefix PREFIX @a2a-js/sdk@1.3.0
//   A2A_JS_PREFIX=PREFIX node client.mjs http://localhost:8787 [--binding JSONRPC|HTTP+JSON|all]
//   NODE_PATH=PREFIX/node_modules node client.mjs http://localhost:8787   (same thing)
//
// Finding the SDK: ESM `import` ignores NODE_PATH, so the SDK is loaded with a
// CommonJS require made by createRequire (the package ships a CJS build beside
// its ESM one). With A2A_JS_PREFIX set, it is resolved from PREFIX/node_modules;
// otherwise from node_modules folders above this file and then NODE_PATH, which
// CommonJS resolution honours.
//
// Needs the helper agent of tests/fixtures/a2a served on `kiln mock` with
// scenario.json. For each protocol binding (default: both that the card
// advertises, JSONRPC then HTTP+JSON) it runs two steps through the SDK: the card
// is resolved with DefaultAgentCardResolver and the client made by ClientFactory.
//   send    non-streaming "Quick question" -> COMPLETED, artifact "A quick answer."
//   stream  streaming "Stream test message" -> task, status-update,
//           artifact-update "Streaming works.", ending COMPLETED
// Each step prints one JSON line {"step": ..., "binding": ..., "ok": true, ...};
// the first failure prints {"ok": false, "error": ...}, a message on stderr, and
// exits 1 (2 for bad usage).
//
// The A2A-Version header: not set here. The SDK's Client puts
// `A2A-Version: <the matched interface's protocolVersion>` (here 1.0) on every
// call, and the card resolver sends `A2A-Version: 1.0` too (kiln answers -32009
// without it, so a passing run also shows the SDK sends it).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { randomUUID } from "node:crypto";

const require = process.env.A2A_JS_PREFIX
  ? createRequire(join(resolve(process.env.A2A_JS_PREFIX), "node_modules", "noop.js"))
  : createRequire(import.meta.url);

let sdk, sdkClient, sdkVersion;
try {
  sdk = require("@a2a-js/sdk");
  sdkClient = require("@a2a-js/sdk/client");
  // The package does not export ./package.json: read it beside dist/index.cjs.
  const pkg = join(dirname(require.resolve("@a2a-js/sdk")), "..", "package.json");
  sdkVersion = JSON.parse(readFileSync(pkg, "utf8")).version;
} catch (e) {
  console.error(
    `client.mjs: cannot load @a2a-js/sdk (set A2A_JS_PREFIX to an npm --prefix, or NODE_PATH): ${e.message}`,
  );
  process.exit(2);
}
const { Role, TaskState } = sdk;
const { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } = sdkClient;

const BINDINGS = ["JSONRPC", "HTTP+JSON"];
const TIMEOUT_MS = 30000;
const QUICK_ANSWER = "A quick answer.";
const STREAM_ANSWER = "Streaming works.";

class StepFailed extends Error {}

function check(cond, msg) {
  if (!cond) throw new StepFailed(msg);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

const stateName = (s) => TaskState[s] ?? String(s);

function textOf(parts) {
  return (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("");
}

function userMessage(text) {
  return {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function sendRequest(text) {
  return { tenant: "", message: userMessage(text), configuration: undefined, metadata: undefined };
}

async function makeClient(agentUrl, binding) {
  // The resolver joins the card path ".well-known/agent-card.json" to the base
  // with WHATWG URL resolution, so an agent under a path needs the trailing
  // slash: "…/a2a/helper/" gives "…/a2a/helper/.well-known/agent-card.json"
  // (without it the last segment is dropped: "…/a2a/.well-known/…").
  const card = await new DefaultAgentCardResolver().resolve(agentUrl.replace(/\/*$/, "/"));
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { preferredTransports: [binding] }),
  );
  const client = await factory.createFromAgentCard(card);
  check(
    client.transport.protocolName === binding,
    `the factory chose ${client.transport.protocolName}, want ${binding}`,
  );
  return { client, card };
}

const callOptions = () => ({ signal: AbortSignal.timeout(TIMEOUT_MS) });

async function stepSend(base, binding) {
  const { client } = await makeClient(`${base}/a2a/helper`, binding);
  const result = await client.sendMessage(sendRequest("Quick question"), callOptions());
  check(!("messageId" in result), `expected a Task, got a Message: ${JSON.stringify(result)}`);
  const state = stateName(result.status?.state);
  const texts = (result.artifacts ?? []).map((a) => textOf(a.parts));
  check(state === "TASK_STATE_COMPLETED", `task ${result.id} is ${state}, want TASK_STATE_COMPLETED`);
  check(texts.includes(QUICK_ANSWER), `artifact texts ${JSON.stringify(texts)}, want ${JSON.stringify(QUICK_ANSWER)}`);
  return { task_id: result.id, state, artifact: QUICK_ANSWER };
}

async function stepStream(base, binding) {
  const { client, card } = await makeClient(`${base}/a2a/helper`, binding);
  check(card.capabilities?.streaming, "helper's card does not say capabilities.streaming");
  const kinds = [];
  const artifacts = new Map(); // artifactId -> text, appended chunks joined
  let taskId;
  let finalState;
  for await (const ev of client.sendMessageStream(sendRequest("Stream test message"), callOptions())) {
    const kind = ev.payload?.$case;
    kinds.push(kind);
    const v = ev.payload?.value;
    if (kind === "task") {
      taskId ??= v.id;
      finalState = v.status?.state;
      for (const a of v.artifacts ?? []) artifacts.set(a.artifactId, textOf(a.parts));
    } else if (kind === "statusUpdate") {
      check(!taskId || v.taskId === taskId, `status update for task ${v.taskId}, stream is ${taskId}`);
      finalState = v.status?.state;
    } else if (kind === "artifactUpdate") {
      check(!taskId || v.taskId === taskId, `artifact update for task ${v.taskId}, stream is ${taskId}`);
      const id = v.artifact?.artifactId;
      const text = textOf(v.artifact?.parts);
      artifacts.set(id, v.append ? (artifacts.get(id) ?? "") + text : text);
    } else if (kind === "message") {
      throw new StepFailed(`stream answered with a bare Message, want task events: ${JSON.stringify(v)}`);
    }
  }
  check(kinds.length > 0, "the stream had no events");
  check(kinds[0] === "task", `first event is ${kinds[0]}, want task`);
  for (const want of ["task", "statusUpdate", "artifactUpdate"]) {
    check(kinds.includes(want), `no ${want} event in the stream ${JSON.stringify(kinds)}`);
  }
  const texts = [...artifacts.values()];
  check(texts.includes(STREAM_ANSWER), `streamed artifacts ${JSON.stringify(texts)}, want ${JSON.stringify(STREAM_ANSWER)}`);
  const state = stateName(finalState);
  check(state === "TASK_STATE_COMPLETED", `stream ended with ${state}, want TASK_STATE_COMPLETED`);
  return { task_id: taskId, events: kinds, state, artifact: STREAM_ANSWER };
}

const STEPS = [
  ["send", stepSend],
  ["stream", stepStream],
];

async function main() {
  const args = process.argv.slice(2);
  let binding = "all";
  const positional = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--binding") binding = args[++i];
    else if (args[i].startsWith("--binding=")) binding = args[i].slice("--binding=".length);
    else positional.push(args[i]);
  }
  if (positional.length !== 1 || !(binding === "all" || BINDINGS.includes(binding))) {
    console.error("usage: node client.mjs BASE_URL [--binding JSONRPC|HTTP+JSON|all]");
    return 2;
  }
  const base = positional[0].replace(/\/+$/, "");
  const bindings = binding === "all" ? BINDINGS : [binding];
  for (const b of bindings) {
    for (const [name, fn] of STEPS) {
      let detail;
      try {
        detail = await fn(base, b);
      } catch (e) {
        let err = e instanceof StepFailed ? e.message : `${e?.name ?? "Error"}: ${e?.message ?? e}`;
        if (e?.cause) err += ` (cause: ${e.cause.code ?? ""} ${e.cause.message ?? e.cause})`;
        emit({ step: name, binding: b, ok: false, error: err });
        console.error(`client.mjs: step ${name} (${b}) failed: ${err}`);
        return 1;
      }
      emit({ step: name, binding: b, ok: true, sdk: sdkVersion, ...detail });
    }
  }
  return 0;
}

process.exitCode = await main();
