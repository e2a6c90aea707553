// The web host side of MCP Apps (SEP-1865, 2026-01-26), built only from the SDKs on npm:
// @modelcontextprotocol/client (the MCP client) and @modelcontextprotocol/ext-apps/app-bridge
// (AppBridge + PostMessageTransport). sdk_host_check.py bundles this file with esbuild and
// serve.py serves it beside host.html. Query parameters: tool, args (JSON), sandbox (the
// sandbox proxy page, on another origin). Everything the host sees goes to window.__host, which
// the Playwright script reads: status, errors, the tool result and every bridge message.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const query = new URLSearchParams(location.search);
const TOOL = query.get("tool") ?? "place_order";
const ARGS = JSON.parse(query.get("args") ?? "{}");
const SANDBOX = query.get("sandbox");
const HOST_INFO = { name: "kiln-test-host", version: "1.0.0" };
const UI_EXTENSION = "io.modelcontextprotocol/ui";

const state = (window.__host = { status: "starting", errors: [], log: [], result: null });
const statusLine = document.getElementById("status");
function setStatus(status) {
  state.status = status;
  statusLine.textContent = status;
}

// One log entry per JSON-RPC message crossing the bridge ("in" = from the app or proxy).
function record(dir, m) {
  const entry = { dir, method: m.method ?? null, id: m.id ?? null };
  if (m.method === "ui/notifications/sandbox-resource-ready") entry.params = { html: `${m.params?.html?.length ?? 0} chars` };
  else if ("params" in m) entry.params = m.params;
  if ("result" in m) entry.result = m.result;
  if ("error" in m) entry.error = m.error;
  state.log.push(entry);
}

// PostMessageTransport, with every message in and out recorded.
class RecordedTransport extends PostMessageTransport {
  async start() {
    const deliver = this.onmessage;
    this.onmessage = (m, extra) => {
      record("in", m);
      deliver?.(m, extra);
    };
    return super.start();
  }
  async send(m, options) {
    record("out", m);
    return super.send(m, options);
  }
}

// The UI resource: spec'd mimeType, text or base64 blob, CSP and permissions from contents _meta.
async function readUiResource(client, uri) {
  const { contents } = await client.readResource({ uri });
  if (contents.length !== 1) throw new Error(`${uri}: ${contents.length} contents, expected 1`);
  const [content] = contents;
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri}: mimeType ${content.mimeType}`);
  const html = "text" in content
    ? content.text
    : new TextDecoder().decode(Uint8Array.from(atob(content.blob), (c) => c.charCodeAt(0)));
  const ui = content._meta?.ui ?? {};
  return { html, csp: ui.csp, permissions: ui.permissions };
}

// Permission Policy features for the iframes' allow attribute.
function allowList(permissions = {}) {
  const features = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
  return Object.keys(features).filter((k) => permissions[k]).map((k) => features[k]).join("; ");
}

// Points the iframe at the sandbox proxy (CSP in the URL, so the proxy's server sets the header)
// and resolves once the proxy says it is ready.
function loadSandboxProxy(iframe, csp, permissions) {
  const url = new URL(SANDBOX);
  if (csp) url.searchParams.set("csp", JSON.stringify(csp));
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  if (allowList(permissions)) iframe.setAttribute("allow", allowList(permissions));
  return new Promise((resolve) => {
    window.addEventListener("message", function ready(ev) {
      if (ev.source !== iframe.contentWindow || ev.origin !== url.origin) return;
      if (ev.data?.method !== "ui/notifications/sandbox-proxy-ready") return;
      record("in", ev.data);
      window.removeEventListener("message", ready);
      resolve();
    });
    iframe.src = url.href;
  });
}

async function main() {
  setStatus("connecting");
  const client = new Client(HOST_INFO, {
    capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const tools = [];
  for (let cursor; ; ) {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    if (!(cursor = page.nextCursor)) break;
  }
  const byName = new Map(tools.map((t) => [t.name, t]));
  const tool = byName.get(TOOL);
  if (!tool) throw new Error(`no tool ${TOOL} among ${[...byName.keys()].join(", ")}`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`tool ${TOOL} has no _meta.ui.resourceUri`);
  state.resourceUri = uri;

  // The call and the resource read run side by side, as a chat host would do them.
  setStatus("calling");
  const resultPromise = client.callTool({ name: TOOL, arguments: ARGS });
  resultPromise.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
  const resource = await readUiResource(client, uri);
  state.csp = resource.csp ?? null;

  setStatus("rendering");
  const iframe = document.getElementById("app");
  await loadSandboxProxy(iframe, resource.csp, resource.permissions);

  const caps = client.getServerCapabilities() ?? {};
  const bridge = new AppBridge(
    client,
    HOST_INFO,
    {
      openLinks: {},
      logging: {},
      serverTools: caps.tools,
      serverResources: caps.resources,
      sandbox: { csp: resource.csp ?? {}, permissions: resource.permissions ?? {} },
    },
    {
      hostContext: {
        toolInfo: { tool },
        theme: "light",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        platform: "web",
        locale: navigator.language,
        containerDimensions: { maxHeight: 2000 },
      },
    },
  );
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${height}px`; };
  bridge.onmessage = async () => ({});                // ui/message: accepted, not acted on
  bridge.onopenlink = async () => ({ isError: true }); // ui/open-link: this host opens nothing
  bridge.onloggingmessage = (params) => console.log("[app log]", params);
  await bridge.connect(new RecordedTransport(iframe.contentWindow, iframe.contentWindow));
  // connect() installed a plain forwarder for tools/call; the spec wants the host to refuse
  // apps the tools whose _meta.ui.visibility leaves out "app", and tools it does not know.
  bridge.oncalltool = async (params, ctx) => {
    const visibility = byName.get(params.name)?._meta?.ui?.visibility ?? ["model", "app"];
    if (!byName.has(params.name) || !visibility.includes("app")) {
      throw new Error(`tool ${params.name} is not callable from an app`);
    }
    return client.callTool(params, { signal: ctx?.mcpReq?.signal });
  };

  await bridge.sendSandboxResourceReady({ html: resource.html, csp: resource.csp, permissions: resource.permissions });
  await initialized;
  setStatus("initialized");
  await bridge.sendToolInput({ arguments: ARGS });
  let result;
  try {
    result = await resultPromise;
  } catch (err) {
    await bridge.sendToolCancelled({ reason: String(err?.message ?? err) });
    throw err;
  }
  state.result = result;
  await bridge.sendToolResult(result);
  setStatus("delivered");
}

main().catch((err) => {
  state.errors.push(String(err?.stack ?? err));
  setStatus(`error: ${err?.message ?? err}`);
});
