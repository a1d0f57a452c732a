"""The read-model registry on disk: a new model is one module and one line, saved in its own file."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from continuity.core.initialize import init_store
from continuity.core.store import Store
from continuity.readside.catchup import model_path
from continuity.readside.views import SESSION_MODELS
from continuity.readside.writers import refresh
from events.base import Event
from events.session import SessionEnded
from events.worklog import WorkLogged
from projections.readmodel import ReadModel
from projections.registry import REGISTRY


class Words(msgspec.Struct, kw_only=True):
    """A test read model's state: how many words the project's messages held."""

    words: int = 0
    logs: int = 0


def count_words(state: Words, name: str, event: Event) -> Words:
    state.words += len(event.message.split())
    return state


def count_log(state: Words, name: str, event: WorkLogged) -> Words:
    state.logs += 1
    return count_words(state, name, event)


def words_model(format: int) -> ReadModel[Words]:
    return ReadModel("words", format=format, state=Words, initial=Words,
                     folds={Event: count_words, WorkLogged: count_log})


@pytest.fixture
def store(tmp_path: Path) -> Store:
    made, _ = init_store(tmp_path, project="demo", language="en")
    log = made.open_log()
    log.append(WorkLogged(project="demo", message="one two three"))
    log.append(WorkLogged(project="other", message="four"))
    refresh(made)  # the shipped models, saved
    return made


def mtimes(store: Store) -> dict[str, int]:
    return {name: os.stat(model_path(store, REGISTRY[name])).st_mtime_ns for name in SESSION_MODELS}


def test_a_new_model_rebuilds_catches_up_and_saves_alone(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered in one line, a test model builds from the log, catches up and has its own file."""
    monkeypatch.setitem(REGISTRY, "words", words_model(1))
    before = mtimes(store)
    outcome = refresh(store, ("words",))
    words = outcome.models.project("demo").of("words")
    assert (words.words, words.logs) == (3, 1) and outcome.models.project("other").of("words").words == 1
    assert outcome.rebuilt and outcome.folded == 2
    assert os.path.isfile(model_path(store, REGISTRY["words"]))
    assert mtimes(store) == before  # no other model's file was touched

    store.open_log().append(WorkLogged(project="demo", message="five six"))
    again = refresh(store, ("words",))
    assert (again.rebuilt, again.folded) == (False, 1)
    assert again.models.project("demo").of("words").words == 5
    assert mtimes(store) == before


