"""Drives kiln's web console as an MCP Apps host in Debian's Chromium through Playwright,
against the `kiln serve` tests/it/console/console_apps.rs started, and checks what a person
sees and what the server did:

  1. alice calls the example server's get-time (mounted as clock) from its tool page; the call
     waits in the inbox until she approves it there; the example's own page renders the result;
     its button calls get-time back through kiln, which waits for a person again (carol
     approves); both calls are alice's runs.
  2. bob may not read the clock's page (403) nor use the tool; on place_order's page the order
     form renders and its refresh (order_status, page-only, needs `ledger`) is refused; alice's
     is answered `packed`.
  3. a finished get-time call shows its page in the run's timeline, with that call's result.
  4. a hostile page (prying.html) gets nothing: every probe is blocked, its forged sandbox
     message swaps nothing, `wipe` never runs, the console's token is untouched.
  5. axe-core finds no violation on place_order's page with its app (nor in the app); no CSP
     violation in the console's own document.
  6. screenshots of the order form and of the clock app into KILN_SHOTS.

Environment: console_kit.py's (KILN_URL, KILN_ALICE, KILN_BOB, KILN_CAROL, KILN_AXE,
KILN_SHOTS, and KILN_MOCK_URL, KILN_SCRIPTS, KILN_WORKSPACE which it reads but this suite
does not use), KILN_CHROMIUM (default /usr/bin/chromium; a browser is never downloaded).
Prints each failure, then `ok` when there is none (exit 0), else exits 1."""

import os
import pathlib
import re
import sys
import time

from playwright.sync_api import expect, sync_playwright

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from console_kit import (  # noqa: E402 - found beside this file
    AXE, ALICE, BOB, CAROL, KILN, SHOTS, TIMEOUT, axe, call, check, dialogs, field, go, pending,
    problems, sign_in, step, wait_until,
)

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
PROBES = ["top_document", "parent_document", "fetch_runs", "storage", "cookies", "forge_top", "call_hidden", "forge_proxy"]

console_csp = []  # CSP violations of the console's own document: there must be none
app_csp = []  # the apps' (the hostile page's blocked attempts): printed, expected
requests_seen = []


def watch(page, label):
    """Like console_kit.watch, but tells the console's CSP violations from its apps' (their
    frames report theirs in the same page; a hostile app's are expected)."""

    def console(msg):
        text = msg.text
        if "Content Security Policy" in text or "Content-Security-Policy" in text:
            where = (msg.location or {}).get("url", "")
            mine = where == "" or where.startswith(KILN + "/")
            (console_csp if mine else app_csp).append(f"{label} ({where or 'no url'}): {text}")

    page.on("console", console)
    page.on("pageerror", lambda err: problems.append(f"{label}: page error {err}"))
    page.on("dialog", lambda d: (dialogs.append(f"{label}: {d.message}"), d.dismiss()))
    page.on("request", lambda r: requests_seen.append(r.url))


def sees(assertion, message):
    """Runs a Playwright expectation; a miss is a failed check (not the end of the suite)."""
    try:
        assertion()
        return True
    except AssertionError as err:
        check(False, f"{message} ({str(err).strip().splitlines()[0][:300]})")
        return False


def app(scope):
    """The app's own document: the inner frame inside the sandbox proxy's frame."""
    return scope.frame_locator("[data-testid=app-frame]").frame_locator("iframe")


def app_ready(scope, name):
    return sees(lambda: expect(scope.get_by_test_id("app-status")).to_have_text("App ready", timeout=TIMEOUT),
                f"{name}: the app never said it was ready")


def runs_of(token, tool):
    status, _, body = call("GET", "/v1/runs?limit=200", token)
    check(status == 200, f"GET /v1/runs: {status} {body}")
    runs = body.get("runs", []) if isinstance(body, dict) else []
    return [r for r in runs if r.get("agent") == f"call:{tool}"]


