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
