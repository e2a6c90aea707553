// The AI SDK (`ai`, v7) drives kiln's UI message stream door:
// 1. DefaultChatTransport sends a turn and readUIMessageStream folds kiln's stream into a UI
//    message; the same turns made by the AI SDK itself (streamText on a mock model with the same
//    tool, through createUIMessageStream) fold into the same parts.
// 2. A headless chat (AbstractChat, as useChat runs it) through a tool the front end runs
//    (its output sent back) and a call that needs approval (approved, and the rest streamed
//    into the same message).
// Prints one JSON object. Usage: node ui_chat_client.mjs KILN_URL
import { load } from "./modules.mjs";

const ai = await load("ai");
const { MockLanguageModelV4 } = await load("ai/test");
const { DefaultChatTransport, AbstractChat, readUIMessageStream, createUIMessageStream, streamText, tool, jsonSchema,
  stepCountIs, simulateReadableStream, lastAssistantMessageIsCompleteWithToolCalls,
  lastAssistantMessageIsCompleteWithApprovalResponses } = ai;

const base = process.argv[2];
const out = {};

// 1. kiln's stream, read by the AI SDK.
const transport = new DefaultChatTransport({ api: `${base}/v1/ui-chat/cruncher` });
const stream = await transport.sendMessages({
  chatId: "chat-a", trigger: "submit-message", messageId: undefined, abortSignal: undefined,
  messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "go" }] }],
});
let kiln;
for await (const m of readUIMessageStream({ stream, terminateOnError: true })) kiln = m;

// ... and the same turns made by the AI SDK itself.
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const turn = (chunks) => ({ stream: simulateReadableStream({ chunks: [{ type: "stream-start", warnings: [] }, ...chunks] }) });
const model = new MockLanguageModelV4({ doStream: [
  turn([{ type: "tool-call", toolCallId: "call_1", toolName: "crunch", input: JSON.stringify({ n: 2 }) },
    { type: "finish", usage, finishReason: { unified: "tool-calls", raw: undefined } }]),
  turn([{ type: "text-start", id: "t1" }, { type: "text-delta", id: "t1", delta: "done" }, { type: "text-end", id: "t1" },
    { type: "finish", usage, finishReason: { unified: "stop", raw: undefined } }]),
] });
const sdkStream = createUIMessageStream({ execute: ({ writer }) => {
  const result = streamText({ model, prompt: "go", stopWhen: stepCountIs(3), tools: {
    crunch: tool({ inputSchema: jsonSchema({ type: "object", properties: { n: { type: "integer" } } }), execute: async ({ n }) => n }),
  } });
  writer.merge(result.toUIMessageStream());
} });
let sdk;
for await (const m of readUIMessageStream({ stream: sdkStream })) sdk = m;
const shape = (m) => m.parts.filter((p) => !p.type.startsWith("data-"))
  .map((p) => ({ type: p.type, state: p.state ?? null, input: p.input ?? null, output: p.output ?? null, text: p.text ?? null }));
out.kiln = shape(kiln);
out.sdk = shape(sdk);
out.data = kiln.parts.filter((p) => p.type.startsWith("data-")).map((p) => ({ type: p.type, id: p.id ?? null, data: p.data }));
out.metadata = kiln.metadata ?? null;

// 2. A headless chat as useChat runs it.
class State {
  status = "ready"; error = undefined; messages = [];
  pushMessage = (m) => { this.messages = [...this.messages, m]; };
  popMessage = () => { this.messages = this.messages.slice(0, -1); };
  replaceMessage = (i, m) => { this.messages = this.messages.map((x, j) => (j === i ? m : x)); };
  snapshot = (x) => structuredClone(x);
}
class HeadlessChat extends AbstractChat {
  constructor(init) { super({ ...init, state: new State() }); }
}
const errors = [];
const chat = new HeadlessChat({
  id: "chat-b",
  transport: new DefaultChatTransport({ api: `${base}/v1/ui-chat/helper`, body: { kiln: { client_tools: [
    { type: "function", name: "pick_color", description: "Asks the person for a colour", parameters: { type: "object", properties: {} } },
  ] } } }),
  sendAutomaticallyWhen: (o) => lastAssistantMessageIsCompleteWithToolCalls(o) || lastAssistantMessageIsCompleteWithApprovalResponses(o),
  onError: (e) => errors.push(String(e?.message ?? e)),
});
const settle = async (done) => {
  for (let i = 0; i < 300 && !(chat.status === "ready" && done()); i++) await new Promise((r) => setTimeout(r, 20));
};
const lastParts = () => chat.messages.at(-1)?.parts ?? [];
const states = () => lastParts().map((p) => `${p.type}${p.state ? `:${p.state}` : ""}`);
await chat.sendMessage({ text: "Pick a colour, then clean up." });
await settle(() => lastParts().some((p) => p.type === "tool-pick_color"));
out.first = states();
const pick = lastParts().find((p) => p.type === "tool-pick_color");
await chat.addToolOutput({ tool: "pick_color", toolCallId: pick.toolCallId, output: "blue" });
await settle(() => lastParts().some((p) => p.state === "approval-requested"));
out.second = states();
const asked = lastParts().find((p) => p.state === "approval-requested");
await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
await settle(() => lastParts().at(-1)?.type === "text");
out.third = states();
out.messages = chat.messages.length;
out.answer = lastParts().filter((p) => p.type === "text").map((p) => p.text).join("");
out.errors = errors;
console.log(JSON.stringify(out));
