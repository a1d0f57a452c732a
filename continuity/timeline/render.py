"""The timeline page: lay the page model out as inline SVG and render it with Jinja2 (autoescaping on).

Event text is untrusted: it reaches the page only through Jinja2's escaping (hover titles, lane
labels and the project's name, where controls and bidi marks show as stand-ins, `one_line`) or
inside the JSON block, where `<`, `>`, `&`, U+2028 and U+2029 are written as JSON escapes so
nothing in an event can close the block (`script_json`). The page's own script is allowed by
its hash in a Content-Security-Policy that also forbids any request: no fonts, images, styles
or scripts from anywhere, so the page works from a file, offline."""

from __future__ import annotations

import base64
import functools
import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any

import jinja2
from markupsafe import Markup

from continuity.core.text import one_line
from continuity.timeline.model import CATEGORIES, DAY_US, HOUR_US, Page
from events import clock

HERE = os.path.dirname(os.path.abspath(__file__))
#: Colours of the categories (the legend shows them with their counts).
COLOURS = {"host-switch": "#d62728", "archive": "#9467bd", "handoff": "#ff7f0e", "snapshot": "#17becf",
           "task": "#2ca02c", "decision": "#8c564b", "checkpoint": "#1f77b4", "session": "#7f7f7f",
           "log": "#b5b84a"}
LEFT, RIGHT, TOP, ROW, LANE_GAP = 210, 24, 46, 20, 14
#: Pixels per hour of the log, within these widths (wider pages scroll sideways).
PX_PER_HOUR, MIN_WIDTH, MAX_WIDTH = 12, 960, 16000
_SECOND = 1_000_000
_MINUTE = 60 * _SECOND
#: Tick steps under a day (the axis takes the finest that keeps labels apart).
_STEPS = (_SECOND, 5 * _SECOND, 15 * _SECOND, 30 * _SECOND, _MINUTE, 5 * _MINUTE, 10 * _MINUTE, 15 * _MINUTE,
          30 * _MINUTE, HOUR_US, 2 * HOUR_US, 3 * HOUR_US, 6 * HOUR_US, 12 * HOUR_US)
_DAY_STEPS = (1, 2, 7, 14, 28, 91, 182, 364)
#: Session bars drawn one by one at most; past this they are merged (see `layout`).
SESSION_BARS = 1000


def shown_text(text: str) -> str:
    """An id or name as the page shows it, on one line: the agent, host and session of an event another clone
    wrote were checked only for their shape, so what looks like a secret is redacted."""
    from events.guard import might_hold_secret, redact_text

    return one_line(redact_text(text)[0] if might_hold_secret(text) else text)


def shown_payload(payload: bytes) -> bytes:
    """A mark's event (or summary) as the page shows it on click: as stored, or with what looks like a secret
    redacted (`shown_raw`), as every view shows an event another clone wrote or one older than a guard rule. Bytes
    with no escape and none of the words any rule needs are as stored, without being decoded."""
    from events.guard import might_hold_secret

    if b"\\" not in payload and not might_hold_secret(payload.decode("utf-8", "replace")):
        return payload
    from continuity.cli.output import shown_raw

    return shown_raw(payload)


def script_json(payloads: list[bytes]) -> Markup:
    """A JSON array of the payloads, safe inside <script type="application/json">: nothing can close the block.

    Each payload is JSON already (an event's own bytes); `<`, `>` and `&` only occur inside
    its strings, where their \\u escapes mean the same, as do U+2028 and U+2029's.
    """
    joined = b"[" + b",".join(payloads) + b"]"
    for plain, escaped in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
                           ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029")):
        joined = joined.replace(plain, escaped)
    return Markup(joined.decode())


@dataclass(slots=True)
class _Axis:
    t0: int
    t1: int
    width: float

    def x(self, at_us: int) -> float:
        return round(LEFT + (at_us - self.t0) / (self.t1 - self.t0) * self.width, 1)


