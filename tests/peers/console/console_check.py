"""Drives kiln's web console (/ui) in Debian's Chromium through Playwright against a real
`kiln serve` and `kiln mock` that tests/it/console/console_browser.rs started, and checks what a person
sees and what the server did:

  a playground run streams its tool calls; an approval answered from the inbox (by keyboard)
  lets the run finish and write its file; a denial's reason reaches the model; a tool's
  generated form shows the server's field error at the field; a broken script's load error
  appears at file:line:col and goes away once fixed; a second actor sees none of the first's
  runs or approvals and the pages' own API calls forced with its token get 403/404; a
  cross-origin form post (from http://evil.test, mapped to 127.0.0.1) changes nothing; the CSP
  header is on /ui and its assets and no CSP violation happens; nothing is wider than a 375 px
  phone; axe-core finds no serious or critical violation on any page. Saves four screenshots.

Environment: KILN_URL, KILN_MOCK_URL, KILN_ALICE, KILN_BOB, KILN_CAROL (tokens; carol may approve), KILN_SCRIPTS (the scripts
folder), KILN_WORKSPACE, KILN_AXE (axe.min.js), KILN_SHOTS (folder for the screenshots),
KILN_CHROMIUM (default /usr/bin/chromium; a browser is never downloaded).
Exits 1 when a check fails, printing each failure; 0 otherwise."""


import os
import pathlib
import re
import sys
import threading
import time
import urllib.request
from http.server import ThreadingHTTPServer

from playwright.sync_api import expect, sync_playwright

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from console_kit import (  # noqa: E402 - found beside this file
    ALICE, BOB, CAROL, KILN, MOCK, SCRIPTS, SHOTS, TIMEOUT, WORKSPACE, Evil, axe, call, check,
    csp_messages, dialogs, evil_form, field, go, no_horizontal_scroll, pending, problems,
    requests_seen, run_ids, sign_in, step, wait_until, watch,
)

REASON = "not in this folder"


def csrf(browser, evil_port, run, approval):
    """Cross-origin form posts to the approval and runs endpoints: nothing may change."""
    step("(g) a cross-origin form post changes nothing")
    before = set(run_ids())
    # text/plain forms are how a page sends a JSON-looking body cross-origin without a preflight.
    Evil.pages = {
        "/approve": evil_form(f"{KILN}/v1/runs/{run}/approvals/{approval}", {'{"decision":"approve","x":"': '"}'}, "text/plain"),
        "/run": evil_form(f"{KILN}/v1/runs", {'{"agent":"writer","input":"write the note","wait":false,"x":"': '"}'}, "text/plain"),
        "/run-form": evil_form(f"{KILN}/v1/runs", {"agent": "writer", "input": "write the note"}, "application/x-www-form-urlencoded"),
    }
    context = browser.new_context()
    for path in Evil.pages:
        page = context.new_page()
        sent = []
        page.on("request", lambda r, sent=sent: sent.append((r.method, r.url)) if r.url.startswith(KILN) else None)
        try:
            with page.expect_response(lambda r: r.url.startswith(KILN), timeout=TIMEOUT) as answer:
                page.goto(f"http://evil.test:{evil_port}{path}")
            status = answer.value.status
        except Exception as err:  # noqa: BLE001 - a refused post is fine; it must have been sent
            status = f"no answer ({err.__class__.__name__})"
        check(any(m == "POST" for m, _ in sent), f"evil.test{path} never posted to kiln: {sent}")
        check(status != 200 and status != 202, f"evil.test{path}'s post was answered {status}")
        print(f"   evil.test{path}: kiln answered {status}", flush=True)
        page.close()
    context.close()
    time.sleep(0.5)
    waiting = [a["id"] for a in pending() if a["run"] == run]
    check(approval in waiting, f"after the cross-origin posts the approval is no longer waiting: {waiting}")
    after = set(run_ids())
    check(after == before, f"cross-origin posts started runs: {after - before}")


