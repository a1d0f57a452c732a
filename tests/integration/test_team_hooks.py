"""Team continuity in the harness hooks, as real processes: PreCompact and SessionEnd park the roles the agent
holds (never blocking), SessionStart's brief carries the team resume and the handoffs addressed to the agent,
and the resume bundle lists only the pending handoffs for its reader."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import all_event_files, cli_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
STORE = Path(".agent", "runtime-continuity")


def run(project: Path, *args: str, agent: str | None = None, stdin: str | None = None) -> Any:
    env = {"HOME": os.environ["HOME"], **({"CONTINUITY_AGENT": agent} if agent else {})}
    return cli_process(*args, cwd=project, env=env, stdin=stdin)


def hook(project: Path, name: str, agent: str | None = "amy", harness: str = "claude-code") -> Any:
    stdin = (FIXTURES / f"{name}.json").read_text().replace("{cwd}", str(project))
    return run(project, "hook", harness, agent=agent, stdin=stdin)


def claim(project: Path, team: str, role: str, agent: str = "amy") -> None:
    assert run(project, "role", "create", team, role).returncode == 0
    assert run(project, "role", "claim", team, role, "--agent", agent).returncode == 0


def kinds(project: Path) -> list[str]:
    listed = json.loads(run(project, "events", "list", "--json").stdout)["events"]
    return [event["kind"] for event in listed]


def ref(project: Path, team: str, role: str) -> Any:
    return json.loads(run(project, "role", "show", team, role, "--json").stdout)["checkpoint_ref"]


def brief_of(result: Any) -> str:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]  # type: ignore[no-any-return]


def test_pre_compact_parks_every_held_role_in_every_team(project: Path) -> None:
    """PreCompact: a snapshot per fresh held role in each team, refs set, the work log's next steps carried."""
    claim(project, "core", "reviewer")
    claim(project, "core", "ops")
    claim(project, "infra", "oncall")
    claim(project, "core", "docs", agent="bo")
    assert run(project, "checkpoint", "-m", "halfway", "--next", "merge #12").returncode == 0
    result = hook(project, "claude_pre_compact")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert kinds(project)[-7:] == ["checkpoint.recorded"] + ["snapshot.taken", "role.checkpointed"] * 3
    for team, role in (("core", "ops"), ("core", "reviewer"), ("infra", "oncall")):
        path = f"team/{team}/member/amy/continuity/role-{role}/latest.json"
        assert ref(project, team, role) == path
        document = json.loads((project / STORE / path).read_text())
        assert document["next_actions"] == ["merge #12"] and document["agent"] == "amy"
    assert ref(project, "core", "docs") is None


def test_session_end_parks_and_nothing_held_is_quiet(project: Path) -> None:
    """SessionEnd parks what is held; an agent holding nothing, or no agent known, parks nothing and says nothing."""
    result = hook(project, "claude_session_end")
    assert (result.returncode, result.stderr) == (0, "")
    assert "snapshot.taken" not in kinds(project)
    claim(project, "core", "reviewer")
    assert hook(project, "claude_session_end", agent=None).returncode == 0
    assert "snapshot.taken" not in kinds(project)
    result = hook(project, "claude_session_end")
    assert (result.returncode, result.stderr) == (0, "")
    assert kinds(project)[-3:] == ["session.ended", "snapshot.taken", "role.checkpointed"]
    document = json.loads((project / STORE / ref(project, "core", "reviewer")).read_text())
    assert document["objective"] == "parked role reviewer at session exit"


def test_an_unparkable_state_is_loud_but_never_blocks(project: Path) -> None:
    """Unreadable role state at SessionEnd: exit 0, the CHECKPOINT NOT WRITTEN line on stderr and in hooks.log.
    The event that makes it unreadable is also a newest event whose bytes do not match its name, which no write
    chains to: the session end is not recorded, and says so, and the park is still tried (and said)."""
    claim(project, "core", "reviewer")
    newest = all_event_files(project)[-1]
    stamp, node, _ = newest.name.split("-")
    later = stamp[:-6] + f"{int(stamp[-6:]) + 1:06d}"
    (newest.parent / f"{later}-{node}-{'0' * 12}.json").write_bytes(b'{"kind": "role.claimed", "team": ')
    before = all_event_files(project)
    result = hook(project, "claude_session_end")
    assert result.returncode == 0 and result.stdout == ""
    assert "CHECKPOINT NOT WRITTEN" in result.stderr and "role state unreadable" in result.stderr
    assert "session end not recorded: the newest event" in result.stderr
    assert "CHECKPOINT NOT WRITTEN" in (project / STORE / "local" / "hooks.log").read_text()
    assert all_event_files(project) == before  # nothing chained to bytes that are not what their name says


