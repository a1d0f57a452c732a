"""The team MCP tools through a real MCP client session (the official SDK) against the server as a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
from mcp import ClientSession

from continuity.handoffs.decide import HandoffCreate
from continuity.team.decide import ParkRequest, SnapshotRequest
from continuity.team.service import BriefingRequest, InboxRequest, ResumeRequest, SendRequest
from tests.helpers import all_event_files
from tests.integration.test_mcp_server import TEAM_TOOLS, error_line, make_project, payload, with_session

PREFLIGHT = "## Operator pre-flight\n- [ ] Write permission: the successor can push (git push --dry-run)"


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI on the same store (roles are claimed this way before a park)."""
    import sys

    return subprocess.run([sys.executable, "-m", "continuity", *args], cwd=root, capture_output=True, text=True,
                          check=False)


def test_schemas_come_from_the_request_structs(tmp_path: Path) -> None:
    """Each team tool's input schema holds its request Struct's fields, types as msgspec gives them."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        return {tool.name: tool for tool in (await session.list_tools()).tools if tool.name in TEAM_TOOLS}

    tools = with_session(tmp_path, root, body)
    assert set(tools) == TEAM_TOOLS
    structs = {"snapshot": SnapshotRequest, "resume": ResumeRequest, "park": ParkRequest,
               "briefing": BriefingRequest, "inbox": InboxRequest, "send": SendRequest, "handoff": HandoffCreate}
    for name, struct in structs.items():
        schema = tools[name].input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False, name
        assert set(struct.__struct_fields__) <= set(schema["properties"]), name
        assert tools[name].description
    own = msgspec.json.schema(SnapshotRequest)["$defs"]["SnapshotRequest"]
    snapshot = tools["snapshot"].input_schema
    assert set(own["required"]) == {"team", "agent", "task", "objective"}
    assert set(snapshot["required"]) == {"team", "task", "objective"}  # the agent may come from the environment
    assert set(tools["resume"].input_schema["required"]) == {"team"}
    assert snapshot["properties"]["next_actions"]["type"] == own["properties"]["next_actions"]["type"] == "array"
    assert set(tools["park"].input_schema["required"]) == {"team"}  # the agent may come from the environment
    assert sorted(tools["handoff"].input_schema["properties"]["action"]["enum"]) == [
        "accept", "close", "create", "list", "reject"]


def test_snapshot_then_resume(tmp_path: Path) -> None:
    """`snapshot` writes what `resume` reads back: the brief, the JSON fields, the age."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        taken = payload(await session.call_tool("snapshot", {
            "team": "core", "agent": "ash", "task": "build l6", "objective": "ship the layer",
            "next_actions": ["land the PR"], "decisions": ["json"], "context_used_percent": 40}))
        resumed = payload(await session.call_tool("resume", {"team": "core", "agent": "ash"}))
        missing = payload(await session.call_tool("resume", {"team": "core", "agent": "nobody", "max_age": "1h"}))
        bad = payload(await session.call_tool("resume", {"team": "core", "agent": "ash", "max_age": "1w"}))
        return taken, resumed, missing, bad

    taken, resumed, missing, bad = with_session(tmp_path, root, body)
    assert taken["ok"] and taken["checkpoint_id"].endswith("-build-l6") and taken["warnings"] == []
    assert (root / ".agent/runtime-continuity" / taken["path"]).is_file()
    assert resumed["checkpoint_id"] == taken["checkpoint_id"] and resumed["next_actions"] == ["land the PR"]
    assert resumed["brief"].startswith("Resume: build-l6 (as of ") and "    - land the PR" in resumed["brief"]
    assert resumed["error_code"] is None and resumed["freshness_failure"] is None
    assert (missing["snapshot"], missing["error_code"]) == (None, "checkpoint-age-unknown")
    assert bad["error_code"] == "invalid-max-age" and "invalid --max-age duration '1w'" in bad["freshness_failure"]


