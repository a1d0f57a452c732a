"""The session-start brief reads the tasks, team, workstreams and handoffs models only for a project that used them.

A model that holds no state for the brief's project is handed over undecoded (catchup.catch_up's `sparse`), and
the brief's part of it is what the model's view gives before any of its events: the same brief, byte for byte,
as when every model is decoded. Other projects of the same store keep their state.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.identity import Identity
from continuity.core.store import Store
from continuity.readside import catchup
from continuity.readside.query import current_view
from continuity.readside.views import BRIEF_MODELS, SPARSE_MODELS
from continuity.readside.writers import refresh
from continuity.sessions import brief, service
from events.handoff import HandoffCreated
from events.worklog import WorkLogged
from projections.registry import REGISTRY

Capture = pytest.CaptureFixture[str]


def cli(capsys: Capture, *args: str) -> str:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.fixture
def store(project: Path, capsys: Capture) -> Store:
    """Project `demo` logs and checkpoints and has a handoff to ann; project `other`, in the same store, has a task,
    a run and a handoff. Every model caught up and saved; then one more event of `demo`."""
    cli(capsys, "log", "-m", "edited the parser", "--agent", "amy")
    cli(capsys, "checkpoint", "-m", "parser done", "--next", "wire the CLI", "--agent", "amy")
    cli(capsys, "handoff", "create", "--agent", "amy", "--to", "ann", "--message", "take over the review")
    created = json.loads(cli(capsys, "task", "create", "--title", "the other task", "--project", "other", "--json"))
    cli(capsys, "run", "start", "--task", created["task_id"], "--project", "other", "--session", "s9")
    made = Store(str(project))
    made.open_log().append(HandoffCreated(project="other", agent_id="bo", handoff_id="H-other", to_agent="cy",
                                          message="theirs"))
    refresh(made, tuple(REGISTRY))
    made.open_log().append(WorkLogged(project="demo", message="one more", agent_id="amy"))
    return made


def comparable(brief: Any) -> tuple[Any, str]:
    data = {key: value for key, value in brief.data.items() if key != "generated_at"}
    text = "\n".join(line for line in brief.text.splitlines()
                     if "brief generated" not in line and "generated_at" not in line)
    return data, text


@pytest.mark.parametrize("agent", [None, "ann", "amy"])
def test_the_brief_without_the_models_its_project_never_used_is_the_brief_with_them(
    store: Store, agent: str | None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`demo` never made a task, run, snapshot or workstream: the brief reads those models undecoded, and says
    exactly what it says with every model decoded and every part of it made by its model's view function (ann, the
    handoff's addressee, still sees it in her team part)."""
    who = Identity(project="demo", agent_id=agent, session_id="s1", host="claude-code")
    decoded: list[object] = []
    real = catchup._state_decoder
    monkeypatch.setattr(catchup, "_state_decoder", lambda kind: decoded.append(kind) or real(kind))
    sparse = service.resume_bundle(store, who, fmt="json")
    assert "projections.tasks:TaskBrief" not in decoded
    monkeypatch.setattr(service, "SPARSE_MODELS", ())
    monkeypatch.setattr(brief, "_holds", lambda project, name: name in project.models.states)  # every part read
    whole = service.resume_bundle(store, who, fmt="json")
    assert "projections.tasks:TaskBrief" in decoded
    assert comparable(sparse) == comparable(whole)
    if agent == "ann":
        assert sparse.data["team"] == {"agent": "ann", "teams": [], "teams_total": 0,
                                       "handoffs": sparse.data["pending_handoffs"]}
        assert len(sparse.data["pending_handoffs"]) == 1
    monkeypatch.undo()
    shown = comparable(service.resume_bundle(store, who, fmt="md"))[1]
    monkeypatch.setattr(service, "SPARSE_MODELS", ())
    monkeypatch.setattr(brief, "_holds", lambda project, name: name in project.models.states)
    assert shown == comparable(service.resume_bundle(store, who, fmt="md"))[1]


