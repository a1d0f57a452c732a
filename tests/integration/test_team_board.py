"""Messages, inbox, queue, presence, briefing and health through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_NOT_FOUND, EXIT_USAGE
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent", "runtime-continuity")


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(capsys: Capture, *args: str) -> Any:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def later(monkeypatch: pytest.MonkeyPatch, seconds: int) -> None:
    import continuity.core.store as store_module

    real = store_module.now_us
    monkeypatch.setattr(store_module, "now_us", lambda: real() + seconds * 1_000_000)


def test_send_inbox_ack(project: Path, capsys: Capture) -> None:
    """A message lands in the addressee's inbox only; ack moves it out; a second ack or someone else's fails."""
    sent = as_json(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "please review #12")
    assert as_json(capsys, "inbox", "core", "--agent", "amy")["messages"] == []
    [message] = as_json(capsys, "inbox", "core", "--agent", "bo")["messages"]
    assert message["message_id"] == sent["message_id"] and message["from"] == "amy"
    assert message["text"] == "please review #12"
    assert run(capsys, "inbox", "core", "--agent", "amy", "--ack", sent["message_id"])[0] == EXIT_NOT_FOUND
    assert run(capsys, "inbox", "core", "--agent", "bo", "--ack", sent["message_id"])[1] == (
        f"acknowledged {sent['message_id']}\n")
    before = all_event_files(project)
    code, _, err = run(capsys, "inbox", "core", "--agent", "bo", "--ack", sent["message_id"])
    assert code == EXIT_USAGE and "already acknowledged" in err and all_event_files(project) == before
    assert as_json(capsys, "inbox", "core", "--agent", "bo")["messages"] == []
    assert as_json(capsys, "inbox", "core", "--agent", "bo", "--all")["messages"][0]["acked_at"]


def test_queue_holds_messages_handoffs_and_claimable_roles(project: Path, capsys: Capture,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """queue: unread messages, pending handoffs to the agent, and roles free or under an expired lease."""
    for role in ("free", "held", "lapsed"):
        run(capsys, "role", "create", "core", role)
    run(capsys, "role", "claim", "core", "held", "--agent", "amy", "--ttl", "2h")
    run(capsys, "role", "claim", "core", "lapsed", "--agent", "amy", "--ttl", "1h")
    run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "hello")
    run(capsys, "handoff", "create", "--agent", "amy", "--to", "bo", "--message", "take T-1")
    run(capsys, "handoff", "create", "--agent", "amy", "--to", "cy", "--message", "not for bo")
    later(monkeypatch, 3601)
    data = as_json(capsys, "queue", "core", "--agent", "bo")
    assert [m["text"] for m in data["messages"]] == ["hello"]
    assert [h["message"] for h in data["handoffs"]] == ["take T-1"]
    assert [(r["role"], r["lease_state"]) for r in data["claimable_roles"]] == [("free", "free"), ("lapsed", "expired")]
    assert data["claimable_roles"][1]["command"] == "continuity role claim core lapsed --agent bo"


def test_presence_from_any_event_and_health(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Presence comes from every event an agent writes; beating without a fresh snapshot is continuity-stale;
    an expired lease still shown as held is listed with the takeover command."""
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build")
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "30m")
    run(capsys, "log", "unrelated work", "--agent", "amy")
    later(monkeypatch, 7200)
    assert run(capsys, "beat", "core", "--agent", "bo")[1].startswith("beat bo at ")
    data = as_json(capsys, "health", "core")
    agents = {row["agent"]: row for row in data["agents"]}
    assert agents["bo"]["flags"] == ["continuity-stale"] and agents["bo"]["presence"] == "fresh"
    assert agents["bo"]["snapshot_age_seconds"] > 7000
    assert agents["amy"]["presence"] == "stale" and agents["amy"]["flags"] == ["lease-expired"]
    assert data["expired_leases"] == [{"role": "rev", "holder": "amy", "lease_expires_at": data["expired_leases"][0][
        "lease_expires_at"], "takeover": "continuity role claim core rev --agent <you>"}]
    text = run(capsys, "health", "core")[1]
    assert "[continuity-stale]" in text and "take over: continuity role claim core rev --agent <you>" in text
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "fresh again")
    assert {row["agent"]: row for row in as_json(capsys, "health", "core")["agents"]}["bo"]["flags"] == []