def test_snapshot_and_resume_take_the_agent_from_the_environment(tmp_path: Path) -> None:
    """docs/team.md: the agent is the tool's argument, else CONTINUITY_AGENT in the server's environment. `park`,
    `send`, `inbox` and `briefing` did so; `snapshot` and `resume` refused a call without `agent`."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        taken = payload(await session.call_tool("snapshot", {"team": "core", "task": "t1", "objective": "ship it"}))
        resumed = payload(await session.call_tool("resume", {"team": "core"}))
        return taken, resumed

    taken, resumed = with_session(tmp_path, root, body, env={"CONTINUITY_AGENT": "amy"})
    assert taken["ok"] and resumed["checkpoint_id"] == taken["checkpoint_id"] and resumed["agent"] == "amy"

    async def without(session: ClientSession) -> Any:
        return [error_line(await session.call_tool(tool, {"team": "core", "task": "t1", "objective": "o"}
                                                   if tool == "snapshot" else {"team": "core"}))
                for tool in ("snapshot", "resume")]

    assert with_session(tmp_path, root, without) == ["snapshot: give agent or set CONTINUITY_AGENT",
                                                     "resume: give agent or set CONTINUITY_AGENT"]


def test_park_parks_held_roles_and_says_when_it_cannot(tmp_path: Path) -> None:
    """`park` snapshots each held role (and emits its moment); nothing held is ok false with seed 000's banner."""
    root = make_project(tmp_path)
    bus = root / ".agent/runtime-continuity/team/core/_coord/bus-v3"
    bus.mkdir(parents=True)
    (bus / "checkpoints.json").write_text(json.dumps({"schema": "coord.checkpoints-channel.v1",
                                                      "data_type": "MomentAnnotation/x"}))
    for role in ("ops", "reviewer"):
        assert cli(root, "role", "create", "core", role).returncode == 0
        assert cli(root, "role", "claim", "core", role, "--agent", "amy").returncode == 0

    async def body(session: ClientSession) -> Any:
        nothing = payload(await session.call_tool("park", {"team": "core", "agent": "bo"}))
        parked = payload(await session.call_tool("park", {"team": "core", "agent": "amy", "objective": "eod"}))
        refused = payload(await session.call_tool("park", {
            "team": "core", "agent": "amy", "handoff": True, "next_actions": [PREFLIGHT],
            "artifacts": [f"{tmp_path.as_uri()}/no-such-remote.git#main@{'a' * 40}"]}))
        return nothing, parked, refused

    nothing, parked, refused = with_session(tmp_path, root, body)
    assert nothing["ok"] is False and nothing["exit_code"] == 2 and "CHECKPOINT NOT WRITTEN" in nothing["message"]
    assert parked["ok"] and [each["role"] for each in parked["parked"]] == ["ops", "reviewer"]
    assert parked["lines"] == [f"parked {each['role']} -> {each['path']}" for each in parked["parked"]]
    outbox = (bus / "checkpoints.outbox.jsonl").read_text().splitlines()
    assert [json.loads(json.loads(line)["note"])["task"] for line in outbox] == ["role-ops", "role-reviewer"]
    shown = json.loads(cli(root, "role", "show", "core", "ops", "--json").stdout)
    assert shown["checkpoint_ref"] == parked["parked"][0]["path"]
    assert refused["ok"] is False and refused["exit_code"] == 3 and "handoff check" in refused["errors"][0]
    assert len((bus / "checkpoints.outbox.jsonl").read_text().splitlines()) == 2  # the refused park emitted nothing


def test_send_inbox_ack_briefing(tmp_path: Path) -> None:
    """`send` reaches the addressee's `inbox`; `ack` marks it read; `briefing` shows the team in one call."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        sent = payload(await session.call_tool("send", {"team": "core", "agent": "amy", "to": "bo",
                                                        "message": "please review #12"}))
        unread = payload(await session.call_tool("inbox", {"team": "core", "agent": "bo"}))
        brief = payload(await session.call_tool("briefing", {"team": "core", "agent": "bo"}))
        acked = payload(await session.call_tool("inbox", {"team": "core", "agent": "bo", "ack": sent["message_id"]}))
        after = payload(await session.call_tool("inbox", {"team": "core", "agent": "bo"}))
        return sent, unread, brief, acked, after

    sent, unread, brief, acked, after = with_session(tmp_path, root, body)
    assert sent["ok"] and sent["to"] == "bo"
    assert [m["message_id"] for m in unread["messages"]] == [sent["message_id"]]
    assert brief["schema"] == "coord.teams.briefing.v1" and brief["agent"] == "bo"
    assert [m["message_id"] for m in brief["inbox"]["items"]] == [sent["message_id"]]
    assert acked["action"] == "ack" and after["messages"] == []


def test_handoff_lifecycle(tmp_path: Path) -> None:
    """create, list, accept, close through one tool; a wrong actor is a one-line tool error, nothing written."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        made = payload(await session.call_tool("handoff", {"action": "create", "agent": "amy", "to_agent": "bo",
                                                           "message": "take over the review"}))
        listed = payload(await session.call_tool("handoff", {"action": "list"}))
        before = all_event_files(root)
        wrong = error_line(await session.call_tool("handoff", {"action": "accept", "agent": "cy",
                                                               "handoff_id": made["handoff_id"]}))
        unchanged = all_event_files(root) == before
        accepted = payload(await session.call_tool("handoff", {"action": "accept", "agent": "bo",
                                                               "handoff_id": made["handoff_id"]}))
        closed = payload(await session.call_tool("handoff", {"action": "close", "agent": "bo", "note": "merged",
                                                             "handoff_id": made["handoff_id"]}))
        missing = error_line(await session.call_tool("handoff", {"action": "create", "agent": "amy",
                                                                 "to_agent": "bo"}))
        return made, listed, wrong, unchanged, accepted, closed, missing

    made, listed, wrong, unchanged, accepted, closed, missing = with_session(tmp_path, root, body)
    assert made["ok"] and (root / made["path"]).is_file()
    assert [h["handoff_id"] for h in listed["handoffs"]] == [made["handoff_id"]]
    assert "addressed to bo, not cy" in wrong and unchanged
    assert (accepted["state"], closed["state"]) == ("accepted", "closed")
    assert "give message" in missing


