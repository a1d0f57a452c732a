"""Hook handlers driven by recorded payloads, as real processes: stdout shape, events, exit 0."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import all_event_files, cli_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"


def payload(name: str, cwd: Path) -> str:
    """A recorded hook payload with this project's folder in place of {cwd}."""
    return (FIXTURES / f"{name}.json").read_text().replace("{cwd}", str(cwd))


def hook(harness: str, stdin: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    return cli_process("hook", harness, cwd=cwd, stdin=stdin, env={"HOME": os.environ["HOME"], **(env or {})})


def events(project: Path) -> list[dict[str, Any]]:
    result = cli_process("events", "list", "--json", cwd=project, env={"HOME": os.environ["HOME"]})
    return json.loads(result.stdout)["events"]  # type: ignore[no-any-return]


def test_session_start_prints_the_brief_and_records_it(project: Path) -> None:
    """SessionStart: exact hookSpecificOutput shape, brief under the cut, session and context.served recorded."""
    cli_process("checkpoint", "-m", "x", "--next", "add refund tests", cwd=project, env={"HOME": os.environ["HOME"]})
    result = hook("claude-code", payload("claude_session_start", project), project)
    assert result.returncode == 0 and result.stderr == ""
    output = json.loads(result.stdout)
    assert set(output) == {"hookSpecificOutput"}
    assert set(output["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    brief = output["hookSpecificOutput"]["additionalContext"]
    assert len(brief) < 10_000 and "## Next action\nadd refund tests" in brief
    recorded = events(project)
    started, served = recorded[-2], recorded[-1]
    assert started["kind"] == "session.started" and started["host"] == "claude-code"
    assert (started["source"], started["model"]) == ("startup", "claude-sonnet-4-5")
    assert started["session_id"] == "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71"
    assert started["transcript_path"].endswith("8f2c1e9a.jsonl")
    assert served["kind"] == "context.served" and served["served_to"] == started["session_id"]
    import hashlib

    assert served["brief_sha256"] == hashlib.sha256(brief.encode()).hexdigest()


def test_session_start_exports_the_session_to_claude_codes_env_file(project: Path, tmp_path: Path) -> None:
    """Claude Code sources CLAUDE_ENV_FILE before each Bash command: SessionStart adds the session's id there once
    (a compaction of the same session adds nothing), so `continuity run start` from the agent's shell is the
    session's run. Not when the user set CONTINUITY_SESSION_ID (a value naming another harness session here was
    inherited, not set), not for another harness; a file that cannot be written costs the brief nothing."""
    env_file = tmp_path / "env.sh"
    env_file.write_text("export EARLIER=1")  # no newline at its end: that line stays whole
    for name in ("claude_session_start", "claude_session_start_compact"):
        result = hook("claude-code", payload(name, project), project, {"CLAUDE_ENV_FILE": str(env_file)})
        assert result.returncode == 0 and "hookSpecificOutput" in result.stdout, result.stderr
    session = "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71"
    assert env_file.read_text() == f"export EARLIER=1\nexport CONTINUITY_SESSION_ID={session}\n"
    other = tmp_path / "other.sh"
    hook("claude-code", payload("claude_session_start", project), project,
         {"CLAUDE_ENV_FILE": str(other), "CONTINUITY_SESSION_ID": "chosen-by-the-user"})
    hook("codex", payload("codex_session_start", project), project, {"CLAUDE_ENV_FILE": str(other)})
    assert not other.exists()
    result = hook("claude-code", payload("claude_session_start", project), project,
                  {"CLAUDE_ENV_FILE": str(tmp_path / "no-such-folder" / "env.sh")})
    assert result.returncode == 0 and "## Next action" in json.loads(result.stdout)["hookSpecificOutput"][
        "additionalContext"]
    # a session launched from that session's shell (`claude -p` run by its agent) inherits its variable: not the
    # user's choice, so the new session's own id is exported (its runs were the other session's)
    launched = tmp_path / "launched.sh"
    body = json.loads(payload("claude_session_start", project))
    hook("claude-code", json.dumps({**body, "session_id": "b0b0b0b0-0000-4000-8000-000000000001"}), project,
         {"CLAUDE_ENV_FILE": str(launched), "CONTINUITY_SESSION_ID": session})
    assert launched.read_text() == "export CONTINUITY_SESSION_ID=b0b0b0b0-0000-4000-8000-000000000001\n"
    # a value the user chose stays, even one the store knows from the user's own commands (no harness's session)
    assert cli_process("log", "-m", "mine", cwd=project, env={"CONTINUITY_SESSION_ID": "alice-main"}).returncode == 0
    chosen = tmp_path / "chosen.sh"
    hook("claude-code", json.dumps({**body, "session_id": "b0b0b0b0-0000-4000-8000-000000000002"}), project,
         {"CLAUDE_ENV_FILE": str(chosen), "CONTINUITY_SESSION_ID": "alice-main"})
    assert not chosen.exists()


def test_an_oversized_payload_is_read_to_its_end_so_the_harness_write_does_not_fail(project: Path) -> None:
    """A payload over 4 MiB is not recorded (said in one line), but the hook exited with the rest of it unread,
    so the harness writing it got EPIPE, which a harness may not handle for a hook it ran. The hook reads it
    to the end (up to 64 MiB) and drops it."""
    import subprocess
    import sys
    import threading

    payload = json.dumps({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Write",
                          "tool_input": {"file_path": "big.txt", "content": "x" * (6 * 1024 * 1024)}}).encode()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    process = subprocess.Popen([sys.executable, "-m", "continuity", "hook", "claude-code"], cwd=project, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            process.stdin.write(payload)  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
        except BaseException as error:  # reported below
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    out, err = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]  # one line at most each
    writer.join(timeout=60)
    assert process.wait(timeout=60) == 0 and failures == [], failures
    assert b"over 4194304 bytes ignored" in err and out == b""


def test_a_value_of_another_type_is_stored_as_json_never_as_a_python_repr(project: Path) -> None:
    """`file_path: ["a", "b"]` was recorded as the file `['a', 'b']`, and an object where a text belongs as
    `{'a': 1}`: Python's repr in the log. A path must be a string (else the edit names no file, so nothing is
    recorded for it); another value where a text belongs is written as JSON."""
    edit = {"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Edit",
            "tool_input": {"file_path": ["a", "b"]}}
    stop = {"session_id": "s", "hook_event_name": "Stop", "last_assistant_message": {"a": [1, True]}}
    argv = {"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": ["echo", {"a": 1}, True, None]}, "tool_response": {"exit_code": 0}}
    for sent in (edit, stop, argv):
        assert hook("claude-code", json.dumps(sent), project).returncode == 0
    recorded = events(project)
    assert not any(entry.get("refs", {}).get("files") for entry in recorded)
    assert [entry["note"]["last_assistant_message"] for entry in recorded
            if (entry.get("note") or {}).get("last_assistant_message")] == ['{"a": [1, true]}']
    assert [entry["refs"]["commands"][0]["command"] for entry in recorded
            if entry.get("refs", {}).get("commands")] == ['echo \'{"a": 1}\' true \'\'']  # as a shell reads it
    assert "'a'" not in json.dumps(recorded)


def test_the_brief_stays_under_the_preview_cut_as_javascript_counts_it(project: Path) -> None:
    """Claude Code cuts an output string past 10,000 characters as JavaScript counts them (an emoji is two): an
    emoji-heavy log made a default brief of 14,792 such units (7,562 Python characters), and `hook_max_chars`
    100,000 one of 31,745. The brief is measured in those units, and held under the cut for Claude Code and
    Codex whatever `hook_max_chars` says; a harness with no such cut (Cursor) still gets what it asks for."""
    env = {"HOME": os.environ["HOME"]}
    rocket = "\U0001F680" * 990
    blockers = [arg for n in range(5) for arg in ("--blocker", f"{n}{rocket}")]
    cli_process("checkpoint", "-m", rocket, "--in-progress", rocket, "--next", rocket, "--next", rocket, *blockers,
                cwd=project, env=env)
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})

    def units(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    brief = json.loads(hook("claude-code", start, project).stdout)["hookSpecificOutput"]["additionalContext"]
    assert units(brief) <= 8000 and "## Next action" in brief
    wide = "b" * 1000
    many = [arg for n in range(30) for arg in ("--blocker", f"{n}{wide}")]
    cli_process("checkpoint", "-m", "x", "--next", wide, *many, cwd=project, env=env)
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "hook_max_chars": 100_000}))
    for harness in ("claude-code", "codex"):
        brief = json.loads(hook(harness, start, project).stdout)["hookSpecificOutput"]["additionalContext"]
        assert 9000 < units(brief) <= 10_000, (harness, units(brief))
    cursor = json.dumps({"conversation_id": "c1", "hook_event_name": "sessionStart", "workspace_roots": [str(project)]})
    answer = json.loads(hook("cursor", cursor, project).stdout)
    assert units(answer["additional_context"]) > 30_000


