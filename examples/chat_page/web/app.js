// A chat page on the AI SDK (`ai`): its chat state and transport talking to kiln serve's UI
// message stream door, no framework. Shows a tool's progress bar and events as they come,
// and an approval's buttons. Bundled by esbuild into dist/app.js (npm run build).
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";

const AGENT = new URLSearchParams(location.search).get("agent") ?? "importer";
const list = document.getElementById("messages");
const status = document.getElementById("status");

class PageState {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (m) => { this.messages = [...this.messages, m]; render(); };
  popMessage = () => { this.messages = this.messages.slice(0, -1); render(); };
  replaceMessage = (i, m) => { this.messages = this.messages.map((x, j) => (j === i ? m : x)); render(); };
  snapshot = (x) => structuredClone(x);
}

class PageChat extends AbstractChat {
  constructor(init) { super({ ...init, state: new PageState() }); }
}

const chat = new PageChat({
  transport: new DefaultChatTransport({ api: `/v1/ui-chat/${encodeURIComponent(AGENT)}` }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (e) => { status.textContent = `Error: ${e.message}`; },
});

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) node.append(c);
  return node;
}

function toolPart(part) {
  const name = part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
  const box = el("div", { class: "tool", "data-testid": `tool-${name}`, "data-state": part.state },
    el("strong", {}, name), " ", el("span", { class: "state" }, part.state));
  if (part.state === "approval-requested") {
    const yes = el("button", { type: "button", "data-testid": "approve" }, "Approve");
    const no = el("button", { type: "button", "data-testid": "deny" }, "Deny");
    yes.onclick = () => chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    no.onclick = () => chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not now" });
    box.append(el("div", { class: "approval" }, el("p", {}, "Publish these rows?"), yes, no));
  }
  if (part.state === "output-available") box.append(el("pre", {}, JSON.stringify(part.output)));
  if (part.state === "output-error") box.append(el("p", { class: "error" }, part.errorText));
  return box;
}

function render() {
  list.replaceChildren(...chat.messages.map((m) => {
    const box = el("article", { class: `msg ${m.role}`, "data-testid": `message-${m.role}` });
    const events = el("ul", { class: "events" });
    for (const part of m.parts) {
      if (part.type === "text") box.append(el("p", { "data-testid": "text" }, part.text));
      else if (part.type === "data-progress") {
        const { done, total, message } = part.data;
        box.append(el("progress", { value: String(done), max: String(total ?? done), "data-testid": "progress",
          "aria-label": message ?? "progress" }), el("p", { class: "state" }, message ?? ""));
      } else if (part.type.startsWith("data-")) {
        events.append(el("li", { "data-testid": "event" }, `${part.type.slice(5)}: ${JSON.stringify(part.data)}`));
      } else if (part.type.startsWith("tool-") || part.type === "dynamic-tool") box.append(toolPart(part));
    }
    if (events.children.length) box.append(events);
    return box;
  }));
  status.textContent = chat.status === "ready" ? "" : chat.status;
}

document.getElementById("ask").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = document.getElementById("prompt");
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  await chat.sendMessage({ text });
  render();
});
setInterval(render, 250);