def test_bumping_a_format_rebuilds_only_that_model(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model saved with another format is rebuilt; the others catch up incrementally."""
    monkeypatch.setitem(REGISTRY, "words", words_model(1))
    refresh(store, (*SESSION_MODELS, "words"))
    store.open_log().append(WorkLogged(project="demo", message="seven"))
    monkeypatch.setitem(REGISTRY, "words", words_model(2))
    outcome = refresh(store, (*SESSION_MODELS, "words"))
    assert outcome.rebuilt and outcome.folded == 3  # the words model read the whole log again
    assert "projections (words) rebuilt" in outcome.warnings[0]
    assert outcome.models.project("demo").of("words").words == 4
    assert outcome.models.state("overview").events_folded == 3  # caught up by one event, not rebuilt
    assert outcome.models.project("demo").events == 2


def test_a_command_loads_only_the_models_it_reads(store: Store) -> None:
    """Catching up one model neither loads nor saves the others."""
    store.open_log().append(WorkLogged(project="demo", message="eight"))
    before = mtimes(store)
    saved = Path(model_path(store, REGISTRY["worklog"])).read_bytes()
    outcome = refresh(store, ("worklog",))
    assert set(outcome.models.states) == {"worklog"}
    after = mtimes(store)
    assert Path(model_path(store, REGISTRY["worklog"])).read_bytes() != saved
    assert {name: after[name] for name in SESSION_MODELS if name != "worklog"} == {
        name: before[name] for name in SESSION_MODELS if name != "worklog"}


# --- events a model passes over: counters only, the saved state left undecoded ---------------------------------


def test_passes_must_name_a_fold() -> None:
    """`passes` speaks of the folds' own entries: one for an event type with no fold is a mistake, said at once."""
    with pytest.raises(ValueError, match="no fold"):
        ReadModel("words", format=1, state=Words, initial=Words, folds={WorkLogged: count_log},
                  passes={Event: lambda event: True})


def test_events_passed_over_move_the_counters_without_decoding_the_state(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tasks model passes over events of no run: a catch-up of only those saves its counters, never decoding
    (nor re-encoding) the tasks, and the saved model is what a rebuild makes, byte for byte."""
    from continuity.readside import catchup
    from events.task import TaskCreated
    from projections.tasks import TaskBrief, TasksState

    store.open_log().append(TaskCreated(project="demo", task_id="T1", title="the task"))
    refresh(store, ("tasks", "worklog"))
    for word in ("nine", "ten", "eleven"):
        store.open_log().append(WorkLogged(project="demo", message=word))
    decoded: list[object] = []
    real = catchup._state_decoder
    monkeypatch.setattr(catchup, "_state_decoder", lambda kind: decoded.append(kind) or real(kind))
    outcome = refresh(store, ("tasks", "worklog"), views={"tasks": TaskBrief})  # as the session-start brief reads
    assert TasksState not in decoded and TaskBrief in decoded and outcome.whole == ["worklog"]
    assert outcome.folded == 3
    tasks = outcome.models.state("tasks")
    assert tasks.events_folded == 6 and tasks.last_name == outcome.models.state("worklog").last_name
    assert outcome.models.project("demo").of("tasks").tasks["T1"].title == "the task"
    incremental = catchup.load(store, REGISTRY["tasks"])
    refresh(store, ("tasks",), rebuild=True)
    rebuilt = catchup.load(store, REGISTRY["tasks"])
    assert incremental is not None and rebuilt is not None
    assert msgspec.msgpack.encode(incremental.state) == msgspec.msgpack.encode(rebuilt.state)
    assert refresh(store, ("tasks",)).folded == 0


def test_sessions_pass_over_events_of_no_session_run_or_host(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log written in a terminal (no session, run or host) leaves the sessions model as it was: a catch-up of only
    those does not decode it, and what it saves is what a rebuild makes, byte for byte. Each of a session, a run, a
    host, or a host switch (its host in `to_host`) is folded."""
    from continuity.readside import catchup
    from events.archive import HostSwitched
    from projections.sessions import SessionsState

    log = store.open_log()
    log.append(WorkLogged(project="demo", message="in a session", session_id="s1", host="codex"))
    refresh(store, ("sessions",))
    for word in ("quiet", "still quiet"):
        log.append(WorkLogged(project="demo", message=word))
    log.append(WorkLogged(project="fourth", message="a project with no session"))
    decoded: list[object] = []
    real = catchup._state_decoder
    monkeypatch.setattr(catchup, "_state_decoder", lambda kind: decoded.append(kind) or real(kind))
    outcome = refresh(store, ("sessions",), views={"sessions": SessionsState})
    assert outcome.folded == 3 and outcome.whole == []
    assert SessionsState in decoded  # as the view the command asked for, after the catch-up
    decoded.clear()
    incremental = catchup.load(store, REGISTRY["sessions"])
    refresh(store, ("sessions",), rebuild=True)
    rebuilt = catchup.load(store, REGISTRY["sessions"])
    assert incremental is not None and rebuilt is not None
    assert msgspec.msgpack.encode(incremental.state) == msgspec.msgpack.encode(rebuilt.state)
    state = rebuilt.state
    assert "fourth" not in state.projects and state.events_folded == 6
    assert list(state.projects["demo"].sessions) == ["s1"] and state.projects["demo"].last_host == "codex"
    log.append(WorkLogged(project="demo", message="a run", run_id="r1"))
    log.append(WorkLogged(project="demo", message="a host", host="cursor"))
    log.append(HostSwitched(project="demo", from_host="cursor", to_host="claude-code"))
    log.append(WorkLogged(project="demo", message="a session", session_id="s2"))
    after = refresh(store, ("sessions",)).models.project("demo").of("sessions")
    assert list(after.runs) == ["r1"] and list(after.sessions) == ["s1", "s2"]
    assert after.last_host == "claude-code"


def test_a_state_decoded_only_to_be_handed_over_is_saved_as_it_was_read(store: Store) -> None:
    """A model that folds nothing of a catch-up but is handed over whole (the documents read the sessions) is saved
    from the bytes it was read from, its counters moved: the same bytes a rebuild saves; a fold after that (a later
    catch-up) starts from them."""
    from continuity.readside import catchup

    log = store.open_log()
    log.append(WorkLogged(project="demo", message="in a session", session_id="s1", host="codex"))
    refresh(store)
    log.append(WorkLogged(project="demo", message="quiet"))
    outcome = refresh(store)
    assert outcome.folded == 1 and "sessions" in outcome.whole
    assert outcome.models.project("demo").of("sessions").sessions["s1"].events == 1
    kept = catchup.load(store, REGISTRY["sessions"])
    assert kept is not None and kept.state.events_folded == 4 and kept.last_read == outcome.models.last_name
    refresh(store, ("sessions",), rebuild=True)
    rebuilt = catchup.load(store, REGISTRY["sessions"])
    assert rebuilt is not None
    assert msgspec.msgpack.encode(kept) == msgspec.msgpack.encode(rebuilt)
    log.append(WorkLogged(project="demo", message="again", session_id="s1"))
    assert refresh(store).models.project("demo").of("sessions").sessions["s1"].events == 2


def test_an_event_a_model_passes_over_makes_no_project(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Folded or replayed, an event passed over leaves the state as it was: not even a new project's empty state."""
    from continuity.readside.replay import models_until

    model = ReadModel("words", format=1, state=Words, initial=Words, folds={Event: count_words},
                      passes={Event: lambda event: event.message.startswith("quiet")})
    monkeypatch.setitem(REGISTRY, "words", model)
    store.open_log().append(WorkLogged(project="third", message="quiet please"))
    store.open_log().append(WorkLogged(project="demo", message="loud words"))
    outcome = refresh(store, ("words",))
    assert sorted(outcome.models.state("words").projects) == ["demo", "other"]
    assert outcome.models.project("demo").of("words").words == 5
    log = store.open_reader()
    head = log.head_name()
    assert head is not None
    replayed = models_until(log, head, [], ("words",)).state("words")
    assert msgspec.msgpack.encode(replayed) == msgspec.msgpack.encode(outcome.models.state("words"))


def test_every_writer_acts_only_on_events_its_model_folds() -> None:
    """A catch-up calls a model's writer only for the events its folds take (and do not pass over): each writer's
    kinds (the documents it writes from them) must be among those, or its documents would go stale."""
    from continuity.workstreams.files import KINDS
    from events.codec import default_codec

    by_kind = default_codec().by_kind
    acts_on = {
        "archives": ["archive.created"], "team": ["snapshot.taken"], "workstreams": sorted(KINDS),
        "roles": [kind for kind in by_kind if kind.startswith("role.")],
        "handoffs": [kind for kind in by_kind if kind.startswith("handoff.")],
        "tasks": ["task.updated", "run.completed", "session.ended"],  # the kinds that make or fill in memories
    }
    #: A kind whose fold a test passes over only where the writer has nothing to write: a session ended with no run
    #: makes no session summary.
    passed_when = {("tasks", "session.ended"): (SessionEnded(project="demo"),
                                                SessionEnded(project="demo", run_id="r1"))}
    for name, kinds in acts_on.items():
        assert kinds, name
        for kind in kinds:
            fold, passes = REGISTRY[name].entry_for(by_kind[kind])
            assert fold is not None, (name, kind)
            if (name, kind) in passed_when:
                nothing, something = passed_when[name, kind]
                assert passes is not None and passes(nothing) and not passes(something)
            else:
                assert passes is None, (name, kind)