def test_a_brief_whose_redaction_makes_it_longer_stays_within_its_budget(project: Path) -> None:
    """The brief is filled to its budget, then redacted as one text: a team line `db_password: pw1234` (neither
    field a secret alone, so written) became `[REDACTED:password-assignment]`, 24 characters longer, and the check
    after counted Python characters: an emoji-heavy brief ended 3 units past `--max-chars`, and the hook's past
    Claude Code's 10,000. It is filled again to a budget smaller by what redaction added, cut note and all."""
    env = {"HOME": os.environ["HOME"]}
    cli_process("snapshot", "core", "ash", "db_password", "--objective", "pw1234", cwd=project, env=env)
    done = [arg for n in range(1, 80) for arg in ("--done", "\U0001F600" * (n % 23 + 1) + f"_d{n}")]
    cli_process("log", "-m", "batch", *done, cwd=project, env=env)

    def units(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    for budget in range(2500, 3000, 37):
        brief = cli_process("resume-bundle", "--agent", "ash", "--max-chars", str(budget), cwd=project, env=env)
        assert units(brief.stdout) <= budget, (budget, units(brief.stdout))
        assert "[REDACTED:password-assignment]" in brief.stdout
        assert brief.stdout.endswith("--format json` has more)\n") or "## Commands" in brief.stdout, brief.stdout[-200:]


@pytest.mark.parametrize(("model", "source", "recorded"), [
    ("claude-3-5-sonnet-v2@20241022", "startup", ("claude-3-5-sonnet-v2-20241022", "startup")),  # Vertex AI's names
    ("gpt-5+codex=high", "resume", ("gpt-5-codex-high", "resume")),
    ("m" * 100, "startup", ("m" * 64, "startup")),
    (" My Model / v2 \u202e", "  clear now", ("My-Model-v2", "clear-now")),
    ("@@@", "...", (None, "startup")),
])
def test_session_start_records_any_model_and_source_as_a_label(project: Path, model: str, source: str,
                                                                recorded: tuple[Any, str]) -> None:
    """A model or source the event's label cannot hold as given (`@`, `+`, `=`, over 64 characters, spaces or
    bidi marks at the ends) is cleaned into one: the session is recorded and nothing is said on stderr."""
    data = json.loads(payload("claude_session_start", project))
    data.update(model=model, source=source)
    result = hook("claude-code", json.dumps(data), project)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    started = [event for event in events(project) if event["kind"] == "session.started"]
    assert [(event["model"], event["source"]) for event in started] == [recorded]


def test_after_compaction_the_brief_says_so_and_counts(project: Path) -> None:
    """SessionStart with source compact: the brief names the compaction and its number in the session."""
    hook("claude-code", payload("claude_session_start", project), project)
    first = json.loads(hook("claude-code", payload("claude_session_start_compact", project), project).stdout)
    assert "compaction 1 of this session" in first["hookSpecificOutput"]["additionalContext"]
    second = json.loads(hook("claude-code", payload("claude_session_start_compact", project), project).stdout)
    assert "compaction 2 of this session" in second["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize(
    ("harness", "name", "expected"),
    [
        ("claude-code", "claude_post_tool_use_edit", {"type": "edit", "files": ["app/orders.py"]}),
        ("claude-code", "claude_post_tool_use_bash",
         {"type": "command", "command": "pytest -q tests/test_orders.py", "exit_code": 0}),
        ("codex", "codex_post_tool_use_shell", {"type": "command", "command": "cargo test", "exit_code": 101}),
        ("codex", "codex_post_tool_use_patch", {"type": "edit", "files": ["src/lib.rs", "src/refund.rs"]}),
    ],
)
def test_post_tool_use_records_edits_and_commands(project: Path, harness: str, name: str,
                                                  expected: dict[str, Any]) -> None:
    """PostToolUse: file edits (path) and shell commands (command, exit code), attributed to the session."""
    result = hook(harness, payload(name, project), project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    event = events(project)[-1]
    assert event["type"] == expected["type"] and event["host"] == harness and event["session_id"]
    if "files" in expected:
        assert [Path(f).name for f in event["refs"]["files"]] == [Path(f).name for f in expected["files"]]
    else:
        assert event["refs"]["commands"][0]["command"] == expected["command"]
        assert event["refs"]["commands"][0]["exit_code"] == expected["exit_code"]


def test_post_tool_use_ignores_reads_and_redacts_secrets(project: Path) -> None:
    """A Read is not recorded; a command holding a token is stored redacted, exit 0."""
    hook("claude-code", payload("claude_post_tool_use_read", project), project)
    assert events(project) == []
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    data = json.loads(payload("claude_post_tool_use_bash", project))
    data["tool_input"]["command"] = f"git push https://{token}@github.com/o/r.git"
    result = hook("claude-code", json.dumps(data), project)
    assert result.returncode == 0
    stored = events(project)[-1]
    assert token not in json.dumps(stored) and stored["redacted"]


@pytest.mark.parametrize("before", ["\x1b[1m", "\x1b[38;5;208m", "echo\x1b", "x\x00", "\x9b31m", "\x1b]0;t\x07"],
                         ids=["bold", "256-colour", "bare-escape", "nul", "8-bit-csi", "title"])
def test_a_token_after_a_terminal_escape_is_never_stored(project: Path, before: str) -> None:
    """A token printed in colour (`\\e[1mghp_...\\e[0m`), or after a lone control character: dropping the control
    characters kept a colour code's remainder (`[1m`, ending in a letter) or glued the token to the word before,
    and no token rule matched a token glued to a letter: it was stored in clear. Each escape sequence and control
    character is now one space."""
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    data = json.loads(payload("claude_post_tool_use_bash", project))
    data["tool_input"]["command"] = f"gh auth token {before}{token}\x1b[0m"
    data["tool_response"] = {"stdout": f"{before}{token}\x1b[0m", "stderr": "", "interrupted": False}
    assert hook("claude-code", json.dumps(data), project).returncode == 0
    [stored] = events(project)
    assert token[4:20] not in json.dumps(stored) and stored["redacted"], stored
    assert "\x1b" not in json.dumps(stored, ensure_ascii=False)


def test_secrets_a_hook_would_cut_or_read_a_line_of_are_never_stored(project: Path) -> None:
    """A hook keeps a command's first 4,000 characters, an error's last line (300) and an output's last line: a
    token split by the cut kept its first characters, too few for its rule, and a command that printed a private
    key's first lines (`head -6 ~/.ssh/id_ed25519`) stored a line of key material without the header the guard
    knows it by. The cut now falls before such a token, and such a line is the key's redaction marker."""
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    body = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "QyNTUxOQAAACDx" * 5]
    key_lines = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + "\n".join(body)
    data = json.loads(payload("claude_post_tool_use_bash", project))
    data["tool_input"]["command"] = "echo " + "a" * 3964 + " " + token
    data["tool_response"] = {"stdout": key_lines, "stderr": "", "interrupted": False}
    assert hook("claude-code", json.dumps(data), project).returncode == 0
    data["tool_input"]["command"] = "cd /home/dev/" + "p" * 150 + " && ./deploy.sh " + token + " --prod"
    data["tool_response"] = {"stdout": "deployed", "stderr": "", "interrupted": False}
    assert hook("claude-code", json.dumps(data), project).returncode == 0  # the message keeps 200 characters
    failure = json.loads(payload("claude_post_tool_use_failure_bash", project))
    failure["error"] = "Exit code 1\n" + "x" * 280 + " " + token
    assert hook("claude-code", json.dumps(failure), project).returncode == 0
    failure["error"] = "Exit code 1\n" + key_lines
    assert hook("claude-code", json.dumps(failure), project).returncode == 0
    stored = json.dumps(events(project))
    assert token[:8] not in stored and body[0][:16] not in stored and body[1][:12] not in stored, stored
    recorded = events(project)
    command = recorded[0]["refs"]["commands"][0]
    assert command["command"] == "echo " + "a" * 3964 + " " and command["summary"] == "[REDACTED:private-key-block]"
    assert recorded[1]["message"].endswith("./deploy.sh ") and recorded[1]["redacted"]
    assert recorded[2]["note"]["error"] == "x" * 280 + " "
    assert recorded[3]["note"]["error"] == "[REDACTED:private-key-block]"


@pytest.mark.parametrize(
    ("name", "kind", "type_"),
    [
        ("claude_pre_compact", "checkpoint.recorded", "checkpoint"),
        ("claude_post_compact", "work.logged", "compaction"),
        ("claude_stop", "work.logged", "turn_end"),
        ("claude_subagent_stop", "work.logged", "subagent_end"),
        ("claude_user_prompt_submit", "work.logged", "turn_start"),
        ("claude_session_end", "session.ended", "session_end"),
    ],
)
def test_lifecycle_hooks_record_one_event(project: Path, name: str, kind: str, type_: str) -> None:
    """PreCompact, PostCompact, Stop, SubagentStop, UserPromptSubmit, SessionEnd: one event each, exit 0."""
    result = hook("claude-code", payload(name, project), project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    recorded = events(project)
    assert len(recorded) == 1 and recorded[0]["kind"] == kind and recorded[0]["type"] == type_


def test_pre_compact_checkpoints_what_was_in_progress(project: Path) -> None:
    """PreCompact restates the work state so it survives the compaction."""
    cli_process("checkpoint", "--in-progress", "refund endpoint", "--next", "tests", cwd=project,
                env={"HOME": os.environ["HOME"]})
    hook("claude-code", payload("claude_pre_compact", project), project)
    event = events(project)[-1]
    assert event["phase"] == "pre-compact" and event["summary"]["in_progress"] == "refund endpoint"
    assert event["summary"]["next"] == ["tests"] and event["note"]["trigger"] == "auto"


def test_prompts_are_not_recorded_unless_configured(project: Path) -> None:
    """UserPromptSubmit keeps no prompt text by default; record_prompts in config.json turns it on."""
    hook("claude-code", payload("claude_user_prompt_submit", project), project)
    assert events(project)[-1]["note"] is None
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "record_prompts": True}))
    hook("claude-code", payload("claude_user_prompt_submit", project), project)
    assert events(project)[-1]["note"]["prompt"] == "please add refund tests"


