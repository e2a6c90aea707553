// The sandbox proxy's relay (SEP-1865 "Sandbox proxy"). It runs in the host's iframe, on an origin
// other than the host's, and:
// - tells the host it is ready (ui/notifications/sandbox-proxy-ready);
// - loads the html of ui/notifications/sandbox-resource-ready, from the host only and once, into an
//   inner iframe: srcdoc, so the document inherits this page's CSP header, and sandboxed without
//   allow-same-origin, so the app gets an opaque origin (no cookies, storage or DOM of this page);
// - relays every other message both ways, and drops ui/notifications/sandbox-* from the app.
"use strict";
(() => {
  if (window.top === window.self || !document.referrer) throw new Error("sandbox.html only runs framed by the host");
  const HOST = new URL(document.referrer).origin;
  const FEATURES = { camera: "camera", microphone: "microphone", geolocation: "geolocation", clipboardWrite: "clipboard-write" };
  const isSandboxMethod = (m) => typeof m?.method === "string" && m.method.startsWith("ui/notifications/sandbox-");

  const inner = document.createElement("iframe");
  inner.title = "MCP app";
  inner.setAttribute("sandbox", "allow-scripts allow-forms");
  document.body.append(inner);
  let loaded = false;

  function load({ html, permissions } = {}) {
    if (loaded || typeof html !== "string") return;
    loaded = true;
    const allow = Object.keys(FEATURES).filter((k) => permissions?.[k]).map((k) => FEATURES[k]).join("; ");
    if (allow) inner.setAttribute("allow", allow);
    inner.srcdoc = html;
  }

  window.addEventListener("message", (ev) => {
    const m = ev.data;
    if (ev.source === window.parent && ev.origin === HOST) {
      if (m?.method === "ui/notifications/sandbox-resource-ready") load(m.params);
      else if (!isSandboxMethod(m)) inner.contentWindow?.postMessage(m, "*"); // opaque origin: "*" is the only target
    } else if (ev.source && ev.source === inner.contentWindow) {
      if (!isSandboxMethod(m)) window.parent.postMessage(m, HOST);
    }
  });

  window.parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} }, HOST);
})();
