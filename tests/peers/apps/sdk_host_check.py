"""Plays the MCP Apps reference host (AppBridge from @modelcontextprotocol/ext-apps, the MCP client
from @modelcontextprotocol/client, both from npm) in Debian's Chromium through Playwright, against
a real MCP server over streamable HTTP, and checks that a tool's app renders and talks:

  the host page (serve.py, host.mjs) connects declaring the io.modelcontextprotocol/ui extension,
  lists tools, reads the tool's ui:// resource, calls the tool, renders the app through a sandbox
  proxy on a second origin (CSP header from the resource's csp), answers ui/initialize, and after
  ui/notifications/initialized sends tool-input and tool-result. Then, inside the app's frame: the
  input and result are shown; a click makes the app send tools/call back through the bridge, and
  its answer is shown. The bridge messages the host saw are printed and checked.

--app order_form (default): tests/fixtures/apps/order_form.html's contract (#host #tool #input
  #result #state, #refresh -> #status). --app basic_example: the example server
  @modelcontextprotocol/server-basic-vanillajs (#server-time, #get-time-btn). --app prying:
  tests/fixtures/apps/prying.html (its tool, e.g. KILN_APPS_TOOL=pry): every probe is blocked.

Environment: KILN_MCP_URL (the server's /mcp), KILN_APPS_DEPS (npm folder holding package.json's
deps), KILN_CHROMIUM (default /usr/bin/chromium; never downloaded), KILN_APPS_TOOL (default
place_order), KILN_APPS_ARGS (JSON, default {"item":"kiln","qty":2}), KILN_SHOTS (optional folder
for a screenshot), KILN_MCP_TOKEN (optional bearer token for the server), KILN_AXE (optional
axe.min.js: no serious or critical violation in the rendered app). Only 127.0.0.1 is reached.
Prints each bridge message, then `ok` and exits 0, or every failure and exits 1."""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from playwright.sync_api import expect, sync_playwright

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
import serve  # noqa: E402 - beside this file

TIMEOUT = 10_000
expect.set_options(timeout=TIMEOUT)
MCP_URL = os.environ.get("KILN_MCP_URL", "")
DEPS = pathlib.Path(os.environ.get("KILN_APPS_DEPS", "target/apps")).resolve()
TOOL = os.environ.get("KILN_APPS_TOOL", "place_order")
ARGS = json.loads(os.environ.get("KILN_APPS_ARGS", '{"item":"kiln","qty":2}'))
HOST_NAME = "kiln-test-host"  # host.mjs's hostInfo.name
# esbuild's JS API (its own binary package, no postinstall needed), from the deps folder.
BUNDLE = ("require('esbuild').buildSync({entryPoints: [process.argv[1]], outfile: process.argv[2], bundle: true,"
          " format: 'esm', platform: 'browser', target: 'es2022', nodePaths: [process.argv[3]], logLevel: 'warning'})")

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)
    return ok