def waiting_for(tool, seen):
    """The next approval of a `tool` call (one not in `seen`), as alice's inbox lists it."""
    fresh = lambda: [a for a in pending(ALICE) if a.get("tool") == tool and (a["run"], a["id"]) not in seen]  # noqa: E731
    found = wait_until(fresh, f"an approval of {tool}")
    if found:
        seen.add((found[0]["run"], found[0]["id"]))
        return found[0]
    return None


def call_tool(page, route, fill=None):
    """Opens a tool's page, fills its form and calls it."""
    go(page, f"tools/{route}")
    expect(page.get_by_test_id("tool-name")).to_have_text(route, timeout=TIMEOUT)
    form = page.get_by_test_id("tool-form")
    for path, value in (fill or {}).items():
        field(form, path).fill(value)
    page.get_by_test_id("form-submit").click()


def clock(browser, inbox, tool, seen):
    step("1. alice calls get-time: an approval in the inbox, then the example's page shows the time")
    page = browser.new_page()
    watch(page, "alice clock")
    sign_in(page, ALICE, "alice")
    call_tool(page, tool)
    expect(page.get_by_test_id("tool-pending")).to_be_visible(timeout=TIMEOUT)
    approval = waiting_for(tool, seen)
    if not approval:
        return None
    first = approval["run"]
    # alice approves her own call on the Approvals page, as a person would.
    go(inbox, "approvals")
    card = inbox.locator(f'[data-testid=approval][data-run="{first}"]')
    expect(card).to_be_visible(timeout=TIMEOUT)
    card.get_by_test_id("approve-button").click()
    expect(card).to_have_count(0, timeout=TIMEOUT)
    sees(lambda: expect(page.get_by_test_id("result")).to_contain_text(re.compile(r"\d{4}-\d\d-\d\dT"), timeout=TIMEOUT),
         "the approved get-time call's result is not on its tool page")
    sees(lambda: expect(page.locator("section[data-testid=app]")).to_have_count(1, timeout=TIMEOUT),
         f"{tool}'s tool page shows no app (GET /v1/apps lists the tools with a page)")
    if not app_ready(page, tool):
        return first
    time_shown = app(page).locator("#server-time")
    if not sees(lambda: expect(time_shown).to_have_text(ISO, timeout=TIMEOUT),
                "the example app's #server-time never showed the result's ISO time"):
        return first
    before = time_shown.inner_text()
    page.get_by_test_id("tool-outcome").screenshot(path=str(SHOTS / "console-app-clock.png"))

    step("1. the example app's button calls get-time through kiln: another approval, by carol")
    app(page).locator("#get-time-btn").click()
    again = waiting_for(tool, seen)
    if not again:
        check(False, f"the app's get-time call never waited in the inbox; #server-time shows {time_shown.inner_text()!r}")
    else:
        status, _, body = call("POST", f"/v1/runs/{again['run']}/approvals/{again['id']}", CAROL, {"decision": "approve"})
        check(status == 200, f"carol's approval of the app's call: {status} {body}")
        sees(lambda: expect(time_shown).not_to_have_text(before, timeout=TIMEOUT), "#server-time did not change after the app's call")
        sees(lambda: expect(time_shown).to_have_text(ISO), "the app's own call did not give an ISO time")
    ours = {r["id"] for r in runs_of(ALICE, tool) if r.get("actor") == "alice"}
    check(first in ours and (not again or again["run"] in ours), f"alice's get-time runs: {ours} (want {first} and the app's)")
    page.close()
    return first


