"""The session-start brief reads the tasks, team, workstreams and handoffs models only for a project that used them.

A model that holds no state for the brief's project is handed over undecoded (catchup.catch_up's `sparse`), and
the brief's part of it is what the model's view gives before any of its events: the same brief, byte for byte,
as when every model is decoded. Other projects of the same store keep their state.
"""

from __future__ import annotations

import json
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
    refresh(made, tuple(catchup_models()))
    made.open_log().append(WorkLogged(project="demo", message="one more", agent_id="amy"))
    return made


def catchup_models() -> list[str]:
    from projections.registry import REGISTRY

    return list(REGISTRY)


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
    assert models.partial == {"tasks", "team", "workstreams"}  # demo has a handoff: that model is read
    assert models.state("tasks").projects == {} and models.project("demo").has("handoffs")
    assert models.state("tasks").last_name == models.state("overview").last_name
    saved = catchup.load(store, __import__("projections.registry", fromlist=["REGISTRY"]).REGISTRY["tasks"])
    assert saved is not None and saved.state.last_name == models.state("overview").last_name
    whole = current_view(store, BRIEF_MODELS).models
    assert whole.partial == set()
    other = whole.project("other").of("tasks")
    assert [task.title for task in other.tasks.values()] == ["the other task"] and other.runs


def test_a_project_that_makes_a_task_reads_the_tasks_model_again(store: Store, capsys: Capture) -> None:
    """Once `demo` makes a task, its brief decodes the tasks model and shows the task."""
    cli(capsys, "task", "create", "--title", "demo's own task", "--agent", "ann", "--assign", "ann")
    view = current_view(store, BRIEF_MODELS, sparse={name: "demo" for name in SPARSE_MODELS})
    assert "tasks" not in view.models.partial
    brief = service.resume_bundle(store, Identity(project="demo", agent_id="ann", session_id="s1"), fmt="json")
    assert [task["title"] for task in brief.data["tasks"]["open_tasks"]] == ["demo's own task"]
