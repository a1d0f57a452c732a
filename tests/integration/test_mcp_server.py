"""`continuity mcp`: a real MCP client session (the official SDK) against the server as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, Implementation, TextContent

from continuity.core.errors import EXIT_INTEGRITY
from continuity.core.initialize import init_store
from continuity.worklog.decide import Identity, WorkRequest
from tests.helpers import REPO

SIX = {"log", "checkpoint", "archive", "resume_bundle", "status", "events"}
#: The seed-003 tools (continuity/adapters/mcp/task_tools.py).
TASK_TOOLS = {"create_task", "update_task", "start_agent_run", "complete_agent_run", "list_tasks", "list_memories"}
#: The seed-002 tools (continuity/adapters/mcp/work_tools.py).
WORK_TOOLS = {"work_checkpoint", "work_status", "work_validate", "work_item_add", "work_item_update", "work_cursor_set",
              "work_resolve"}
#: The seed-000 team tools (continuity/adapters/mcp/team_tools.py).
TEAM_TOOLS = {"snapshot", "resume", "park", "briefing", "inbox", "send", "handoff"}

#: `continuity mcp` as the CLI runs it, before common.py lists the command (setdefault: also after).
CLI_MCP = (
    "from continuity.cli import common; "
    "common.COMMAND_MODULES.setdefault('mcp', 'continuity.cli.mcp_cmd'); "
    "from continuity.cli import main; raise SystemExit(main(['mcp', '--root', {root!r}]))"
)


def make_project(tmp_path: Path) -> Path:
    """A fresh store for project `demo`."""
    root = tmp_path / "proj"
    root.mkdir()
    init_store(root, project="demo", language=None)
    return root


def with_session(tmp_path: Path, root: Path, body: Callable[[ClientSession], Awaitable[Any]],
                 args: list[str] | None = None, cwd: Path | None = None, client: str | None = None,
                 env: dict[str, str] | None = None) -> Any:
    """Start the server over stdio, initialize a client session (named `client`), run `body`; no traceback."""
    errlog = tmp_path / "server-stderr.txt"

    async def run() -> Any:
        # PYTHONPATH: the server runs this checkout's code (the SDK passes on only HOME, PATH and a few more)
        params = StdioServerParameters(command=sys.executable, cwd=str(cwd or tmp_path),
                                       env={"PYTHONPATH": str(REPO), **(env or {})},
                                       args=args or ["-m", "continuity.adapters.mcp", "--root", str(root)])
        with anyio.fail_after(20), errlog.open("w") as err:
            info = Implementation(name=client, version="1.0") if client else None
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(
                    read, write, client_info=info) as session:
                await session.initialize()
                return await body(session)

    result = anyio.run(run)
    assert "Traceback" not in errlog.read_text()
    return result


def payload(result: CallToolResult) -> Any:
    """A successful call's JSON text content, decoded."""
    assert not result.is_error, result.content
    block = result.content[0]
    assert isinstance(block, TextContent)
    return json.loads(block.text)


def error_line(result: CallToolResult) -> str:
    """A failed call's message, checked to be one line."""
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "\n" not in block.text and block.text
    return block.text


