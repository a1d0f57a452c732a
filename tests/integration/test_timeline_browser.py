"""The timeline page in a real headless Chromium: it loads offline, shows the marks, runs no event text, filters
and shows events on click.

Chromium is Debian's (`/usr/bin/chromium`; scripts/test installs it when it is missing and it
runs as root with apt-get), driven through Playwright's Python package with that executable:
Playwright's own browser download is never used. Where either is missing the test skips and
says which; it never passes without a browser.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from tests import timeline_fixture as fixture

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _browser_or_skip() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (it is in the test extra: pip install -e '.[test]')")
    if shutil.which(CHROMIUM) is None:
        why = os.environ.get("CHROMIUM_INSTALL_PROBLEM") or ("scripts/test installs Debian's chromium package when "
                                                             "it runs as root with apt-get; it did not run here")
        pytest.skip(f"Chromium is not installed at {CHROMIUM}: {why}")
    return sync_playwright


@pytest.fixture
def page_file(project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The fixture log's timeline, written by the command."""
    fixture.write(project / ".agent" / "runtime-continuity" / "events")
    target = tmp_path / "timeline.html"
    assert main(["timeline", "--out", str(target)]) == 0
    capsys.readouterr()
    return target


def test_the_page_in_headless_chromium(page_file: Path, tmp_path: Path) -> None:
    """No console error, no request but the file, the fixture's marks, hostile text inert, filter and click work."""
    sync_playwright = _browser_or_skip()
    url = page_file.as_uri()
    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS,
                                             env={"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"})
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
            page = context.new_page()
            page.on("console", lambda message: problems.append(f"console {message.type}: {message.text}")
                    if message.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
            page.goto(url, wait_until="load")
            page.wait_for_timeout(300)  # let a (wrongly) injected image fail and its handler run, if any

            assert requests == [url]
            assert problems == []
            marks = page.locator("#chart .mark")
            assert marks.count() == fixture.MARKS
            assert page.locator("#shown-count").text_content() == str(fixture.MARKS)

            # the hostile message is text: no element of its own, no handler run, shown verbatim on hover
            assert page.evaluate("() => window.__pwned") is None
            assert page.title() == "demo: timeline"
            assert page.evaluate("() => document.querySelectorAll('img').length") == 0
            assert page.evaluate("() => document.scripts.length") == 2
            titles = page.evaluate("() => Array.from(document.querySelectorAll('#chart .mark > title'), "
                                   "t => t.textContent)")
            hostile = [title for title in titles if "pwned" in title]
            assert len(hostile) == 1 and "<script>document.title='pwned-script'</script>" in hostile[0]
            assert "<img src=x onerror=" in hostile[0]
            raw_marks = ("\u202e", "\u202c", "\u009b", "\u2028")  # bidi marks and C1 controls: stand-ins in titles
            assert not [title for title in titles if any(mark in title for mark in raw_marks)]

            # the filter box keeps the marks whose kind, agent, host, session or text match every word
            page.fill("#filter", "push race")
            assert page.locator("#shown-count").text_content() == "2"
            assert page.locator("#chart .mark:not(.hidden)").count() == 2
            page.fill("#filter", "handoff")
            assert page.locator("#chart .mark:visible").count() == fixture.COUNTS["handoff"]
            page.fill("#filter", "")
            assert page.locator("#chart .mark:not(.hidden)").count() == fixture.MARKS

            # clicking a mark shows the whole event, as stored
            accepted = page.locator("#chart .mark", has_text="handoff.accepted")
            accepted.click()
            shown = json.loads(page.locator("#detail").text_content() or "null")
            stored = next(s for s in fixture.sealed() if s.event.kind == "handoff.accepted")
            assert shown == json.loads(stored.raw)
            hostile_mark = page.locator("#chart .mark", has_text="pwned")
            hostile_mark.focus()
            page.keyboard.press("Enter")
            detail = page.locator("#detail").text_content() or "null"
            assert json.loads(detail)["message"] == fixture.HOSTILE  # the escapes read back as the stored text
            assert "\\u202e" in detail and "\\u009b" in detail and not any(mark in detail for mark in raw_marks[:3])
            assert page.evaluate("() => window.__pwned") is None and page.title() == "demo: timeline"

            shot = tmp_path / "timeline.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
            assert problems == [] and requests == [url]
        finally:
            browser.close()