def test_session_end_archives_when_configured(project: Path) -> None:
    """With archive_on_session_end, SessionEnd also takes an archive."""
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "archive_on_session_end": True}))
    hook("claude-code", payload("claude_session_end", project), project)
    assert [e["kind"] for e in events(project)] == ["session.ended", "archive.created"]


@pytest.mark.parametrize("value", ["false", "no", "true", "on", 1, 0, [], ["true"], {"on": True}, None])
def test_a_setting_of_the_wrong_type_keeps_prompts_out_and_takes_no_archive(project: Path, value: Any) -> None:
    """`"record_prompts": "false"` once recorded the prompt's text (a string is truthy), and
    `"archive_on_session_end": "no"` archived: a value of the wrong type reads as the default, off, on the
    plain path and on the typed one (a session end with an agent goes there)."""
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "record_prompts": value,
                                  "archive_on_session_end": value}))
    hook("claude-code", payload("claude_user_prompt_submit", project), project)
    end = json.loads(payload("claude_session_end", project))
    hook("claude-code", json.dumps(end), project)
    hook("claude-code", json.dumps({**end, "agent_id": "a1"}), project)
    recorded = events(project)
    assert [e["kind"] for e in recorded] == ["work.logged", "session.ended", "session.ended"]
    assert recorded[0]["note"] is None and "refund" not in json.dumps(recorded)
    doctor = cli_process("doctor", "--json", cwd=project, env={"HOME": os.environ["HOME"]})
    assert json.loads(doctor.stdout)["store"]["record_prompts"] is False