def test_lists_six_tools_with_schemas_from_the_structs(tmp_path: Path) -> None:
    """tools/list names all six tools; each input schema is an object built from the tool's Structs."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        return {tool.name: tool for tool in (await session.list_tools()).tools}

    tools = with_session(tmp_path, root, body)
    assert set(tools) == SIX | TASK_TOOLS | WORK_TOOLS | TEAM_TOOLS | {"recall"}
    expected = {
        "log": set(WorkRequest.__struct_fields__) | set(Identity.__struct_fields__) | {"redact"},
        "checkpoint": set(WorkRequest.__struct_fields__) | set(Identity.__struct_fields__),
        "archive": {"gate", "reason", "full", "from_host", "to_host", "note"},
        "resume_bundle": {"max_chars", "format", "record", "as_of", "session_id"},
        "status": {"project", "as_of"},
        "events": {"kind", "limit"},
    }
    for name, fields in expected.items():
        schema = tools[name].input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert fields <= set(schema["properties"]), name
        assert tools[name].description
    work_schema = msgspec.json.schema(WorkRequest)["$defs"]["WorkRequest"]["properties"]
    assert tools["log"].input_schema["properties"]["next"]["type"] == work_schema["next"]["type"] == "array"
    assert "required" not in tools["log"].input_schema  # project too: the store names it


def test_log_then_resume_bundle_carries_the_next_step(tmp_path: Path) -> None:
    """A `log` with a next step is in the brief `resume_bundle` returns, and in `events`."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        logged = payload(await session.call_tool("log", {"message": "wired the parser", "done": ["parser"],
                                                          "next": ["write the MCP tests"]}))
        bundle = payload(await session.call_tool("resume_bundle", {}))
        listed = payload(await session.call_tool("events", {"kind": "work.logged", "limit": 5}))
        return logged, bundle, listed

    logged, bundle, listed = with_session(tmp_path, root, body)
    assert logged["ok"] and logged["event_id"].startswith("RCE-") and logged["event"]["project"] == "demo"
    assert "write the MCP tests" in bundle["brief"] and bundle["project"] == "demo"
    assert [e["event_id"] for e in listed["events"]] == [logged["event_id"]]


def test_checkpoint_next_shows_in_bundle_and_status(tmp_path: Path) -> None:
    """A checkpoint's `next` leads the brief and, once archived, is the next action `status` reports."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        payload(await session.call_tool("checkpoint", {"message": "phase one done", "next": ["ship phase two"]}))
        bundle = payload(await session.call_tool("resume_bundle", {"format": "json"}))
        before = payload(await session.call_tool("status", {}))
        archived = payload(await session.call_tool("archive", {"gate": "agent", "reason": "end of phase one"}))
        after = payload(await session.call_tool("status", {}))
        return bundle, before, archived, after

    bundle, before, archived, after = with_session(tmp_path, root, body)
    assert "ship phase two" in json.dumps(bundle["bundle"])
    assert before["events"] == 1 and before["exists"] is False
    assert archived["archive_id"].startswith("RC-") and len(archived["event_ids"]) == 1
    assert after["exists"] is True and after["next_action"] == "ship phase two"


def test_bad_calls_are_one_line_tool_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    """Wrong types, unknown tools and secret-looking text each come back as a one-line error."""
    root = make_project(tmp_path)
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"

    async def body(session: ClientSession) -> Any:
        wrong_type = error_line(await session.call_tool("log", {"message": 5}))
        unknown_field = error_line(await session.call_tool("events", {"limt": 3}))
        out_of_range = error_line(await session.call_tool("events", {"limit": 0}))
        unknown_tool = error_line(await session.call_tool("nope", {}))
        secret = error_line(await session.call_tool("checkpoint", {"message": f"token {token}"}))
        no_redact = error_line(await session.call_tool("snapshot", {"team": "core", "agent": "ash", "task": "t",
                                                                    "objective": f"token {token}"}))
        listed = payload(await session.call_tool("events", {}))
        return wrong_type, unknown_field, out_of_range, unknown_tool, (secret, no_redact), listed

    wrong_type, unknown_field, out_of_range, unknown_tool, secrets, listed = with_session(tmp_path, root, body)
    secret, no_redact = secrets
    # the tool's own argument, never the CLI's flag; a tool without one only says "remove it"
    assert secret.endswith("remove it or pass `redact: true` to store it as [REDACTED:github-token]"), secret
    assert no_redact.startswith("refused: field objective looks like a secret") and no_redact.endswith("remove it")
    assert token not in no_redact
    assert "log: invalid arguments" in wrong_type and "$.message" in wrong_type
    assert "limt" in unknown_field
    assert out_of_range == "events: invalid arguments: limit must be at least 1"
    assert "unknown tool 'nope'" in unknown_tool
    assert secret.startswith("refused: field message looks like a secret") and token not in secret
    assert listed["count"] == 0  # nothing was written by any of them


def test_without_a_store_tools_answer_one_line_errors(tmp_path: Path) -> None:
    """With no store at --root the server still lists tools; a call returns the no-store line."""
    empty = tmp_path / "empty"
    empty.mkdir()

    async def body(session: ClientSession) -> Any:
        names = {tool.name for tool in (await session.list_tools()).tools}
        return names, error_line(await session.call_tool("status", {}))

    names, message = with_session(tmp_path, empty, body)
    assert names == SIX | TASK_TOOLS | WORK_TOOLS | TEAM_TOOLS | {"recall"}
    assert message.startswith("no store at ") and "continuity init" in message


def test_without_root_the_store_is_found_from_the_working_directory_up(tmp_path: Path) -> None:
    """Started in a subfolder without --root, the server writes to the project's store above it."""
    root = make_project(tmp_path)
    (root / "src" / "pkg").mkdir(parents=True)

    async def body(session: ClientSession) -> Any:
        payload(await session.call_tool("log", {"message": "from a subfolder"}))
        return payload(await session.call_tool("status", {}))

    status = with_session(tmp_path, root, body, args=["-m", "continuity.adapters.mcp"], cwd=root / "src" / "pkg")
    assert status["project"] == "demo" and status["events"] == 1