def order_form(browser, token, actor, want):
    """place_order from its tool page; the form's refresh shows `want` (a regex)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    watch(page, f"{actor} place_order")
    sign_in(page, token, actor)
    call_tool(page, "place_order", {"/item": "kiln", "/qty": "2"})
    expect(page.get_by_test_id("result")).to_contain_text("ordered", timeout=TIMEOUT)
    if not app_ready(page, f"{actor}'s place_order"):
        return context, None
    form = app(page)
    sees(lambda: expect(form.locator("#state")).to_have_text("done", timeout=TIMEOUT), f"{actor}: the order form got no result")
    sees(lambda: expect(form.locator("#input")).to_have_text("kiln × 2"), f"{actor}: the order form got no input")
    sees(lambda: expect(form.locator("#host")).to_have_text("kiln console"), f"{actor}: ui/initialize named no host")
    sees(lambda: expect(form.locator("#tool")).to_have_text("place_order"), f"{actor}: the host context named no tool")
    form.locator("#refresh").click()
    sees(lambda: expect(form.locator("#status")).to_have_text(want, timeout=TIMEOUT), f"{actor}'s refresh (order_status) did not show {want.pattern}")
    return context, page


def actors(browser):
    step("2. bob may not see the clock's page nor use the tool")
    status, _, body = call("GET", "/v1/apps/clock__get-time", BOB)
    check(status == 403, f"bob's GET /v1/apps/clock__get-time: {status} {body}")
    _, _, body = call("GET", "/v1/tools", BOB)
    listed = {t["name"]: t for t in body.get("tools", [])} if isinstance(body, dict) else {}
    check(listed.get("clock__get-time", {}).get("available") is not True, f"the clock is available to bob: {listed.get('clock__get-time')}")
    _, _, body = call("GET", "/v1/apps", BOB)
    check("clock__get-time" not in (body.get("tools") or {}), f"bob's GET /v1/apps lists the clock: {body}")

    step("2. bob's order form: the page renders, its refresh is refused for want of `ledger`")
    context, _ = order_form(browser, BOB, "bob", re.compile(r"^error: .*ledger"))
    context.close()
    check(not runs_of(BOB, "order_status"), "bob's refused order_status call ran")

    step("2. alice's order form: refreshed as `packed`; axe; the documentation's screenshot")
    context, page = order_form(browser, ALICE, "alice", re.compile(r"^packed$"))
    check(any(r.get("actor") == "alice" for r in runs_of(ALICE, "order_status")), "the app's order_status call is no run of alice's")
    if page:
        step("5. axe-core on place_order's page with its app, and in the app")
        axe(page, "place_order with its app")
        axe_app(page)
        outcome = page.get_by_test_id("tool-outcome")
        outcome.scroll_into_view_if_needed()
        outcome.screenshot(path=str(SHOTS / "console-app-order.png"))
    context.close()


def axe_app(page):
    """axe-core inside the app's own document (the inner frame, about:srcdoc)."""
    inner = [f for f in page.frames if f.url == "about:srcdoc" and f.parent_frame and f.parent_frame != page.main_frame]
    if not check(len(inner) == 1, f"the app's inner frame: {[f.url for f in page.frames]}"):
        return
    inner[0].evaluate(AXE + "\n;void 0")
    found = inner[0].evaluate(
        """async () => (await window.axe.run(document, {resultTypes: ['violations']})).violations
            .map(v => `${v.id}(${v.impact}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`)"""
    )
    check(not found, f"axe in the order form: {found}")


def timeline(browser, run, tool):
    step("3. the first get-time call's run shows the app with that call's result")
    _, _, body = call("GET", f"/v1/runs/{run}/timeline", ALICE)
    calls = [c for r in body.get("rounds", []) for c in r.get("tool_calls", [])] if isinstance(body, dict) else []
    told = ((calls[0].get("result") or {}).get("time") if calls else None) or "?"
    page = browser.new_page()
    watch(page, "alice timeline")
    sign_in(page, ALICE, "alice")
    go(page, f"runs/{run}")
    expect(page.get_by_test_id("timeline")).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
    button = page.locator(f"[data-testid=tool-call][data-tool='{tool}'] [data-testid=show-app]")
    if sees(lambda: expect(button).to_have_count(1, timeout=TIMEOUT), f"the timeline's {tool} call has no show-app button"):
        button.click()
        if app_ready(page, "the timeline's app"):
            sees(lambda: expect(app(page).locator("#server-time")).to_have_text(told, timeout=TIMEOUT),
                 f"the timeline's app does not show that call's time {told}")
    page.close()


