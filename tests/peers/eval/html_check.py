"""Opens the HTML page of `kiln eval --html` in Chromium through Playwright with every request
that is not file:// aborted, and checks what a person sees: the matrix (#matrix) is visible,
at least one failing verdict (.fail) is visible with text, and no request left the file.
Saves a screenshot of the page's top at laptop width. Usage: html_check.py REPORT.html SCREENSHOT.png.
Uses the system's Chromium (KILN_CHROMIUM, default /usr/bin/chromium); it never downloads a
browser. Exits 1 when a check fails, printing why; 0 otherwise."""

import os
import pathlib
import sys

from playwright.sync_api import sync_playwright

page_path, shot = pathlib.Path(sys.argv[1]).resolve(), sys.argv[2]
problems = []
outside = []


def guard(route):
    url = route.request.url
    if url.startswith("file:"):
        route.continue_()
    else:
        outside.append(url)
        route.abort()


with sync_playwright() as p:
    browser = p.chromium.launch(
        executable_path=os.environ.get("KILN_CHROMIUM", "/usr/bin/chromium"),
        args=["--no-sandbox"],
    )
    try:
        # A phone-wide view: the page must read there.
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.route("**/*", guard)
        page.on("request", lambda r: None if r.url.startswith("file:") else outside.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        if not page.locator("#matrix").is_visible():
            problems.append("#matrix is not visible")
        fails = page.locator(".fail")
        visible = [
            fails.nth(i).inner_text().strip()
            for i in range(fails.count())
            if fails.nth(i).is_visible()
        ]
        if not any(visible):
            problems.append(f"no visible .fail with text (of {fails.count()})")
        else:
            print(f"{len(visible)} visible .fail elements; first: {visible[0]!r}")
        scripts = page.locator("script").count()
        if scripts:
            problems.append(f"{scripts} <script> elements")
        # The screenshot a person sees on a laptop: the page's top, the matrix and the charts.
        page.set_viewport_size({"width": 1280, "height": 1100})
        page.screenshot(path=shot, full_page=False)
    finally:
        browser.close()
if outside:
    problems.append(f"requests left file://: {sorted(set(outside))}")
for p in problems:
    print("FAILED:", p)
sys.exit(1 if problems else 0)
