"""The MCP server as real clients drive it: the client names the host, empty logs and future points refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.helpers import all_event_files, default_sigint
from tests.integration.test_mcp_server import error_line, make_project, payload, with_session


def session_as(tmp_path: Path, root: Path, client: str, body: Any) -> Any:
    """A client session whose initialize names the client `client`."""
    return with_session(tmp_path, root, body, client=client)


def test_the_client_names_the_host_when_the_arguments_do_not(tmp_path: Path) -> None:
    """Events written through MCP carry the client's name as host; an explicit host argument wins."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        first = payload(await session.call_tool("log", {"message": "from the client"}))
        second = payload(await session.call_tool("log", {"message": "explicit", "host": "cursor"}))
        return first, second

    first, second = session_as(tmp_path, root, "claude-code", body)
    assert first["event"]["host"] == "claude-code" and second["event"]["host"] == "cursor"


def test_a_client_name_is_cleaned_into_an_id(tmp_path: Path) -> None:
    """A client name with spaces or a token-like name becomes a valid id, never an error."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        return payload(await session.call_tool("log", {"message": "hi"}))

    result = session_as(tmp_path, root, "My Client / v2", body)
    assert result["event"]["host"] == "My-Client-v2"


def test_an_empty_log_is_refused(tmp_path: Path) -> None:
    """`log {}` is a one-line tool error and writes nothing."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        return error_line(await session.call_tool("log", {}))

    assert "nothing to record" in session_as(tmp_path, root, "codex", body)
    assert all_event_files(root) == []


def test_an_empty_project_is_refused_as_the_cli_refuses_it(tmp_path: Path) -> None:
    """`--project ""` is refused (exit 2, nothing written); `"project": ""` was taken as no project given, and
    `log` and `create_task` wrote under the store's. Every tool refuses it now, writes and reads alike."""
    root = make_project(tmp_path)
    calls = [("log", {"message": "hello", "project": ""}), ("create_task", {"title": "t", "project": ""}),
             ("status", {"project": ""}), ("list_tasks", {"project": ""}), ("work_status", {"project": ""}),
             ("recall", {"query": "hello", "project": ""})]

    async def body(session: ClientSession) -> Any:
        return [error_line(await session.call_tool(tool, arguments)) for tool, arguments in calls]

    for line in with_session(tmp_path, root, body):
        assert "invalid project name" in line, line
    assert all_event_files(root) == []


