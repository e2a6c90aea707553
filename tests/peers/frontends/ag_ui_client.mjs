// AG-UI's own client (@ag-ui/client's HttpAgent) drives kiln's AG-UI door through three runs on
// one thread: a server tool that changes the state and emits an event beside a front-end tool
// (the run finishes with its call pending), the front end's result sent back (the next call
// needs a person's approval: the run finishes with an interrupt), and the interrupt resumed
// with an approval (the rest of the run). Every event is checked against @ag-ui/core's
// schemas. Prints one JSON object: each run's event types, the customs, the state and the
// messages. Usage: node ag_ui_client.mjs URL
import { load } from "./modules.mjs";

const { HttpAgent, buildResumeArray } = await load("@ag-ui/client");
const { EventSchemas } = await load("@ag-ui/core/schemas");

const url = process.argv[2];
const agent = new HttpAgent({ url, threadId: "thread-1", initialState: { count: 0 } });
agent.addMessage({ id: "u1", role: "user", content: "Tally, pick a colour, then clean up." });
const tools = [{ name: "pick_color", description: "Asks the person for a colour", parameters: { type: "object", properties: {} } }];
const invalid = [];
const runs = [];

async function run(params) {
  const seen = { types: [], customs: [], outcome: null, interrupts: null, pending: null, error: null };
  await agent.runAgent({ tools, ...params }, {
    onEvent({ event }) {
      const r = EventSchemas.safeParse(event);
      if (!r.success) invalid.push({ type: event.type, issues: r.error.issues });
      seen.types.push(event.type);
      if (event.type === "CUSTOM") seen.customs.push({ name: event.name, value: event.value });
    },
    onRunFinishedEvent(p) {
      seen.outcome = p.outcome;
      seen.interrupts = p.interrupts ?? null;
      seen.pending = p.pendingToolCallIds ?? null;
    },
    onRunErrorEvent({ event }) { seen.error = event.message; },
    onRunFailed({ error }) { seen.error = `client: ${error.message}`; },
  }).catch((e) => {
    seen.error = `threw: ${e.message}`;
    seen.messages = agent.messages;
  });
  runs.push(seen);
  return seen;
}

const first = await run({ runId: "run-1" });
const pending = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "pick_color");
if (pending) agent.addMessage({ id: "t-pick", role: "tool", toolCallId: pending.id, content: "blue" });
const second = await run({ runId: "run-2" });
let refused = null;
try {
  await agent.runAgent({ runId: "run-x", tools });
} catch (e) {
  refused = e.message;
}
const ids = Object.fromEntries((agent.pendingInterrupts ?? []).map((i) => [i.id, { status: "resolved", payload: { approved: true } }]));
await run({ runId: "run-3", resume: buildResumeArray(agent.pendingInterrupts, ids) });
console.log(JSON.stringify({ runs, invalid, refused, state: agent.state, pendingInterrupts: agent.pendingInterrupts,
  messages: agent.messages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: (m.toolCalls ?? []).map((c) => c.function.name) })) }));
void first; void second;