def csp_headers():
    step("(h) the CSP header on /ui and its assets")
    for path in ["/ui", "/ui/", "/ui/index.html", "/ui/app.js", "/ui/api.js", "/ui/console.css", "/ui/form.js"]:
        status, headers, _ = call("GET", path)
        csp = headers.get("Content-Security-Policy", "") if headers else ""
        check(status == 200, f"GET {path}: {status}")
        check("script-src 'self'" in csp and "default-src 'none'" in csp, f"GET {path}: CSP {csp!r}")
        check("unsafe-inline" not in csp and "unsafe-eval" not in csp, f"GET {path}: a loose CSP {csp!r}")
        check("frame-ancestors 'none'" in csp, f"GET {path}: framing allowed by {csp!r}")
    status, _, body = call("GET", "/ui/index.html")
    page = body if isinstance(body, str) else ""
    check(re.search(r"<script(?![^>]*\ssrc=)", page) is None, "an inline <script> in index.html")
    check(re.search(r"\son[a-z]+\s*=|\sstyle\s*=", page) is None, "an on*= or style= attribute in index.html")
    check("http://" not in page and "https://" not in page, "index.html names an outside URL")


def playground_run(page, prompt, session):
    """Starts a run from the playground in a new session (the mock answers a conversation by its
    first message); its turn element and run id."""
    go(page, "chat")
    expect(page.get_by_test_id("chat-agent").locator("option[value=writer]")).to_have_count(1, timeout=TIMEOUT)
    page.get_by_test_id("chat-agent").select_option("writer")
    page.get_by_test_id("chat-session").fill(session)
    page.get_by_test_id("chat-prompt").fill(prompt)
    page.get_by_test_id("chat-send").click()
    turn = page.get_by_test_id("chat-turn").last
    expect(turn).to_have_attribute("data-run-id", re.compile(r".+"), timeout=TIMEOUT)
    return turn, turn.get_attribute("data-run-id")


def approve_by_keyboard(page, run):
    """Tabs from the top of the inbox to the approve button of `run`'s approval; presses Enter."""
    step("(i) keyboard: tab to the approve button and press Enter")
    card = page.locator(f'[data-testid=approval][data-run="{run}"]')
    expect(card).to_be_visible(timeout=TIMEOUT)
    page.locator("body").focus()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for _ in range(80):
        page.keyboard.press("Tab")
        at = page.evaluate(
            """() => { const a = document.activeElement; const c = a && a.closest('[data-testid=approval]');
                 return {id: a && a.dataset.testid, run: c && c.dataset.run,
                         outline: a ? getComputedStyle(a).outlineStyle : 'none'}; }"""
        )
        if at["id"] == "approve-button" and at["run"] == run:
            check(at["outline"] not in ("none", ""), f"the focused approve button shows no focus ring: {at}")
            page.keyboard.press("Enter")
            expect(card).to_have_count(0, timeout=TIMEOUT)
            return
    check(False, "Tab never reached the approve button")