def step(what, fn):
    """Runs one assertion block; a Playwright timeout or assertion becomes a listed failure."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - every failure is reported, none stops the others
        problems.append(f"{what}: {str(err).splitlines()[0]}")


def bundle(out):
    subprocess.run(["node", "-e", BUNDLE, str(HERE / "host.mjs"), str(out), str(DEPS / "node_modules")],
                   cwd=DEPS, check=True)


def app_frame(page):
    # host iframe (sandbox proxy, other origin) -> its inner iframe (the app, opaque origin)
    return page.frame_locator("#app").frame_locator("iframe")


def messages(page):
    return page.evaluate("window.__host.log")


def find(log, dir, method=None, id=None, after=-1):
    """Index of the first message after `after` going `dir` with that method (None: a response)
    and, when given, that id; -1 if none."""
    for i, m in enumerate(log):
        if i > after and m["dir"] == dir and m["method"] == method and (id is None or m["id"] == id):
            return i
    return -1


def app_call(page, name):
    """The app's tools/call for `name` and the host's answer to it (waits for both)."""
    page.wait_for_function(
        """name => { const log = window.__host.log;
             const call = log.find(m => m.dir === 'in' && m.method === 'tools/call' && m.params?.name === name);
             return call && log.some(m => m.dir === 'out' && m.method === null && m.id === call.id); }""",
        arg=name, timeout=TIMEOUT)
    log = messages(page)
    call = next(m for m in log if m["dir"] == "in" and m["method"] == "tools/call" and m["params"]["name"] == name)
    answer = log[find(log, "out", id=call["id"])]
    return call, answer


def order_form(page, result):
    app = app_frame(page)
    structured = result.get("structuredContent")
    step("#host shows hostInfo.name", lambda: expect(app.locator("#host")).to_have_text(HOST_NAME))
    step("#tool shows the tool", lambda: expect(app.locator("#tool")).to_have_text(TOOL))
    step("#input shows the input", lambda: expect(app.locator("#input")).to_have_text(f"{ARGS.get('item')} × {ARGS.get('qty')}"))
    step("#state is done", lambda: expect(app.locator("#state")).to_have_text("done"))
    step("#result shows structuredContent", lambda: check(
        json.loads(app.locator("#result").inner_text(timeout=TIMEOUT)) == structured,
        f"#result is not {structured}"))
    app.locator("#refresh").click(timeout=TIMEOUT)
    call, answer = app_call(page, "order_status")
    check(call["params"].get("arguments") == {"item": ARGS.get("item")}, f"order_status arguments: {call['params']}")
    check("error" not in answer and not answer.get("result", {}).get("isError"), f"order_status failed: {answer}")
    status = (answer.get("result") or {}).get("structuredContent", {}).get("status")
    check(bool(status), f"order_status gave no structuredContent.status: {answer}")
    step("#status shows the call-back result", lambda: expect(app.locator("#status")).to_have_text(str(status)))
    check(find(messages(page), "in", "ui/notifications/size-changed") >= 0, "the app sent no size-changed")


def basic_example(page, result):
    app = app_frame(page)
    time_now = (result.get("structuredContent") or {}).get("time")
    check(bool(time_now), f"get-time gave no structuredContent.time: {result}")
    step("#server-time shows the result", lambda: expect(app.locator("#server-time")).to_have_text(str(time_now)))
    time.sleep(0.01)  # so the server's next time differs
    app.locator("#get-time-btn").click(timeout=TIMEOUT)
    _, answer = app_call(page, "get-time")
    later = ((answer.get("result") or {}).get("structuredContent") or {}).get("time")
    check(bool(later) and later != time_now, f"the app's get-time gave {answer}")
    step("#server-time shows the call-back result", lambda: expect(app.locator("#server-time")).to_have_text(str(later)))


PROBES = ("top_document", "parent_document", "fetch_runs", "storage", "cookies", "forge_top", "call_hidden")


def prying(page, result):
    """tests/fixtures/apps/prying.html: every escape attempt is blocked by this host's sandbox."""
    app = app_frame(page)
    step("the probes finish", lambda: expect(app.locator("#done")).to_have_text("done"))
    lines = dict(line.split(": ", 1) for line in app.locator("#report").inner_text().splitlines() if ": " in line)
    print(f"prying report: {lines}")
    for name in PROBES:
        check(lines.get(name) == "blocked", f"{name}: {lines.get(name)}")
    check(lines.get("forge_proxy") == "sent", f"forge_proxy: {lines.get('forge_proxy')}")
    time.sleep(0.5)  # give a forged swap its chance to land
    check(app.locator("#swapped").count() == 0 and app.locator("#report").count() == 1, "the forged resource replaced the app")
    log = messages(page)
    check(find(log, "out", id=9001) < 0, "the host answered the id forged to window.top")
    wipe = [m for m in log if m["dir"] == "in" and m["method"] == "tools/call" and m["params"].get("name") == "wipe"]
    answer = find(log, "out", id=wipe[0]["id"]) if wipe else -1
    check(answer >= 0 and "error" in log[answer], "the host did not refuse the model-only wipe")


def accessible(page):
    """axe-core (KILN_AXE = axe.min.js) finds nothing serious or critical in the rendered app."""
    frame = next(f for f in page.frames if f.url == "about:srcdoc")
    frame.evaluate(pathlib.Path(os.environ["KILN_AXE"]).read_text())
    found = frame.evaluate("axe.run(document).then(r => r.violations.filter(v => ['serious', 'critical'].includes(v.impact))"
                           ".map(v => `${v.id}: ${v.nodes.map(n => n.target.join(' ')).join(', ')}`))")
    check(not found, f"axe: {found}")