def test_the_reads_answer_for_a_project_runtime_continuity_wrote(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A project named as runtime-continuity names one (`web app`, contract I4) is read by every read tool, as the
    CLI reads it (it was "invalid project name"); a served brief is recorded under it; writes still refuse it."""
    from continuity.adapters.compat.runtime_continuity import main as runtime_continuity

    root = make_project(tmp_path)
    monkeypatch.chdir(root)
    assert runtime_continuity(["log", "--project", "web app", "--gate", "agent", "--message", "pushed the parser"]) == 0
    reads = [("status", {}), ("list_tasks", {}), ("work_status", {}), ("recall", {"query": "parser"}),
             ("resume_bundle", {"record": True})]

    async def body(session: ClientSession) -> Any:
        answers = [payload(await session.call_tool(tool, {**arguments, "project": "web app"}))
                   for tool, arguments in reads]
        return answers, error_line(await session.call_tool("log", {"message": "x", "project": "web app"}))

    answers, refused = with_session(tmp_path, root, body)
    assert all(answer["ok"] for answer in answers), answers
    assert [answer.get("project") for answer in answers] == ["web app", None, "web app", "web app", "web app"]
    assert [hit["snippet"] for hit in answers[3]["hits"]] == ["pushed the [parser]"]
    assert answers[4]["recorded"] and "# Resume: web app" in answers[4]["brief"]
    assert "invalid project name" in refused
    served = json.loads(all_event_files(root)[-1].read_bytes())
    assert served["kind"] == "context.served" and served["project"] == "web app"


def test_a_point_in_the_future_is_refused(tmp_path: Path) -> None:
    """resume_bundle and status with as_of in the future: a tool error, not a brief from 2099."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        await session.call_tool("log", {"message": "now"})
        bundle = error_line(await session.call_tool("resume_bundle", {"as_of": "2099-01-01T00:00:00Z"}))
        status = error_line(await session.call_tool("status", {"as_of": "2099-01-01T00:00:00Z"}))
        return bundle, status

    for line in session_as(tmp_path, root, "codex", body):
        assert "in the future" in line
    assert json.loads(all_event_files(root)[0].read_bytes())["message"] == "now"


def test_an_event_too_deep_for_structured_content_is_served_as_text(tmp_path: Path) -> None:
    """An event whose note nests 300 levels (stored before notes were bounded, or carried by a sync): the
    `events` tool answers with it as text (the SDK's serializer refuses structured content past 255
    levels, which failed the whole call); a note deeper than 63 levels is refused on write; the server
    keeps serving."""
    import hashlib

    from continuity.cli import main

    root = make_project(tmp_path)
    assert main(["--root", str(root), "log", "-m", "first"]) == 0
    event = json.loads(all_event_files(root)[0].read_bytes())
    stamp, node = "20200101_000000_000002", "deadbeef"
    event.update(event_id=f"RCE-{stamp}-{node}", created_at="2020-01-01T00:00:00.000002Z", prev=None,
                 note={"a": json.loads("[" * 300 + "]" * 300)})
    raw = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    folder = root / ".agent" / "runtime-continuity" / "events" / "20200101"
    folder.mkdir()
    (folder / f"{stamp}-{node}-{hashlib.sha256(raw).hexdigest()[:12]}.json").write_bytes(raw)

    async def body(session: ClientSession) -> Any:
        listed = await session.call_tool("events", {"limit": 5})
        deep_note = {"a": json.loads("[" * 100 + "]" * 100)}
        refused = error_line(await session.call_tool("log", {"message": "x", "note": deep_note}))
        after = payload(await session.call_tool("log", {"message": "still serving"}))
        return listed, refused, after

    listed, refused, after = session_as(tmp_path, root, "codex", body)
    assert listed.structured_content is None
    notes = [e["note"] for e in payload(listed)["events"] if e["event_id"] == event["event_id"]]
    assert notes == [event["note"]]
    assert "note nested more than 63 levels deep" in refused
    assert after["event"]["message"] == "still serving"


def test_an_exit_code_out_of_the_cli_range_is_refused(tmp_path: Path) -> None:
    """`log` and `checkpoint` take the exit codes the CLI's --exit-code takes (-2**31 .. 2**32-1): one beyond
    them (10**20 was stored, 10**30 too: past the 64 bits every reader carries) is a one-line tool error that
    writes nothing, the schema states the bounds, and the bounds themselves are recorded."""
    from continuity.worklog.plain import EXIT_CODE_MAX, EXIT_CODE_MIN

    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        schema = next(t.input_schema for t in (await session.list_tools()).tools if t.name == "log")
        refused = [error_line(await session.call_tool(name, {"message": "x", "command": "c", "exit_code": code}))
                   for name in ("log", "checkpoint") for code in (10**30, 10**20, EXIT_CODE_MAX + 1, EXIT_CODE_MIN - 1)]
        kept = [payload(await session.call_tool("log", {"message": "x", "command": "c", "exit_code": code}))
                for code in (EXIT_CODE_MIN, EXIT_CODE_MAX)]
        return schema, refused, kept

    schema, refused, kept = session_as(tmp_path, root, "codex", body)
    assert json.dumps(schema["properties"]["exit_code"]).count(str(EXIT_CODE_MAX)) == 1
    assert refused == [f"{name}: invalid arguments: exit_code must be {bound}" for name in ("log", "checkpoint")
                       for bound in [f"at most {EXIT_CODE_MAX}"] * 3 + [f"at least {EXIT_CODE_MIN}"]], refused
    assert [k["event"]["refs"]["commands"][0]["exit_code"] for k in kept] == [EXIT_CODE_MIN, EXIT_CODE_MAX]
    assert len(all_event_files(root)) == 2


def test_read_tools_fail_open_as_the_cli_reads_do(tmp_path: Path) -> None:
    """status, resume_bundle, recall and handoff list with a broken config.json or a symlinked events folder: the
    CLI answers with a warning (exit 0), the tools were errors. They answer now, with the same warning, and a
    brief is never recorded under a guessed project."""
    import shutil

    root = make_project(tmp_path)
    store = root / ".agent" / "runtime-continuity"
    calls = [("status", {}), ("resume_bundle", {"record": True}), ("recall", {"query": "hello"}),
             ("handoff", {"action": "list"})]

    async def body(session: ClientSession) -> Any:
        await session.call_tool("log", {"message": "hello world"})
        return None

    with_session(tmp_path, root, body)
    before = len(all_event_files(root))
    config = (store / "config.json").read_text()
    (store / "config.json").write_text("{broken")

    async def reads(session: ClientSession) -> Any:
        return [payload(await session.call_tool(name, arguments)) for name, arguments in calls]

    for (name, _), answer in zip(calls, with_session(tmp_path, root, reads), strict=True):
        if name != "handoff":
            assert any("answering for project" in line for line in answer["warnings"]), (name, answer)
    assert len(all_event_files(root)) == before  # nothing recorded under a guess
    (store / "config.json").write_text(config)
    shutil.move(str(store / "events"), str(tmp_path / "events.real"))
    (store / "events").symlink_to(tmp_path / "events.real")
    linked = [call for call in calls if call[0] != "recall"]  # recall refuses a linked store, as `recall` does

    async def linked_reads(session: ClientSession) -> Any:
        return [payload(await session.call_tool(name, arguments)) for name, arguments in linked]

    answers = with_session(tmp_path, root, linked_reads)
    assert answers[0]["project"] == "demo" and answers[1]["ok"] and answers[2]["handoffs"] == []
    assert any("symlink" in line for line in answers[0]["warnings"] + answers[1]["warnings"]), answers[:2]


def _raw_session(root: Path, tmp_path: Path) -> Any:
    """`continuity mcp` driven with raw JSON-RPC lines (bytes the SDK client would never send), initialized."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    process = subprocess.Popen([sys.executable, "-m", "continuity", "mcp"], cwd=root, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None

    def send(line: str) -> Any:
        process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def read() -> Any:
        import select

        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "no answer within 30 s"
        return json.loads(process.stdout.readline())  # type: ignore[union-attr]

    send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}))
    read()
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    return process, send, read


def test_a_request_line_past_the_bound_is_dropped_without_being_held(tmp_path: Path) -> None:
    """A request line of 400 MiB (`continuity mcp < /dev/zero` never ends one): the server held all of it, so an
    endless one took memory until the process died (or, under a limit, exit 70). It is read past now, held no
    further than its bound (64 MiB), and the next request is answered."""
    root = make_project(tmp_path)
    process, send, read = _raw_session(root, tmp_path)
    try:
        chunk = b"a" * (1 << 20)
        for _ in range(400):
            process.stdin.write(chunk)
        process.stdin.write(b"\n")  # the long line's end
        send(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}))
        listed = read()
        with open(f"/proc/{process.pid}/status") as status:
            peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
        assert listed["id"] == 7 and listed["result"]["tools"], listed
        assert peak_kb < 300 * 1024, peak_kb  # the line's bound and the server, not 400 MiB
    finally:
        process.stdin.close()
        assert process.wait(60) == 0


def test_a_request_the_sdk_cannot_read_is_answered(tmp_path: Path) -> None:
    """A lone surrogate escape (Node writes one for half an emoji) or arguments nested 300 deep: the SDK dropped
    the line and the client waited forever. The first is read with U+FFFD, as the hooks read it; the second is
    answered as a one-line tool error; the server keeps serving."""
    root = make_project(tmp_path)
    process, send, read = _raw_session(root, tmp_path)
    try:
        send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":'
             '{"message":"half an emoji \\ud83d"}}}')
        logged = read()
        assert logged["id"] == 1 and not logged["result"].get("isError"), logged
        assert json.loads(logged["result"]["content"][0]["text"])["ok"] is True
        deep = '{"a":' * 300 + "{}" + "}" * 300
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log","arguments":'
             '{"message":"deep","note":' + deep + "}}}")
        refused = read()
        assert refused["id"] == 2 and refused["result"]["isError"] is True
        assert "nested more than" in refused["result"]["content"][0]["text"]
        for number, depth in ((4, 1200), (5, 100_000)):  # past Python's own parser too (RecursionError)
            note = "[" * depth + '"x]{\\"y"' + "]" * depth  # brackets and a quote inside a string are no nesting
            send(f'{{"jsonrpc":"2.0","id":{number},"method":"tools/call","params":{{"name":"log","arguments":'
                 f'{{"message":"deeper","note":{note}}}}}}}')
            refused = read()
            assert refused["id"] == number and refused["result"]["isError"] is True, refused
            assert "nested more than" in refused["result"]["content"][0]["text"]
        send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{}}}')
        assert read()["id"] == 3
    finally:
        process.stdin.close()
        process.wait(30)
    stored = [json.loads(path.read_bytes()) for path in all_event_files(root)]
    assert [event["message"] for event in stored if event["kind"] == "work.logged"] == ["half an emoji \ufffd"]


def test_tool_errors_name_the_tools_arguments_not_cli_flags(tmp_path: Path) -> None:
    """A refusal worded for the CLI told a tool caller to use flags the tool does not have (`give exactly one of
    --to AGENT or --to-host HOST`, `--context-percent`, `--kind`); it names the tool's arguments now."""
    root = make_project(tmp_path)
    calls = [("handoff", {"action": "create", "message": "m"}, "to_agent or to_host"),
             ("snapshot", {"team": "t", "agent": "amy", "task": "x", "objective": ""}, "objective must not be empty"),
             ("recall", {"query": "a", "kinds": ["nokind"]}, "kinds: unknown kind 'nokind'"),
             ("log", {"message": "x", "exit_code": 1}, "exit_code and command_summary need command"),
             ("inbox", {"team": "t"}, "give agent or set CONTINUITY_AGENT")]

    async def body(session: ClientSession) -> Any:
        return [error_line(await session.call_tool(name, arguments)) for name, arguments, _ in calls]

    for (name, _, expected), line in zip(calls, with_session(tmp_path, root, body), strict=True):
        assert expected in line and "--" not in line, (name, line)


def test_the_schemas_state_every_bound_the_cli_flags_check(tmp_path: Path) -> None:
    """`priority` (0..1000), `expected_version` (1..10**9) and `context_used_percent` (0..100) were plain integers in
    the schemas: `expected_version: -1` reached the decision ("Version conflict: expected -1"). The schemas state
    the CLI's bounds now, and a value past them is an argument error that writes nothing."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        schemas = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        created = payload(await session.call_tool("create_task", {"title": "t"}))
        refused = [error_line(await session.call_tool(name, arguments)) for name, arguments in (
            ("create_task", {"title": "t", "priority": 1001}),
            ("update_task", {"task_id": created["task_id"], "note": "n", "expected_version": -1}),
            ("snapshot", {"team": "t", "agent": "amy", "task": "x", "objective": "o", "context_used_percent": 101}))]
        return schemas, refused

    schemas, refused = with_session(tmp_path, root, body)
    for name, field, low, high in (("create_task", "priority", 0, 1000), ("update_task", "expected_version", 1, 10**9),
                                   ("snapshot", "context_used_percent", 0, 100)):
        stated = json.dumps(schemas[name]["properties"][field])
        assert f'"minimum": {low}' in stated and f'"maximum": {high}' in stated, (name, stated)
    assert all("invalid arguments" in line for line in refused), refused
    assert len(all_event_files(root)) == 1  # the task created, nothing else


def test_the_schemas_list_the_values_a_status_or_context_takes(tmp_path: Path) -> None:
    """`update_task.status`, `start_agent_run.context`, `work_item_update.status` and `.priority` were plain strings
    in the schemas while only the CLI's choices work, and `status: "bogus"` on a work item answered with an event's
    internal path (`$.changes[0].status`). The schemas list the values; another is an argument error."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        schemas = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        refused = [error_line(await session.call_tool(name, arguments)) for name, arguments in (
            ("update_task", {"task_id": "T-1", "status": "bogus"}),
            ("start_agent_run", {"task_id": "T-1", "context": "bogus"}),
            ("work_item_update", {"item_id": "A1", "status": "bogus"}),
            ("work_item_update", {"item_id": "A1", "priority": "URGENT"}))]
        return schemas, refused

    schemas, refused = with_session(tmp_path, root, body)
    for name, field, values in (
            ("update_task", "status", {"queued", "in_progress", "completed", "blocked", "failed", "cancelled"}),
            ("start_agent_run", "context", {"primary", "subagent"}),
            ("work_item_update", "status", {"PENDING", "IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED",
                                            "SUPERSEDED"}),
            ("work_item_update", "priority", {"CRITICAL", "HIGH", "MEDIUM", "LOW"})):
        stated = json.dumps(schemas[name]["properties"][field])
        assert all(f'"{value}"' in stated for value in values), (name, field, stated)
    assert all("invalid arguments" in line for line in refused), refused
    assert not any("$.changes" in line for line in refused) and all_event_files(root) == []