def test_continuity_mcp_command_serves_the_same_tools(tmp_path: Path) -> None:
    """`continuity mcp --root DIR` (the CLI command) serves the registry over stdio."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        names = {tool.name for tool in (await session.list_tools()).tools}
        return names, payload(await session.call_tool("log", {"message": "via the CLI command"}))

    names, logged = with_session(tmp_path, root, body, args=["-c", CLI_MCP.format(root=str(root))])
    assert names == SIX | TASK_TOOLS | WORK_TOOLS | TEAM_TOOLS | {"recall"} and logged["action"] == "log"


def test_seed_pattern_over_mcp_synthesizes_one_task_outcome(tmp_path: Path) -> None:
    """create_task, start_agent_run, update_task(completed), complete_agent_run, then list_tasks and list_memories."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        task = payload(await session.call_tool("create_task", {"title": "Fix the auth flow regression",
                                                               "description": "token refresh",
                                                               "done_criteria": "tests pass"}))
        run = payload(await session.call_tool("start_agent_run", {"task_id": task["task_id"],
                                                                  "role": "software_engineer",
                                                                  "context": "primary"}))
        updated = payload(await session.call_tool("update_task", {"task_id": task["task_id"], "status": "completed",
                                                                  "expected_version": 1}))
        conflict = error_line(await session.call_tool("update_task", {"task_id": task["task_id"], "note": "late",
                                                                      "expected_version": 1}))
        payload(await session.call_tool("complete_agent_run", {"run_id": run["run_id"], "output_summary": "fixed"}))
        tasks = payload(await session.call_tool("list_tasks", {"status": "completed"}))
        memories = payload(await session.call_tool("list_memories", {"kind": "task_outcome"}))
        return task, run, updated, conflict, tasks, memories

    task, run, updated, conflict, tasks, memories = with_session(tmp_path, root, body)
    assert updated["version"] == 2 and "Version conflict: expected 1, got 2" in conflict
    assert [t["task_id"] for t in tasks["tasks"]] == [task["task_id"]]
    listed = subprocess.run([sys.executable, "-m", "continuity", "task", "list", "--status", "completed", "--json"],
                            cwd=root, capture_output=True, text=True, check=True)
    assert set(tasks) == set(json.loads(listed.stdout)) and tasks["problems"] == []  # the same fields as the CLI
    [memory] = memories["memories"]
    assert memory["title"] == "Task complete: Fix the auth flow regression" and memory["run_id"] == run["run_id"]