def main_flow(browser, evil_port):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id="UTC")
    chat = context.new_page()
    watch(chat, "playground")
    inbox = context.new_page()
    watch(inbox, "inbox")

    step("sign-in page")
    chat.goto(f"{KILN}/ui/")
    expect(chat.get_by_test_id("token-input")).to_be_visible(timeout=TIMEOUT)
    axe(chat, "sign-in")
    chat.get_by_test_id("token-input").fill("not-a-token")
    chat.get_by_test_id("sign-in").click()
    expect(chat.get_by_test_id("signin-error")).to_contain_text("not accepted", timeout=TIMEOUT)
    sign_in(chat, ALICE, "alice")
    sign_in(inbox, ALICE, "alice")

    step("(a) a playground run streams its tool calls")
    turn, run1 = playground_run(chat, "write the note", f"note-{time.time_ns()}")
    tool = turn.locator("[data-testid=chat-tool][data-tool=save_note]")
    expect(tool).to_have_attribute("data-state", "running", timeout=TIMEOUT)
    expect(turn.get_by_test_id("chat-approval")).to_be_visible(timeout=TIMEOUT)
    check(turn.get_attribute("data-status") is None, "the run ended before its approval was answered")
    axe(chat, "playground")

    step("(b) approve the write in the inbox; the run finishes and the file is written")
    go(inbox, "approvals")
    card = inbox.locator(f'[data-testid=approval][data-run="{run1}"]')
    expect(card).to_be_visible(timeout=TIMEOUT)
    expect(card.get_by_test_id("approval-capability")).to_have_text("fs.write")
    expect(card.get_by_test_id("approval-question")).to_contain_text("save_note")
    expect(card.get_by_test_id("approval-waited")).to_contain_text("waited")
    axe(inbox, "approvals")
    approve_by_keyboard(inbox, run1)
    expect(tool).to_have_attribute("data-state", "done", timeout=TIMEOUT)
    expect(turn).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    expect(turn.get_by_test_id("chat-answer")).to_contain_text("Saved the note.")
    expect(turn.get_by_test_id("chat-approval-result")).to_contain_text("approved", timeout=TIMEOUT)
    written = WORKSPACE / "hello.txt"
    check(written.is_file() and written.read_text() == "hello from the console", f"{written} was not written as asked")

    step("a second run waits for its write (its arguments carry markup)")
    turn2, run2 = playground_run(chat, "write a secret", f"secret-{time.time_ns()}")
    expect(turn2.get_by_test_id("chat-approval")).to_be_visible(timeout=TIMEOUT)
    approval2 = wait_until(lambda: next((a["id"] for a in pending() if a["run"] == run2), None), "run 2's approval")
    # The open inbox tab heard it live and said so politely.
    expect(inbox.get_by_test_id("live")).to_contain_text("New approval waiting", timeout=TIMEOUT)
    expect(inbox.locator(f'[data-testid=approval][data-run="{run2}"]')).to_be_visible(timeout=TIMEOUT)

    csrf(browser, evil_port, run2, approval2)
    second_actor(browser, [run1, run2], run2, approval2)
    approver(browser, [run1, run2], run2, approval2)

    step("the runs list while a run waits")
    for n in range(3):
        status, _, body = call("POST", "/v1/runs", ALICE, {"agent": "writer", "input": f"say hello {n}", "session": f"hello-{n}-{time.time_ns()}", "wait": False})
        check(status in (200, 202), f"POST /v1/runs: {status} {body}")
    go(inbox, "runs")
    expect(inbox.locator("[data-testid=run-row][data-status=completed]")).to_have_count(4, timeout=TIMEOUT)
    waiting = inbox.locator(f'[data-testid=run-row][data-run-id="{run2}"]')
    expect(waiting).to_have_attribute("data-status", "awaiting_approval", timeout=TIMEOUT)
    expect(inbox.locator(f'[data-testid=run-row][data-run-id="{run1}"]')).to_have_attribute("data-status", "completed")
    inbox.screenshot(path=str(SHOTS / "console-runs.png"))

    step("a tool that needs approval waits in the inbox beside the run's write")
    tool = context.new_page()
    watch(tool, "wipe")
    sign_in(tool, ALICE, "alice")
    go(tool, "tools/wipe")
    field(tool.get_by_test_id("tool-form"), "/what").fill("old notes")
    tool.get_by_test_id("form-submit").click()
    expect(tool.get_by_test_id("tool-pending")).to_be_visible(timeout=TIMEOUT)
    go(inbox, "approvals")
    wipe = inbox.locator("[data-testid=approval]").filter(has_text="wiping is permanent")
    expect(wipe).to_be_visible(timeout=TIMEOUT)
    card = inbox.locator(f'[data-testid=approval][data-run="{run2}"]')
    expect(card).to_be_visible(timeout=TIMEOUT)
    inbox.screenshot(path=str(SHOTS / "console-approvals.png"))
    wipe.get_by_test_id("approve-button").click()
    expect(wipe).to_have_count(0, timeout=TIMEOUT)
    expect(tool.get_by_test_id("result")).to_contain_text("wiped old notes", timeout=TIMEOUT)
    tool.close()

    # A second inbox that hears nothing live keeps showing the approval after it is decided.
    stale = context.new_page()
    watch(stale, "stale inbox")
    stale.route("**/v1/events", lambda route: route.abort())
    sign_in(stale, ALICE, "alice")
    go(stale, "approvals")
    stale_card = stale.locator(f'[data-testid=approval][data-run="{run2}"]')
    expect(stale_card).to_be_visible(timeout=TIMEOUT)

    step("(c) deny with a reason; the model reads it")
    expect(card.get_by_test_id("approval-args")).to_contain_text("<img src=x onerror=alert(1)>")
    check(card.locator("img").count() == 0, "the approval's arguments became markup")
    card.get_by_test_id("deny-reason").fill(REASON)
    card.get_by_test_id("deny-button").click()
    expect(card).to_have_count(0, timeout=TIMEOUT)
    expect(turn2).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    expect(turn2.get_by_test_id("chat-tool-error")).to_contain_text(f"denied: {REASON}", timeout=TIMEOUT)
    step("a decision that comes too late shows the 409 and the decision that holds")
    stale_card.get_by_test_id("approve-button").click()
    expect(stale_card.get_by_test_id("approval-error")).to_contain_text("Already decided", timeout=TIMEOUT)
    expect(stale_card.get_by_test_id("approval-error")).to_contain_text(f"denied: {REASON}")
    stale.close()
    go(inbox, f"runs/{run2}")
    expect(inbox.get_by_test_id("timeline")).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    expect(inbox.get_by_test_id("call-error").first).to_contain_text(f"denied: {REASON}")
    expect(inbox.get_by_test_id("approval-decision").first).to_contain_text(f"denied: {REASON}")
    check(inbox.locator("[data-testid=timeline] img").count() == 0, "the timeline rendered a tool argument as markup")
    axe(inbox, "timeline")
    seen = urllib.request.urlopen(f"{MOCK}/_kiln/requests", timeout=10).read().decode()
    check(f"denied: {REASON}" in seen, "the model's next request did not carry the denial's reason")
    check(not (WORKSPACE / "secret.txt").exists(), "the denied write happened")

    step("the runs list and its filters")
    go(inbox, "runs")
    rows = inbox.get_by_test_id("run-row")
    expect(inbox.locator(f'[data-testid=run-row][data-run-id="{run1}"]')).to_have_count(1, timeout=TIMEOUT)
    expect(inbox.locator(f'[data-testid=run-row][data-run-id="{run2}"]')).to_have_count(1, timeout=TIMEOUT)
    inbox.get_by_test_id("filter-agent").fill("nobody-has-this-agent")
    inbox.get_by_test_id("filter-apply").click()
    expect(rows).to_have_count(0, timeout=TIMEOUT)
    inbox.get_by_test_id("filter-agent").fill("writer")
    inbox.get_by_test_id("filter-status").select_option("completed")
    inbox.get_by_test_id("filter-apply").click()
    # Five runs of writer so far, all completed: the two playground runs and three more.
    expect(rows).to_have_count(5, timeout=TIMEOUT)
    inbox.get_by_test_id("filter-status").select_option("failed")
    inbox.get_by_test_id("filter-apply").click()
    expect(rows).to_have_count(0, timeout=TIMEOUT)
    inbox.get_by_test_id("filter-actor").fill("alice")
    inbox.get_by_test_id("filter-status").select_option("")
    inbox.get_by_test_id("filter-apply").click()
    expect(rows).to_have_count(5, timeout=TIMEOUT)
    inbox.get_by_test_id("filter-agent").fill("")
    inbox.get_by_test_id("filter-status").select_option("")
    inbox.get_by_test_id("filter-apply").click()
    expect(inbox.locator(f'[data-testid=run-row][data-run-id="{run1}"]')).to_have_count(1, timeout=TIMEOUT)
    axe(inbox, "runs")
    go(inbox, f"runs/{run1}")
    expect(inbox.get_by_test_id("timeline")).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    expect(inbox.get_by_test_id("call-result").first).to_contain_text("wrote hello.txt")
    # 280 input and 24 output tokens at $3 and $15 a million.
    expect(inbox.get_by_test_id("timeline-facts")).to_contain_text("$0.0012")
    expect(inbox.get_by_test_id("approval-decision").first).to_have_text("approved")
    trace = os.environ.get("KILN_TRACE_URL")
    if trace:
        link = inbox.get_by_test_id("trace-link")
        expect(link).to_have_count(1)
        pattern = re.escape(trace).replace(re.escape("{trace_id}"), "([0-9a-f]{32})") + "$"
        href = link.get_attribute("href") or ""
        found = re.match(pattern, href)
        check(found is not None and found.group(1) == link.inner_text(), f"the trace link is {href!r}")
    inbox.screenshot(path=str(SHOTS / "console-timeline.png"))

    nested_calls(inbox)
    tool_form(context)
    scripts_health(chat)
    context.close()
    return run1, run2