def _axis(page: Page) -> _Axis:
    first = page.first_us if page.first_us is not None else 0
    last = page.last_us if page.last_us is not None else first
    span = max(last - first, 1)
    pad = max(span // 40, _SECOND)
    # padded within the times a date can spell: a log holding an event of year 1 or 9999 has no day beyond
    t0, t1 = max(first - pad, clock.FIRST_US), min(last + pad, clock.LAST_US)
    hours = (t1 - t0) / HOUR_US
    return _Axis(t0, t1, float(min(max(hours * PX_PER_HOUR, MIN_WIDTH), MAX_WIDTH)))


def _ticks(axis: _Axis) -> list[dict[str, Any]]:
    """Day lines (labelled with the date), and hour or minute ticks between them when days are wide enough."""
    ticks: list[dict[str, Any]] = []
    fits = max(int(axis.width // 90), 2)
    span = axis.t1 - axis.t0
    # past a year a step of whole years' days keeps the lines apart (and the loop short) over centuries
    step_days = next((n for n in _DAY_STEPS if span // (n * DAY_US) <= fits),
                     _DAY_STEPS[-1] * -(-span // (fits * _DAY_STEPS[-1] * DAY_US)))
    stride = step_days * DAY_US
    day = -(-axis.t0 // stride) * stride  # the days whose number is a multiple of the step
    while day <= axis.t1:
        ticks.append({"x": axis.x(day), "label": clock.iso(day)[:10], "major": True})
        day += stride
    step = next((s for s in _STEPS if span // s <= fits), None)
    if step is not None:
        at = -(-axis.t0 // step) * step
        while at <= axis.t1:
            if at % DAY_US:
                ticks.append({"x": axis.x(at), "label": clock.iso(at)[11:19 if step < _MINUTE else 16],
                              "major": False})
            at += step
    ticks = [tick for tick in ticks if tick["x"] <= LEFT + axis.width - 40]  # no label cut by the right edge
    if not any(tick["major"] and tick["x"] < LEFT + 90 for tick in ticks):  # name the first day at the start
        ticks.append({"x": float(LEFT), "label": clock.iso(axis.t0)[:10], "major": True})
    return ticks


def _rows(page: Page, axis: _Axis) -> tuple[list[int], dict[int, int], dict[int, int]]:
    """Sessions stacked in rows within their lane (a row per overlap): rows per lane, row of each session,
    and the extra row of each lane holding marks of no session (when it also has sessions)."""
    gap = 8 * (axis.t1 - axis.t0) / axis.width
    ends: dict[int, list[float]] = {}
    row_of: dict[int, int] = {}
    order = sorted(range(len(page.sessions)), key=lambda i: page.sessions[i].first_us)
    for index in order:
        session = page.sessions[index]
        rows = ends.setdefault(session.lane, [])
        row = next((r for r, end in enumerate(rows) if end + gap < session.first_us), len(rows))
        if row == len(rows):
            rows.append(session.last_us)
        rows[row] = session.last_us
        row_of[index] = row
    loose = {mark.lane for mark in page.marks if mark.session is None}
    counts, loose_row = [], {}
    for lane in range(len(page.lanes)):
        rows_here = len(ends.get(lane, []))
        if lane in loose and rows_here:
            loose_row[lane] = rows_here
            rows_here += 1
        counts.append(max(rows_here, 1))
    return counts, row_of, loose_row


def _merged_bars(page: Page, axis: _Axis) -> list[dict[str, Any]]:
    """Too many sessions to draw one by one: one bar per lane-day (or lane-week, or lane) they cover."""
    def grouped(width: int | None) -> dict[tuple[int, int], list[Any]]:
        groups: dict[tuple[int, int], list[Any]] = {}
        for session in page.sessions:
            groups.setdefault((session.lane, session.first_us // width if width else 0), []).append(session)
        return groups

    choices = (("day", DAY_US), ("week", 7 * DAY_US), ("lane", None))
    unit, groups = next(((unit, found) for unit, width in choices
                         if len(found := grouped(width)) <= SESSION_BARS or width is None))
    bars = []
    for sessions in groups.values():
        first, last = min(s.first_us for s in sessions), max(s.last_us for s in sessions)
        events = sum(s.events for s in sessions)
        x0, x1 = axis.x(first), axis.x(last)
        bars.append({"lane": sessions[0].lane, "x": x0, "width": max(round(x1 - x0, 1), 3),
                     "title": f"{len(sessions)} session{'s' if len(sessions) > 1 else ''} (one bar per {unit}): "
                              f"{events} events, "
                              f"{clock.iso(first)[:19]} to {clock.iso(last)[:19]}"})
    return bars


def layout(page: Page) -> dict[str, Any]:
    """Everything the template draws, in pixels: lanes, session bars, marks, ticks, legend.

    Past SESSION_BARS sessions, sessions are drawn merged (one bar per lane and day, week or
    lane) on one row per lane, and every mark of the lane on that row: the page stays small.
    """
    axis = _axis(page)
    merged = len(page.sessions) > SESSION_BARS
    loose_row: dict[int, int] = {}
    if merged:
        counts, row_of = [1] * len(page.lanes), dict.fromkeys(range(len(page.sessions)), 0)
    else:
        counts, row_of, loose_row = _rows(page, axis)
    lanes, lane_top, y = [], [], TOP
    for index, lane in enumerate(page.lanes):
        height = counts[index] * ROW + LANE_GAP
        lane_top.append(y)
        lanes.append({"label": shown_text(lane.label), "y": y, "height": height, "events": lane.events,
                      "odd": index % 2})
        y += height
    height = y + 10

    def row_y(lane: int, row: int) -> float:
        return lane_top[lane] + LANE_GAP / 2 + row * ROW + ROW / 2

    sessions = []
    if merged:
        sessions = [{**bar, "y": row_y(bar["lane"], 0) - 6} for bar in _merged_bars(page, axis)]
    for index, session in enumerate(page.sessions if not merged else ()):
        x0, x1 = axis.x(session.first_us), axis.x(session.last_us)
        sessions.append({"x": x0, "y": row_y(session.lane, row_of[index]) - 6, "width": max(round(x1 - x0, 1), 3),
                         "title": f"session {shown_text(session.session_id)}: {session.events} events, "
                                  f"{clock.iso(session.first_us)[:19]} to {clock.iso(session.last_us)[:19]}"})
    marks = []
    for index, mark in enumerate(page.marks):
        row = row_of[mark.session] if mark.session is not None else loose_row.get(mark.lane, 0)
        radius = 5.0 if mark.level is None else round(4 + min(6.0, math.log2(mark.count + 1)), 1)
        if mark.category == "log" and mark.level is None:
            radius = 3.5
        marks.append({"i": index, "x": axis.x(mark.at_us), "y": row_y(mark.lane, row), "r": radius,
                      "category": mark.category, "colour": COLOURS[mark.category], "label": one_line(mark.label),
                      "count": mark.count})
    legend = [{"category": c, "colour": COLOURS[c], "count": page.counts.get(c, 0)} for c in CATEGORIES]
    return {"width": round(LEFT + axis.width + RIGHT), "height": height, "plot_right": round(LEFT + axis.width),
            "lanes": lanes, "sessions": sessions, "marks": marks, "ticks": _ticks(axis), "legend": legend}


@functools.cache
def _environment() -> jinja2.Environment:
    """One environment per process: the template is compiled once."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, auto_reload=False)


def render(page: Page) -> bytes:
    """The whole page, UTF-8."""
    with open(os.path.join(HERE, "page.js"), encoding="utf-8") as handle:
        script = handle.read()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    window = (f"{page.since or 'the start'} to {page.until or 'the end'}" if page.since or page.until
              else "the whole log")
    shown = (f"{clock.iso(page.first_us)[:19]} to {clock.iso(page.last_us)[:19]}".replace("T", " ")
             if page.first_us is not None and page.last_us is not None else None)
    text = _environment().get_template("page.html.j2").render(
        page=page, project=shown_text(page.project), window=window, shown=shown, chart=layout(page),
        script=Markup(script), script_hash=f"sha256-{digest}",
        data=script_json([shown_payload(mark.payload) for mark in page.marks]))
    return text.encode("utf-8")