def test_briefing_sections(project: Path, capsys: Capture) -> None:
    """briefing: schema, team, agent, at, then presence, board, inbox, needs-me, reviews, handoffs, snapshot."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy")
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build", "--next", "land it")
    run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "ping")
    run(capsys, "handoff", "create", "--agent", "amy", "--to", "bo", "--message", "take T-1")
    data = as_json(capsys, "briefing", "core", "--agent", "bo")
    assert list(data) == ["schema", "team", "agent", "at", "presence", "board", "inbox", "needs_me",
                          "pending_reviews", "pending_handoffs", "latest_snapshot", "work"]
    assert data["schema"] == "coord.teams.briefing.v1" and data["agent"] == "bo"
    assert [row["agent"] for row in data["presence"]["items"]] == ["amy", "bo"]
    assert data["board"]["items"][0]["holder"] == "amy" and data["inbox"]["items"][0]["text"] == "ping"
    assert {item["kind"] for item in data["needs_me"]["items"]} == {"handoff", "inbox"}
    assert data["latest_snapshot"]["items"]["bo"]["next_actions"] == ["land it"]
    assert all(data[name]["degraded"] is None for name in ("presence", "board", "inbox", "needs_me"))
    text = run(capsys, "briefing", "core", "--agent", "bo")[1]
    assert text.startswith("# Briefing: team/core for bo at ") and "## Needs me\n" in text and "take T-1" in text
    assert "  - rev: amy (fresh, until " in text and "resume from" not in text
    run(capsys, "checkpoint", "core", "--role", "rev", "--ref", "team/core/member/amy/continuity/role-rev/latest.json")
    text = run(capsys, "briefing", "core", "--agent", "bo")[1]  # the board's resume point, as its JSON has it
    assert "); resume from team/core/member/amy/continuity/role-rev/latest.json\n" in text
    events = all_event_files(project)
    run(capsys, "briefing", "core", "--all")
    assert all_event_files(project) == events  # a read records nothing


def test_a_handoff_to_a_host_reaches_the_queue_and_the_briefing(project: Path, capsys: Capture) -> None:
    """Any named agent may take a handoff addressed to a host, but `queue` and `briefing` matched the addressee
    agent only: it reached nobody there (only resume-bundle). Listed for every agent, saying so."""
    code, out, err = run(capsys, "handoff", "create", "--agent", "amy", "--to-host", "claude-code", "--task", "T9",
                         "--message", "host handoff", "--json")
    assert code == 0, err
    handoff = json.loads(out)["handoff_id"]
    queued = as_json(capsys, "queue", "core", "--agent", "bo")["handoffs"]
    assert [(item["handoff_id"], item["to"], item["to_host"]) for item in queued] == [(handoff, None, "claude-code")]
    assert f"{handoff} from amy to any agent on claude-code (task T9): host handoff" in run(
        capsys, "queue", "core", "--agent", "bo")[1]
    briefing = as_json(capsys, "briefing", "core", "--all")
    assert [item["handoff_id"] for item in briefing["pending_handoffs"]["items"]] == [handoff]
    assert run(capsys, "handoff", "accept", handoff, "--agent", "bo")[0] == 0
    assert as_json(capsys, "queue", "core", "--agent", "bo")["handoffs"] == []

def test_briefing_shows_the_agents_work(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The briefed agent's open runs and open tasks (not another agent's), and the newest memories."""
    def task(title: str, agent: str) -> str:
        return run(capsys, "task", "create", "--title", title, "--assign", agent)[1].strip()

    mine, other, done = task("Fix auth", "bo"), task("Amy's thing", "amy"), task("Ship it", "bo")
    monkeypatch.setenv("CONTINUITY_AGENT", "bo")
    finished = run(capsys, "run", "start", "--task", done)[1].strip()
    run(capsys, "task", "update", done, "--status", "completed")
    run(capsys, "run", "complete", finished, "--output-summary", "shipped")
    current = run(capsys, "run", "start", "--task", mine)[1].strip()
    monkeypatch.delenv("CONTINUITY_AGENT")
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build")
    work = as_json(capsys, "briefing", "core", "--agent", "bo")["work"]
    assert work["degraded"] is None
    assert [row["task_id"] for row in work["items"]["open_tasks"]] == [mine]
    assert [row["run_id"] for row in work["items"]["open_runs"]] == [current]
    assert work["items"]["memories"][0]["title"] == "Task complete: Ship it"
    text = run(capsys, "briefing", "core", "--agent", "bo")[1]
    rows = text.split("## Work\n", 1)[1].splitlines()
    assert rows[0].startswith(f"  - run {current} on {mine}: Fix auth")
    assert rows[1] == f"  - task {mine} [queued]: Fix auth"
    assert rows[2].startswith("  - memory ") and "Task complete: Ship it" in rows[2]
    assert other not in text.split("## Work\n", 1)[1]
    everyone = as_json(capsys, "briefing", "core")["work"]["items"]["open_tasks"]
    assert {row["task_id"] for row in everyone} == {mine, other}