def nested_calls(page):
    step("code mode's calls nested under their program in the timeline")
    status, _, run = call("POST", "/v1/runs", ALICE, {"agent": "planner", "input": "order twice", "session": f"plan-{time.time_ns()}", "wait": False})
    check(status in (200, 202), f"POST /v1/runs (planner): {status} {run}")
    go(page, f"runs/{run.get('id')}")
    expect(page.get_by_test_id("timeline")).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    program = page.locator("[data-testid=tool-call][data-tool=run_code]")
    expect(program).to_have_count(1)
    nested = program.locator(".nested > [data-testid=tool-call][data-tool=order]")
    expect(nested).to_have_count(2)
    expect(nested.nth(1).get_by_test_id("call-args")).to_contain_text("express")
    # One look at the page (the timeline may be drawn again between two).
    indent, outer = page.evaluate(
        """() => { const p = document.querySelector('[data-testid=tool-call][data-tool=run_code]');
             const n = p && p.querySelector('.nested > [data-testid=tool-call]');
             return [n ? n.getBoundingClientRect().left : 0, p ? p.getBoundingClientRect().left : 0]; }"""
    )
    check(indent > outer + 10, f"nested calls are not indented under their program ({indent} vs {outer})")
    axe(page, "a code-mode timeline")


def tool_form(context):
    step("(d) a tool through its generated form, with a field error")
    page = context.new_page()
    watch(page, "tool form")
    sign_in(page, ALICE, "alice")
    go(page, "tools")
    expect(page.locator("[data-testid=tool-row][data-tool=order]")).to_have_count(1, timeout=TIMEOUT)
    axe(page, "tools")
    wipe = page.locator("[data-testid=tool-row][data-tool=wipe]")
    expect(wipe).to_contain_text("Deletes notes <b>for good</b>")
    check(wipe.locator("b").count() == 0, "a tool's description became markup")
    page.locator("[data-testid=tool-row][data-tool=order] a").click()
    expect(page.get_by_test_id("tool-name")).to_have_text("order", timeout=TIMEOUT)
    form = page.get_by_test_id("tool-form")
    field(form, "/customer/name").fill("Ada")
    expect(field(form, "/shipping")).to_have_value(re.compile(r".+"))
    form.locator('[data-path="/items"] [data-testid=add-row]').click()
    form.locator('[data-path="/items"] [data-testid=add-row]').click()
    rows = form.locator('[data-path="/items"] [data-testid=row]')
    check(rows.count() == 2, f"two clicks on add gave {rows.count()} rows")
    rows.nth(1).get_by_test_id("remove-row").click()
    check(rows.count() == 1, "remove did not remove the row")
    field(form, "/items/0/sku").fill("SKU-1")
    qty = field(form, "/items/0/qty")
    qty.fill("0")
    field(form, "/shipping").select_option(label="express")
    page.get_by_test_id("form-submit").click()
    expect(qty).to_have_attribute("aria-invalid", "true", timeout=TIMEOUT)
    error = form.locator('[data-testid=field-error][data-path="/items/0/qty"]')
    expect(error).to_be_visible()
    described = (qty.get_attribute("aria-describedby") or "").split()
    check(error.get_attribute("id") in described, f"the qty input is not described by its error: {described}")
    check(form.locator("[aria-invalid=true]").count() == 1, "other fields were marked invalid too")
    axe(page, "tool form with an error")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(SHOTS / "console-tool-form.png"))
    qty.fill("2")
    page.get_by_test_id("form-submit").click()
    result = page.get_by_test_id("result")
    expect(result).to_contain_text("ordered", timeout=TIMEOUT)
    expect(result).to_contain_text("express")
    check(qty.get_attribute("aria-invalid") is None, "the fixed field still says invalid")
    page.close()


