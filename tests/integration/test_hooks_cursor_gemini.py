"""Cursor and Gemini CLI hooks, driven by payloads of their documented shapes, as real processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import all_event_files, cli_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
CURSOR_CONVERSATION = "5b1f0c7e-9d3a-4e21-8c6f-2a7d9e4b1c03"
GEMINI_SESSION = "1c9e4f2a-7b3d-4a85-9e61-d0f2b8c3a574"


def payload(harness: str, name: str, cwd: Path) -> str:
    """A payload fixture with this project's folder in place of {cwd}."""
    return (FIXTURES / harness / f"{name}.json").read_text().replace("{cwd}", str(cwd))


def hook(harness: str, stdin: str | bytes, cwd: Path) -> Any:
    """`continuity hook <harness>` as a new process; stdout and stderr decoded (stdin may be any bytes)."""
    raw = stdin.encode() if isinstance(stdin, str) else stdin
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    result = subprocess.run([sys.executable, "-m", "continuity", "hook", harness], cwd=cwd, env=env, input=raw,
                            capture_output=True, timeout=60)
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(),
                                       result.stderr.decode())


def stored(project: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_bytes()) for path in all_event_files(project)]


def test_cursor_session_start_hands_the_brief_as_additional_context(project: Path) -> None:
    """sessionStart: stdout is exactly {"additional_context": brief}; the session and the served brief are recorded."""
    cli_process("checkpoint", "-m", "x", "--next", "add refund tests", cwd=project, env={"HOME": os.environ["HOME"]})
    result = hook("cursor", payload("cursor", "session_start", project), project)
    assert (result.returncode, result.stderr) == (0, "")
    output = json.loads(result.stdout)
    assert set(output) == {"additional_context"}
    brief = output["additional_context"]
    assert "## Next action\nadd refund tests" in brief and len(brief) < 10_000
    started, served = stored(project)[-2:]
    assert (started["kind"], started["host"], started["session_id"]) == ("session.started", "cursor",
                                                                           CURSOR_CONVERSATION)
    assert (started["model"], started["cwd"]) == ("claude-4.5-sonnet", str(project))
    assert served["kind"] == "context.served" and served["served_to"] == CURSOR_CONVERSATION
    assert served["brief_sha256"] == hashlib.sha256(brief.encode()).hexdigest()


@pytest.mark.parametrize("name", ["session_start", "session_start_resume"])
def test_gemini_session_start_hands_the_brief_as_additional_context(project: Path, name: str) -> None:
    """SessionStart: stdout is only the hookSpecificOutput JSON; its source and session are recorded."""
    cli_process("checkpoint", "-m", "x", "--next", "add refund tests", cwd=project, env={"HOME": os.environ["HOME"]})
    result = hook("gemini", payload("gemini", name, project), project)
    assert (result.returncode, result.stderr) == (0, "")
    output = json.loads(result.stdout)
    assert output == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                             "additionalContext": output["hookSpecificOutput"]["additionalContext"]}}
    assert "add refund tests" in output["hookSpecificOutput"]["additionalContext"]
    started = stored(project)[-2]
    assert (started["host"], started["session_id"], started["source"]) == ("gemini", GEMINI_SESSION,
                                                                           name.removeprefix("session_start_") if
                                                                           name != "session_start" else "startup")


CASES = [
    ("cursor", "before_submit_prompt", "work.logged", "turn_start"),
    ("cursor", "after_file_edit", "work.logged", "edit"),
    ("cursor", "after_shell_execution", "work.logged", "command"),
    ("cursor", "pre_compact", "checkpoint.recorded", "checkpoint"),
    ("cursor", "stop", "work.logged", "turn_end"),
    ("cursor", "session_end", "session.ended", "session_end"),
    ("gemini", "before_agent", "work.logged", "turn_start"),
    ("gemini", "after_tool_shell", "work.logged", "command"),
    ("gemini", "after_tool_shell_exit_1", "work.logged", "command"),
    ("gemini", "after_tool_shell_wrapped_exit_3", "work.logged", "command"),
    ("gemini", "after_tool_write_file", "work.logged", "edit"),
    ("gemini", "after_tool_replace", "work.logged", "edit"),
    ("gemini", "after_tool_replace_error", "work.logged", "edit_failed"),
    ("gemini", "after_agent", "work.logged", "turn_end"),
    ("gemini", "pre_compress", "checkpoint.recorded", "checkpoint"),
    ("gemini", "session_end", "session.ended", "session_end"),
]


