// The sandbox proxy of kiln's console as an MCP Apps host. It runs on an origin of its own (a
// second port, holding no data and no API): the console gives it the app's page, it shows the
// page in an inner frame with an opaque origin (no allow-same-origin) under the CSP this
// document was served with (an srcdoc frame inherits it), and relays every other message
// between the console and the page. It never sends anything of its own but its ready
// notification, and never takes a sandbox-* message from the page.

const HOST = new URLSearchParams(location.search).get('host') || '';
const READY = 'ui/notifications/sandbox-proxy-ready';
const RESOURCE = 'ui/notifications/sandbox-resource-ready';
const PERMISSIONS = { camera: 'camera', microphone: 'microphone', geolocation: 'geolocation', clipboardWrite: 'clipboard-write' };

if (window.parent === window || !/^https?:\/\/[^/]+$/.test(HOST)) {
  throw new Error('the sandbox proxy runs only inside kiln\'s console');
}

const inner = document.createElement('iframe');
inner.setAttribute('sandbox', 'allow-scripts allow-forms');
inner.setAttribute('title', 'app');
document.body.append(inner);
let loaded = false;

function isSandboxMessage(m) {
  return m && typeof m.method === 'string' && m.method.startsWith('ui/notifications/sandbox-');
}

window.addEventListener('message', (event) => {
  const m = event.data;
  if (event.source === window.parent) {
    if (event.origin !== HOST) return;
    if (m && m.method === RESOURCE) {
      if (loaded) return;
      loaded = true;
      const p = m.params || {};
      const allow = Object.keys(p.permissions || {}).map((k) => PERMISSIONS[k]).filter(Boolean);
      if (allow.length) inner.setAttribute('allow', allow.join('; '));
      inner.srcdoc = String(p.html || '');
      return;
    }
    if (!isSandboxMessage(m) && inner.contentWindow) inner.contentWindow.postMessage(m, '*');
  } else if (event.source === inner.contentWindow && !isSandboxMessage(m)) {
    window.parent.postMessage(m, HOST);
  }
});

window.parent.postMessage({ jsonrpc: '2.0', method: READY, params: {} }, HOST);