def scripts_health(page):
    step("(e) a broken script's load error at file:line:col, gone once fixed")
    go(page, "scripts")
    expect(page.get_by_test_id("no-load-errors")).to_be_visible(timeout=TIMEOUT)
    extra = SCRIPTS / "extra.rhai"
    good = extra.read_text()
    extra.write_text('tool("extra").description("Extra")\n  .param("a", "string")\n  .handler(|a| a.a;\n')
    error = page.get_by_test_id("load-error").filter(has_text="extra.rhai")
    expect(error).to_be_visible(timeout=TIMEOUT)
    where = page.get_by_test_id("load-error-where").filter(has_text="extra.rhai").first.inner_text()
    check(re.search(r"extra\.rhai:\d+:\d+$", where) is not None, f"the load error is not at file:line:col: {where!r}")
    expect(page.get_by_test_id("live")).to_contain_text("extra.rhai", timeout=TIMEOUT)
    axe(page, "scripts with a load error")
    extra.write_text(good)
    expect(error).to_have_count(0, timeout=TIMEOUT)
    expect(page.get_by_test_id("no-load-errors")).to_be_visible()
    expect(page.get_by_test_id("metric-chart")).to_have_count(6, timeout=TIMEOUT)
    started = page.locator("[data-testid=metric-chart][data-metric=started] [data-testid=metric-value]").inner_text()
    check(started.isdigit() and int(started) >= 2, f"the runs-started chart reads {started!r}")


