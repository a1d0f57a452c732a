"""Claude Code itself, end to end: the real CLI against the model stub, with continuity's hooks installed."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Project, kinds, make_project
from tests.e2e.installs import CLAUDE_CODE, harness_program
from tests.e2e.model_stub import FINAL_TEXT, ModelStub, ToolCall

pytestmark = pytest.mark.e2e

#: Tools the scripted turns use; allowed up front, so no permission prompt (and no root-only bypass flag).
ALLOWED = ("Bash", "Write", "Edit")


@pytest.fixture(scope="module")
def claude() -> Path:
    """The `claude` program at the pinned version (npm, cached)."""
    return harness_program(CLAUDE_CODE)


@pytest.fixture
def project(tmp_path: Path, claude: Path, continuity_bin: Path, model_stub: ModelStub) -> Project:
    """A project with `continuity install claude-code` done; Claude Code talks only to the stub."""
    made = make_project(
        tmp_path, [continuity_bin, claude.parent],
        ANTHROPIC_BASE_URL=model_stub.base_url, ANTHROPIC_API_KEY="sk-e2e-dummy-key",
        DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", DISABLE_BUG_COMMAND="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY="1",
    )
    made.continuity("install", "claude-code")
    return made


def run_claude(project: Project, stub: ModelStub, prompt: str, steps: list[ToolCall],
               resume: str | None = None) -> dict[str, Any]:
    """One non-interactive Claude Code run of the scripted `steps`; its JSON result (exit 0 asserted)."""
    stub.reset(steps)
    argv = ["claude", "-p", prompt, "--output-format", "json", "--allowedTools", *ALLOWED]
    done = project.run(*argv, *(["--resume", resume] if resume else []))
    assert done.returncode == 0, f"claude exited {done.returncode}: {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["is_error"] is False, result
    return result


def messages_requests(stub: ModelStub) -> list[str]:
    """The bodies of the main-loop Messages requests Claude Code sent, as text."""
    return [item.text() for item in stub.model_requests("/v1/messages") if item.body.get("tools")]


def since(events: list[dict[str, Any]], event_id: str) -> list[dict[str, Any]]:
    """The events after `event_id`."""
    ids = [e["event_id"] for e in events]
    return events[ids.index(event_id) + 1:]


def served_brief(project: Project, served: dict[str, Any]) -> str:
    """The brief a `context.served` event records, replayed with `resume-bundle --as-of` (hash checked)."""
    text = project.continuity("resume-bundle", "--as-of", served["event_id"]).stdout
    assert hashlib.sha256(text.encode()).hexdigest() == served["brief_sha256"]
    return text


def in_request(brief: str, bodies: list[str]) -> bool:
    """Whether the brief reached the model verbatim (as the JSON of a request body spells it)."""
    spelled = json.dumps(brief.rstrip("\n"), ensure_ascii=False)[1:-1]
    return any(spelled in body for body in bodies)


def test_first_session_records_the_shell_call_and_the_edit(project: Project, model_stub: ModelStub) -> None:
    """A first session: start, brief served and sent to the model, the turn, the Bash call, the Write, the end
    (installed with `--turns`: the turn's start and end are recorded too)."""
    project.continuity("install", "claude-code", "--turns")
    before = project.events()[-1]["event_id"]
    notes = project.root / "notes.md"
    result = run_claude(project, model_stub, "write the notes", [
        ToolCall("Bash", {"command": "echo hello-e2e > out.txt", "description": "write out.txt"}),
        ToolCall("Write", {"file_path": str(notes), "content": "# notes\n"}),
    ])
    assert result["result"] == FINAL_TEXT and result["num_turns"] == 3
    assert (project.root / "out.txt").read_text() == "hello-e2e\n" and notes.read_text() == "# notes\n"
    recorded = since(project.events(), before)
    assert kinds(recorded) == ["session.started", "context.served", "turn_start", "command", "edit", "turn_end",
                               "session.ended"]
    started, served = recorded[0], recorded[1]
    assert {e["session_id"] for e in recorded} == {result["session_id"]}
    assert {e["host"] for e in recorded} == {"claude-code"}
    assert started["source"] == "startup" and served["served_to"] == result["session_id"]
    command, edit = recorded[3], recorded[4]
    assert command["refs"]["commands"][0]["command"] == "echo hello-e2e > out.txt"
    assert command["note"]["tool"] == "Bash" and command["note"]["tool_use_id"].startswith("toolu_e2e_")
    assert edit["refs"]["files"] == ["notes.md"] and edit["note"]["tool"] == "Write"  # from the project root
    brief = served_brief(project, served)
    assert "## Next action\nadd the refund tests" in brief
    bodies = messages_requests(model_stub)
    assert len(bodies) == 3 and all(in_request(brief, [body]) for body in bodies)


def test_the_sessions_shell_commands_know_its_session(project: Project, model_stub: ModelStub) -> None:
    """SessionStart writes `export CONTINUITY_SESSION_ID=<id>` into Claude Code's CLAUDE_ENV_FILE: the agent's own
    `continuity` commands in Bash (`run start`, `log`) are the session's, so the PostToolUse hook attributes the
    session's edits to a run started from its shell."""
    result = run_claude(project, model_stub, "which session", [
        ToolCall("Bash", {"command": 'echo "sid=$CONTINUITY_SESSION_ID" > sid.txt', "description": "session id"}),
    ])
    assert (project.root / "sid.txt").read_text() == f"sid={result['session_id']}\n"


def test_a_failed_command_is_recorded_as_failed(project: Project, model_stub: ModelStub) -> None:
    """A Bash command that exits 3: recorded as command_failed with its exit code and error line; the turn ends."""
    before = project.events()[-1]["event_id"]
    run_claude(project, model_stub, "run the failing check", [
        ToolCall("Bash", {"command": "echo 'refund check failed' >&2; exit 3", "description": "failing check"}),
    ])
    recorded = since(project.events(), before)
    assert kinds(recorded) == ["session.started", "context.served", "command_failed", "session.ended"]
    [ref] = recorded[2]["refs"]["commands"]
    assert ref == {"command": "echo 'refund check failed' >&2; exit 3", "exit_code": 3,
                   "summary": "refund check failed"}
    last = model_stub.model_requests("/v1/messages")[-1].body["messages"][-1]["content"]
    assert any(block.get("is_error") is True for block in last)  # the model was told it failed


def test_a_resumed_session_gets_the_brief_with_the_new_next_action(project: Project, model_stub: ModelStub) -> None:
    """Session two (`--resume`): source resume, and the brief it is served carries what session one left."""
    first = run_claude(project, model_stub, "start", [ToolCall("Bash", {"command": "true", "description": "noop"})])
    project.continuity("checkpoint", "-m", "refund tests written", "--next", "wire the refund CLI")
    before = project.events()[-1]["event_id"]
    second = run_claude(project, model_stub, "continue", [], resume=first["session_id"])
    assert second["session_id"] == first["session_id"]
    recorded = since(project.events(), before)
    assert kinds(recorded) == ["session.started", "context.served", "session.ended"]  # no turn markers by default
    assert recorded[0]["source"] == "resume"
    brief = served_brief(project, recorded[1])
    assert "## Next action\nwire the refund CLI" in brief and "ran true" in brief
    [body] = messages_requests(model_stub)
    assert in_request(brief, [body])


def test_compaction_records_it_and_the_model_gets_the_post_compaction_brief(project: Project,
                                                                           model_stub: ModelStub) -> None:
    """`/compact`: a pre-compact checkpoint, a compact-source start with its brief, the compaction; the next
    turn's request carries that brief."""
    first = run_claude(project, model_stub, "start", [ToolCall("Bash", {"command": "true", "description": "noop"})])
    before = project.events()[-1]["event_id"]
    compacted = run_claude(project, model_stub, "/compact", [], resume=first["session_id"])
    assert compacted.get("local_command") == "compact"
    recorded = since(project.events(), before)
    assert "checkpoint.recorded" in kinds(recorded) and "compaction" in kinds(recorded)
    pre = next(e for e in recorded if e["kind"] == "checkpoint.recorded")
    assert pre["phase"] == "pre-compact" and pre["note"]["trigger"] == "manual"
    start = next(e for e in recorded if e["kind"] == "session.started" and e["source"] == "compact")
    served = since(recorded, start["event_id"])[0]
    assert served["kind"] == "context.served"
    brief = served_brief(project, served)
    assert "compaction 1 of this session" in brief
    assert any("summary" in body.lower() for body in [r.text() for r in model_stub.model_requests("/v1/messages")])
    run_claude(project, model_stub, "after the compaction", [], resume=first["session_id"])
    assert in_request(brief, messages_requests(model_stub))


def _store_is_a_file(project: Project) -> None:
    shutil.rmtree(project.store)
    project.store.write_text("not a store\n")


def _event_is_garbage(project: Project) -> None:
    newest = sorted(p for p in (project.store / "events").rglob("*") if p.is_file())[-1]
    newest.chmod(0o644)
    newest.write_bytes(b"\x00\xffnot an event")


@pytest.mark.parametrize(("breakage", "brief_served"), [(_store_is_a_file, False), (_event_is_garbage, True)],
                         ids=["store-is-a-file", "garbage-event"])
def test_a_broken_store_never_blocks_the_harness(project: Project, model_stub: ModelStub, breakage: Any,
                                                 brief_served: bool) -> None:
    """Every hook meets a broken store: Claude Code still exits 0, runs the tool and answers; a garbage
    event still leaves a brief (reads fail open)."""
    breakage(project)
    result = run_claude(project, model_stub, "keep working", [
        ToolCall("Bash", {"command": "echo still-works > out.txt", "description": "write out.txt"}),
    ])
    assert result["result"] == FINAL_TEXT and result["num_turns"] == 2
    assert (project.root / "out.txt").read_text() == "still-works\n"
    bodies = messages_requests(model_stub)
    assert len(bodies) == 2
    assert ("SessionStart hook additional context: # Resume: e2e" in bodies[0]) is brief_served