@pytest.mark.parametrize("damage", ["a damaged newest event", "a symlinked day folder"])
@pytest.mark.parametrize("name", ["claude_pre_compact", "claude_session_end"])
def test_a_store_no_write_can_go_to_still_says_checkpoint_not_written(project: Path, name: str, damage: str) -> None:
    """PreCompact on a store whose writes are refused (a newest event whose bytes do not match its name, a day
    folder replaced by a link) said only the refusal: the park was never tried, so the CHECKPOINT NOT WRITTEN
    line the docs promise for a session that cannot park was missing. Both hooks now say it, exit 0."""
    claim(project, "core", "reviewer")
    newest = all_event_files(project)[-1]
    if damage == "a damaged newest event":
        stamp, node, _ = newest.name.split("-")
        later = stamp[:-6] + f"{int(stamp[-6:]) + 1:06d}"
        (newest.parent / f"{later}-{node}-{'0' * 12}.json").write_bytes(b'{"kind": "role.claimed", "team": ')
    else:
        day = newest.parent
        moved = project.parent / f"moved-{day.name}"
        day.rename(moved)
        day.symlink_to(moved)
    before = sorted(path.name for path in all_event_files(project))
    result = hook(project, name)
    assert result.returncode == 0 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert any("not written" in line or "not recorded" in line for line in lines[:1]), result.stderr
    assert sum("CHECKPOINT NOT WRITTEN" in line for line in lines) == 1, result.stderr
    assert "CHECKPOINT NOT WRITTEN" in (project / STORE / "local" / "hooks.log").read_text()
    assert sorted(path.name for path in all_event_files(project)) == before


def test_a_failing_moment_sink_does_not_change_the_hook(project: Path, tmp_path: Path) -> None:
    """A checkpoint-channel sink that fails during a hook park: the park stands, the hook exits 0."""
    claim(project, "core", "reviewer")
    bus = project / STORE / "team" / "core" / "_coord" / "bus-v3"
    bus.mkdir(parents=True)
    (bus / "checkpoints.json").write_text(json.dumps({"schema": "coord.checkpoints-channel.v1", "data_type": "x",
                                                      "command": [str(tmp_path / "missing-sink")]}))
    assert hook(project, "claude_pre_compact").returncode == 0
    assert ref(project, "core", "reviewer") == "team/core/member/amy/continuity/role-reviewer/latest.json"
    assert "delivery to command FAILED" in (project / STORE / "local" / "hooks.log").read_text()