def second_actor(browser, runs, run, approval):
    step("(f) bob sees none of alice's runs or approvals; forced calls get 403/404")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    watch(page, "bob")
    sign_in(page, BOB, "bob")
    go(page, "runs")
    expect(page.get_by_test_id("runs-note")).to_have_text(re.compile(r".+"), timeout=TIMEOUT)
    shown = page.locator("[data-testid=run-row]").evaluate_all("rows => rows.map(r => r.dataset.runId)")
    check(not set(shown) & set(runs), f"bob's runs list shows alice's runs: {shown}")
    go(page, "approvals")
    expect(page.get_by_test_id("approvals-note")).to_have_text(re.compile(r".+"), timeout=TIMEOUT)
    check(page.get_by_test_id("approval").count() == 0, "bob's inbox shows an approval")
    go(page, f"runs/{run}")
    expect(page.get_by_test_id("timeline-failed")).to_be_visible(timeout=TIMEOUT)
    forced = page.evaluate(
        """async ([run, approval]) => {
            const auth = {Authorization: 'Bearer ' + sessionStorage.getItem('kiln.token')};
            const go = (path, init = {}) => fetch(path, {...init, headers: {...auth, ...(init.headers || {})}})
                .then(r => r.status).catch(e => String(e));
            return {
              run: await go(`/v1/runs/${run}`),
              timeline: await go(`/v1/runs/${run}/timeline`),
              cancel: await go(`/v1/runs/${run}/cancel`, {method: 'POST'}),
              decide: await go(`/v1/runs/${run}/approvals/${approval}`, {method: 'POST',
                headers: {'Content-Type': 'application/json'}, body: JSON.stringify({decision: 'approve'})}),
            };
        }""",
        [run, approval],
    )
    for name, status in forced.items():
        check(status in (403, 404), f"bob's forced {name} call got {status}")
    print(f"   bob's forced calls: {forced}", flush=True)
    check(approval in [a["id"] for a in pending() if a["run"] == run], "bob's forced calls decided alice's approval")
    context.close()


