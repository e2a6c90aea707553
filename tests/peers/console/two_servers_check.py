"""Drives kiln's web console on one `kiln serve` (B) while runs go to another (A) sharing its
PostgreSQL database (tests/it/runlog/shared_console.rs starts them): B's console hears A's run
start, ask for approval and end through its live feed (B's own runs page and inbox, no
reload), lists the run, and approving it in B's inbox lets A's run finish.

Environment: KILN_A, KILN_B (the servers' URLs), KILN_CHROMIUM (default /usr/bin/chromium; a
browser is never downloaded). Exits 1 when a check fails, printing each failure."""

import json
import os
import sys
import urllib.request

from playwright.sync_api import expect, sync_playwright

A, B = os.environ["KILN_A"].rstrip("/"), os.environ["KILN_B"].rstrip("/")
TIMEOUT = 20_000
problems = []


def check(ok, message):
    if not ok:
        problems.append(message)
        print("FAILED:", message, flush=True)


def call(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as res:
        return res.status, json.loads(res.read())


def live(page, route):
    page.goto(f"{B}/ui/#/{route}")
    expect(page.locator("#feed-status")).to_have_text("live", timeout=TIMEOUT)


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"],
        )
        try:
            context = browser.new_context()
            runs, inbox = context.new_page(), context.new_page()
            for page in (runs, inbox):
                page.on("pageerror", lambda err: problems.append(f"page error {err}"))
            live(runs, "runs")
            live(inbox, "approvals")

            print("-- a run started on A appears in B's runs and inbox, heard live", flush=True)
            status, run = call("POST", f"{A}/v1/runs", {"agent": "putter", "input": "go", "wait": False})
            check(status == 202, f"POST A /v1/runs: {status} {run}")
            rid = run["id"]
            expect(inbox.locator("#live")).to_contain_text("New approval waiting", timeout=TIMEOUT)
            card = inbox.locator(f'[data-testid=approval][data-run="{rid}"]')
            expect(card).to_be_visible(timeout=TIMEOUT)
            expect(card.get_by_test_id("approval-tool")).to_have_text("put")
            row = runs.locator(f'[data-testid=run-row][data-run-id="{rid}"]')
            expect(row).to_be_visible(timeout=TIMEOUT)

            print("-- approved in B's inbox: the run on A finishes, B's runs page hears it end", flush=True)
            card.get_by_test_id("approve-button").click()
            status, done = call("GET", f"{A}/v1/runs/{rid}?wait=true")
            check(done.get("status") == "completed", f"A's run after B's approval: {done}")
            calls = (done.get("report") or {}).get("tool_calls") or [{}]
            check(calls[0].get("outcome", {}).get("result") == "kept", f"the approved call: {calls}")
            expect(row).to_have_attribute("data-status", "completed", timeout=TIMEOUT)
            expect(card).to_have_count(0, timeout=TIMEOUT)
        finally:
            browser.close()
    for problem in problems:
        print("FAILED:", problem)
    print(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
