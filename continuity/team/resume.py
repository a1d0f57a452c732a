"""The resume view (seed 000): the deterministic brief of an agent's newest snapshot, with its age.

Age is a view: computed from the snapshot's `created_at` and now at read time, never stored.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from continuity.core.text import one_line
from continuity.team.plain import SCHEMA
from events import clock, lazyre
from projections.team import Member, Snapshot, order_key

MAX_DURATION_S = 999_999_999 * 86_400
SKEW_US = 1_000_000
_DURATION = lazyre.pattern(r"(\d+(\.\d+)?|\.\d+)([smhd])", re.IGNORECASE | re.ASCII)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def parse_duration(text: str) -> Decimal | None:
    """Seconds in `30s`, `15m`, `12h`, `2d`, `.5h` (None when invalid or past 999999999d)."""
    found = _DURATION().fullmatch(text)
    if found is None:
        return None
    seconds = Decimal(found.group(1)) * _UNIT_S[found.group(3).lower()]
    return seconds if seconds <= MAX_DURATION_S else None


def age_seconds(created_at: str, now_us: int) -> Decimal | None:
    """The snapshot's age; up to 1 s in the future is clock skew (age 0); beyond, or unparseable: None."""
    try:
        then = clock.parse_iso(created_at)
    except (ValueError, OverflowError):
        return None
    delta = now_us - then
    if delta < 0:
        return Decimal(0) if -delta <= SKEW_US else None
    return Decimal(delta) / Decimal(1_000_000)


def _seconds(value: Decimal) -> str:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0"


def format_age(seconds: Decimal | None) -> str:
    """`12.5s`, `3m (200s)`, `2h 5m (7500s)`, `1d 3h (97200s)`, or `unknown`."""
    if seconds is None:
        return "unknown"
    seconds = round(seconds, 3)  # the unit follows the figure shown (59.9996 s is "1m (60s)", not "60s")
    whole = int(seconds)
    exact = f"({_seconds(seconds)}s)"
    if seconds < 60:
        return f"{_seconds(seconds)}s"
    if whole < 3600:
        return f"{whole // 60}m {exact}"
    if whole < 86_400:
        return f"{whole // 3600}h {whole % 3600 // 60}m {exact}"
    return f"{whole // 86_400}d {whole % 86_400 // 3600}h {exact}"


def pick(member: Member | None, task: str | None) -> Snapshot | None:
    """The task's snapshot, or the agent's newest across tasks (unparseable times ignored)."""
    if member is None:
        return None
    if task is not None:
        return member.tasks.get(task)
    usable = [snapshot for snapshot in member.tasks.values() if _parses(snapshot.created_at)]
    return max(usable, key=order_key) if usable else None


def _parses(created_at: str) -> bool:
    try:
        clock.parse_iso(created_at)
    except (ValueError, OverflowError):
        return False
    return True


def document(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot document (`latest.json`), keys in the seed's order."""
    return {
        "schema": SCHEMA, "checkpoint_id": snapshot.checkpoint_id, "agent": snapshot.agent, "task": snapshot.task,
        "objective": snapshot.objective, "decisions": list(snapshot.decisions),
        "next_actions": list(snapshot.next_actions), "open_questions": list(snapshot.open_questions),
        "artifacts": list(snapshot.artifacts), "context_used_percent": snapshot.context_used_percent,
        "transcript_path": snapshot.transcript_path, "created_at": snapshot.created_at,
    }


def brief(snapshot: Snapshot | None, age: Decimal | None) -> str:
    """The text brief: header, agent, objective, context, the non-empty sections, the age."""
    if snapshot is None:
        return "No continuity snapshot found.\n  checkpoint age: unknown\n"
    lines = [f"Resume: {one_line(snapshot.task)} (as of {one_line(snapshot.created_at)})",
             f"  agent: {one_line(snapshot.agent)}", f"  objective: {one_line(snapshot.objective)}"]
    if snapshot.context_used_percent is not None:
        lines.append(f"  context used at snapshot: {snapshot.context_used_percent}%")
    for title, items in (("next actions", snapshot.next_actions), ("open questions", snapshot.open_questions),
                         ("recent decisions", snapshot.decisions), ("artifacts", snapshot.artifacts)):
        if items:
            lines.append(f"  {title}:")
            lines.extend(f"    - {one_line(item)}" for item in items)
    lines.append(f"  checkpoint age: {format_age(age)}")
    return "\n".join(lines) + "\n"


def as_json(snapshot: Snapshot | None, age: Decimal | None, error_code: str | None) -> dict[str, Any]:
    """The `--json` form: the document plus `checkpoint_age_seconds` and `error_code`."""
    if snapshot is None:
        return {"snapshot": None, "checkpoint_age_seconds": None, "error_code": error_code}
    seconds = None if age is None else float(round(age, 3))
    return {**document(snapshot), "checkpoint_age_seconds": seconds, "error_code": error_code}


def freshness(max_age: str | None, age: Decimal | None, snapshot: Snapshot | None) -> tuple[str | None, str | None]:
    """The `--max-age` verdict: (error_code, stderr line), or (None, None) when fresh or not asked."""
    if max_age is None:
        return None, None
    bound = parse_duration(max_age)
    if bound is None:  # the value as given, unless it looks like a secret (redacted whole) or runs long (cut)
        from events.problems import quoted

        shown = quoted(max_age, redact=True)
        return "invalid-max-age", f"resume: invalid --max-age duration {shown}; use s, m, h, or d"
    if snapshot is None or age is None:
        return "checkpoint-age-unknown", "resume: checkpoint age is unknown; freshness requirement failed"
    if age > bound:
        return "checkpoint-stale", (f"resume: checkpoint is {format_age(age)} old, exceeding --max-age "
                                    f"{one_line(max_age)}")
    return None, None