def approver(browser, runs, run, approval):
    step("carol may approve others' calls: her inbox shows the approval, and nothing else of the run")
    context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    watch(page, "carol")
    sign_in(page, CAROL, "carol")
    go(page, "approvals")
    card = page.locator(f'[data-testid=approval][data-run="{run}"]')
    expect(card).to_be_visible(timeout=TIMEOUT)
    expect(card.get_by_test_id("approval-question")).to_contain_text("save_note")
    expect(card.get_by_test_id("approval-args")).to_contain_text("secret.txt")
    go(page, "runs")
    expect(page.get_by_test_id("runs-note")).to_have_text(re.compile(r".+"), timeout=TIMEOUT)
    shown = page.locator("[data-testid=run-row]").evaluate_all("rows => rows.map(r => r.dataset.runId)")
    check(not set(shown) & set(runs), f"carol's runs list shows alice's runs: {shown}")
    forced = page.evaluate(
        """async (run) => {
            const auth = {Authorization: 'Bearer ' + sessionStorage.getItem('kiln.token')};
            const go = (path) => fetch(path, {headers: auth}).then(r => r.status).catch(e => String(e));
            return {run: await go(`/v1/runs/${run}`), timeline: await go(`/v1/runs/${run}/timeline`)};
        }""",
        run,
    )
    for name, status in forced.items():
        check(status in (403, 404), f"carol's forced {name} call got {status}")
    check(approval in [a["id"] for a in pending() if a["run"] == run], "carol's visit decided the approval")
    context.close()


def phone(browser):
    step("(i) 375 px wide: no page scrolls sideways")
    context = browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    watch(page, "phone")
    sign_in(page, ALICE, "alice")
    for route in ["runs", "approvals", "tools", "tools/order", "chat", "scripts"]:
        go(page, route)
        page.wait_for_timeout(600)
        no_horizontal_scroll(page, route)
    ids = run_ids()
    if ids:
        go(page, f"runs/{ids[-1]}")
        expect(page.get_by_test_id("timeline")).to_have_attribute("aria-busy", "false", timeout=TIMEOUT)
        no_horizontal_scroll(page, "a timeline")
        axe(page, "a timeline at phone width")
    context.close()


def main():
    SHOTS.mkdir(parents=True, exist_ok=True)
    evil = ThreadingHTTPServer(("127.0.0.1", 0), Evil)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    csp_headers()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
            args=[
                "--no-sandbox",
                # evil.test is another origin on this machine; every other name resolves nowhere.
                "--host-resolver-rules=MAP evil.test 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
            ],
        )
        try:
            main_flow(browser, evil.server_address[1])
            phone(browser)
        finally:
            browser.close()
    evil.shutdown()
    check(not csp_messages, f"CSP violations: {csp_messages}")
    check(not dialogs, f"a dialog opened (script ran from data): {dialogs}")
    outside = sorted({u for u in requests_seen if not re.match(r"^(http://(127\.0\.0\.1|\[::1\]|localhost|evil\.test)[:/]|data:|about:)", u)})
    check(not outside, f"requests left loopback: {outside}")
    for name in ["console-runs.png", "console-timeline.png", "console-approvals.png", "console-tool-form.png"]:
        shot = SHOTS / name
        check(shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {name} missing or empty")
    for p in problems:
        print("FAILED:", p)
    print(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
