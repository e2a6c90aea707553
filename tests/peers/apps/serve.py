"""The test host's two HTTP servers (stdlib only), both on 127.0.0.1:

  host origin:    /            host.html
                  /host.js     the bundled host.mjs (its path is given to start())
                  /mcp         a same-origin reverse proxy to the real MCP server (POST, GET, DELETE;
                               SSE streamed through), so the browser needs no CORS from the server
  sandbox origin: /sandbox.html  the sandbox proxy, with a Content-Security-Policy header built from
                                 ?csp=<the resource's _meta.ui.csp as JSON> (spec'd default without it)
                  /sandbox.js

Two ports make two origins, which the spec requires of host and sandbox. KILN_MCP_TOKEN, when set,
is sent upstream as a bearer token on requests that carry no Authorization of their own.
Run alone (python3 serve.py HOST_JS) to click through by hand; the URLs are printed."""

import http.client
import json
import os
import pathlib
import re
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = pathlib.Path(__file__).parent
REQUEST_HEADERS = ("Accept", "Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version", "Authorization", "Last-Event-ID")
RESPONSE_HEADERS = ("Content-Type", "Mcp-Session-Id", "MCP-Protocol-Version", "WWW-Authenticate", "Cache-Control")
# A CSP source the header may carry: scheme://host[:port], host may start with "*."; nothing else.
SOURCE = re.compile(r"(https?|wss?)://(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?/?")


def csp_header(csp):
    """SEP-1865's restrictive default, widened only by the declared domains."""
    def sources(key, fallback=""):
        values = (csp or {}).get(key) or []
        return " ".join(v for v in values if isinstance(v, str) and SOURCE.fullmatch(v)) or fallback
    res = sources("resourceDomains")
    return "; ".join(d.strip() for d in (
        "default-src 'none'",
        f"script-src 'self' 'unsafe-inline' {res}",
        f"style-src 'self' 'unsafe-inline' {res}",
        f"img-src 'self' data: {res}",
        f"media-src 'self' data: {res}",
        f"font-src 'self' data: {res}",
        "connect-src " + sources("connectDomains", "'none'"),
        "frame-src " + sources("frameDomains", "'none'"),
        "base-uri " + sources("baseUriDomains", "'self'"),
        "object-src 'none'",
    ))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streaming for SSE
    files = {}      # path -> (file, content type); set per server by start()
    upstream = None  # the real MCP endpoint (host server only)
    seen = None      # list of (method, path) served, for the check
    posted = None    # JSON-RPC bodies POSTed to /mcp, for the check

    def log_message(self, *args):  # quiet; the check prints what matters
        pass

    def do_GET(self):
        self.route()

    def do_POST(self):
        self.route()

    def do_DELETE(self):
        self.route()

    def route(self):
        path, _, query = self.path.partition("?")
        self.seen.append((self.command, path))
        if path == "/mcp" and self.upstream:
            return self.proxy(query)
        if self.command != "GET" or path not in self.files:
            return self.reply(404, b"not found", "text/plain")
        file, ctype = self.files[path]
        extra = {}
        if path == "/sandbox.html":
            csp = urllib.parse.parse_qs(query).get("csp", [None])[0]
            try:
                extra["Content-Security-Policy"] = csp_header(json.loads(csp) if csp else None)
            except (ValueError, AttributeError):
                return self.reply(400, b"bad csp", "text/plain")
        self.reply(200, pathlib.Path(file).read_bytes(), ctype, extra)

    def reply(self, status, body, ctype, extra=None):
        self.send_response(status)
        for name, value in {"Content-Type": ctype, "Cache-Control": "no-store", **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def proxy(self, query):
        up = urllib.parse.urlsplit(self.upstream)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if body:
            try:
                self.posted.append(json.loads(body))
            except ValueError:
                self.posted.append(None)
        headers = {h: self.headers[h] for h in REQUEST_HEADERS if self.headers.get(h)}
        if os.environ.get("KILN_MCP_TOKEN") and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {os.environ['KILN_MCP_TOKEN']}"
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=300)
        try:
            conn.request(self.command, up.path + (f"?{query}" if query else ""), body=body, headers=headers)
            resp = conn.getresponse()
        except OSError as err:
            conn.close()
            return self.reply(502, f"upstream: {err}".encode(), "text/plain")
        try:
            self.send_response(resp.status)
            for h in RESPONSE_HEADERS:
                if resp.getheader(h):
                    self.send_header(h, resp.getheader(h))
            if resp.getheader("Content-Length") is not None or resp.status in (204, 304):
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            # No length: an SSE stream (or chunked JSON). Pass each piece on as it arrives.
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while chunk := resp.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True  # the browser or the server went away mid-stream
        finally:
            conn.close()


def serve(files, upstream=None):
    """One server on an ephemeral 127.0.0.1 port, in a daemon thread."""
    handler = type("H", (Handler,), {"files": files, "upstream": upstream, "seen": [], "posted": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


def start(host_js, upstream):
    """Both servers; returns (host_url, sandbox_url, stop, seen): seen has the requests each served
    ("host", "sandbox": lists of (method, path)) and "posted" (the bodies sent to /mcp)."""
    host, host_handler = serve({
        "/": (HERE / "host.html", "text/html; charset=utf-8"),
        "/host.js": (host_js, "text/javascript; charset=utf-8"),
    }, upstream)
    sandbox, sandbox_handler = serve({
        "/sandbox.html": (HERE / "sandbox.html", "text/html; charset=utf-8"),
        "/sandbox.js": (HERE / "sandbox.js", "text/javascript; charset=utf-8"),
    })

    def stop():
        for server in (host, sandbox):
            server.shutdown()
            server.server_close()
    return (f"http://127.0.0.1:{host.server_address[1]}/", f"http://127.0.0.1:{sandbox.server_address[1]}/sandbox.html",
            stop, {"host": host_handler.seen, "sandbox": sandbox_handler.seen, "posted": host_handler.posted})


if __name__ == "__main__":
    host_url, sandbox_url, _, _ = start(sys.argv[1], os.environ["KILN_MCP_URL"])
    query = urllib.parse.urlencode({"tool": os.environ.get("KILN_APPS_TOOL", "place_order"),
                                    "args": os.environ.get("KILN_APPS_ARGS", '{"item":"kiln","qty":2}'), "sandbox": sandbox_url})
    print(f"{host_url}?{query}", flush=True)
    threading.Event().wait()