def prying(browser):
    step("4. a hostile page: every probe blocked, nothing swapped, wipe never runs")
    page = browser.new_page()
    watch(page, "alice pry")
    sign_in(page, ALICE, "alice")
    token = lambda: page.evaluate("() => sessionStorage.getItem('kiln.token')")  # noqa: E731
    check(token() == ALICE, "the console holds no token before the prying page")
    call_tool(page, "pry")
    expect(page.get_by_test_id("result")).to_contain_text("pried", timeout=TIMEOUT)
    inner = app(page)
    if not sees(lambda: expect(inner.locator("#done")).to_have_text("done", timeout=30_000), "the prying page never finished its probes"):
        return
    page.wait_for_timeout(1500)  # time for a swapped page to show up, if the forgery worked
    lines = [ln for ln in inner.locator("#report").inner_text().splitlines() if ln.strip()]
    print("   prying report:", *lines, sep="\n     ", flush=True)
    got = dict(ln.split(": ", 1) for ln in lines if ": " in ln)
    check(sorted(got) == sorted(PROBES), f"the probes reported: {sorted(got)}")
    for name, outcome in got.items():
        check(outcome == ("sent" if name == "forge_proxy" else "blocked"), f"probe {name}: {outcome}")
    check(inner.locator("#swapped").count() == 0, "the forged sandbox-resource-ready swapped the app's page")
    check(inner.locator("#report").count() == 1, "the prying page is gone from its frame")
    check(not runs_of(ALICE, "wipe"), "wipe ran (a page called a tool that shows no page)")
    check(page.url.startswith(KILN + "/ui/"), f"the console was navigated away: {page.url}")
    check(token() == ALICE, "the console's token changed after the prying page")
    go(page, "runs")
    sees(lambda: expect(page.locator("[data-testid=run-row]").first).to_be_visible(timeout=TIMEOUT), "the console's runs page broke after the prying page")
    page.close()


def main():
    SHOTS.mkdir(parents=True, exist_ok=True)
    status, _, body = call("GET", "/v1/tools", ALICE)
    names = [t["name"] for t in body.get("tools", [])] if isinstance(body, dict) else []
    clocks = [n for n in names if n.startswith("clock__") and n.endswith("get-time")]
    if not check(status == 200 and len(clocks) == 1, f"the mounted example's get-time in GET /v1/tools: {status} {names}"):
        clocks = ["clock__get-time"]
    tool = clocks[0]
    _, _, apps = call("GET", "/v1/apps", ALICE)
    check(tool in ((apps or {}).get("tools") or {}), f"GET /v1/apps (alice) does not list {tool}'s page: {apps}")
    started = time.time()
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
            # Every name resolves nowhere: all traffic stays on 127.0.0.1.
            args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"],
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US", timezone_id="UTC")
        try:
            inbox = context.new_page()
            watch(inbox, "alice inbox")
            sign_in(inbox, ALICE, "alice")
            seen = set()
            for name, part in [
                ("clock", lambda: clock(context, inbox, tool, seen)),
                ("actors", lambda: actors(browser)),
                ("prying", lambda: prying(context)),
            ]:
                try:
                    first = part()
                    if name == "clock" and first:
                        timeline(context, first, tool)
                except Exception as err:  # noqa: BLE001 - one part's stop is a failure; the others still run
                    check(False, f"part {name} stopped: {err.__class__.__name__}: {str(err).strip().splitlines()[0][:300]}")
        finally:
            browser.close()
    print(f"   browser parts took {time.time() - started:.1f} s", flush=True)
    for line in app_csp:
        print("   an app's CSP violation (expected for the prying page):", line[:200], flush=True)
    check(not console_csp, f"CSP violations in the console's own page: {console_csp}")
    check(not dialogs, f"a dialog opened: {dialogs}")
    outside = sorted({u for u in requests_seen if not re.match(r"^(http://127\.0\.0\.1[:/]|data:|about:|blob:)", u)})
    check(not outside, f"requests left 127.0.0.1: {outside}")
    for name in ["console-app-order.png", "console-app-clock.png"]:
        shot = SHOTS / name
        check(shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {name} missing or empty")
    for p in problems:
        print("FAILED:", p)
    if problems:
        print(f"{len(problems)} problem(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