def test_handoff_list_filters_by_agent_as_the_cli_does(tmp_path: Path) -> None:
    """`handoff list --to bo` on the CLI; the tool refused `to_agent` for list (no way to ask for one agent's
    handoffs); an invalid or secret-looking name is refused as the CLI refuses it."""
    root = make_project(tmp_path)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

    async def body(session: ClientSession) -> Any:
        to_bo = payload(await session.call_tool("handoff", {"action": "create", "agent": "amy", "to_agent": "bo",
                                                            "message": "review"}))
        payload(await session.call_tool("handoff", {"action": "create", "agent": "amy", "to_agent": "cy",
                                                    "message": "deploy"}))
        payload(await session.call_tool("handoff", {"action": "create", "agent": "amy", "to_host": "codex",
                                                    "message": "any agent there"}))
        for_bo = payload(await session.call_tool("handoff", {"action": "list", "to_agent": "bo"}))
        for_nobody = payload(await session.call_tool("handoff", {"action": "list", "to_agent": "dee"}))
        every = payload(await session.call_tool("handoff", {"action": "list"}))
        bad = error_line(await session.call_tool("handoff", {"action": "list", "to_agent": "../x"}))
        secret = error_line(await session.call_tool("handoff", {"action": "list", "to_agent": token}))
        return to_bo, for_bo, for_nobody, every, bad, secret

    to_bo, for_bo, for_nobody, every, bad, secret = with_session(tmp_path, root, body)
    assert [h["handoff_id"] for h in for_bo["handoffs"]] == [to_bo["handoff_id"]]
    assert for_nobody["handoffs"] == [] and len(every["handoffs"]) == 3
    assert bad.startswith("handoff list to_agent: invalid agent name '../x'")
    assert token not in secret and token[:12] not in secret


@pytest.mark.parametrize("tool, arguments", [
    ("snapshot", {"team": "../x", "agent": "ash", "task": "t", "objective": "o"}),
    ("snapshot", {"team": "core", "agent": "a/b", "task": "t", "objective": "o"}),
    ("snapshot", {"team": "core", "agent": "ash", "task": "t", "objective": "x" * 20_000}),
    ("park", {"team": "core", "agent": "a\x00b"}),
    ("send", {"team": "core", "to": "../../etc", "message": "hi"}),
    ("inbox", {"team": "core", "agent": "bo", "ack": "../x"}),
    ("handoff", {"action": "create", "to_agent": "x/y", "message": "m"}),
    ("snapshot", {"team": "core", "agent": "ash", "task": "t", "objective": "o", "surprise": 1}),
])
def test_hostile_arguments_are_one_line_errors(tmp_path: Path, tool: str, arguments: dict[str, Any]) -> None:
    """Path tricks, NUL, oversized text and unknown fields: a one-line tool error, nothing written, nothing outside."""
    root = make_project(tmp_path)
    before = all_event_files(root)

    async def body(session: ClientSession) -> Any:
        return error_line(await session.call_tool(tool, arguments))

    line = with_session(tmp_path, root, body)
    assert line and all_event_files(root) == before
    assert not (tmp_path / "x").exists() and not (root / ".agent" / "x").exists()