def test_briefing_on_a_cold_store_and_a_degraded_read(project: Path, capsys: Capture) -> None:
    """No team yet: empty sections, exit 0; an unreadable event marks the core sections degraded, exit 0."""
    data = as_json(capsys, "briefing", "nobody")
    assert data["presence"]["items"] == [] and data["board"]["items"] == []
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build")
    newest = all_event_files(project)[-1]
    stamp, node, _ = newest.name.split("-")
    later_stamp = stamp[:-6] + f"{int(stamp[-6:]) + 1:06d}"
    (newest.parent / f"{later_stamp}-{node}-{'0' * 12}.json").write_bytes(b"not json")
    code, out, err = run(capsys, "briefing", "core", "--json")
    data = json.loads(out)
    assert code == 0 and "skipped 1 unreadable event" in data["board"]["degraded"] and "warning" in err
    assert data["pending_reviews"]["degraded"] is None
    for _ in range(2):  # and on every later briefing while it stays unreadable (the first one alone said so)
        code, out, _ = run(capsys, "briefing", "core", "--json")
        assert code == 0 and "still left out" in json.loads(out)["board"]["degraded"]


def test_briefing_with_a_day_folder_that_is_a_symlink_is_degraded(project: Path, capsys: Capture,
                                                                   tmp_path: Path) -> None:
    """A day folder of the log that is a symlink is never read: the core sections are marked degraded, naming
    it (seed 000: an unreadable core section is marked degraded, not silently empty), and exit 0."""
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build")
    day = all_event_files(project)[-1].parent
    moved = tmp_path / "moved-day"
    day.rename(moved)
    day.symlink_to(moved)
    code, out, err = run(capsys, "briefing", "core", "--json")
    data = json.loads(out)
    assert code == 0 and "is a symlink" in err
    assert all(f"events/{day.name} is a symlink" in data[name]["degraded"] for name in ("presence", "board"))


