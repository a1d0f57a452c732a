"""Gemini CLI itself, end to end: `gemini -p` against the model stub (GOOGLE_GEMINI_BASE_URL), hooks installed.

The binary always runs against the stub. The hook assertions need `continuity install
gemini` (the Gemini CLI adapter); where the installed continuity has none, they are skipped
saying so. Gemini CLI 0.61 needs a trusted folder for a headless run
(GEMINI_CLI_TRUST_WORKSPACE=true), and an explicit model (`-m`): without one it first asks a
routing classifier model, which the stub does not play.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Project, kinds, make_project
from tests.e2e.installs import GEMINI_CLI, harness_program
from tests.e2e.model_stub import FINAL_TEXT, ModelStub, ToolCall

pytestmark = pytest.mark.e2e

MODEL = "gemini-2.5-flash"
NO_ADAPTER = "the installed continuity offers no `continuity install gemini` (an older checkout?)"


@pytest.fixture(scope="module")
def gemini() -> Path:
    """The `gemini` program at the pinned version (npm, cached)."""
    return harness_program(GEMINI_CLI)


@pytest.fixture
def project(tmp_path: Path, gemini: Path, continuity_bin: Path, model_stub: ModelStub) -> Project:
    """A project where Gemini CLI talks only to the stub (API-key auth, no telemetry, no update check)."""
    made = make_project(tmp_path, [continuity_bin, gemini.parent], GEMINI_API_KEY="e2e-dummy-key",
                        GOOGLE_GEMINI_BASE_URL=model_stub.base_url, GEMINI_CLI_TRUST_WORKSPACE="true",
                        GEMINI_CLI_NO_RELAUNCH="true")
    settings = made.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }))
    return made


def has_adapter(project: Project) -> bool:
    """Whether this continuity can `install gemini` (its install help lists the harness)."""
    usage = project.continuity("install", "--help").stdout.split("\n\n", 1)[0]
    return "gemini" in usage


def with_hooks(project: Project) -> Project:
    """The project after `continuity install gemini`; a skip when this continuity has no Gemini adapter."""
    if not has_adapter(project):
        pytest.skip(NO_ADAPTER)
    project.continuity("install", "gemini")
    return project


def run_gemini(project: Project, stub: ModelStub, prompt: str, steps: list[ToolCall]) -> dict[str, Any]:
    """One `gemini -p --output-format json` run of the scripted `steps`; its JSON result (exit 0 asserted)."""
    stub.reset(steps)
    done = project.run("gemini", "-m", MODEL, "-p", prompt, "--output-format", "json", "--yolo")
    assert done.returncode == 0, f"gemini exited {done.returncode}: {done.stderr[-2000:]}"
    result: dict[str, Any] = json.loads(done.stdout[done.stdout.index("{"):])
    assert result["response"] == FINAL_TEXT, result
    return result


def shell(command: str) -> ToolCall:
    return ToolCall("run_shell_command", {"command": command, "description": "e2e step"})


def stream_bodies(stub: ModelStub) -> list[str]:
    """The bodies of the streamed generateContent requests Gemini CLI sent, as text."""
    return [item.text() for item in stub.model_requests(":streamGenerateContent")]


def test_gemini_cli_runs_a_shell_call_against_the_stub(project: Project, model_stub: ModelStub) -> None:
    """Without hooks: Gemini CLI talks to the stub, runs the scripted shell call and answers (exit 0)."""
    result = run_gemini(project, model_stub, "write out.txt", [shell("echo hi-gemini > out.txt")])
    assert (project.root / "out.txt").read_text() == "hi-gemini\n"
    assert result["stats"]["tools"]["totalCalls"] == 1
    assert len(stream_bodies(model_stub)) == 2


def test_first_session_records_the_shell_call_and_the_brief_reaches_the_model(project: Project,
                                                                              model_stub: ModelStub) -> None:
    """With `continuity install gemini`: start, brief served and sent, the turn, the shell command, the end."""
    with_hooks(project)
    before = project.events()[-1]["event_id"]
    import time

    run_gemini(project, model_stub, "write out.txt", [shell("echo hi-gemini > out.txt")])
    ends = time.monotonic() + 10  # Gemini CLI does not wait for its SessionEnd hook (docs/adapters.md)
    while True:
        recorded = [e for e in project.events() if e["event_id"] > before]
        if kinds(recorded)[-1:] == ["session.ended"] or time.monotonic() > ends:
            break
        time.sleep(0.1)
    assert {e["host"] for e in recorded} == {"gemini"}
    shape = kinds(recorded)
    assert shape[:2] == ["session.started", "context.served"] and "command" in shape
    assert shape[-1] == "session.ended"
    [command] = [e for e in recorded if e.get("type") == "command"]
    assert command["refs"]["commands"][0]["command"] == "echo hi-gemini > out.txt"
    assert any("## Next action\\nadd the refund tests" in body for body in stream_bodies(model_stub))


def test_a_failed_command_is_recorded_with_its_exit_code(project: Project, model_stub: ModelStub) -> None:
    """A shell command that exits 3 under Gemini CLI: recorded with exit code 3."""
    with_hooks(project)
    before = project.events()[-1]["event_id"]
    run_gemini(project, model_stub, "run the check", [shell("echo 'refund check failed' >&2; exit 3")])
    recorded = [e for e in project.events() if e["event_id"] > before]
    [command] = [e for e in recorded if e.get("type") in ("command", "command_failed")]
    assert command["refs"]["commands"][0]["exit_code"] == 3


def test_a_broken_store_never_blocks_gemini_cli(project: Project, model_stub: ModelStub) -> None:
    """Every hook meets a store that is a file: Gemini CLI still exits 0, runs the command and answers."""
    with_hooks(project)
    shutil.rmtree(project.store)
    project.store.write_text("not a store\n")
    run_gemini(project, model_stub, "keep working", [shell("echo still-works > out.txt")])
    assert (project.root / "out.txt").read_text() == "still-works\n"
