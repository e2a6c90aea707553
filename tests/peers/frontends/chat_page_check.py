"""The example chat page (examples/chat_page) in Debian's Chromium, driven by Playwright,
against `kiln serve --static`: a prompt sent, the tool's progress bar shown, the approval
clicked, the answer shown, no error in the page. Prints one JSON object.
Usage: chat_page_check.py PAGE_URL SCREENSHOT"""

import json
import os
import sys

from playwright.sync_api import expect, sync_playwright

url, shot = sys.argv[1], sys.argv[2]
TIMEOUT = 30_000
errors = []
with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
        # Nothing but this machine resolves: the page must need no network.
        args=["--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"],
    )
    try:
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(f"page: {e}"))
        page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.goto(url)
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_test_id("progress")).to_be_visible(timeout=TIMEOUT)
        approve = page.get_by_test_id("approve")
        expect(approve).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=shot, full_page=True)
        approve.click()
        expect(page.get_by_test_id("text").last).to_have_text(
            "Imported 40 rows and published them.", timeout=TIMEOUT
        )
        result = {
            "errors": errors,
            "events": page.get_by_test_id("event").all_inner_texts(),
            "progress": [page.get_by_test_id("progress").get_attribute(a) for a in ("value", "max")],
            "publish": page.get_by_test_id("tool-publish").get_attribute("data-state"),
            "messages": page.locator("article").count(),
        }
    finally:
        browser.close()
print(json.dumps(result))
