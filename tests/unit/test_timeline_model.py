"""The timeline's page model and its rendering, on a fixture log in memory (no disk, no browser)."""

from __future__ import annotations

import json
import re

import pytest

from continuity.timeline import model
from continuity.timeline.model import Builder, Page
from continuity.timeline.render import render, script_json
from events import clock
from events.worklog import WorkLogged
from tests import timeline_fixture as fixture


def build(extra: list | None = None, **options: object) -> Page:
    builder = Builder(fixture.PROJECT, **options)  # type: ignore[arg-type]
    for stored in fixture.sealed(extra):
        builder.add(stored.name, stored.raw, stored.event)
    return builder.page()


def test_marks_per_category_for_the_fixture_log() -> None:
    """Each marked kind makes one mark of its category; a note-only task update and a run start make none."""
    page = build()
    assert page.counts == fixture.COUNTS
    assert len(page.marks) == fixture.MARKS and page.summarized is None
    assert page.events == page.read == fixture.EVENTS
    shown: dict[str, int] = {}
    for mark in page.marks:
        shown[mark.category] = shown.get(mark.category, 0) + 1
    assert shown == fixture.COUNTS


def test_lanes_are_agent_and_host_and_sessions_span_their_events() -> None:
    """One lane per agent and host in order of appearance; a session spans its first to its last event."""
    page = build()
    assert [lane.label for lane in page.lanes] == ["ann · claude-code", "bob · codex", "carl · cursor"]
    assert [lane.events for lane in page.lanes] == [14, 4, 2]
    spans = {session.session_id: session for session in page.sessions}
    assert sorted(spans) == ["S-ann-1", "S-ann-2", "S-bob-1"]  # carl's events name no session
    ann = spans["S-ann-1"]
    assert (ann.first_us, ann.last_us, ann.events) == (fixture.START_US, fixture.START_US + 52 * fixture.MINUTE_US,
                                                       12)
    assert all(mark.session is None for mark in page.marks if mark.lane == 2)


def test_marks_carry_the_event_bytes_and_a_short_label() -> None:
    """Click shows the event's own bytes; hover shows time, kind, who and what, cut to LABEL_CHARS."""
    extra = [(100, WorkLogged(**fixture.BOB, message="word " * 400))]
    stored = list(fixture.sealed(extra))
    page = build(extra=extra)
    by_payload = {mark.payload for mark in page.marks}
    assert {s.raw for s in stored if s.event.kind == "checkpoint.recorded"} <= by_payload
    switch = next(mark for mark in page.marks if mark.category == "host-switch")
    assert switch.label == ("2026-11-30 09:51:00 host.switched ann @claude-code [S-ann-1]: "
                            "claude-code -> codex (continue in Codex)")
    transition = next(mark for mark in page.marks if mark.label.startswith("2026-11-30 09:30:00"))
    assert "T-1 queued -> in_progress" in transition.label
    long = max(page.marks, key=lambda mark: len(mark.label))
    assert len(long.label) == model.LABEL_CHARS and long.label.endswith("…")


def test_since_and_until_keep_the_window_inclusive() -> None:
    """--since and --until keep events at or after / at or before their times, and only those."""
    since = clock.iso(fixture.START_US + 20 * fixture.MINUTE_US)
    until = clock.iso(fixture.START_US + 95 * fixture.MINUTE_US)
    page = build(since=since, until=until)
    assert page.events == 13  # 09:20 (the checkpoint) to 10:35 (the snapshot), both included
    assert page.first_us == fixture.START_US + 20 * fixture.MINUTE_US
    assert page.last_us == fixture.START_US + 95 * fixture.MINUTE_US
    assert page.counts == {"host-switch": 1, "archive": 1, "handoff": 1, "snapshot": 1, "task": 2, "decision": 1,
                           "checkpoint": 1, "session": 2, "log": 1}
    assert build(since=clock.iso(fixture.START_US + 10**12)).events == 0