def test_models_without_the_project_are_handed_over_with_no_project_and_saved_whole(store: Store) -> None:
    """Caught up for `demo`, the models it never used come back holding no project (Models.partial), their saved
    files still hold `other`'s state, and the counters moved past the new event."""
    view = current_view(store, BRIEF_MODELS, sparse={name: "demo" for name in SPARSE_MODELS})
    models = view.models
    assert models.partial == {"tasks": 1, "team": 0, "workstreams": 0}  # demo has a handoff: that model is read
    assert models.state("tasks").projects == {} and models.project("demo").has("handoffs")
    assert models.state("tasks").last_name == models.state("overview").last_name
    saved = catchup.load(store, REGISTRY["tasks"])
    assert saved is not None and saved.state.last_name == models.state("overview").last_name
    whole = current_view(store, BRIEF_MODELS).models
    assert whole.partial == {}
    other = whole.project("other").of("tasks")
    assert [task.title for task in other.tasks.values()] == ["the other task"] and other.runs


def test_a_project_that_makes_a_task_reads_the_tasks_model_again(store: Store, capsys: Capture) -> None:
    """Once `demo` makes a task, its brief decodes the tasks model and shows the task."""
    cli(capsys, "task", "create", "--title", "demo's own task", "--agent", "ann", "--assign", "ann")
    view = current_view(store, BRIEF_MODELS, sparse={name: "demo" for name in SPARSE_MODELS})
    assert "tasks" not in view.models.partial
    brief = service.resume_bundle(store, Identity(project="demo", agent_id="ann", session_id="s1"), fmt="json")
    assert [task["title"] for task in brief.data["tasks"]["open_tasks"]] == ["demo's own task"]


@pytest.fixture
def memory(project: Path, capsys: Capture) -> Path:
    """Project `busy` of the store has a completed task, so a memory and its file; `demo`, the store's own project,
    never used tasks. The memory file's path."""
    created = json.loads(cli(capsys, "task", "create", "--title", "T", "--project", "busy", "--json"))
    cli(capsys, "run", "start", "--task", created["task_id"], "--project", "busy", "--session", "b1")
    cli(capsys, "task", "update", created["task_id"], "--status", "completed", "--project", "busy", "--session", "b1")
    cli(capsys, "log", "-m", "own project work")
    cli(capsys, "resume-bundle")
    [found] = (project / ".agent" / "runtime-continuity" / "memories").glob("*.md")
    return found


def test_a_brief_that_reads_no_task_still_restores_the_memories_folder(
    project: Path, memory: Path, capsys: Capture,
) -> None:
    """The memories folder removed: the next brief of `demo` (which hands the tasks model over without its
    projects) writes the other project's memory again, as the brief always did."""
    text = memory.read_bytes()
    shutil.rmtree(memory.parent)
    view = current_view(Store(str(project)), BRIEF_MODELS, sparse={name: "demo" for name in SPARSE_MODELS})
    assert view.models.partial.get("tasks") == 1
    cli(capsys, "resume-bundle")
    assert memory.read_bytes() == text


def test_a_memory_a_sweep_could_not_write_is_written_by_the_next_brief(
    project: Path, memory: Path, capsys: Capture,
) -> None:
    """A sweep that could not write a memory (something else where its file goes) leaves a mark, so the next brief
    of a project that never used tasks writes it once it can, and the mark goes."""
    text = memory.read_bytes()
    local = project / ".agent" / "runtime-continuity" / "local"
    memory.unlink()
    memory.mkdir()  # its file cannot be written: a folder that is not empty stands where it goes
    (memory / "keep").write_text("x")
    (local / "memories-written").unlink()  # the sweep starts from the oldest kept memory
    cli(capsys, "resume-bundle")
    assert memory.is_dir() and (local / "memories-unwritten").exists()
    shutil.rmtree(memory)
    cli(capsys, "log", "-m", "more")
    cli(capsys, "resume-bundle")
    assert memory.read_bytes() == text and not (local / "memories-unwritten").exists()