@pytest.mark.parametrize(("harness", "name", "kind", "type_"), CASES)
def test_every_handled_event_records_one_event_and_exits_zero(project: Path, harness: str, name: str, kind: str,
                                                              type_: str) -> None:
    """Each event install registers: exit 0, one event of the right kind from the right host and session."""
    result = hook(harness, payload(harness, name, project), project)
    assert (result.returncode, result.stderr) == (0, "")
    expected_stdout = '{"continue": true}\n' if name == "before_submit_prompt" else ""
    assert result.stdout == expected_stdout
    [event] = stored(project)
    assert (event["kind"], event["type"], event["host"]) == (kind, type_, harness)
    assert event["session_id"] == (CURSOR_CONVERSATION if harness == "cursor" else GEMINI_SESSION)


def events_of(project: Path) -> list[dict[str, Any]]:
    result = cli_process("events", "list", "--json", cwd=project, env={"HOME": os.environ["HOME"]})
    return json.loads(result.stdout)["events"]  # type: ignore[no-any-return]


def test_cursor_edit_and_command_details(project: Path) -> None:
    """afterFileEdit keeps the path and the generation; afterShellExecution the command and its last output line."""
    hook("cursor", payload("cursor", "after_file_edit", project), project)
    hook("cursor", payload("cursor", "after_shell_execution", project), project)
    edit, command = events_of(project)
    assert edit["refs"]["files"] == ["app/orders.py"]  # from the project root, as `log --file` takes it
    assert edit["note"]["turn_id"] == "a71e2c94-0f3b-4d8e-b5a6-91c3f7e20d18"
    ref = command["refs"]["commands"][0]
    # Cursor's afterShellExecution carries no exit status (docs/adapters.md): none is made up
    assert (ref["command"], ref["exit_code"], ref["summary"]) == ("pytest -q tests/test_orders.py", None,
                                                                  "4 passed in 0.21s")


def test_gemini_shell_exit_status_is_read_from_the_tool_result(project: Path) -> None:
    """run_shell_command: no `Exit Code` line means 0; `Exit Code: 1` means 1; the summary is the output's last line."""
    hook("gemini", payload("gemini", "after_tool_shell", project), project)
    hook("gemini", payload("gemini", "after_tool_shell_exit_1", project), project)
    ok, failed = (event["refs"]["commands"][0] for event in events_of(project))
    assert (ok["command"], ok["exit_code"], ok["summary"]) == ("pytest -q tests/test_orders.py", 0,
                                                               "4 passed in 0.21s")
    assert (failed["exit_code"], failed["summary"]) == (1, "1 failed, 3 passed in 0.30s")


@pytest.mark.parametrize("line", ["Exit Code: 99999999999", "Exit Code: x"])
def test_gemini_an_exit_code_line_that_cannot_be_read_is_no_success(project: Path, line: str) -> None:
    """An `Exit Code` line is there only for a non-zero code: one whose number cannot be read leaves the code
    unknown, never 0."""
    hook("gemini", payload("gemini", "after_tool_shell_exit_1", project).replace("Exit Code: 1\\n", f"{line}\\n"),
         project)
    [event] = events_of(project)
    assert event["refs"]["commands"][0]["exit_code"] is None