@pytest.mark.parametrize("stdin", ["", "not json at all", "[1, 2, 3]", '{"hook_event_name": 5}'])
def test_bad_input_exits_zero_with_one_line(project: Path, stdin: str) -> None:
    """Empty stdin, malformed payloads: exit 0, nothing on stdout, at most one stderr line, no event."""
    result = hook("codex", stdin, project)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.count("\n") <= 1 and "Traceback" not in result.stderr
    assert events(project) == []


def test_missing_store_exits_zero_with_one_line(tmp_path: Path) -> None:
    """No store anywhere: exit 0, one stderr line, no output that could confuse the harness."""
    bare = tmp_path / "bare"
    bare.mkdir()
    result = hook("claude-code", payload("claude_session_start", bare), bare)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.count("\n") == 1 and "no store" in result.stderr


def test_a_broken_store_never_blocks(project: Path) -> None:
    """A store whose appends fail: exit 0, one stderr line, and the error in local/hooks.log."""
    tmp_dir = project / ".agent" / "runtime-continuity" / "local" / "tmp"
    if tmp_dir.is_dir():
        tmp_dir.rmdir()
    tmp_dir.write_text("not a folder")  # every append now fails to make its temp file
    result = hook("claude-code", payload("claude_post_tool_use_bash", project), project)
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr.count("\n") == 1
    log = project / ".agent" / "runtime-continuity" / "local" / "hooks.log"
    assert "PostToolUse" in log.read_text()