def test_park_refuses_secret_names_and_says_so_when_the_store_cannot_be_read(tmp_path: Path) -> None:
    """As `park`: a team, agent or role name that looks like a secret is refused before a banner echoes it (the
    tool echoed it); a store whose role state cannot be read (a symlinked events folder) answers ok false, exit
    code 1, with seed 000's banner (the tool gave a bare error without it)."""
    import shutil

    root = make_project(tmp_path)
    token = "ghp_" + "E1fG2hJ3kL" * 4  # secret-shaped, made up

    async def secrets(session: ClientSession) -> Any:
        return [await session.call_tool("park", {"team": "core", "agent": "amy", **{field: token}})
                for field in ("team", "agent", "role")]

    for result in with_session(tmp_path, root, secrets):
        line = error_line(result)
        assert "looks like a secret" in line and token not in line
    events = root / ".agent" / "runtime-continuity" / "events"
    elsewhere = tmp_path / "elsewhere"
    shutil.move(str(events), str(elsewhere))
    events.symlink_to(elsewhere)

    async def unsafe(session: ClientSession) -> Any:
        return payload(await session.call_tool("park", {"team": "core", "agent": "amy"}))

    refused = with_session(tmp_path, root, unsafe)
    assert refused["ok"] is False and refused["exit_code"] == 1
    assert "CHECKPOINT NOT WRITTEN" in refused["message"] and "is a symlink" in refused["errors"][0]


def test_handoff_refuses_arguments_its_action_does_not_take(tmp_path: Path) -> None:
    """A note given to `create`, a message to `accept`, a handoff_id to `list`: each was dropped without a word
    (the stored handoff had no note); refused as the CLI's parser refuses an option, nothing written."""
    root = make_project(tmp_path)
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

    async def body(session: ClientSession) -> Any:
        before = all_event_files(root)
        create = error_line(await session.call_tool("handoff", {
            "action": "create", "agent": "amy", "to_agent": "bo", "message": "m", "note": "IMPORTANT NOTE",
            "handoff_id": "HO-ignored"}))
        listing = error_line(await session.call_tool("handoff", {"action": "list", "message": "x"}))
        unchanged = all_event_files(root) == before
        made = payload(await session.call_tool("handoff", {"action": "create", "agent": "amy", "to_agent": "bo",
                                                           "message": "m"}))
        accept = error_line(await session.call_tool("handoff", {"action": "accept", "agent": "bo",
                                                                "handoff_id": made["handoff_id"],
                                                                "message": "dropped", "artifacts": ["a"]}))
        listed = error_line(await session.call_tool("list_tasks", {"assigned_to": "../x"}))
        secret = error_line(await session.call_tool("list_tasks", {"assigned_to": token}))
        ack = error_line(await session.call_tool("inbox", {"team": "core", "agent": "bo", "ack": token}))
        team = error_line(await session.call_tool("snapshot", {"team": f"tok {token} x", "agent": "a1", "task": "t",
                                                               "objective": "o"}))
        return create, listing, unchanged, accept, listed, secret, ack, team

    create, listing, unchanged, accept, listed, secret, ack, team = with_session(tmp_path, root, body)
    assert create == "handoff create does not take handoff_id, note" and unchanged
    assert listing == "handoff list does not take message"
    assert accept == "handoff accept does not take message, artifacts"
    assert listed.startswith("list_tasks assigned_to: invalid agent name '../x'")
    assert secret.startswith("refused: field agent looks like a secret") and token not in secret
    assert ack.startswith("refused: field ack looks like a secret") and token not in ack
    assert team.startswith("refused: field team looks like a secret") and token not in team


def test_inbox_reads_a_store_with_a_broken_config_as_the_cli_does(tmp_path: Path) -> None:
    """A read fails open: the `inbox` tool refused (isError, "nothing written") with a config.json it could not
    read, withholding the unread message the CLI's `inbox` shows with a warning. It answers with the warning, once;
    an `ack` (a write) is still refused."""
    root = make_project(tmp_path)
    assert cli(root, "send", "core", "--agent", "amy", "--to", "bo", "--message", "hi").returncode == 0
    (root / ".agent" / "runtime-continuity" / "config.json").write_text("{not json")

    async def body(session: ClientSession) -> Any:
        unread = payload(await session.call_tool("inbox", {"team": "core", "agent": "bo"}))
        acked = await session.call_tool("inbox", {"team": "core", "agent": "bo", "ack": unread["messages"][0][
            "message_id"]})
        return unread, acked

    unread, acked = with_session(tmp_path, root, body)
    assert [message["text"] for message in unread["messages"]] == ["hi"]
    assert len([line for line in unread["warnings"] if "config.json" in line]) == 1
    assert "config.json" in error_line(acked)