def test_other_projects_are_left_out() -> None:
    """Only the chosen project's events make lanes and marks (a store may hold several)."""
    other = {"project": "elsewhere", "agent_id": "zed", "host": "codex"}
    page = build(extra=[(3, WorkLogged(**other, message="not ours"))])
    assert page.events == fixture.EVENTS and page.read == fixture.EVENTS + 1
    assert all(lane.agent != "zed" for lane in page.lanes)


def test_past_the_mark_limit_the_page_shows_one_mark_per_session_hour() -> None:
    """Over the limit, marks become session-hour summaries; the counts still count every event."""
    at_limit = build(mark_limit=fixture.MARKS)
    assert at_limit.summarized is None and len(at_limit.marks) == fixture.MARKS
    page = build(mark_limit=fixture.MARKS - 1)
    assert page.summarized == "session-hour"
    assert page.counts == fixture.COUNTS
    hours = {(s.event.agent_id, s.event.host, s.event.session_id, (clock.parse_iso(s.event.created_at)
                                                                    // model.HOUR_US))
             for s in fixture.sealed() if model.category_of(s.event) is not None}
    assert len(page.marks) == len(hours) == 4
    summaries = [json.loads(mark.payload) for mark in page.marks]
    assert sum(summary["events"] for summary in summaries) == fixture.MARKS
    assert sum(mark.count for mark in page.marks) == fixture.MARKS
    first = summaries[0]
    assert first["summary"] == "session-hour" and first["sessions"] == ["S-ann-1"]
    # the most telling event of ann's first hour is the host switch, kept whole
    assert first["most_telling"]["kind"] == "host.switched" and page.marks[0].category == "host-switch"


def test_the_bytes_limit_summarizes_too_and_coarser_levels_bound_the_marks() -> None:
    """Large events summarize the page before the count does; too many session-hours go to lane-hours, lane-days."""
    assert build(bytes_limit=2000).summarized == "session-hour"
    # a second session of ann's in her first hour, and bob later on his first day:
    # 6 session-hours, 5 lane-hours, 4 lane-days, 3 lane-weeks
    extra = [(10, WorkLogged(**{**fixture.ANN, "session_id": "S-ann-3"}, message="in parallel")),
             (200, WorkLogged(**fixture.BOB, message="after lunch"))]
    levels = {limit: build(extra, mark_limit=1, summary_limit=limit) for limit in (6, 5, 4, 3, 1)}
    assert {limit: (page.summarized, len(page.marks)) for limit, page in levels.items()} == {
        6: ("session-hour", 6), 5: ("lane-hour", 5), 4: ("lane-day", 4), 3: ("lane-week", 3), 1: ("lane", 3)}
    for page in levels.values():  # the last level answers however many it makes
        assert sum(mark.count for mark in page.marks) == fixture.MARKS + 2


def test_the_summary_byte_budget_picks_a_coarser_level() -> None:
    """Summary marks whose estimated bytes pass the budget give way to a coarser level, however few they are."""
    roomy = build(mark_limit=1)
    assert roomy.summarized == "session-hour" and len(roomy.marks) == 4
    per_mark = max(map(model.page_bytes, roomy.marks))
    assert build(mark_limit=1, summary_bytes=sum(map(model.page_bytes, roomy.marks))).summarized == "session-hour"
    tight = build(mark_limit=1, summary_bytes=3 * per_mark)
    assert tight.summarized == "lane-week" and len(tight.marks) == 3


def test_past_the_session_bar_limit_sessions_are_drawn_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many sessions: one bar per lane and day (or week, or lane) saying how many it stands for; one row per lane."""
    from continuity.timeline import render as rendering

    page = build([(10, WorkLogged(**{**fixture.ANN, "session_id": "S-ann-3"}, message="in parallel"))])
    assert len(rendering.layout(page)["sessions"]) == 4  # ann's two first sessions overlap: two rows

    def bars(limit: int) -> list[str]:
        monkeypatch.setattr(rendering, "SESSION_BARS", limit)
        return sorted(bar["title"].split(":")[0] for bar in rendering.layout(page)["sessions"])

    assert bars(3) == ["1 session (one bar per day)", "1 session (one bar per day)", "2 sessions (one bar per day)"]
    assert bars(2) == ["1 session (one bar per week)", "3 sessions (one bar per week)"]
    assert bars(1) == ["1 session (one bar per lane)", "3 sessions (one bar per lane)"]
    drawn = rendering.layout(page)
    rows = {lane["y"] + rendering.LANE_GAP / 2 + rendering.ROW / 2 for lane in drawn["lanes"]}
    assert {mark["y"] for mark in drawn["marks"]} == rows and len(rows) == 3


def test_script_json_cannot_be_closed_by_event_text() -> None:
    """The JSON block escapes <, >, & and U+2028/9, and still parses to the same values."""
    payload = json.dumps({"m": "</script><script>alert(1)</script> <!-- & \u2028\u2029"},
                         ensure_ascii=False).encode()
    text = str(script_json([payload, b'{"n":1}']))
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == [json.loads(payload), {"n": 1}]


def test_the_rendered_page_holds_hostile_text_only_escaped() -> None:
    """Messages reach the page only escaped: no tag of theirs, one script of ours, no network reference."""
    html = render(build()).decode()
    assert "<script>document.title" not in html and "<img" not in html
    assert "&lt;script&gt;document.title=&#39;pwned-script&#39;&lt;/script&gt;" in html
    assert html.count("<script") == 2 and html.count('<g class="mark"') == fixture.MARKS
    assert not re.search(r"<[a-z][^>]*\s(?:src|href)=|https?://(?!www\.w3\.org/2000/svg)|@import|url\(", html)
    block = re.search(r'<script type="application/json" id="timeline-data">(.*?)</script>', html, re.S)
    assert block is not None
    events = json.loads(block.group(1))
    assert len(events) == fixture.MARKS and events[2]["message"] == fixture.HOSTILE


def test_the_page_script_is_allowed_by_its_hash_only() -> None:
    """The Content-Security-Policy forbids every request and allows exactly the page's own script."""
    import base64
    import hashlib

    html = render(build()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None and "default-src 'none'" in policy.group(1)
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy.group(1)


@pytest.mark.parametrize("span_minutes, label", [(24 * 60 + 20, "2026-12-01"), (9, "09:05")])
def test_the_day_axis_names_days_and_hours(span_minutes: int, label: str) -> None:
    """Day lines carry the date; short spans get hour or minute ticks between them."""
    page = build(until=clock.iso(fixture.START_US + span_minutes * fixture.MINUTE_US))
    html = render(page).decode()
    assert f">{label}</text>" in html
    assert ">2026-11-30</text>" in html


def test_a_hostile_project_name_is_escaped_too() -> None:
    """Project names may hold `<` and quotes (seed 004's are free text): the title and header escape them."""
    project = "<b onmouseover=\"x()\">shop</b>"
    builder = Builder(project)
    stored = next(fixture.sealed(extra=[(-1, WorkLogged(project=project, message="hello"))]))
    builder.add(stored.name, stored.raw, stored.event)
    html = render(builder.page()).decode()
    assert "<b " not in html and "&lt;b onmouseover=&#34;x()&#34;&gt;shop&lt;/b&gt;: timeline" in html


@pytest.mark.parametrize("chars", model.CUTS)
def test_a_cut_summary_never_keeps_the_start_of_a_secret_it_splits(chars: int) -> None:
    """The coarsest level cuts the embedded event's texts, then the page redacts what it shows: a cut through a token
    left its first characters, which no rule matches (an event another clone wrote, whose text was never checked
    here), on the page. The cut is made before the token."""
    from continuity.timeline.render import shown_payload

    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    for before in range(chars - len(token), chars):
        text = "w" * before + " " + token + " tail"
        summary = {"sessions": [], "most_telling": {"event_id": "RCE-x", "message": text, "note": {text: [text]}}}
        shown = shown_payload(model._cut_summary(summary, chars)).decode()
        assert "gh" + "p_" not in shown and "a1B2c3D4" not in shown, before
        assert "w" * min(before, chars - 8) in shown  # what comes before the token is kept