def bridge(page, app):
    """The handshake and deliveries, in the spec's order, as the host saw them."""
    log = messages(page)
    for m in log:
        what, body = (m["method"], m.get("params")) if m["method"] else ("error", m["error"]) if "error" in m else ("result", m.get("result"))
        print(f"bridge {m['dir']:3} {what} id={m['id']} {json.dumps(body or '')[:120]}")
    ready = find(log, "in", "ui/notifications/sandbox-proxy-ready")
    loaded = find(log, "out", "ui/notifications/sandbox-resource-ready", after=ready)
    init = find(log, "in", "ui/initialize", after=loaded)
    check(ready >= 0 and loaded > ready, "no sandbox-proxy-ready then sandbox-resource-ready")
    check(init >= 0, "no ui/initialize from the app")
    if init < 0:
        return
    reply = find(log, "out", id=log[init]["id"], after=init)
    check(reply >= 0 and (log[reply].get("result") or {}).get("hostInfo", {}).get("name") == HOST_NAME,
          "ui/initialize got no answer with hostInfo")
    done = find(log, "in", "ui/notifications/initialized", after=reply)
    check(done >= 0, "no ui/notifications/initialized from the app")
    given = find(log, "out", "ui/notifications/tool-input", after=done)
    check(given >= 0 and log[given]["params"].get("arguments") == ARGS, "no tool-input with the arguments after initialized")
    check(find(log, "out", "ui/notifications/tool-result", after=given) >= 0, "no tool-result after tool-input")
    check(any(m["dir"] == "in" and m["method"] == "tools/call" for m in log), "no tools/call from the app")
    if app != "prying":
        check(not any("error" in m for m in log), "an error crossed the bridge")


def declared_ui(posted):
    """Did the client's initialize declare the MCP Apps extension with the app mimeType?"""
    for body in posted:
        if isinstance(body, dict) and body.get("method") == "initialize":
            ext = ((body.get("params") or {}).get("capabilities") or {}).get("extensions") or {}
            return "text/html;profile=mcp-app" in (ext.get("io.modelcontextprotocol/ui") or {}).get("mimeTypes", [])
    return False


def local(url):
    return url.startswith(("data:", "about:", "blob:")) or urllib.parse.urlsplit(url).hostname == "127.0.0.1"


def run(browser, host_url, sandbox_url, app):
    page = browser.new_page()
    outside, csp_headers = [], []
    page.on("response", lambda r: csp_headers.append(r.headers.get("content-security-policy"))
            if urllib.parse.urlsplit(r.url).path == "/sandbox.html" else None)
    page.on("request", lambda r: outside.append(r.url) if not local(r.url) else None)
    page.on("console", lambda m: print(f"console {m.type}: {m.text[:200]}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(f"{host_url}?" + urllib.parse.urlencode({"tool": TOOL, "args": json.dumps(ARGS), "sandbox": sandbox_url}))
    page.wait_for_function("window.__host.status === 'delivered' || window.__host.status.startsWith('error')",
                           timeout=TIMEOUT)
    state = page.evaluate("({status: window.__host.status, errors: window.__host.errors, csp: window.__host.csp})")
    print(f"host status: {state['status']}; resource csp: {json.dumps(state['csp'])}")
    if not check(state["status"] == "delivered", f"host: {state['status']} {state['errors']}"):
        return page
    check(csp_headers == [serve.csp_header(state["csp"])], f"sandbox.html CSP headers: {csp_headers}")
    result = page.evaluate("window.__host.result")
    APPS[app](page, result)
    if os.environ.get("KILN_AXE"):
        accessible(page)
    bridge(page, app)
    check(not outside, f"requests left 127.0.0.1: {outside}")
    return page


APPS = {"order_form": order_form, "basic_example": basic_example, "prying": prying}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--app", choices=tuple(APPS), default="order_form")
    app = parser.parse_args().app
    if not MCP_URL.startswith("http://127.0.0.1:"):
        sys.exit(f"KILN_MCP_URL must be http://127.0.0.1:PORT/...: {MCP_URL!r}")
    build = pathlib.Path(tempfile.mkdtemp(prefix="kiln-apps-"))
    bundle(build / "host.js")
    host_url, sandbox_url, stop, seen = serve.start(build / "host.js", MCP_URL)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
                args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
            )
            try:
                page = run(browser, host_url, sandbox_url, app)
                if os.environ.get("KILN_SHOTS"):
                    shots = pathlib.Path(os.environ["KILN_SHOTS"])
                    shots.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shots / f"apps-{app}.png"), full_page=True)
            finally:
                browser.close()
    except Exception as err:  # noqa: BLE001 - a crash is one more failure to print
        problems.append(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    finally:
        stop()
        shutil.rmtree(build, ignore_errors=True)
    check(any(path == "/mcp" for _, path in seen["host"]), "the host page never reached /mcp")
    check(any(path == "/sandbox.html" for _, path in seen["sandbox"]), "the sandbox proxy was never loaded")
    check(declared_ui(seen["posted"]), "initialize did not declare extensions.io.modelcontextprotocol/ui")
    for problem in problems:
        print(f"FAIL: {problem}")
    if problems:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