def test_session_start_brief_has_the_team_resume_after_the_next_action(project: Path) -> None:
    """SessionStart for a team member: its team resume right after the next action, its handoffs, not others'."""
    assert run(project, "checkpoint", "-m", "x", "--next", "add refund tests").returncode == 0
    assert run(project, "snapshot", "core", "amy", "review-queue", "--objective", "drain the review queue",
               "--next", "merge #12", "--open-question", "who owns #13?").returncode == 0
    mine = json.loads(run(project, "handoff", "create", "--agent", "bo", "--to", "amy", "--message", "take #14",
                          "--json").stdout)["handoff_id"]
    theirs = json.loads(run(project, "handoff", "create", "--agent", "amy", "--to", "cy", "--message", "take #15",
                            "--json").stdout)["handoff_id"]
    hosted = json.loads(run(project, "handoff", "create", "--agent", "amy", "--to-host", "codex", "--message",
                            "for codex", "--json").stdout)["handoff_id"]
    brief = brief_of(hook(project, "claude_session_start"))
    headings = [line for line in brief.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## Next action", "## Team resume: core (amy)", "## Handoffs for amy"]
    assert "- review-queue: drain the review queue" in brief and "  - next: merge #12" in brief
    assert "  - open question: who owns #13?" in brief and "`continuity resume core amy`" in brief
    assert mine in brief and theirs not in brief and hosted not in brief
    served = json.loads(run(project, "events", "list", "--json").stdout)["events"][-1]
    replayed = run(project, "resume-bundle", "--as-of", served["event_id"])
    assert replayed.stdout == brief and hashlib.sha256(brief.encode()).hexdigest() == served["brief_sha256"]


def test_no_team_no_team_section(project: Path) -> None:
    """An agent with no team snapshot and no handoff of its own: the brief has no team section."""
    assert run(project, "snapshot", "core", "bo", "t", "--objective", "bo's work").returncode == 0
    brief = brief_of(hook(project, "claude_session_start"))
    assert "## Team resume" not in brief and "## Handoffs for" not in brief and "bo's work" not in brief


def test_the_team_section_stays_within_the_budget(project: Path) -> None:
    """Many teams and long snapshots: the brief keeps the hook budget, the next action whole, three teams at most."""
    (project / STORE / "config.json").write_text(json.dumps({
        **json.loads((project / STORE / "config.json").read_text()), "hook_max_chars": 2500}))
    assert run(project, "checkpoint", "-m", "x", "--next", "the next action").returncode == 0
    for index in range(5):
        assert run(project, "snapshot", f"team{index}", "amy", "t", "--objective", "o" * 3000,
                   *[arg for n in range(8) for arg in ("--next", f"step {n} " + "n" * 400)]).returncode == 0
    brief = brief_of(hook(project, "claude_session_start"))
    assert len(brief) <= 2500 and "## Next action\nthe next action" in brief
    assert brief.count("## Team resume:") <= 3 and "## Team resume: team4 (amy)" in brief


def test_resume_bundle_lists_only_the_readers_pending_handoffs(project: Path) -> None:
    """The bundle's pending handoffs: those for the agent (or its host), and those with no addressee; all without
    an agent."""
    to_amy = json.loads(run(project, "handoff", "create", "--agent", "bo", "--to", "amy", "--message", "a",
                            "--json").stdout)["path"]
    to_cy = json.loads(run(project, "handoff", "create", "--agent", "bo", "--to", "cy", "--message", "c",
                           "--json").stdout)["path"]
    to_codex = json.loads(run(project, "handoff", "create", "--agent", "bo", "--to-host", "codex", "--message",
                              "h", "--json").stdout)["path"]

    def pending(*flags: str, agent: str | None = None) -> list[str]:
        bundle = json.loads(run(project, "resume-bundle", "--format", "json", *flags, agent=agent).stdout)
        return sorted(h["path"] for h in bundle["pending_handoffs"])

    assert pending() == sorted([to_amy, to_cy, to_codex])
    assert pending(agent="amy") == sorted([to_amy, to_codex])
    assert pending("--host", "claude-code", agent="amy") == [to_amy]
    assert pending("--host", "codex", agent="cy") == sorted([to_cy, to_codex])


def amy_then_bo(project: Path, *amy: str) -> None:
    """amy holds core/backend and checkpoints (with `amy`'s extra flags), then bo checkpoints: bo wrote last."""
    claim(project, "core", "backend", agent="amy")
    assert run(project, "checkpoint", "-m", "amy halfway", "--next", "amy: merge #12", *amy,
               agent="amy").returncode == 0
    assert run(project, "checkpoint", "-m", "bo halfway", "--next", "bo: fix the CSS", agent="bo").returncode == 0


def pre_compact_restated(project: Path) -> dict[str, Any]:
    """The checkpoint the PreCompact hook restated."""
    listed = json.loads(run(project, "events", "list", "--json").stdout)["events"]
    [restated] = [e for e in listed if e["kind"] == "checkpoint.recorded" and e.get("phase") == "pre-compact"]
    return restated


def test_agents_sharing_a_store_restate_and_park_their_own_next_steps(project: Path) -> None:
    """Two agents in one store: PreCompact and SessionEnd of one restate its own next steps, not the last writer's."""
    amy_then_bo(project)
    assert hook(project, "claude_pre_compact", agent="amy").returncode == 0
    restated = pre_compact_restated(project)
    assert restated["agent_id"] == "amy" and restated["summary"]["next"] == ["amy: merge #12"]
    assert run(project, "checkpoint", "-m", "bo later", "--next", "bo: ship it", agent="bo").returncode == 0
    assert hook(project, "claude_session_end", agent="amy").returncode == 0
    document = json.loads((project / STORE / ref(project, "core", "backend")).read_text())
    assert document["agent"] == "amy" and document["next_actions"] == ["amy: merge #12"]
    assert hook(project, "claude_pre_compact", agent="bo").returncode == 0
    listed = json.loads(run(project, "events", "list", "--json").stdout)["events"]
    assert listed[-1]["agent_id"] == "bo" and listed[-1]["summary"]["next"] == ["bo: ship it"]


def test_an_archive_by_one_agent_never_makes_another_agents_steps_its_own(project: Path) -> None:
    """An archive restates the project's state (bo's next step, bo having written last); folded as amy's own when amy
    took it, her parked snapshot and pre-compaction checkpoint carried bo's step and dropped her blocker. An agent's
    own state is what its log entries and checkpoints stated (docs/team.md), even through an archive's note."""
    amy_then_bo(project, "--blocker", "CI key missing")
    assert run(project, "archive", "--gate", "agent", "--reason", "amy's day ends", agent="amy").returncode == 0
    assert hook(project, "claude_pre_compact", agent="amy").returncode == 0
    restated = pre_compact_restated(project)
    assert restated["agent_id"] == "amy" and restated["summary"]["next"] == ["amy: merge #12"]
    assert restated["summary"]["blockers"] == ["CI key missing"]
    assert hook(project, "claude_session_end", agent="amy").returncode == 0
    document = json.loads((project / STORE / ref(project, "core", "backend")).read_text())
    assert document["next_actions"] == ["amy: merge #12"]
    assert run(project, "checkpoint", "-m", "amy later", "--next", "amy: write the notes", agent="amy").returncode == 0
    assert hook(project, "claude_session_end", agent="amy").returncode == 0
    document = json.loads((project / STORE / ref(project, "core", "backend")).read_text())
    assert document["next_actions"] == ["amy: write the notes"]