@pytest.mark.parametrize("where", ["no store", "store a symlink", "broken config"])
def test_briefing_never_blocks_a_session_start(tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch,
                                               where: str) -> None:
    """Always exit 0 (seed 000): with no store, or one that cannot be used, every section is empty and
    marked degraded with the reason, in JSON and in text; a broken config.json is a warning."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    if where == "store a symlink":
        (tmp_path / "elsewhere").mkdir()
        (root / ".agent").mkdir()
        (root / ".agent" / "runtime-continuity").symlink_to(tmp_path / "elsewhere")
    elif where == "broken config":
        assert main(["init", "--project", "demo"]) == 0
        (root / ".agent" / "runtime-continuity" / "config.json").write_text("{not json")
        capsys.readouterr()
    code, out, err = run(capsys, "briefing", "core", "--agent", "a1", "--json")
    data = json.loads(out)
    assert code == 0 and data["schema"] == "coord.teams.briefing.v1" and data["agent"] == "a1"
    assert all(data[name]["items"] == [] for name in ("presence", "board", "inbox", "needs_me", "pending_handoffs"))
    assert data["latest_snapshot"]["items"]["a1"]["snapshot"] is None and data["work"]["items"]["open_tasks"] == []
    sections = ("presence", "board", "inbox", "needs_me", "pending_handoffs", "latest_snapshot", "work")
    if where == "broken config":
        assert data["board"]["degraded"] is None and "config.json" in err
    else:
        assert all("nothing read" in data[name]["degraded"] for name in sections), data
    code, text, _ = run(capsys, "briefing", "core")
    assert code == 0 and text.startswith("# Briefing: team/core")
    assert all_event_files(root) == [] or where == "broken config"


def test_briefing_and_health_as_of_and_after_rebuild(project: Path, capsys: Capture) -> None:
    """--as-of answers as the log stood; incremental read models give the same briefing as a full rebuild."""
    run(capsys, "role", "create", "core", "rev")
    run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "first")
    point = json.loads(all_event_files(project)[-1].read_text())["event_id"]
    run(capsys, "role", "claim", "core", "rev", "--agent", "amy")
    run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "second")
    early = as_json(capsys, "briefing", "core", "--agent", "bo", "--as-of", point)
    assert [m["text"] for m in early["inbox"]["items"]] == ["first"] and early["board"]["items"][0]["holder"] is None
    last = json.loads(all_event_files(project)[-1].read_text())["event_id"]
    before = [as_json(capsys, command, "core", "--as-of", last) for command in ("briefing", "health")]
    before.append(as_json(capsys, "briefing", "core", "--all"))
    shutil.rmtree(project / STORE / "local" / "models")
    assert run(capsys, "rebuild")[0] == 0
    after = [as_json(capsys, command, "core", "--as-of", last) for command in ("briefing", "health")]
    assert after == before[:2]
    incremental = as_json(capsys, "briefing", "core", "--all")
    for data in (before[2], incremental):  # ages move with the clock; the rest is the same
        data.pop("at")
        for row in data["presence"]["items"]:
            row.pop("presence_age_seconds")
        for row in data["board"]["items"]:
            row.pop("lease_seconds_left")
    assert incremental == before[2]


@pytest.mark.parametrize("args", [
    ["send", "../x", "--agent", "amy", "--to", "bo", "--message", "m"],
    ["send", "core", "--agent", "amy", "--to", "a/b", "--message", "m"],
    ["send", "core", "--agent", "amy", "--to", "bo", "--message", "m" * 10_000_000],
    ["send", "core", "--agent", "amy", "--to", "bo", "--message", "bell\x07"],
    ["beat", "core", "--agent", "a\x00b"], ["inbox", "core", "--agent", "bo", "--ack", "../../x"],
    ["queue", "a\x1b[2J", "--agent", "bo"], ["health", ".."],
], ids=["team", "to", "10MB", "control", "nul", "ack-id", "queue-team", "health-dots"])
def test_hostile_input(project: Path, capsys: Capture, args: list[str]) -> None:
    """Path tricks, NUL, control characters and 10 MB values: exit 2, one short line, nothing written anywhere."""
    before = sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts)
    code, _, err = run(capsys, *args)
    assert code == EXIT_USAGE and err.count("\n") == 1 and len(err) < 300
    assert sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts) == before


@pytest.mark.parametrize(("args", "env_agent"), [
    (["briefing", "x" * 10_000_000], None), (["briefing", "../x"], None), (["briefing", "a\x1b[2Jb\x07"], None),
    (["briefing", "core", "--agent", "claude/sub"], None), (["briefing", "core", "--agent", "a\x00b"], None),
    (["briefing", "core"], "../../etc"), (["briefing", "core", "--json"], "claude/sub"),
], ids=["team-10MB", "team-dots", "team-control", "agent-slash", "agent-nul", "env-agent-dots", "env-agent-json"])
def test_briefing_never_blocks_on_a_bad_name(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch,
                                             args: list[str], env_agent: str | None) -> None:
    """Seed 000: briefing always exits 0. A team or agent name that cannot be one (from the arguments or
    CONTINUITY_AGENT) reads nothing: every section empty and marked degraded with why, one short warning
    line, no control character printed, nothing written."""
    assert run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "m")[0] == 0
    if env_agent is not None:
        monkeypatch.setenv("CONTINUITY_AGENT", env_agent)
    before = sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts)
    code, out, err = run(capsys, *args)
    assert code == 0 and err.count("\n") == 1 and len(err) < 300 and "invalid" in err
    assert not any(char in out + err for char in "\x1b\x07\x00")
    assert sorted(str(path) for path in project.parent.rglob("*") if "local" not in path.parts) == before
    if "--json" in args:
        data = json.loads(out)
        sections = [value for value in data.values() if isinstance(value, dict) and "items" in value]
        empty = all(not section["items"] for section in sections if isinstance(section["items"], list))
        work = data["work"]["items"]
        assert empty and not data["latest_snapshot"]["items"] and not work["open_tasks"] and not work["memories"]
        marked = [section["degraded"] for section in sections if section.get("degraded")]
        assert len(marked) >= 6 and all("invalid agent name" in reason for reason in marked)
    else:
        assert out.count("(DEGRADED: briefing: invalid") >= 6
        assert not [line for line in out.splitlines() if line.startswith("  - ")]  # no item in any section


def test_an_active_team_outlives_a_hundred_newer_ones(project: Path, capsys: Capture) -> None:
    """The team bounds forget the least recently active team: beats in 100 new teams leave an active team's
    unread message, held role, snapshot and moments whole (they forgot the first-created one, however active)."""
    assert run(capsys, "role", "create", "core", "rev")[0] == 0
    assert run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "please review")[0] == 0
    for number in range(100):
        assert run(capsys, "beat", f"t{number}", "--agent", "x")[0] == 0
        assert run(capsys, "role", "create", f"t{number}", "r")[0] == 0
        assert run(capsys, "snapshot", f"t{number}", "x", "t", "--objective", "o")[0] == 0
        if number % 25 == 24:  # core stays active all along
            assert run(capsys, "beat", "core", "--agent", "bo")[0] == 0
            assert run(capsys, "role", "claim", "core", "rev", "--agent", "bo", "--ttl", "2h")[0] == 0 or \
                run(capsys, "role", "renew", "core", "rev", "--agent", "bo", "--ttl", "2h")[0] == 0
            assert run(capsys, "snapshot", "core", "bo", "t", "--objective", f"step {number}")[0] == 0
    assert run(capsys, "beat", "t100", "--agent", "x")[0] == 0
    assert run(capsys, "role", "create", "t100", "r")[0] == 0
    assert run(capsys, "snapshot", "t100", "x", "t", "--objective", "o")[0] == 0
    for args in ([], ["rebuild"]):
        if args:
            assert run(capsys, *args)[0] == 0
        inbox = json.loads(run(capsys, "inbox", "core", "--agent", "bo", "--json")[1])
        assert [message["text"] for message in inbox["messages"]] == ["please review"]
        assert json.loads(run(capsys, "role", "show", "core", "rev", "--json")[1])["holder"] == "bo"
        assert run(capsys, "resume", "core", "bo")[1].startswith("Resume: t (as of ")
        assert len(json.loads(run(capsys, "moments", "list", "core", "--json")[1])["moments"]) == 4
        assert json.loads(run(capsys, "moments", "list", "t0", "--json")[1])["moments"] == []


def test_a_flooded_mailbox_never_empties_another(project: Path, capsys: Capture) -> None:
    """2,000 messages a teammate sends itself (synced in, past the team's unread bound) forget its own oldest,
    never bo's unread message; the bound holds, and a rebuild agrees."""
    from continuity.core.store import Store
    from events.team import MessageSent
    from projections.inbox import UNREAD_LIMIT

    assert run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "please review")[0] == 0
    Store(project).open_log().append_many([
        MessageSent(project="demo", agent_id="evil", team="core", message_id=f"MSG-{number:010x}", to_agent="evil",
                    text="spam") for number in range(UNREAD_LIMIT)])
    for args in ([], ["rebuild"]):
        if args:
            assert run(capsys, *args)[0] == 0
        assert [each["text"] for each in as_json(capsys, "inbox", "core", "--agent", "bo")["messages"]] == [
            "please review"]
        flooded = [each["message_id"] for each in as_json(capsys, "inbox", "core", "--agent", "evil")["messages"]]
        assert len(flooded) == UNREAD_LIMIT - 1 and "MSG-0000000000" not in flooded