@pytest.mark.parametrize(("content", "exit_code", "summary"), [
    # the command's own last line reads `Error: ...` and Gemini gives the code: it is output, the code is read
    ("Output: loading config\nError: Cannot find module express\nExit Code: 1\nProcess Group PGID: 4242", 1,
     "Error: Cannot find module express"),
    # no code line after an output ending in `Error: ...`: the line stays in the output, the code is not known
    ("Output: checked 120 files\nError: 0 problems\nProcess Group PGID: 4243", None, "Error: 0 problems"),
    # Gemini's own Error line: a command that produced nothing (it could not run), with the code Gemini gives then
    ("Output: (empty)\nError: spawn bash ENOENT\nProcess Group PGID: 4244", None, None),
    ("Output: (empty)\nError: spawn bash ENOENT\nExit Code: 1\nProcess Group PGID: 4246", 1, None),
    # the older shape, every line always there
    ("Output: done\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\n"
     "Process Group PGID: 4245", 0, "done"),
])
def test_gemini_an_error_line_of_the_commands_own_output_is_kept(project: Path, content: str, exit_code: int | None,
                                                                  summary: str | None) -> None:
    """Gemini CLI writes its own `Error:` line only for a process that could not run: a command whose output ended
    in a line starting `Error: ` lost that line (the one a successor most needs), and with no code line after it
    was recorded as of unknown code with the line before it as its summary."""
    body = {"hook_event_name": "AfterTool", "session_id": "g", "cwd": str(project), "tool_name": "run_shell_command",
            "tool_input": {"command": "node app.js"}, "tool_response": {"llmContent": content}}
    assert hook("gemini", json.dumps(body), project).returncode == 0
    [event] = events_of(project)
    ref = event["refs"]["commands"][0]
    assert ref["exit_code"] == exit_code
    assert ref.get("summary") == summary, ref


@pytest.mark.parametrize(("error", "expected"), [
    ({"message": ["disk", {"full": True}]}, '["disk", {"full": true}]'),
    ([1, {"x": True, "y": None}], '[1, {"x": true, "y": null}]'),
    ({"message": {"code": 5, "ok": False}}, '{"code": 5, "ok": false}'),
    (True, "true"),
])
def test_gemini_an_error_that_is_no_text_is_stored_as_json_text(project: Path, error: Any, expected: str) -> None:
    """docs/adapters.md: a value of another JSON type where a text belongs is stored as its JSON text. A tool
    error Gemini CLI gave as a list or an object was stored as Python's repr (`['disk', {'full': True}]`)."""
    body = {"hook_event_name": "AfterTool", "session_id": "g", "cwd": str(project), "tool_name": "run_shell_command",
            "tool_input": {"command": "make"}, "tool_response": {"llmContent": "Output: x", "error": error}}
    assert hook("gemini", json.dumps(body), project).returncode == 0
    [event] = events_of(project)
    assert event["type"] == "command_failed" and event["refs"]["commands"][0]["summary"] == expected
    assert event["note"]["error"] == expected


def test_gemini_a_failed_shell_call_without_an_exit_code_line_has_no_code(project: Path) -> None:
    """A shell call that failed without an `Exit Code` line (a timeout, a cancel) was recorded as failed with exit
    code 0: the missing line means 0 only for a call that did not fail."""
    body = {"hook_event_name": "AfterTool", "session_id": "g", "cwd": str(project), "tool_name": "run_shell_command",
            "tool_input": {"command": "sleep 999"}, "tool_response": {
                "llmContent": "Output: partial", "error": {"message": "Command timed out after 60s"}}}
    assert hook("gemini", json.dumps(body), project).returncode == 0
    [event] = events_of(project)
    assert event["type"] == "command_failed"
    assert event["refs"]["commands"][0]["exit_code"] is None
    assert event["refs"]["commands"][0]["summary"] == "Command timed out after 60s"


