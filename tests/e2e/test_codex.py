"""Codex itself, end to end: `codex exec` against the model stub (a Responses-API provider), hooks installed.

Codex 0.171 runs project hooks only in a trusted project and only once they are reviewed;
the config marks the temp project trusted and the run passes `--dangerously-bypass-hook-trust`
(the review is an interactive `/hooks` step). Plugin and app sync are switched off, so
the only traffic is to the stub. Facts this run shows (docs/adapters.md): Codex gives no
exit code in PostToolUse (its `tool_response` is the output text), and an `apply_patch`
fires no PostToolUse, so a Codex file edit is not recorded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Project, kinds, make_project
from tests.e2e.installs import CODEX, harness_program
from tests.e2e.model_stub import FINAL_TEXT, ModelStub, ToolCall

pytestmark = pytest.mark.e2e

MODEL = "gpt-5.1-codex"
COMPACT_LIMIT = 100_000


@pytest.fixture(scope="module")
def codex() -> Path:
    """The `codex` program at the pinned version (npm, cached)."""
    return harness_program(CODEX)


@pytest.fixture
def project(tmp_path: Path, codex: Path, continuity_bin: Path, model_stub: ModelStub) -> Project:
    """A project with `continuity install codex` done; CODEX_HOME's config sends Codex to the stub only."""
    made = make_project(tmp_path, [continuity_bin, codex.parent], E2E_STUB_KEY="sk-e2e-dummy-key")
    codex_home = made.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(f"""\
model = "{MODEL}"
model_provider = "stub"
check_for_update_on_startup = false
model_auto_compact_token_limit = {COMPACT_LIMIT}

[model_providers.stub]
name = "continuity e2e stub"
base_url = "{model_stub.base_url}/v1"
wire_api = "responses"
env_key = "E2E_STUB_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[projects."{made.root}"]
trust_level = "trusted"
""")
    made.env["CODEX_HOME"] = str(codex_home)
    made.continuity("install", "codex")
    return made


def run_codex(project: Project, stub: ModelStub, prompt: str, steps: list[ToolCall], resume: str | None = None,
              usage_tokens: int = 20) -> tuple[str, list[dict[str, Any]]]:
    """One `codex exec --json` run of the scripted `steps`: (thread id, its JSON events); exit 0 asserted."""
    stub.reset(steps, usage_tokens=usage_tokens)
    argv = ["codex", "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust"]
    done = project.run(*argv, *(["resume", resume] if resume else []), prompt)
    assert done.returncode == 0, f"codex exited {done.returncode}: {done.stderr[-2000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines[0]["type"] == "thread.started" and lines[-1]["type"] == "turn.completed", done.stdout[-2000:]
    messages = [e["item"]["text"] for e in lines if e.get("item", {}).get("type") == "agent_message"]
    assert messages[-1] == FINAL_TEXT
    return lines[0]["thread_id"], lines


def bodies(stub: ModelStub) -> list[str]:
    """The bodies of the Responses requests Codex sent, as text."""
    return [item.text() for item in stub.model_requests("/responses")]


def since(events: list[dict[str, Any]], event_id: str) -> list[dict[str, Any]]:
    """The events after `event_id`."""
    ids = [e["event_id"] for e in events]
    return events[ids.index(event_id) + 1:]


def brief_of(project: Project, served: dict[str, Any]) -> str:
    """The brief a `context.served` event records, replayed with `resume-bundle --as-of`."""
    import hashlib

    text = project.continuity("resume-bundle", "--as-of", served["event_id"]).stdout
    assert hashlib.sha256(text.encode()).hexdigest() == served["brief_sha256"]
    return json.dumps(text.rstrip("\n"), ensure_ascii=False)[1:-1]  # as a request body spells it