def test_unread_messages_outlive_a_hundred_busier_teams(project: Path, capsys: Capture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the inbox model's 100 teams (3 here) the least recently active team's box was forgotten whole, its
    unread messages with it (`inbox` said empty, though nobody read them). A box with unread messages is kept;
    once read, it gives way like the others, and a rebuild agrees."""
    import projections.inbox

    monkeypatch.setattr(projections.inbox, "TEAMS_LIMIT", 3)
    assert run(capsys, "send", "m0", "--agent", "amy", "--to", "bo", "--message", "important, unread")[0] == 0
    run(capsys, "beat", "q0", "--agent", "x")
    for number in range(1, 6):
        run(capsys, "beat", f"u{number}", "--agent", "x")
    for args in ([], ["rebuild"]):
        if args:
            assert run(capsys, *args)[0] == 0
        messages = as_json(capsys, "inbox", "m0", "--agent", "bo")["messages"]
        assert [each["text"] for each in messages] == ["important, unread"]
        assert "q0" not in projections_teams(project)  # a box with nothing unread gave way
    assert run(capsys, "inbox", "m0", "--agent", "bo", "--ack", messages[0]["message_id"])[0] == 0
    for number in range(6, 10):
        run(capsys, "beat", f"u{number}", "--agent", "x")
    assert "m0" not in projections_teams(project)


def projections_teams(project: Path) -> list[str]:
    """The teams the saved inbox model holds."""
    from continuity.core.store import Store
    from continuity.readside.query import current_view

    return list(current_view(Store(project), ("inbox",)).models.project("demo").of("inbox").teams)

@pytest.mark.parametrize("team", ["core", "/etc/passwd", "../x"])
@pytest.mark.parametrize("point", ["-1", "garbage", "99999-01-01T00:00:00Z"])
def test_a_malformed_as_of_is_one_usage_line_whatever_the_team(project: Path, capsys: Capture, team: str,
                                                                point: str) -> None:
    """A bad `--as-of` is a usage error (exit 2, one line), with a team name that cannot be one too (no store read:
    it was an internal error there)."""
    for command in ("briefing", "health"):
        code, _, err = run(capsys, command, team, "--as-of", point)
        assert code == 2 and err.count("\n") == 1, (command, err)
        assert "--as-of" in err or (command == "health" and "invalid team name" in err), (command, err)
    if team != "core":  # an id no store can hold: as malformed as any other point
        code, _, err = run(capsys, "briefing", team, "--as-of", "RCE-2026_bad")
        assert code == 2 and "--as-of" in err and err.count("\n") == 1, err


def test_a_message_from_no_one_is_refused(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """`send` with no --agent and no CONTINUITY_AGENT was recorded from no one (`beat` and `park` refuse the same):
    a message nobody can answer. It is refused (exit 2), nothing written."""
    monkeypatch.delenv("CONTINUITY_AGENT", raising=False)
    before = len(all_event_files(project))
    code, _, err = run(capsys, "send", "core", "--to", "bo", "--message", "hi")
    assert code == 2 and "give --agent or set CONTINUITY_AGENT" in err and err.count("\n") == 1
    assert len(all_event_files(project)) == before
    assert run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "hi")[0] == 0


def test_briefing_of_the_whole_team_reads_each_role_once_and_matches_each_members_queue(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """With every member (no --agent), the board, handoffs and messages are read once and grouped by agent (per
    member, 1,000 members took seconds): `role_json` runs once per role, not once per role and member; and each
    member's part is what its own queue and briefing say."""
    import continuity.team.board as board_module

    agents = [f"a{n:02d}" for n in range(12)]
    for number, agent in enumerate(agents):
        run(capsys, "role", "create", "core", f"r{number:02d}")
        run(capsys, "role", "claim", "core", f"r{number:02d}", "--agent", agent, "--ttl", "1h" if number % 3 else "3h")
        run(capsys, "send", "core", "--agent", agents[number - 1], "--to", agent, "--message", f"hello {agent}")
        if number % 2:
            run(capsys, "handoff", "create", "--agent", agents[number - 1], "--to", agent, "--message", f"take {agent}")
    run(capsys, "role", "create", "core", "zz-free")
    later(monkeypatch, 3601)  # the 1h leases expired
    calls: list[str] = []
    real = board_module.role_json

    def counted(role: Any, now_us: int) -> Any:
        calls.append(role.role)
        return real(role, now_us)

    monkeypatch.setattr(board_module, "role_json", counted)
    everyone = as_json(capsys, "briefing", "core")
    assert sorted(calls) == [*sorted(f"r{n:02d}" for n in range(12)), "zz-free"]
    health = as_json(capsys, "health", "core")
    assert {row["agent"]: [lease["role"] for lease in row["leases"]] for row in health["agents"]} == {
        agent: [f"r{n:02d}"] for n, agent in enumerate(agents)}
    for agent in agents:
        alone = as_json(capsys, "briefing", "core", "--agent", agent)
        mine = [item for item in everyone["needs_me"]["items"] if item["agent"] == agent]
        assert mine == alone["needs_me"]["items"] and mine
        assert [m for m in everyone["inbox"]["items"] if m["to"] == agent] == alone["inbox"]["items"]
        assert [h for h in everyone["pending_handoffs"]["items"] if h["to"] == agent] == \
            alone["pending_handoffs"]["items"]
        assert [(r["role"], r["holder"], r["lease_state"]) for r in alone["board"]["items"]] == \
            [(r["role"], r["holder"], r["lease_state"]) for r in everyone["board"]["items"]]
    assert [m["to"] for m in everyone["inbox"]["items"]] == agents
    assert {item["kind"] for item in everyone["needs_me"]["items"]} == {"handoff", "lease-expired", "inbox"}


def test_listings_show_a_long_message_in_part_and_inbox_shows_it_whole(project: Path, capsys: Capture) -> None:
    """briefing and queue show a message or handoff up to GIST_CHARS characters, then how many more and the command
    that shows it all; inbox (the reader) and --json show it whole."""
    from continuity.team.render import GIST_CHARS

    long = "word " * 3000  # 15,000 characters
    run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", long.strip())
    run(capsys, "handoff", "create", "--agent", "amy", "--to", "bo", "--message", long.strip())
    for command in (("briefing", "core", "--agent", "bo"), ("queue", "core", "--agent", "bo")):
        code, text, _ = run(capsys, *command)
        rows = [line for line in text.splitlines() if "word word" in line]
        assert code == 0 and len(rows) >= 2, text
        assert all(len(line) < GIST_CHARS + 200 for line in rows)
        assert any("more characters: continuity inbox shows it whole)" in line for line in rows)
        assert any("more characters: continuity handoff show HO-" in line for line in rows)
    code, text, _ = run(capsys, "inbox", "core", "--agent", "bo")
    assert code == 0 and long.strip() in text and "more characters" not in text
    assert as_json(capsys, "briefing", "core", "--agent", "bo")["inbox"]["items"][0]["text"] == long.strip()


def test_a_gist_cut_never_keeps_the_first_characters_of_a_token() -> None:
    """The cut falls before a token that straddles it (its first characters alone match no rule, so a view's
    redaction would let them through), for every cut point across the token."""
    from continuity.team.render import GIST_CHARS, gist
    from events.guard import find_secret

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    assert find_secret(token) == "github-token"
    for offset in range(1, len(token)):
        text = "x" * (GIST_CHARS - offset) + " " + token + " tail"
        shown = gist(text, "more")
        assert "ghp_" not in shown and token[:4] not in shown
        assert shown.startswith("x" * (GIST_CHARS - offset)) and "more characters: more)" in shown


def test_a_teammate_whose_clock_runs_fast_leaves_presence_and_health_as_they_are(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """amy's clock runs ten minutes fast: her beat is stamped ahead, and so is every event written after it (stamps
    follow the newest event), bo's beat too. Presence read that as a time in the future: every member `unknown`,
    and health stopped flagging bo `continuity-stale` (he beats, his snapshot is two hours old). A stamp ahead of
    the clock was written before now: seen just now. A snapshot's age still comes from its own wall clock."""
    run(capsys, "snapshot", "core", "bo", "t", "--objective", "build")
    with monkeypatch.context() as fast:
        later(fast, 7200 + 600)
        assert run(capsys, "beat", "core", "--agent", "amy")[0] == 0
    later(monkeypatch, 7200)
    assert run(capsys, "beat", "core", "--agent", "bo")[0] == 0
    beat = "RCE-" + max(all_event_files(project)).name[:31]  # as of bo's own beat: he was seen just then
    replayed = {row["agent"]: row for row in as_json(capsys, "health", "core", "--as-of", beat)["agents"]}
    assert replayed["bo"]["presence"] == "fresh" and replayed["bo"]["presence_age_seconds"] == 0, replayed["bo"]
    agents = {row["agent"]: row for row in as_json(capsys, "health", "core")["agents"]}
    # bo's beat records his own clock (its stamp follows amy's, ten minutes ahead): seen just now, by his clock
    assert agents["bo"]["presence"] == "fresh" and agents["bo"]["presence_age_seconds"] < 60
    assert agents["bo"]["flags"] == ["continuity-stale"] and agents["bo"]["snapshot_age_seconds"] > 7000
    assert agents["amy"]["presence"] == "fresh"
    briefing = as_json(capsys, "briefing", "core")
    assert [row["presence"] for row in briefing["presence"]["items"]] == ["fresh", "fresh"]


SKEWED = ("import os, sys, time\n"
          "shift = int(os.environ['SKEW_S']) * 1_000_000_000\n"
          "real, real_s = time.time_ns, time.time\n"
          "time.time_ns = lambda: real() + shift\n"
          "time.time = lambda: real_s() + shift / 1e9\n"
          "from continuity.cli import main\n"
          "sys.exit(main(sys.argv[1:]))\n")


def test_a_renewal_in_time_holds_against_a_claim_a_fast_teammate_pushed_ahead(tmp_path: Path) -> None:
    """Three clones of one remote, real processes, each clock shifted as said (seconds from now). amy's clock runs
    two hours fast; bo's clone syncs her beat, so his stamps follow it. alice, offline, renews her one-hour lease at
    +50m; bo, who never saw the renewal, claims at +65m. After sync the claim was judged at its stamp (two hours
    ahead) and took the role over from a lease that ran to +1h50m; it is judged at bo's own clock (`written_at`)
    now: `claim-lost`, alice holds the role. And a claimant whose own clock runs fast still cannot take a lease
    fresh by everyone else's (the lease runs from the log's time)."""
    import os
    import subprocess
    import sys

    from tests.helpers import REPO

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")},
           "HOME": str(tmp_path / "home"), "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_CONFIG_NOSYSTEM": "1",
           "PYTHONPATH": str(REPO)}

    def sh(cwd: Path, *args: str) -> None:
        subprocess.run(args, cwd=cwd, env=env, check=True, capture_output=True)

    def c(where: Path, skew: int, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", SKEWED, *args], cwd=where, env={**env, "SKEW_S": str(skew)},
                              capture_output=True, text=True, timeout=120)

    def ok(where: Path, skew: int, *args: str) -> str:
        done = c(where, skew, *args)
        assert done.returncode == 0, f"{args}: {done.stderr}"
        return done.stdout

    sh(tmp_path, "git", "init", "-q", "--bare", "-b", "main", "remote.git")
    clones = {}
    for name in ("amy", "bo", "alice"):
        folder = tmp_path / name
        folder.mkdir()
        sh(folder, "git", "init", "-q", "-b", "main")
        sh(folder, "git", "commit", "-q", "--allow-empty", "-m", "init")
        sh(folder, "git", "remote", "add", "origin", str(tmp_path / "remote.git"))
        clones[name] = folder
    amy, bo, alice = clones["amy"], clones["bo"], clones["alice"]
    ok(amy, 0, "init", "--project", "demo")
    ok(amy, 0, "role", "create", "core", "rev")
    ok(amy, 0, "sync")
    for folder in (bo, alice):
        ok(folder, 0, "clone-store", "origin")
    ok(alice, 0, "role", "claim", "core", "rev", "--agent", "alice", "--ttl", "1h")
    ok(alice, 0, "sync")
    ok(bo, 0, "sync")
    fast = 2 * 3600
    ok(amy, fast, "sync")
    ok(amy, fast, "beat", "core", "--agent", "amy")
    ok(amy, fast, "sync")
    ok(bo, 60, "sync")  # bo's stamps follow amy's beat from here; alice stays offline
    ok(alice, 50 * 60, "role", "renew", "core", "rev", "--agent", "alice", "--ttl", "1h")
    ok(bo, 65 * 60, "role", "claim", "core", "rev", "--agent", "bo", "--ttl", "1h")  # alice's first lease ended
    for folder in (alice, bo, alice):
        ok(folder, 70 * 60, "sync")
    for folder in (alice, bo):
        shown = json.loads(ok(folder, 70 * 60, "role", "show", "core", "rev", "--json"))
        assert shown["holder"] == "alice", shown["history"]
        assert [note["action"] for note in shown["history"]][-2:] == ["renewed", "claim-lost"]
        lost = shown["history"][-1]  # noted at the time it was judged at: before the lease it lost to ended
        assert lost["at"] < lost["detail"].rsplit(" until ", 1)[1], lost
    # amy, whose clock still runs two hours fast, beats and syncs; alice, now in sync, renews for an hour (her
    # renewal's log time follows amy's beat); amy claims five minutes later by her clock: the lease holds
    ok(amy, 70 * 60 + fast, "sync")
    ok(amy, 71 * 60 + fast, "beat", "core", "--agent", "amy")
    ok(amy, 71 * 60 + fast, "sync")
    ok(alice, 72 * 60, "sync")
    ok(alice, 73 * 60, "role", "renew", "core", "rev", "--agent", "alice", "--ttl", "1h")
    ok(alice, 73 * 60, "sync")
    ok(amy, 74 * 60 + fast, "sync")
    done = c(amy, 78 * 60 + fast, "role", "claim", "core", "rev", "--agent", "amy", "--ttl", "1h")
    assert done.returncode == 13 and "held by alice under a fresh lease" in done.stderr, done.stderr
