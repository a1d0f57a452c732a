"""Team continuity without disk: durations, ages, the brief, and the fold's newest-snapshot rule."""

from __future__ import annotations

from decimal import Decimal

import pytest

from continuity.team import resume
from events import clock
from events.team import SnapshotTaken
from projections.team import MODEL, Teams

NOW = clock.parse_iso("2026-07-01T18:00:00.000000Z")


@pytest.mark.parametrize(("text", "seconds"), [
    ("30s", 30), ("15m", 900), ("12h", 43200), ("2d", 172800), (".5h", 1800), ("1.5M", 90), ("2D", 172800),
    ("999999999d", 999999999 * 86400),
])
def test_valid_durations(text: str, seconds: int) -> None:
    """s, m, h and d (any case), decimals and a leading dot, up to 999999999d."""
    assert resume.parse_duration(text) == Decimal(seconds)


@pytest.mark.parametrize("text", ["abc", "-1h", "1w", "1000000000d", "", "1", "h", "1h ", " 1h", "1h\n", "١h", "1.h"])
def test_invalid_durations(text: str) -> None:
    """Anything else is invalid, including past the bound, whitespace and non-ASCII digits."""
    assert resume.parse_duration(text) is None


@pytest.mark.parametrize(("seconds", "shown"), [
    ("0", "0s"), ("12.5", "12.5s"), ("59.999", "59.999s"), ("200", "3m (200s)"), ("7500", "2h 5m (7500s)"),
    ("97200", "1d 3h (97200s)"), ("3600.25", "1h 0m (3600.25s)"),
    ("59.9996", "1m (60s)"), ("59.9994", "59.999s"), ("3599.9996", "1h 0m (3600s)"), ("86399.9999", "1d 0h (86400s)"),
])
def test_age_format(seconds: str, shown: str) -> None:
    """Seconds, minutes, hours, days, each with the exact seconds, trailing zeros trimmed."""
    assert resume.format_age(Decimal(seconds)) == shown


def test_clock_skew_rule() -> None:
    """Half a second in the future is age 0; five seconds in the future, or garbage, is unknown."""
    assert resume.age_seconds(clock.iso(NOW + 500_000), NOW) == 0
    assert resume.age_seconds(clock.iso(NOW + 5_000_000), NOW) is None
    assert resume.age_seconds("not a time", NOW) is None
    assert resume.format_age(None) == "unknown"


def snap(task: str, at: str, **extra: object) -> SnapshotTaken:
    return SnapshotTaken(project="p", team="core", agent="ash", task=task, objective=f"o {task}",
                         created_at=at, event_id=f"RCE-{task}", **extra)  # type: ignore[arg-type]


def fold(*events: SnapshotTaken) -> Teams:
    state = MODEL.empty()
    for index, event in enumerate(events):
        MODEL.apply(state, f"n{index}", event)
    return MODEL.project(state, "p")


def test_the_pointer_never_moves_backwards() -> None:
    """A snapshot folded later but stamped earlier (a merge) does not take the pointer or the task."""
    teams = fold(snap("b", "2026-07-01T18:00:02.000000Z"), snap("a", "2026-07-01T18:00:01.000000Z"),
                 snap("b", "2026-07-01T18:00:00.000000Z"))
    member = teams.teams["core"]["ash"]
    assert member.latest_task == "b" and member.tasks["b"].created_at == "2026-07-01T18:00:02.000000Z"
    assert resume.pick(member, None).task == "b"  # type: ignore[union-attr]


def test_ties_break_by_task_then_checkpoint() -> None:
    """Equal created_at: the greater task name wins, as resume orders them."""
    teams = fold(snap("b", "2026-07-01T18:00:00.000000Z"), snap("a", "2026-07-01T18:00:00.000000Z"))
    member = teams.teams["core"]["ash"]
    assert member.latest_task == "b" and resume.pick(member, None).task == "b"  # type: ignore[union-attr]
    assert resume.pick(member, "a").task == "a"  # type: ignore[union-attr]


def test_brief_sections_and_json() -> None:
    """Only non-empty sections; JSON adds the age (3 decimals) and the error code."""
    member = fold(snap("t", "2026-07-01T17:59:47.500000Z", next_actions=("land the PR",),
                       context_used_percent=40)).teams["core"]["ash"]
    snapshot = resume.pick(member, None)
    age = resume.age_seconds(snapshot.created_at, NOW)  # type: ignore[union-attr]
    assert resume.brief(snapshot, age) == (
        "Resume: t (as of 2026-07-01T17:59:47.500000Z)\n  agent: ash\n  objective: o t\n"
        "  context used at snapshot: 40%\n  next actions:\n    - land the PR\n  checkpoint age: 12.5s\n")
    data = resume.as_json(snapshot, age, None)
    assert list(data)[:2] == ["schema", "checkpoint_id"] and data["checkpoint_age_seconds"] == 12.5
    assert data["checkpoint_id"] == "CHK-2026-07-01T17:59:47.500000Z-t" and data["artifacts"] == []
    assert resume.as_json(None, None, "checkpoint-age-unknown") == {
        "snapshot": None, "checkpoint_age_seconds": None, "error_code": "checkpoint-age-unknown"}
    assert resume.brief(None, None) == "No continuity snapshot found.\n  checkpoint age: unknown\n"


def test_freshness_verdicts() -> None:
    """--max-age: invalid, unknown age, stale, fresh; each with its error code and line."""
    member = fold(snap("t", "2026-07-01T17:00:00.000000Z")).teams["core"]["ash"]
    snapshot = resume.pick(member, None)
    age = resume.age_seconds(snapshot.created_at, NOW)  # type: ignore[union-attr]
    assert resume.freshness("abc", age, snapshot) == (
        "invalid-max-age", "resume: invalid --max-age duration 'abc'; use s, m, h, or d")
    assert resume.freshness("1h", None, snapshot)[0] == "checkpoint-age-unknown"
    assert resume.freshness("30m", age, snapshot) == (
        "checkpoint-stale", "resume: checkpoint is 1h 0m (3600s) old, exceeding --max-age 30m")
    assert resume.freshness("2h", age, snapshot) == (None, None)


def test_an_invalid_max_age_that_looks_like_a_secret_or_runs_long_is_not_echoed_whole() -> None:
    """Seed 000's line quotes the value given: a token shows as [REDACTED:<rule>], a long value is cut."""
    token = "ghp_16C7e42F292c6912E7710c838347Ae178B4aXY"
    code, line = resume.freshness(token, None, None)
    assert code == "invalid-max-age" and token not in line and "'[REDACTED:github-token]'" in line
    code, line = resume.freshness("x" * 100_000, None, None)
    assert code == "invalid-max-age" and len(line) < 200 and line.endswith("…'; use s, m, h, or d")
    assert resume.freshness(None, None, None) == (None, None)