def test_codex_session_start_shape(project: Path) -> None:
    """Codex gets the same output shape (its transcript_path may be null)."""
    result = hook("codex", payload("codex_session_start", project), project)
    output = json.loads(result.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert events(project)[0]["source"] == "resume" and events(project)[0]["transcript_path"] is None


def test_an_unsafe_store_never_blocks(project: Path) -> None:
    """A symlinked events folder: exit 0, one stderr line, nothing written through the link."""
    events_dir = project / ".agent" / "runtime-continuity" / "events"
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir()
    events_dir.rmdir()
    events_dir.symlink_to(elsewhere)
    result = hook("claude-code", payload("claude_post_tool_use_bash", project), project)
    assert (result.returncode, result.stdout) == (0, "") and "symlink" in result.stderr
    assert list(elsewhere.iterdir()) == []


def test_codex_shell_output_given_as_text_keeps_its_last_line(project: Path) -> None:
    """Codex 0.171's PostToolUse gives a shell call's output as a plain string: its last line is the summary."""
    result = hook("codex", payload("codex_post_tool_use_bash_text", project), project)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [ref] = events(project)[-1]["refs"]["commands"]
    assert ref == {"command": "echo boom >&2; exit 3", "exit_code": None, "summary": "boom"}


@pytest.mark.parametrize("redirect", [">&-", "<&-", "2>&-", ">/dev/full", "2>/dev/full", ">&- 2>&- <&-"])
@pytest.mark.parametrize("hook", ["PostToolUse", "SessionStart", "not json"])
def test_a_hook_exits_0_whatever_its_standard_streams_are(project: Path, redirect: str, hook: str) -> None:
    """`continuity hook` run directly (not behind the installed `; exit 0`): a closed or full stdin, stdout or
    stderr still ends in exit 0 with no traceback (a closed stream is None in Python: it was exit 1 or 70)."""
    import shlex
    import subprocess
    import sys

    payload = "not json" if hook == "not json" else json.dumps(
        {"session_id": "s1", "hook_event_name": hook, "source": "startup", "tool_name": "Bash",
         "tool_input": {"command": "ls"}})
    command = f"exec {shlex.quote(sys.executable)} -m continuity hook claude-code {redirect}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    done = subprocess.run(["sh", "-c", command], cwd=project, env=env, input=payload, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("where", ["nested store", "added folder"])
def test_claude_code_hooks_record_into_the_project_roots_store(project: Path, tmp_path: Path, where: str) -> None:
    """Claude Code's installed command runs in $CLAUDE_PROJECT_DIR; the payload's `cwd` is wherever the session
    has moved. A nested project with its own store took the session's events, and a folder added with --add-dir
    (no store) lost them, the pre-compact checkpoint and the post-compaction brief included. The hooks record
    into the project root's store now, as the installed line (run through sh, as Claude Code does) puts it."""
    import subprocess
    import sys

    from continuity.adapters.install import hook_command

    if where == "nested store":
        elsewhere = project / "vendor" / "lib"
        elsewhere.mkdir(parents=True)
        assert cli_process("init", "--project", "lib", cwd=elsewhere, env={"HOME": os.environ["HOME"]}).returncode == 0
    else:
        elsewhere = tmp_path / "shared-lib"
        elsewhere.mkdir()
    line = hook_command("claude-code", str(Path(sys.executable).with_name("continuity")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["CLAUDE_PROJECT_DIR"] = str(project)
    for body in ({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "make"},
                  "tool_response": {"stdout": "ok", "exit_code": 0}},
                 {"hook_event_name": "PreCompact", "trigger": "auto"},
                 {"hook_event_name": "SessionStart", "source": "compact"}):
        done = subprocess.run(["sh", "-c", line], input=json.dumps({**body, "session_id": "s1", "cwd": str(elsewhere)}),
                              cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "no store" not in done.stderr, done.stderr
        if body["hook_event_name"] == "SessionStart":
            assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    kinds = [event["kind"] for event in events(project)]
    assert "work.logged" in kinds and "checkpoint.recorded" in kinds and "context.served" in kinds, kinds
    if where == "nested store":
        nested = cli_process("events", "list", "--json", cwd=elsewhere, env={"HOME": os.environ["HOME"]})
        assert json.loads(nested.stdout)["events"] == []


def test_a_linked_local_folder_never_takes_the_hooks_log(project: Path, tmp_path: Path) -> None:
    """A store whose `local/` is a symlink is refused as unsafe, yet every failing hook appended its line to
    `<link target>/hooks.log` (making the file). Nothing is written through the link now; the hook still exits 0
    with its one stderr line."""
    import shutil

    local = project / ".agent" / "runtime-continuity" / "local"
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.rmtree(local)
    local.symlink_to(victim)
    for stdin in (json.dumps({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project),
                              "tool_name": "Bash", "tool_input": {"command": "ls"}}), "not json"):
        done = hook("claude-code", stdin, project)
        assert done.returncode == 0 and done.stderr.startswith("continuity hook: "), done.stderr
    assert list(victim.iterdir()) == []


@pytest.mark.parametrize(("harness", "body"), [
    ("claude-code", {"hook_event_name": "PostToolUseFailure", "tool_name": "\u001b[31mmcp__evil\u007f",
                     "tool_input": {}, "error": "Permission denied"}),
    ("gemini", {"hook_event_name": "AfterTool", "tool_name": "mcp\u0000tool\u001b",
                "tool_input": {"file_path": "a"}, "tool_response": {"error": "no match"}}),
])
def test_a_failed_tool_whose_name_holds_control_characters_is_recorded(project: Path, harness: str,
                                                                        body: dict[str, Any]) -> None:
    """A tool name with ESC, DEL or NUL (a harness or MCP server may send anything) left the failed call
    unrecorded: the raw name went into the message, which may hold no control character."""
    done = hook(harness, json.dumps({**body, "session_id": "s1", "cwd": str(project)}), project)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    failed = [event for event in events(project) if event["type"] == "tool_failed"]
    assert len(failed) == 1 and "failed:" in failed[0]["message"]
    assert not any(ord(char) < 32 or ord(char) == 127 for char in failed[0]["message"] + failed[0]["note"]["tool"])


def test_input_never_closed_ends_the_hook_with_nothing_recorded(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A payload whose stdin is never closed held the hook until it was: past the harness's timeout (which kills
    only the `sh` the install runs it with) it then recorded what the harness had given up on. The hook waits
    INPUT_SECONDS, says so in hooks.log, records nothing and exits 0; a payload closed in time is recorded."""
    import io

    from continuity.adapters import hook_fast

    monkeypatch.setattr(hook_fast, "INPUT_SECONDS", 0.3)
    stop = json.dumps({"hook_event_name": "Stop", "session_id": "s1", "cwd": str(project)}).encode()
    for closed in (False, True):
        read, write = os.pipe()
        os.write(write, stop)
        if closed:
            os.close(write)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.FileIO(read, "rb")))
        try:
            assert hook_fast.handle("claude-code", str(project)) == 0
        finally:
            sys.stdin.close()
            if not closed:
                os.close(write)
        recorded = [path for path in all_event_files(project) if b"turn_end" in path.read_bytes()]
        assert len(recorded) == (1 if closed else 0), closed
    log = (project / ".agent" / "runtime-continuity" / "local" / "hooks.log").read_text()
    assert log.count("hook input not closed within 0.3 s; nothing recorded") == 1, log
    assert capsys.readouterr().err == "continuity hook: hook input not closed within 0.3 s; nothing recorded\n"