def test_first_session_records_the_shell_call_and_the_brief_reaches_the_model(project: Project,
                                                                              model_stub: ModelStub) -> None:
    """A first session: start, brief served (and in every request), the turn, the shell command, the end
    (installed with `--turns`: the turn's start and end are recorded too)."""
    project.continuity("install", "codex", "--turns")
    before = project.events()[-1]["event_id"]
    steps = [ToolCall("exec_command", {"cmd": "echo hi > out.txt"})]
    thread, _ = run_codex(project, model_stub, "write out.txt", steps)
    assert (project.root / "out.txt").read_text() == "hi\n"
    recorded = since(project.events(), before)
    assert kinds(recorded) == ["session.started", "context.served", "turn_start", "command", "turn_end"]
    assert {e["session_id"] for e in recorded} == {thread} and {e["host"] for e in recorded} == {"codex"}
    assert recorded[0]["source"] == "startup" and recorded[0]["model"] == MODEL
    [ref] = recorded[3]["refs"]["commands"]
    assert ref["command"] == "echo hi > out.txt"
    brief = brief_of(project, recorded[1])
    assert "## Next action\\nadd the refund tests" in brief
    sent = bodies(model_stub)
    assert len(sent) == 2 and all(brief in body for body in sent)


def test_a_failed_command_keeps_its_output_line(project: Project, model_stub: ModelStub) -> None:
    """A shell command that exits 3: Codex reports it through PostToolUse without an exit code; its output
    line is kept."""
    before = project.events()[-1]["event_id"]
    _, lines = run_codex(project, model_stub, "run the check",
                         [ToolCall("exec_command", {"cmd": "echo 'refund check failed' >&2; exit 3"})])
    [item] = [e["item"] for e in lines if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"]
    assert item["exit_code"] == 3 and item["status"] == "failed"
    recorded = since(project.events(), before)
    assert kinds(recorded) == ["session.started", "context.served", "command"]
    [ref] = recorded[2]["refs"]["commands"]
    assert ref == {"command": "echo 'refund check failed' >&2; exit 3", "exit_code": None,
                   "summary": "refund check failed"}


def test_resume_then_compaction_serve_their_briefs_to_the_model(project: Project, model_stub: ModelStub) -> None:
    """`codex exec resume` after a turn that filled the context: a resume brief, then the auto compaction
    (checkpoint, compaction, compact-source brief), and the next request carries the post-compaction brief."""
    thread, _ = run_codex(project, model_stub, "start", [], usage_tokens=COMPACT_LIMIT * 5)
    project.continuity("checkpoint", "-m", "refund tests written", "--next", "wire the refund CLI")
    before = project.events()[-1]["event_id"]
    again, _ = run_codex(project, model_stub, "continue", [], resume=thread)
    assert again == thread
    recorded = since(project.events(), before)
    assert sorted(kinds(recorded)) == sorted(["checkpoint.recorded", "compaction", "session.started",
                                              "context.served", "session.started", "context.served"])
    pre = next(e for e in recorded if e["kind"] == "checkpoint.recorded")
    assert pre["phase"] == "pre-compact" and pre["note"]["trigger"] == "auto"
    starts = {e["source"]: e for e in recorded if e["kind"] == "session.started"}
    assert set(starts) == {"resume", "compact"}
    resumed = since(recorded, starts["resume"]["event_id"])[0]
    compacted = since(recorded, starts["compact"]["event_id"])[0]
    assert "wire the refund CLI" in brief_of(project, resumed)
    after = brief_of(project, compacted)
    assert "compaction 1 of this session" in after and "wire the refund CLI" in after
    sent = bodies(model_stub)
    assert any("compaction" in json.dumps(item.headers) for item in model_stub.model_requests("/responses"))
    assert after in sent[-1]


def test_a_broken_store_never_blocks_codex(project: Project, model_stub: ModelStub) -> None:
    """Every hook meets a store that is a file: Codex still exits 0, runs the command and answers."""
    import shutil

    shutil.rmtree(project.store)
    project.store.write_text("not a store\n")
    run_codex(project, model_stub, "keep working", [ToolCall("exec_command", {"cmd": "echo still-works > out.txt"})])
    assert (project.root / "out.txt").read_text() == "still-works\n"
    assert len(bodies(model_stub)) == 2
