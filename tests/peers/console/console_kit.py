"""What tests/peers/console/console_check.py shares: the environment it is given, failures
collected as it goes, API calls from the test itself, page helpers (sign-in, navigation, axe,
watching for CSP violations and dialogs) and the other origin's pages for the CSRF check."""

import html
import json
import os
import pathlib
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler

from playwright.sync_api import expect

KILN = os.environ["KILN_URL"].rstrip("/")
MOCK = os.environ["KILN_MOCK_URL"].rstrip("/")
ALICE, BOB, CAROL = os.environ["KILN_ALICE"], os.environ["KILN_BOB"], os.environ["KILN_CAROL"]
SCRIPTS = pathlib.Path(os.environ["KILN_SCRIPTS"])
WORKSPACE = pathlib.Path(os.environ["KILN_WORKSPACE"])
AXE = pathlib.Path(os.environ["KILN_AXE"]).read_text()
SHOTS = pathlib.Path(os.environ["KILN_SHOTS"])
TIMEOUT = 20_000

problems = []
csp_messages = []
requests_seen = []
dialogs = []


def check(ok, message):
    if not ok:
        problems.append(message)
        print("FAILED:", message, flush=True)
    return ok


def step(name):
    print(f"-- {name}", flush=True)


def call(method, path, token=None, body=None, headers=None):
    """An API call from the test itself (not the page): (status, headers, JSON or text)."""
    req = urllib.request.Request(KILN + path, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, data, timeout=20) as res:
            raw, status, hdrs = res.read(), res.status, res.headers
    except urllib.error.HTTPError as e:
        raw, status, hdrs = e.read(), e.code, e.headers
    try:
        return status, hdrs, json.loads(raw)
    except ValueError:
        return status, hdrs, raw.decode(errors="replace")


def pending(token=ALICE):
    status, _, body = call("GET", "/v1/approvals", token)
    check(status == 200, f"GET /v1/approvals: {status} {body}")
    return body.get("approvals", []) if isinstance(body, dict) else []


def run_ids(token=ALICE):
    status, _, body = call("GET", "/v1/runs?limit=200", token)
    check(status == 200, f"GET /v1/runs: {status} {body}")
    return [r["id"] for r in body.get("runs", [])] if isinstance(body, dict) else []


def wait_until(predicate, what, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    check(False, f"timed out waiting for {what}")
    return None


def watch(page, label):
    """Records CSP violations, page errors, dialogs (an XSS would open one) and requests."""

    def console(msg):
        text = msg.text
        if "Content Security Policy" in text or "Content-Security-Policy" in text:
            csp_messages.append(f"{label}: {text}")
        elif msg.type == "error" and "Failed to load resource" not in text:
            print(f"   console error on {label}: {text}", flush=True)

    page.on("console", console)
    page.on("pageerror", lambda err: problems.append(f"{label}: page error {err}"))
    page.on("dialog", lambda d: (dialogs.append(f"{label}: {d.message}"), d.dismiss()))
    page.on("request", lambda r: requests_seen.append(r.url))


def axe(page, name):
    """Runs axe-core in the page (evaluated over the devtools protocol: the CSP would refuse a
    <script>); fails on serious or critical violations."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE + "\n;void 0")
    result = page.evaluate(
        """async () => {
            const r = await window.axe.run(document, {resultTypes: ['violations']});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
        }"""
    )
    bad = [v for v in result if v["impact"] in ("serious", "critical")]
    check(not bad, f"axe on {name}: {json.dumps(bad, indent=1)}")
    minor = [f"{v['id']}({v['impact']})" for v in result if v not in bad]
    print(f"   axe {name}: {len(bad)} serious/critical, others: {minor}", flush=True)


def sign_in(page, token, actor):
    page.goto(f"{KILN}/ui/#/runs")
    page.get_by_test_id("token-input").fill(token)
    page.get_by_test_id("sign-in").click()
    expect(page.get_by_test_id("who-actor")).to_contain_text(actor, timeout=TIMEOUT)


def field(form, path):
    """The input, select or textarea of a JSON pointer in a generated form."""
    return form.locator(f'input[data-path="{path}"], select[data-path="{path}"], textarea[data-path="{path}"]')


def go(page, route):
    """Opens a page of the console (afresh when it is the one shown)."""
    target = f"{KILN}/ui/#/{route}"
    if page.url == target:
        page.reload()
    else:
        page.goto(target)
    page.wait_for_load_state("load")


def no_horizontal_scroll(page, name):
    width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    check(width[0] <= width[1], f"{name} scrolls sideways at 375 px: {width}")


class Evil(BaseHTTPRequestHandler):
    """Another origin's pages, each auto-submitting a form to kiln."""

    pages = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = self.pages.get(self.path.split("?")[0], "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def evil_form(action, fields, enctype):
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in fields.items()
    )
    return (
        f'<!doctype html><form id="f" method="POST" action="{action}" enctype="{enctype}">{inputs}</form>'
        "<script>document.getElementById('f').submit()</script>"
    )


