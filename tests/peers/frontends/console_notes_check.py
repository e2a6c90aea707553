"""The web console shows a tool's progress and events: in the playground live (a progress bar
and the events under the call, then the approval answered inline), and in the run's timeline
afterwards. Debian's Chromium under Playwright against `kiln serve` (no tokens, loopback) on the
example chat page's agent. Prints one JSON object. Usage: console_notes_check.py KILN_URL"""

import json
import os
import sys

from playwright.sync_api import expect, sync_playwright

kiln = sys.argv[1].rstrip("/")
TIMEOUT = 30_000
errors = []
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
        args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"],
    )
    try:
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(f"page: {e}"))
        page.goto(f"{kiln}/ui/#/chat")
        agent = page.get_by_test_id("chat-agent")
        expect(agent.locator("option[value=importer]")).to_have_count(1, timeout=TIMEOUT)
        agent.select_option("importer")
        page.get_by_test_id("chat-prompt").fill("Import the sheet")
        page.get_by_test_id("chat-send").click()
        turn = page.get_by_test_id("chat-turn").last
        expect(turn.get_by_test_id("chat-tool-progress")).to_be_visible(timeout=TIMEOUT)
        approve = turn.get_by_test_id("chat-approve-button")
        expect(approve).to_be_visible(timeout=TIMEOUT)
        live_events = turn.get_by_test_id("chat-tool-event").count()
        approve.click()
        expect(turn.get_by_test_id("chat-answer")).to_have_text("Imported 40 rows and published them.", timeout=TIMEOUT)
        run = turn.get_attribute("data-run-id")
        page.goto(f"{kiln}/ui/#/runs/{run}")
        expect(page.get_by_test_id("tool-progress").first).to_be_visible(timeout=TIMEOUT)
        result = {
            "errors": errors,
            "live_events": live_events,
            "timeline_events": page.get_by_test_id("tool-event").count(),
            "timeline_progress": [page.get_by_test_id("tool-progress").first.get_attribute(a) for a in ("value", "max")],
        }
    finally:
        browser.close()
print(json.dumps(result))