def test_gemini_shell_result_wrapped_as_untrusted_context(project: Path) -> None:
    """Gemini CLI 0.61 wraps a tool's text in <untrusted_context>: the exit code and summary are read inside it."""
    hook("gemini", payload("gemini", "after_tool_shell_wrapped_exit_3", project), project)
    [event] = events_of(project)
    ref = event["refs"]["commands"][0]
    assert (ref["command"], ref["exit_code"], ref["summary"]) == ("./check_refunds.sh", 3,
                                                                  "see </untrusted_context> in the log")


def test_gemini_failed_edit_and_reads(project: Path) -> None:
    """A tool result with an error is recorded as a failure with its message; a read_file records nothing."""
    hook("gemini", payload("gemini", "after_tool_read_file", project), project)
    assert events_of(project) == []
    hook("gemini", payload("gemini", "after_tool_replace_error", project), project)
    [event] = events_of(project)
    assert event["type"] == "edit_failed" and event["refs"]["files"] == ["app/orders.py"]
    assert event["note"]["error"].startswith("Failed to edit, 0 occurrences found")


def test_turn_ends_keep_what_the_harness_says(project: Path) -> None:
    """Gemini's AfterAgent keeps the reply; Cursor's stop keeps its status."""
    hook("gemini", payload("gemini", "after_agent", project), project)
    hook("cursor", payload("cursor", "stop", project), project)
    gemini, cursor = events_of(project)
    assert gemini["note"]["last_assistant_message"].startswith("Added tests/test_refunds.py")
    assert cursor["note"]["status"] == "completed"


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
def test_pre_compaction_restates_the_work(project: Path, harness: str) -> None:
    """preCompact / PreCompress: a pre-compact checkpoint restating in progress and next, with the trigger."""
    cli_process("checkpoint", "--in-progress", "refund endpoint", "--next", "tests", cwd=project,
                env={"HOME": os.environ["HOME"]})
    hook(harness, payload(harness, "pre_compact" if harness == "cursor" else "pre_compress", project), project)
    event = events_of(project)[-1]
    assert event["phase"] == "pre-compact" and event["summary"]["in_progress"] == "refund endpoint"
    assert event["note"]["trigger"] == "auto"


def test_prompts_stay_out_unless_configured(project: Path) -> None:
    """beforeSubmitPrompt / BeforeAgent keep no prompt text by default."""
    hook("cursor", payload("cursor", "before_submit_prompt", project), project)
    hook("gemini", payload("gemini", "before_agent", project), project)
    assert [event["note"] for event in events_of(project)] == [{"turn_id": "a71e2c94-0f3b-4d8e-b5a6-91c3f7e20d18"},
                                                              None]


ESC = "\x1b[31m\x07\x00"
HOSTILE: list[tuple[str, bytes]] = [
    ("not json", b"not json at all"),
    ("truncated", b'{"hook_event_name": "afterShellExecution", "command": "ls'),
    ("array", b"[1, 2, 3]"),
    ("empty", b""),
    ("not utf-8", b"\xff\xfe{}"),
    ("huge", b'{"hook_event_name": "stop", "x": "' + b"a" * (4 * 1024 * 1024 + 10) + b'"}'),
    ("event not a string", b'{"hook_event_name": ["sessionStart"], "workspace_roots": 5}'),
    ("roots wrong type", b'{"hook_event_name": "afterFileEdit", "workspace_roots": {"a": 1}, "file_path": 7}'),
    ("ids wrong type", b'{"hook_event_name": "stop", "conversation_id": {"a": [1]}, "generation_id": 1e400}'),
    ("tool response wrong type", b'{"hook_event_name": "AfterTool", "tool_name": "run_shell_command", '
                                 b'"tool_input": "ls", "tool_response": "x"}'),
    ("llmContent wrong type", b'{"hook_event_name": "AfterTool", "tool_name": "run_shell_command", '
                              b'"tool_input": {"command": "ls"}, "tool_response": {"llmContent": 12, "error": 5}}'),
    ("exit code huge", b'{"hook_event_name": "AfterTool", "tool_name": "run_shell_command", "tool_input": '
                       b'{"command": "ls"}, "tool_response": {"llmContent": "Output: x\\nExit Code: 99999999999"}}'),
    ("unknown event", b'{"hook_event_name": "beforeReadFile", "file_path": "/etc/passwd"}'),
]


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
@pytest.mark.parametrize(("label", "stdin"), HOSTILE, ids=[label for label, _ in HOSTILE])
def test_hostile_input_never_blocks(project: Path, harness: str, label: str, stdin: bytes) -> None:
    """Not JSON, huge, wrong types: exit 0, never the blocking 2, no traceback, nothing on stdout, at most one line."""
    result = hook(harness, stdin, project)
    assert result.returncode == 0 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") <= 1
    if label in ("not json", "array", "empty", "huge"):
        assert result.stderr.startswith("continuity hook: ") and all_event_files(project) == []


