"""Ids that look like secrets: refused on the CLI (even with --redact), replaced by a safe id in hooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.adapters.hooks import run_hook
from continuity.cli import main
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
TOKENS = ["ghp_" + "a1B2c3D4e5" * 4, "sk-ant-api03-" + "Zx9" * 30, "AKIA" + "ABCDEFGHIJKLMNOP",
          "xoxb-" + "1234567890-" * 3 + "abcdef"]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("flag", ["--agent", "--session", "--run", "--task", "--mission", "--host", "--project"])
@pytest.mark.parametrize("redact", [False, True])
def test_cli_refuses_a_secret_id_with_exit_4(project: Path, capsys: Capture, token: str, flag: str,
                                             redact: bool) -> None:
    """An identity flag holding a token: exit 4 (or 2 for a project name), one line, never internal, nothing written."""
    code = main(["log", "-m", "x", flag, token, *(["--redact"] if redact else [])])
    err = capsys.readouterr().err
    assert code in ((2, 4) if flag == "--project" else (4,)), err
    assert err.count("\n") == 1 and "internal" not in err and token not in err
    if flag != "--project":  # never the advice to pass --redact, which is refused for an id in turn
        assert "an id cannot be redacted" in err and "--redact" not in err, err
    assert all_event_files(project) == []


@pytest.mark.parametrize("variable", ["CONTINUITY_SESSION_ID", "CONTINUITY_AGENT", "CONTINUITY_RUN_ID"])
def test_cli_refuses_a_secret_id_from_the_environment(project: Path, capsys: Capture,
                                                      monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """The same id from the environment, with --redact: exit 4, not an internal error."""
    monkeypatch.setenv(variable, TOKENS[0])
    assert main(["log", "-m", "x", "--redact"]) == 4
    assert "internal" not in capsys.readouterr().err


@pytest.mark.parametrize("field", ["session_id", "agent_id", "model"])
@pytest.mark.parametrize("hook", ["SessionStart", "PostToolUse", "Stop"])
def test_hooks_replace_a_secret_id_with_a_safe_one(project: Path, capsys: Capture, field: str, hook: str) -> None:
    """A hook payload's id or model that looks like a token: recorded under a safe id, the token stored nowhere."""
    payload = {"hook_event_name": hook, "session_id": "s1", "cwd": str(project), field: TOKENS[0],
               "tool_name": "Bash", "tool_input": {"command": "make test"}, "tool_response": {"exit_code": 0}}
    result = run_hook("claude-code", json.dumps(payload).encode(), root=str(project))
    assert result.recorded, capsys.readouterr().err
    if hook == "SessionStart":
        assert json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    for path in (project / ".agent").rglob("*"):
        if path.is_file():
            assert TOKENS[0].encode() not in path.read_bytes(), path
    stored = [json.loads(path.read_bytes()) for path in all_event_files(project)]
    if field != "model":
        assert all(event[field].startswith("id-") for event in stored if event.get(field))


def test_the_safe_id_is_stable(project: Path) -> None:
    """The same token gives the same safe id, so a session's events stay together."""
    for _ in range(2):
        payload = {"hook_event_name": "Stop", "session_id": TOKENS[1], "cwd": str(project)}
        run_hook("codex", json.dumps(payload).encode(), root=str(project))
    ids = {json.loads(path.read_bytes())["session_id"] for path in all_event_files(project)}
    assert len(ids) == 1 and next(iter(ids)).startswith("id-")


@pytest.mark.parametrize("record", [False, True])
def test_a_read_with_an_id_no_event_may_carry_still_answers(project: Path, capsys: Capture,
                                                             monkeypatch: pytest.MonkeyPatch, record: bool) -> None:
    """`CONTINUITY_AGENT="x y"` (no valid id for continuity's own commands): writes refuse it (exit 2), but
    `resume-bundle` is a read and answers (it exited 2); with --record the brief is served and not recorded."""
    monkeypatch.setenv("CONTINUITY_AGENT", "x y")
    assert main(["log", "-m", "x"]) == 2
    capsys.readouterr()
    assert main(["resume-bundle", *(["--record"] if record else [])]) == 0
    captured = capsys.readouterr()
    assert "## Next action" in captured.out
    assert ("served but not recorded" in captured.err) is record
    assert all_event_files(project) == []


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("redact", [False, True])
def test_a_secret_in_a_list_of_ids_is_named_with_its_rule(project: Path, capsys: Capture, token: str,
                                                           redact: bool) -> None:
    """A task's labels are ids (no redaction marker fits one): the refusal named "field an id field ... (rule
    secret)" for any secret in a list; it names the entry and the rule, as for a top-level id."""
    from events.guard import find_secret

    code = main(["task", "create", "--title", "fix login", "--label", "ok", "--label", token,
                 *(["--redact"] if redact else [])])
    err = capsys.readouterr().err
    assert code == 4 and f"field labels[1] looks like a secret (rule {find_secret(token)})" in err, err
    assert token not in err and all_event_files(project) == []


@pytest.mark.parametrize("token", TOKENS)
def test_warning_and_hook_problem_lines_redact_what_looks_like_a_secret(project: Path, capsys: Capture,
                                                                       token: str) -> None:
    """The lines on stderr that quote what they met (a file name in a synced tree, a value of a settings file):
    a warning and a hook's problem line (also kept in hooks.log) show a token as [REDACTED:<rule>]."""
    from continuity.adapters.hooks import report
    from continuity.cli.output import warn
    from continuity.core.store import Store

    warn([f"not an event file, left on the branch only: events/20261206/{token}"])
    report(Store(project), "claude-code", "SessionStart", f"settings value {token} is not a list")
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and err.count("[REDACTED:") == 2 and token not in err, err
    log = project / ".agent" / "runtime-continuity" / "local" / "hooks.log"
    assert "[REDACTED:" in log.read_text() and token not in log.read_text()
