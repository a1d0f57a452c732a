"""Make docs/timeline.png: the demo project's timeline (scripts/demo.py) in headless Chromium.

    .venv/bin/python scripts/screenshot_timeline.py [--out docs/timeline.png]

Needs Debian's chromium at /usr/bin/chromium and the playwright package (the test extra);
Playwright's own browser download is not used. The page is opened offline, the handoff's
mark clicked so the event shows below the chart, and the top of the page captured.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "docs" / "timeline.png"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="continuity-shot-") as folder:
        page_file = Path(folder, "timeline.html")
        env = {**os.environ, "HOME": folder}
        subprocess.run([sys.executable, str(ROOT / "scripts" / "demo.py"), "--timeline", str(page_file)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, env={"HOME": folder})
            try:
                page = browser.new_context(viewport={"width": 1240, "height": 480}, offline=True).new_page()
                page.goto(page_file.as_uri(), wait_until="load")
                page.locator("#chart .mark", has_text="handoff.created").click()
                page.locator("#detail").evaluate("node => { node.style.maxHeight = '150px'; }")
                page.screenshot(path=args.out, full_page=False)
            finally:
                browser.close()
    print(f"wrote {args.out} ({os.path.getsize(args.out):,} bytes)")


if __name__ == "__main__":
    main()