@pytest.mark.parametrize(("harness", "name", "field"), [
    ("cursor", "after_shell_execution", "command"), ("gemini", "after_tool_shell", "command")])
def test_control_characters_are_dropped(project: Path, harness: str, name: str, field: str) -> None:
    """Terminal escape sequences in a command are not stored (each one space: the colour code whole, not its
    `[31m` remainder); the hook still exits 0."""
    data = json.loads(payload(harness, name, project))
    if harness == "cursor":
        data[field] = f"echo {ESC}hi"
    else:
        data["tool_input"][field] = f"echo {ESC}hi"
    result = hook(harness, json.dumps(data), project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [event] = stored(project)
    assert event["refs"]["commands"][0]["command"] == "echo    hi"  # the colour code, BEL and NUL: a space each


@pytest.mark.parametrize("harness", ["gemini", "claude-code"])
def test_a_hook_problem_names_a_store_path_with_escapes_as_stand_ins(tmp_path: Path, harness: str) -> None:
    """A project folder whose name holds terminal escapes (clear the screen, set the title) and a broken config:
    the one stderr line (Gemini CLI shows a hook's stderr to its user) and hooks.log show them as stand-ins, as
    every view does; they went out raw."""
    project = tmp_path / "pesc\x1b[2J\x1b]0;owned\x07"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert cli_process("init", "--project", "demo", cwd=project).returncode == 0
    (project / ".agent" / "runtime-continuity" / "config.json").write_text("{")
    result = hook(harness, json.dumps({"hook_event_name": "SessionStart", "session_id": "s"}), project)
    assert result.returncode == 0 and result.stderr.count("\n") == 1 and "pesc" in result.stderr, result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr, result.stderr
    log = (project / ".agent" / "runtime-continuity" / "local" / "hooks.log").read_text()
    assert "pesc" in log and "\x1b" not in log and "\\u001b" not in log, log


@pytest.mark.parametrize(("harness", "name"), [(h, n) for h, n, _, _ in CASES] + [
    ("cursor", "session_start"), ("gemini", "session_start")])
def test_a_broken_store_never_blocks(project: Path, harness: str, name: str) -> None:
    """A store that cannot be written: exit 0 for every event, one stderr line, nothing recorded, no stray stdout;
    the session start still serves the brief of what the log holds (reads fail open)."""
    tmp_dir = project / ".agent" / "runtime-continuity" / "local" / "tmp"
    if tmp_dir.is_dir():
        tmp_dir.rmdir()
    tmp_dir.write_text("not a folder")
    result = hook(harness, payload(harness, name, project), project)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and "not a folder" in result.stderr
    if name == "session_start":
        assert "# Resume: demo" in json.dumps(json.loads(result.stdout))
    else:
        assert result.stdout == ('{"continue": true}\n' if name == "before_submit_prompt" else "")
    assert all_event_files(project) == []


@pytest.mark.parametrize("shape", ["escaped", "oversized-name-last", "oversized-name-first", "unreadable",
                                   "oversized-name-across-the-cut"])
def test_cursor_before_submit_prompt_is_answered_whatever_its_payload(project: Path, shape: str) -> None:
    """docs/adapters.md: beforeSubmitPrompt is answered `{"continue": true}` whatever happens. A name spelled with a
    JSON escape, or a prompt over the 4 MiB limit before the name (the bytes past the limit are read and dropped),
    got no answer; nor does any other event get one."""
    prompt = "p" * (5 << 20) if shape.startswith("oversized") else "fix it"
    name = "before\\u0053ubmitPrompt" if shape == "escaped" else "beforeSubmitPrompt"
    head = f'{{"conversation_id": "c1", "cwd": {json.dumps(str(project))}, '
    if shape == "oversized-name-first":
        body = head + f'"hook_event_name": "{name}", "prompt": "{prompt}"}}'
    elif shape == "oversized-name-across-the-cut":  # the name's first 10 bytes the last ones kept
        from continuity.adapters.hook_entries import MAX_STDIN

        before = head + '"prompt": "'
        filler = "p" * (MAX_STDIN + 1 - 10 - len(before.encode()) - len('", '))
        body = before + filler + f'", "hook_event_name": "{name}", "attachments": []}}'
        assert body.encode().index(b'"hook_event_name"') == MAX_STDIN + 1 - 10
    elif shape == "unreadable":
        body = head + f'"hook_event_name": "{name}", "prompt": "{prompt}"'  # never closed
    else:
        body = head + f'"prompt": "{prompt}", "hook_event_name": "{name}"}}'
    result = hook("cursor", body, project)
    assert result.returncode == 0 and result.stdout == '{"continue": true}\n', (result.stdout, result.stderr)
    other = hook("cursor", body.replace(name, "afterFileEdit"), project)
    assert other.returncode == 0 and other.stdout == ""


@pytest.mark.parametrize("harness", ["cursor", "gemini"])
def test_no_store_exits_zero_with_one_line(tmp_path: Path, harness: str) -> None:
    """No store anywhere: exit 0, nothing on stdout that the harness could misread; one stderr line, except for
    Gemini CLI, which shows a hook's stderr as a system message: hooks installed for the user said it on every
    call in every project without a store (`doctor` names a project whose hooks have none)."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("session_start", "after_tool_shell", "session_end") if harness == "gemini" else ("session_start",):
        result = hook(harness, payload(harness, name, bare), bare)
        assert (result.returncode, result.stdout) == (0, "")
        if harness == "gemini":
            assert result.stderr == ""
        else:
            assert result.stderr.count("\n") == 1 and "no store" in result.stderr


def test_the_store_is_found_from_the_workspace_root(project: Path, tmp_path: Path) -> None:
    """Cursor: the first workspace root finds the store, wherever the hook process was started."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = hook("cursor", payload("cursor", "after_file_edit", project), elsewhere)
    assert (result.returncode, result.stderr) == (0, "")
    assert len(stored(project)) == 1


@pytest.mark.parametrize(("source", "target"), [("claude-code", "cursor"), ("cursor", "gemini"), ("gemini", "codex")])
def test_host_switch_names_the_new_hosts_in_the_brief(project: Path, source: str, target: str) -> None:
    """host-switch to or from Cursor or Gemini CLI is recorded and shown by the next session's brief."""
    env = {"HOME": os.environ["HOME"]}
    cli_process("checkpoint", "-m", "refunds half done", "--next", "finish refunds", cwd=project, env=env)
    switched = cli_process("host-switch", "--from-host", source, "--to-host", target, "--gate", "agent", cwd=project,
                           env=env)
    assert switched.returncode == 0, switched.stderr
    harness = target if target in ("cursor", "gemini") else "gemini"
    output = json.loads(hook(harness, payload(harness, "session_start", project), project).stdout)
    brief = output["additional_context"] if harness == "cursor" else output["hookSpecificOutput"]["additionalContext"]
    assert f"host.switched {source} -> {target}" in brief and "finish refunds" in brief