def test_resume_bundle_answers_when_the_environment_names_no_valid_id(tmp_path: Path) -> None:
    """A server started with `CONTINUITY_AGENT="x y"`: resume_bundle is a read and answers (it was an error); asked
    to record, it serves the brief and says it was not recorded."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        return payload(await session.call_tool("resume_bundle", {"record": True}))

    answer = with_session(tmp_path, root, body, env={"CONTINUITY_AGENT": "x y"})
    assert answer["ok"] is True and answer["recorded"] is None and "## Next action" in answer["brief"]
    assert any("served but not recorded" in line for line in answer["warnings"]), answer["warnings"]
    assert all_event_files(root) == []


def _piped(root: Path, lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """`continuity mcp` given every line at once and then stdin's end, as a script pipes them: the answers, the exit."""
    import os
    import subprocess
    import sys

    opening = [{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    text = "".join(json.dumps(line) + "\n" for line in opening + lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-m", "continuity", "mcp"], cwd=root, env=env, input=text.encode(),
                          capture_output=True, timeout=120)
    return [json.loads(line) for line in done.stdout.splitlines()], done.returncode


def _call(request_id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def test_requests_piped_before_stdin_ends_are_all_answered(tmp_path: Path) -> None:
    """A script that writes its requests and closes stdin got "Connection closed" for a `log` still waiting (nothing
    was written) and no answer at all for a `status`: the SDK cancels what is in flight at stdin's end. Each request
    is answered now, in any id form (a number, a string, one id twice), and the server still stops by itself."""
    root = make_project(tmp_path)
    answers, code = _piped(root, [_call(2, "status", {}), _call(3, "log", {"message": "piped one"}),
                                  _call("four", "log", {"message": "piped two"}),
                                  {"jsonrpc": "2.0", "id": 5, "method": "no/such/method"},
                                  {"jsonrpc": "2.0", "id": 6, "method": "ping"},
                                  _call(7, "status", {}), _call("7", "events", {"limit": 5})])
    assert code == 0
    by_id: dict[Any, list[dict[str, Any]]] = {}
    for answer in answers:
        by_id.setdefault(answer.get("id"), []).append(answer)
    assert set(by_id) == {"init", 2, 3, "four", 5, 6, 7, "7"}, answers
    for request_id in (2, 3, "four", 7, "7"):
        (answer,) = by_id[request_id]
        assert "result" in answer and not answer["result"].get("isError"), answer
    assert "error" in by_id[5][0] and by_id[5][0]["error"]["code"] != -32000 and "result" in by_id[6][0]
    stored = [json.loads(path.read_bytes()) for path in all_event_files(root)]
    assert sorted(event["message"] for event in stored if event["kind"] == "work.logged") == ["piped one", "piped two"]


def test_a_request_the_client_cancelled_does_not_hold_the_server_open(tmp_path: Path) -> None:
    """A request the client cancels is owed no answer: stdin's end after it still stops the server."""
    root = make_project(tmp_path)
    answers, code = _piped(root, [_call(1, "status", {}), _call(2, "log", {"message": "maybe"}),
                                  {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": 2, "reason": "changed my mind"}},
                                  {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
                                  _call(3, "status", {})])
    assert code == 0
    ids = [answer.get("id") for answer in answers]
    assert "init" in ids and 1 in ids and 3 in ids and ids.count(2) <= 1, answers


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path: Path) -> None:
    """A client gone before its answers (its end of stdout closed) ended the server with "internal error:
    ExceptionGroup" and exit 70; it is a client leaving, as at stdin's end: exit 0, nothing on stderr."""
    import os
    import subprocess
    import sys

    root = make_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    process = subprocess.Popen([sys.executable, "-m", "continuity", "mcp"], cwd=root, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdout.close()  # gone before the first answer
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "gone", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}, _call(2, "status", {})]
    _, stderr = process.communicate("".join(json.dumps(line) + "\n" for line in lines).encode(), timeout=120)
    assert process.returncode == 0 and stderr == b"", (process.returncode, stderr)


def test_a_cancel_naming_no_request_leaves_every_answer_owed(tmp_path: Path) -> None:
    """`requestId: true` or `1.0` names no request (the SDK reads neither as id 1), so request 1 is still owed its
    answer: the server waited for it no longer and exited with it unanswered, its event written."""
    root = make_project(tmp_path)
    calls = [_call(n, "log", {"message": f"m{n}"}) for n in range(2, 12)] + [_call(1, "log", {"message": "one"})]
    cancels = [{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": value}}
               for value in (True, 1.0)]
    answers, code = _piped(root, calls + cancels)
    assert code == 0
    answered = {answer.get("id") for answer in answers if "result" in answer}
    assert answered == {"init", *range(1, 12)}, answers


def _serving(root: Path, stdin: Any = None) -> Any:
    """`continuity mcp` as a process, with `stdin` (a pipe when None) and stdout a pipe."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    return subprocess.Popen([sys.executable, "-m", "continuity", "mcp"], cwd=root, env=env,
                            stdin=subprocess.PIPE if stdin is None else stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=default_sigint)


def _opening() -> bytes:
    lines = [{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _answered(process: Any, request_id: Any) -> dict[str, Any]:
    """The next answer on the server's stdout, which must be the one to `request_id` (30 s for it to come)."""
    import select

    ready, _, _ = select.select([process.stdout], [], [], 30)
    assert ready, f"no answer to {request_id!r} within 30 s"
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    assert answer.get("id") == request_id, answer
    return answer


def test_ctrl_c_stops_the_server_without_waiting_for_another_line(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) stopped answering, but the server exited only when the client wrote one more line: the
    SDK waits for stdin in a thread nothing can stop. It exits now, with 130 (interrupted), from a pipe or a
    terminal, once the call in progress is done."""
    import os
    import pty
    import signal

    root = make_project(tmp_path)
    piped = _serving(root)
    piped.stdin.write(_opening() + json.dumps(_call(1, "log", {"message": "before the interrupt"})).encode() + b"\n")
    piped.stdin.flush()
    _answered(piped, "init")
    assert not _answered(piped, 1)["result"].get("isError")
    primary, secondary = pty.openpty()
    try:
        on_terminal = _serving(root, stdin=secondary)
        os.write(primary, _opening())
        _answered(on_terminal, "init")
        for process in (piped, on_terminal):
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 130, process.stderr.read()
            assert process.stderr.read() == b""
    finally:
        os.close(primary)
        os.close(secondary)
    assert [json.loads(path.read_bytes())["message"] for path in all_event_files(root)
            if json.loads(path.read_bytes())["kind"] == "work.logged"] == ["before the interrupt"]


def test_ctrl_c_just_after_a_request_line_is_an_interrupt_not_an_internal_error(tmp_path: Path) -> None:
    """Ctrl-C a millisecond after a request line sometimes ended the server with exit 70 and "internal error:
    ExceptionGroup": the SDK's stdin reader, sending the line on to a consumer already cancelled, raised
    `BrokenResourceError`, and asyncio turns SIGINT into KeyboardInterrupt only when the main task ends
    cancelled. Every round is exit 130 with nothing on stderr now."""
    import signal
    import time

    root = make_project(tmp_path)
    outcomes = []
    for round_ in range(12):
        process = _serving(root)
        process.stdin.write(_opening())
        process.stdin.flush()
        _answered(process, "init")
        process.stdin.write(json.dumps(_call(round_, "status", {})).encode() + b"\n")
        process.stdin.flush()
        time.sleep(0.0005 * (round_ % 3))
        process.send_signal(signal.SIGINT)
        outcomes.append((process.wait(timeout=30), process.stderr.read().decode()))
        process.stdout.close()
        process.stdin.close()
        process.stderr.close()
    assert [outcome for outcome in outcomes if outcome != (130, "")] == []


def test_a_client_that_closes_stdout_but_keeps_stdin_ends_the_server(tmp_path: Path) -> None:
    """A client gone from stdout while its stdin stays open left the server running for good (nothing could stop
    its wait for the next line). The first answer it cannot write ends it, as a client leaving does: exit 0."""
    root = make_project(tmp_path)
    process = _serving(root)
    process.stdout.close()
    process.stdin.write(_opening())
    process.stdin.flush()  # and stdin stays open
    assert process.wait(timeout=60) == 0
    assert process.stderr.read() == b""
    process.stdin.close()


def test_stdin_from_a_file_or_the_null_device_is_still_read_to_its_end(tmp_path: Path) -> None:
    """Stdin that cannot be waited on by the event loop (a regular file, /dev/null) is read as before; a last line
    without its newline is read too."""

    root = make_project(tmp_path)
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_opening() + json.dumps(_call(2, "status", {})).encode())  # no newline at the end
    for source in (requests, "/dev/null"):
        with open(source, "rb") as stdin:
            process = _serving(root, stdin=stdin)
            out, err = process.communicate(timeout=60)
        assert process.returncode == 0 and err == b"", err
        ids = [json.loads(line)["id"] for line in out.splitlines()]
        assert ids == (["init", 2] if source == requests else []), out


def test_lines_ended_by_a_lone_cr_and_a_line_of_megabytes_are_read(tmp_path: Path) -> None:
    """Stdin is read by continuity now, not the SDK's text reader: a message ended by a lone CR (which that reader
    took as a line end) is still read, and so is a line of many megabytes."""
    import subprocess

    root = make_project(tmp_path)
    big = {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": {"pad": "x" * (12 * 1024 * 1024)}}}
    lines = _opening().replace(b"\n", b"\r") + b'{"jsonrpc": "2.0", "id": 3, "method": "ping"}\r\n'
    process = _serving(root, stdin=subprocess.PIPE)
    out, err = process.communicate(lines + json.dumps(big).encode() + b"\n", timeout=120)
    assert process.returncode == 0 and err == b"", err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["init", 3, 4]


@pytest.mark.stress
def test_a_client_that_does_not_read_its_answers_is_held_back_not_buffered(tmp_path: Path) -> None:
    """A client that wrote thousands of requests and read no answer made the server hold every answer (458 MB for
    6,000): it read all of stdin at once. It stops reading once IN_FLIGHT requests are owed an answer, so the
    client waits on its full pipe and memory stays bounded; once the client reads, every request is answered."""
    import threading
    import time

    import continuity.adapters.mcp.tools  # noqa: F401 (registers `log`)
    from continuity.adapters.mcp.registry import call
    from continuity.adapters.mcp.wire import IN_FLIGHT

    root = make_project(tmp_path)
    for number in range(40):
        call("log", {"message": f"{'x' * 1500} {number}"}, root=str(root), client=None)
    count = 8 * IN_FLIGHT
    process = _serving(root)
    # each line padded to 1 kB (white space JSON allows), so the requests are far more than a pipe holds
    data = _opening() + "".join(json.dumps(_call(n, "events", {"limit": 40})).ljust(1024) + "\n"
                                for n in range(count)).encode()
    writer = threading.Thread(target=lambda: (process.stdin.write(data), process.stdin.close()), daemon=True)
    writer.start()
    writer.join(timeout=20)
    # Held back: the server leaves most requests unread in the pipe while its answers wait (each is ~150 kB)
    assert writer.is_alive(), "the server read every request without its answers being read"
    with open(f"/proc/{process.pid}/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    started = time.monotonic()
    answers = [json.loads(line) for line in process.stdout]
    assert process.wait(timeout=120) == 0, time.monotonic() - started
    assert sorted(answer["id"] for answer in answers if answer["id"] != "init") == list(range(count))
    assert all("result" in answer and not answer["result"].get("isError") for answer in answers)
    assert peak_kb < 300_000, f"{peak_kb} kB while {count} requests waited"


SECRET = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


@pytest.mark.parametrize(("tool", "arguments"), [
    ("briefing", {"team": SECRET}), ("briefing", {"team": "t1", "agent": SECRET}),
    ("inbox", {"team": SECRET, "agent": "amy"}), ("inbox", {"team": "t1", "agent": SECRET}),
    ("inbox", {"team": f"token {SECRET} here", "agent": "amy"}), ("park", {"team": f"a/{SECRET}", "agent": "amy"}),
    ("work_status", {"project": SECRET}), ("list_tasks", {"project": SECRET}), ("list_memories", {"project": SECRET}),
    ("resume_bundle", {"agent_id": SECRET}), ("resume_bundle", {"agent_id": SECRET, "format": "json"}),
    ("resume_bundle", {"agent_id": SECRET, "record": True}),
])
def test_no_tool_answers_with_a_secret_like_name_it_was_given(tmp_path: Path, tool: str,
                                                               arguments: dict[str, Any]) -> None:
    """briefing and inbox echoed a team or agent name that looks like a token, work_status its project, and
    resume_bundle's brief named the agent ("Open tasks for ghp_..."); a name cut to be quoted showed all but the
    token's last characters. Each answer is now a refusal, or an answer without the name, never the token."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        await session.call_tool("create_task", {"title": "the parser", "assigned_to": "amy"})
        before = len(all_event_files(root))
        result = await session.call_tool(tool, arguments)
        return result.is_error, json.dumps(result.model_dump(mode="json")), len(all_event_files(root)) - before

    is_error, text, written = with_session(tmp_path, root, body)
    body_of_token = SECRET[4:]
    assert not any(body_of_token[start:start + 10] in text for start in range(len(body_of_token) - 9)), text
    assert is_error or "looks like a secret" in text, text
    assert written == 0  # a brief asked to be recorded is served, not recorded under the token


def test_every_request_with_an_id_is_answered_even_when_the_sdk_cannot_read_it(tmp_path: Path) -> None:
    """An integer of more digits than Python converts (in an argument), and params that are a list rather than an
    object: the SDK dropped the line and the client waited for good. A call is answered as a one-line tool error,
    any other method as JSON-RPC's "Method not found" naming why; nothing is written and the server keeps serving."""
    root = make_project(tmp_path)
    process, send, read = _raw_session(root, tmp_path)
    digits = "9" * 5000
    try:
        send('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"events","arguments":{"limit":'
             + digits + "}}}")
        answer = read()
        assert answer["id"] == 1 and answer["result"]["isError"] is True, answer
        assert "more digits" in answer["result"]["content"][0]["text"]
        send('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log","arguments":{"message":"m",'
             '"note":{"n":-' + digits + "}}}}")
        answer = read()
        assert answer["id"] == 2 and answer["result"]["isError"] is True, answer
        send('{"jsonrpc":"2.0","id":"three","method":"tools/call","params":[{"name":"log"}]}')
        answer = read()
        assert answer["id"] == "three" and answer["result"]["isError"] is True, answer
        assert "params are not a tool call" in answer["result"]["content"][0]["text"]
        send('{"jsonrpc":"2.0","id":4,"method":"tools/list","params":[1]}')
        answer = read()
        assert answer["id"] == 4 and answer["error"]["code"] == -32601, answer
        assert "params cannot be read" in answer["error"]["data"]
        send('{"jsonrpc":"2.0","id":' + digits + ',"method":"ping"}')  # no id an answer can carry: none
        send('{"jsonrpc":"2.0","id":6,"method":"ping","params":{"n":' + digits + "}}")
        answer = read()  # never "id 0" for the one before (a client's pending request 0 would take it)
        assert answer["id"] == 6 and "more digits" in answer["error"]["data"], answer
        send('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"status","arguments":{}}}')
        assert read()["id"] == 5
    finally:
        process.stdin.close()
        process.wait(30)
    assert all_event_files(root) == []


def test_what_a_client_is_sent_holds_no_raw_terminal_control_and_no_megabyte_error(tmp_path: Path) -> None:
    """A refusal quoting an argument passed ESC, NUL, C1 controls and bidi overrides to the client raw (a harness
    shows tool results to a person; `\\x1b]0;...\\x07` retitles the terminal), and a 1 MB argument made a 1 MB
    one-line error; a result's JSON text held U+009B and U+202E raw. Errors now show stand-ins, as the CLI's
    stderr does, and are cut; a result's text escapes them as `--json` does (the same JSON)."""
    root = make_project(tmp_path)
    hostile = "a\x00b\x1b[31m\u009b31m\u202eevil\x1b]0;pwned\x07"

    async def body(session: ClientSession) -> Any:
        await session.call_tool("log", {"message": "seen \u009b and \u202e here"})
        return [await session.call_tool(name, arguments) for name, arguments in (
            ("work_resolve", {"workstream_id": hostile, "reason": "r", "all": True}),
            ("handoff", {"action": hostile}),
            ("handoff", {"action": "x" * 1_000_000}), ("events", {"limit": 5}),
            ("events", {"kind": "bogus"}), ("events", {"kind": "work"}))]

    results = with_session(tmp_path, root, body)
    for result in results[:3]:
        text = error_line(result)
        assert not any(char in text for char in "\x00\x1b\x07\u009b\u202e"), text
        assert len(text) <= 2100
    assert "\u241b" in error_line(results[0])  # ESC shown as its control picture
    listed = results[3].content[0].text
    assert "\\u009b" in listed and "\\u202e" in listed and "\u009b" not in listed and "\u202e" not in listed
    assert json.loads(listed)["events"][0]["message"] == "seen \u009b and \u202e here"  # the same JSON
    assert "bogus" in error_line(results[4])
    assert [event["kind"] for event in payload(results[5])["events"]] == ["work.logged"]


@pytest.mark.parametrize("depth", [0, 900])
def test_a_secret_a_sync_brought_in_is_redacted_in_every_answer(tmp_path: Path, depth: int) -> None:
    """Every tool answer goes into the agent's context, as the brief does: a token another clone's event held was
    in the `events` tool's answer (text and structured content). Redacted now; an event nested past what a walk of
    the answer takes is answered as text, redacted as text."""
    import hashlib

    from continuity.cli import main
    from tests.integration.test_forged_reads import TOKEN

    root = make_project(tmp_path)
    assert main(["--root", str(root), "log", "-m", "first"]) == 0
    event = json.loads(all_event_files(root)[0].read_bytes())
    stamp, node = "20200101_000000_000002", "deadbeef"
    event.update(event_id=f"RCE-{stamp}-{node}", created_at="2020-01-01T00:00:00.000002Z", prev=None,
                 message=f"deploy with {TOKEN} then rotate", note={"a": "NESTED"})
    nested = "[" * depth + "]" * depth or "[]"  # past what Python's json (or a recursive walk) takes
    raw = json.dumps(event, sort_keys=True, separators=(",", ":")).replace('"NESTED"', nested).encode()
    folder = root / ".agent" / "runtime-continuity" / "events" / "20200101"
    folder.mkdir()
    (folder / f"{stamp}-{node}-{hashlib.sha256(raw).hexdigest()[:12]}.json").write_bytes(raw)

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("events", {"limit": 5})

    listed = session_as(tmp_path, root, "codex", body)
    text = listed.content[0].text
    assert TOKEN[4:14] not in text and "deploy with [REDACTED:github-token] then rotate" in text, text[:3000]
    if depth:
        assert listed.structured_content is None
    else:
        assert TOKEN[4:14] not in json.dumps(listed.structured_content)
        assert listed.structured_content["events"][0]["message"] == \
            "deploy with [REDACTED:github-token] then rotate"


def test_whole_floats_for_integer_arguments_are_taken_as_their_schema_says(tmp_path: Path) -> None:
    """JSON Schema's `integer` (what the tools' schemas state) takes `5.0`, and clients whose numbers are floats
    send it so; the server refused it ("Expected `int`, got `float`"). A whole float is now its integer; a
    fraction is still refused, and a float in free-form data (a note) is kept a float."""
    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        logged = payload(await session.call_tool("log", {"message": "ran it", "command": "make", "exit_code": 2.0,
                                                        "note": {"ratio": 3.0}}))
        listed = payload(await session.call_tool("events", {"limit": 1.0}))
        brief = payload(await session.call_tool("resume_bundle", {"max_chars": 3000.0, "format": "json"}))
        refused = error_line(await session.call_tool("events", {"limit": 1.5}))
        return logged, listed, brief, refused

    logged, listed, brief, refused = session_as(tmp_path, root, "codex", body)
    assert logged["event"]["refs"]["commands"][0]["exit_code"] == 2
    stored = json.loads(all_event_files(root)[0].read_bytes())
    assert isinstance(stored["note"]["ratio"], float) and stored["refs"]["commands"][0]["exit_code"] == 2
    assert len(listed["events"]) == 1 and brief["ok"] is True
    assert refused.startswith("events: invalid arguments:") and "limit" in refused, refused


def test_a_write_waits_for_a_held_append_lock_a_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process stopped while holding the append lock (Ctrl-Z mid-append) held an MCP write, and every read the
    server queued behind it, until it went away. A tool's write waits a bounded time, then is a tool error that
    names the lock; the next call, with the lock free, writes."""
    import fcntl

    from continuity.adapters.mcp import registry
    from events.errors import WriteFailed

    root = make_project(tmp_path)
    registry.load_tools()
    monkeypatch.setattr(registry, "LOCK_WAIT_S", 0.3)
    lock = root / ".agent" / "runtime-continuity" / "local" / "lock"
    with open(lock, "a+b") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(WriteFailed, match=r"held the append lock .* for 0\.3 s"):
            registry.call("log", {"message": "while it is held"}, root=str(root))
        assert all_event_files(root) == []
        assert registry.call("status", {}, root=str(root))["ok"] is True  # reads never take it
    assert registry.call("log", {"message": "after"}, root=str(root))["ok"] is True
    assert len(all_event_files(root)) == 1


def _holding_the_append_lock(root: Path) -> Any:
    """A process that holds the store's append lock (a writer stopped mid-append), once it holds it, until its stdin
    is closed: never for a fixed time, which a loaded machine's slower server start outlasted (CI)."""
    import subprocess
    import sys

    lock = root / ".agent" / "runtime-continuity" / "local" / "lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    return holder


def _released(holder: Any) -> None:
    holder.stdin.close()
    holder.wait(timeout=30)


def _waiting_for_the_lock(process: Any, root: Path) -> None:
    """Once the server's call has opened the append lock's file (it opens it to take the lock: the call is in its
    wait); 30 s for it."""
    import os
    import time

    lock = os.path.realpath(root / ".agent" / "runtime-continuity" / "local" / "lock")
    fds = f"/proc/{process.pid}/fd"
    ends = time.monotonic() + 30
    while time.monotonic() < ends:
        for fd in os.listdir(fds) if os.path.isdir(fds) else ():
            try:
                if os.readlink(os.path.join(fds, fd)) == lock:
                    return
            except OSError:
                continue
        time.sleep(0.01)
    raise AssertionError("the call never waited for the append lock")


def _calling(root: Path, *calls: dict[str, Any]) -> Any:
    """`continuity mcp` initialized, with `calls` written to it."""
    process = _serving(root)
    process.stdin.write(_opening())
    process.stdin.flush()
    _answered(process, "init")
    process.stdin.write(b"".join(json.dumps(call).encode() + b"\n" for call in calls))
    process.stdin.flush()
    return process


def test_ctrl_c_during_a_call_answers_it_before_the_server_stops(tmp_path: Path) -> None:
    """Ctrl-C while a `log` waited for the append lock: the call finished and its event was written, but its answer
    was dropped with the cancelled task (exit 130, nothing on stdout), so a client would send it again and record
    it twice. docs/cli.md: `mcp` stops once the call in progress is answered. Calls read but still waiting for their
    turn are answered at once as not run (the first version ran each of them, up to 20 s apiece)."""
    import signal
    import time

    root = make_project(tmp_path)
    holder = _holding_the_append_lock(root)
    try:
        process = _calling(root, *(_call(request_id, "log", {"message": f"call {request_id}"})
                                   for request_id in (1, 2, 3)))
        _waiting_for_the_lock(process, root)  # the first call waits for the lock, the others for their turn
        process.send_signal(signal.SIGINT)
        time.sleep(1.0)  # the signal is taken (ending stdin) while the lock is still held
    finally:
        _released(holder)
    answers = [_answered(process, request_id) for request_id in (1, 2, 3)]
    assert process.wait(timeout=30) == 130
    assert process.stderr.read() == b""
    assert not answers[0]["result"].get("isError"), answers[0]
    assert all(answer["result"].get("isError") and "not run" in answer["result"]["content"][0]["text"]
               for answer in answers[1:]), answers
    messages = [json.loads(path.read_bytes()).get("message") for path in all_event_files(root)]
    assert [message for message in messages if message and message.startswith("call ")] == ["call 1"]


def test_ctrl_c_pressed_again_and_again_stops_the_server_without_a_traceback(tmp_path: Path) -> None:
    """Three quick Ctrl-Cs during a call: asyncio's own handler, called a second time, raised KeyboardInterrupt in
    whatever frame ran (a thread starting, the loop shutting down): a traceback on stderr, and now and then a server
    that never exited."""
    import signal
    import time

    root = make_project(tmp_path)
    for _ in range(3):
        holder = _holding_the_append_lock(root)
        try:
            process = _calling(root, _call(1, "log", {"message": "interrupted"}))
            _waiting_for_the_lock(process, root)
            for _ in range(3):
                process.send_signal(signal.SIGINT)
                time.sleep(0.001)
        finally:
            _released(holder)
        assert process.wait(timeout=30) in (130, -signal.SIGINT)
        assert b"Traceback" not in process.stderr.read()


def test_ctrl_c_once_serving_is_over_exits_130_at_once(tmp_path: Path) -> None:
    """Ctrl-C after the server stopped answering, while the process exits (Python waits there for the SDK's threads):
    Python's own handler was back, and raised KeyboardInterrupt in whatever frame ran (`threading._shutdown`: a
    traceback, and exit by SIGINT instead of 130; under load, 7 runs in 10 of three quick Ctrl-Cs)."""
    import os
    import subprocess
    import sys

    root = make_project(tmp_path)
    script = ("import os, signal, sys, time\n"
              "from continuity.adapters.mcp.server import serve\n"
              "serve(sys.argv[1])\n"
              "os.kill(os.getpid(), signal.SIGINT)\n"
              "time.sleep(10)\n"
              "print('not stopped')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run([sys.executable, "-c", script, str(root)], cwd=root, env=env, input=_opening(),
                          capture_output=True, timeout=60, preexec_fn=default_sigint)
    assert done.returncode == 130, done.stderr
    assert b"Traceback" not in done.stderr and b"not stopped" not in done.stdout
    assert json.loads(done.stdout.splitlines()[0])["id"] == "init"


def test_a_key_given_twice_or_bytes_that_are_no_utf8_are_refused_as_the_cli_refuses_them(tmp_path: Path) -> None:
    """A checkpoint document giving a key twice: `work checkpoint --file` refuses it (the reader keeps the last, so
    the first, an item list say, goes without a word), but the MCP tool took it, as the SDK read it, and dropped
    the first. A message whose bytes are not UTF-8 was stored with U+FFFD in their place; the hooks refuse such
    input. Both are refused now (one line, nothing written) and the server keeps serving."""
    from tests.workstream_docs import item, tracked

    root = make_project(tmp_path)
    process, send, read = _raw_session(root, tmp_path)
    try:
        doc = json.dumps({"document": tracked(items=[item("A1", "IN_PROGRESS"), item("A2")])})
        items_at = doc.index('"items": [')
        twice = doc[:items_at] + '"items": [' + json.dumps(item("A1", "IN_PROGRESS", title="second list")) + "], " \
            + doc[items_at:]
        send(f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "work_checkpoint", '
             f'"arguments": {twice}}}}}')
        refused = read()
        send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "log", '
             '"arguments": {"message": "first", "message": "second"}}}')
        refused_log = read()
        latin1 = b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "log", ' \
            b'"arguments": {"message": "caf\xe9"}}}\n'
        process.stdin.write(latin1)
        process.stdin.flush()
        not_utf8 = read()
        # the same through the other ways in: a lone surrogate (the line read again), `arguments` given twice, and a
        # call ended by a lone CR with a ping after it on the same line
        send('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "log", '
             '"arguments": {"message": "first", "message": "second \\ud800"}}}')
        again = read()
        send('{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "log", '
             '"arguments": {"message": "first"}, "arguments": {"message": "second"}}}')
        outer = read()
        process.stdin.write(latin1.replace(b'"id": 3', b'"id": 7').rstrip(b"\n") + b'\r{"jsonrpc": "2.0", "id": 8, '
                            b'"method": "ping"}\n')
        process.stdin.flush()
        answers = {answer["id"]: answer for answer in (read(), read())}  # in the order they were done
        cr_ended, pinged = answers.get(7, {}), answers.get(8, {})
        send(json.dumps(_call(4, "log", {"message": "still serving"})))
        served = read()
    finally:
        process.stdin.close()
        process.wait(60)
    assert "result" in pinged and "result" in cr_ended, answers
    for answer, key in ((refused, "items"), (refused_log, "message"), (again, "message"), (outer, "arguments")):
        assert answer["result"]["isError"] is True, answer
        assert f"an object gives the key '{key}' twice (keep one); nothing written" in answer["result"]["content"][0][
            "text"], answer
    for answer in (not_utf8, cr_ended):
        said = answer["result"]["content"][0]["text"]
        assert answer["result"]["isError"] is True
        assert f"log: the request is not valid UTF-8 (byte {latin1.index(0xE9)}); nothing written" in said
    assert served["result"]["isError"] is False
    messages = [json.loads(path.read_bytes()).get("message") for path in all_event_files(root)]
    assert messages == ["still serving"]