def test_update_task_clears_labels_and_the_assignee_as_the_cli_does(tmp_path: Path) -> None:
    """`labels: []` and `unassign: true` leave a task without labels and assignee; both with `assigned_to` refused."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        task = payload(await session.call_tool("create_task", {"title": "t", "labels": ["ui"], "assigned_to": "ann"}))
        both = error_line(await session.call_tool("update_task", {"task_id": task["task_id"], "unassign": True,
                                                                  "assigned_to": "bob"}))
        payload(await session.call_tool("update_task", {"task_id": task["task_id"], "unassign": True, "labels": []}))
        listed = payload(await session.call_tool("list_tasks", {}))
        return both, listed

    both, listed = with_session(tmp_path, root, body)
    assert "assign or unassign the task, not both" in both
    [task] = listed["tasks"]
    assert (task["assigned_to"], task["labels"], task["version"]) == (None, [], 2)


def test_list_tools_page_as_the_cli_does(tmp_path: Path) -> None:
    """list_tasks and list_memories take `limit` as `task list`/`memory list` take --limit: the first 30 by
    default, 0 for all; their schemas describe their own fields (not the events tool's)."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        for number in range(32):
            task = payload(await session.call_tool("create_task", {"title": f"task {number}"}))
            payload(await session.call_tool("update_task", {"task_id": task["task_id"], "status": "completed"}))
        tools = {tool.name: tool.input_schema for tool in (await session.list_tools()).tools}
        results = [payload(await session.call_tool(name, arguments))
                   for name in ("list_tasks", "list_memories") for arguments in ({}, {"limit": 0}, {"limit": 5})]
        return tools, results

    tools, results = with_session(tmp_path, root, body)
    for name, what in (("list_tasks", "tasks"), ("list_memories", "memories")):
        limit = tools[name]["properties"]["limit"]
        assert limit["minimum"] == 0 and limit["default"] == 30 and what in limit["description"]
        assert "events" not in json.dumps(tools[name]["properties"])
    assert "memories" in tools["list_memories"]["properties"]["kind"]["description"]
    for (default, everything, five), what in ((results[:3], "tasks"), (results[3:], "memories")):
        assert (len(default[what]), default["more"], default["total"]) == (30, 2, 32)
        assert (len(everything[what]), everything["more"]) == (32, 0)
        assert (len(five[what]), five["more"]) == (5, 27)


def test_log_and_checkpoint_are_attributed_to_the_current_run_once(tmp_path: Path) -> None:
    """After start_agent_run, `log` and `checkpoint` carry its run; a second run replaces it; complete ends it."""
    root = make_project(tmp_path)
    who = {"session_id": "s1"}

    async def body(session: ClientSession) -> Any:
        call = session.call_tool
        task = payload(await call("create_task", {"title": "Fix auth", **who}))["task_id"]
        other = payload(await call("create_task", {"title": "Other", **who}))["task_id"]
        first = payload(await call("start_agent_run", {"task_id": task, **who}))["run_id"]
        logged = [payload(await call("log", {"message": "edited", "files": ["src/auth.py"], **who})),
                  payload(await call("checkpoint", {"message": "half way", "files": ["src/token.py"],
                                                    "command": "pytest -q", "exit_code": 0, **who})),
                  payload(await call("log", {"message": "elsewhere", "task_id": other, **who})),
                  payload(await call("log", {"message": "no session", "files": ["x.py"]}))]
        second = payload(await call("start_agent_run", {"task_id": task, **who}))
        after_second = payload(await call("log", {"message": "second", "files": [str(root / "src" / "b.py")], **who}))
        updated = payload(await call("update_task", {"task_id": task, "status": "completed", **who}))
        payload(await call("complete_agent_run", {"run_id": second["run_id"], "output_summary": "done", **who}))
        after = payload(await call("log", {"message": "after", "files": ["late.py"], **who}))
        memories = payload(await call("list_memories", {}))["memories"]
        return task, first, logged, second, after_second, updated, after, memories

    task, first, logged, second, after_second, updated, after, memories = with_session(tmp_path, root, body)
    assert [entry["event"]["run_id"] for entry in logged] == [first, first, None, None]
    assert [entry["event"]["task_id"] for entry in logged[:2]] == [task, task]
    assert second["run_id"] != first and after_second["event"]["run_id"] == second["run_id"]
    assert after_second["event"]["refs"]["files"] == ["src/b.py"]  # an absolute path in the project, from its root
    assert after["event"]["run_id"] is None  # complete_agent_run cleared the session's current run
    from continuity.core.store import Store
    from continuity.tasks.service import tasks_state

    state, _, _ = tasks_state(Store(str(root)), "demo")
    assert state.runs[first].files == ["src/auth.py", "src/token.py"] and state.runs[first].commands == 1
    assert state.runs[second["run_id"]].files == ["src/b.py"] and state.runs[second["run_id"]].commands == 0
    [memory] = memories
    assert memory["run_id"] == second["run_id"] and memory["event_id"] == updated["event_id"]
    assert memory["files_touched"] == ["src/auth.py", "src/token.py", "src/b.py"]


def test_recall_over_mcp_ranks_and_refuses_bad_syntax_in_one_line(tmp_path: Path) -> None:
    """The recall tool: the same ranking as the CLI, filters, and a --match syntax error as one line."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        for message in ("WAL mode blocked readers", "WAL WAL", "renamed the docs"):
            payload(await session.call_tool("log", {"message": message, "agent_id": "ann"}))
        ranked = payload(await session.call_tool("recall", {"query": "WAL"}))
        by_kind = payload(await session.call_tool("recall", {"query": "WAL", "kinds": ["checkpoint"]}))
        bad = error_line(await session.call_tool("recall", {"query": '"unclosed', "match": True}))
        unknown = error_line(await session.call_tool("recall", {"query": "x", "kinds": ["nope"]}))
        return ranked, by_kind, bad, unknown

    ranked, by_kind, bad, unknown = with_session(tmp_path, root, body)
    assert [hit["snippet"] for hit in ranked["hits"]] == ["[WAL] [WAL]", "[WAL] mode blocked readers"]
    cli = json.loads(subprocess.run([sys.executable, "-m", "continuity", "recall", "WAL", "--json"], cwd=root,
                                    capture_output=True, text=True, check=True).stdout)
    assert set(ranked) == set(cli) and ranked["hits"] == cli["hits"]  # docs/recall.md: the JSON the CLI answers
    assert isinstance(ranked["indexed"], int) and isinstance(ranked["rebuilt"], bool)
    assert ranked["hits"][0]["agent_id"] == "ann" and by_kind["hits"] == []
    assert bad.startswith("invalid search syntax: unterminated string")
    assert "unknown kind" in unknown


def test_read_tools_say_what_the_cli_says_of_the_same_store(tmp_path: Path) -> None:
    """Three answers that differed from the CLI's: `events` said nothing of a day folder that is a symlink (the log
    looked empty), an unhealthy `work_status` carried neither the CLI's `exit_code` nor its `message`, and
    `list_tasks` with `ready` dropped a `status` without a word (`task ready` takes no --status)."""
    root = make_project(tmp_path)
    store = root / ".agent" / "runtime-continuity"
    assert subprocess.run([sys.executable, "-m", "continuity", "log", "-m", "one"], cwd=root,
                          capture_output=True).returncode == 0
    day = next((store / "events").iterdir())
    outside = tmp_path / "outside"
    day.rename(outside)
    day.symlink_to(outside)
    (root / "repositories").mkdir()
    (root / "repositories" / "repositories.yaml").write_text("this: [is: not valid yaml\n")

    async def body(session: ClientSession) -> Any:
        events = payload(await session.call_tool("events", {}))
        status = payload(await session.call_tool("work_status", {}))
        both = error_line(await session.call_tool("list_tasks", {"ready": True, "status": "completed"}))
        return events, status, both

    events, status, both = with_session(tmp_path, root, body)
    cli = {args[0]: json.loads(subprocess.run([sys.executable, "-m", "continuity", *args, "--json"], cwd=root,
                                              capture_output=True, text=True).stdout)
           for args in (["events", "list"], ["work", "status"])}
    assert events["count"] == 0 and events["warnings"] == cli["events"]["warnings"] != []
    assert "is a symlink" in events["warnings"][0]
    assert status["ok"] is False and status["exit_code"] == cli["work"]["exit_code"] == EXIT_INTEGRITY
    assert status["message"] == cli["work"]["message"] and status["message"].startswith("unhealthy: ")
    assert {key: status[key] for key in ("action", "as_of")} == {"action": "work-status", "as_of": None}
    assert "give ready or status, not both" in both
