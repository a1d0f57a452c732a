"""Projections on disk: catch-up equals rebuild, merges in the past, fail-open reads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.core.identity import Identity
from continuity.core.initialize import init_store
from continuity.core.store import Store
from continuity.readside.catchup import models_dir
from continuity.readside.writers import refresh
from continuity.sessions import service
from continuity.sessions.decide import ArchiveRequest
from events.base import Refs, Summary
from events.filelog import FileEventLog
from events.memlog import MemoryEventLog
from events.session import SessionEnded, SessionStarted
from events.worklog import CheckpointRecorded, WorkLogged
from tests.conftest import FakeClock

texts = st.sampled_from(["fix parser", "add tests", "wire CLI", "docs", "refund endpoint", "ship"])

commands = st.one_of(
    st.tuples(st.just("log"), texts, st.sampled_from(["log", "decision", "question"]), st.booleans()),
    st.tuples(st.just("checkpoint"), texts, st.lists(texts, max_size=2), st.lists(texts, max_size=2)),
    st.tuples(st.just("archive"), texts, st.sampled_from(["user", "agent"]), st.booleans()),
    st.tuples(st.just("session"), st.sampled_from(["s1", "s2"]), st.sampled_from(["startup", "compact"]),
              st.booleans()),
    st.tuples(st.just("switch"), st.sampled_from(["codex", "cursor"]), texts, st.booleans()),
)


def new_store(root: Path) -> Store:
    root.mkdir(parents=True)
    store, _ = init_store(root, project="demo", language="en")
    return store


def run_command(store: Store, command: tuple[Any, ...]) -> None:
    log = store.open_log()
    kind = command[0]
    envelope = {"project": "demo", "host": "claude-code", "session_id": "s1"}
    if kind == "log":
        _, text, type_, with_refs = command
        refs = Refs(handoffs=(".agent/handoffs/H-1.json",), artifacts=("out/a.json",)) if with_refs else Refs()
        log.append(WorkLogged(**envelope, message=text, type=type_, refs=refs))
    elif kind == "checkpoint":
        _, text, done, next_ = command
        log.append(CheckpointRecorded(**envelope, message=text, summary=Summary(done=tuple(done), next=tuple(next_))))
    elif kind == "archive":
        _, reason, gate, full = command
        service.archive(store, Identity(**envelope), ArchiveRequest(gate=gate, full=full, reason=reason,
                                                                    note={"goal": reason} if full else None))
    elif kind == "session":
        _, session, source, end = command
        event = SessionEnded(**{**envelope, "session_id": session}) if end else SessionStarted(
            **{**envelope, "session_id": session}, source=source)
        log.append(event)
    else:
        _, to_host, reason, _ = command
        service.archive(store, Identity(**envelope), ArchiveRequest(gate="user", full=True, reason=reason,
                                                                    from_host="claude-code", to_host=to_host,
                                                                    switch=True))


def derived_files(store: Store, home: Path) -> dict[str, bytes]:
    """Every derived file's bytes (archives, state.json, schema, Markdown), by relative path."""
    files: dict[str, bytes] = {}
    for base in (Path(store.path), home / ".agent" / "contexts"):
        for path in sorted(base.rglob("*")):
            relative = str(path.relative_to(base))
            if path.is_file() and not relative.startswith(("events", "local", "config.json", "README.md")):
                files[f"{base.name}/{relative}"] = path.read_bytes()
    return files


def delete_derived(store: Store, home: Path) -> None:
    for name in ("state.json", "archive.schema.json"):
        Path(store.path, name).unlink(missing_ok=True)
    shutil.rmtree(Path(store.path, "archives"), ignore_errors=True)
    shutil.rmtree(home / ".agent" / "contexts", ignore_errors=True)
    shutil.rmtree(models_dir(store), ignore_errors=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(commands, min_size=1, max_size=8))
def test_catch_up_and_rebuild_write_the_same_bytes(tmp_path_factory: pytest.TempPathFactory,
                                                   sequence: list[tuple[Any, ...]]) -> None:
    """For random command sequences, incremental catch-up and a full rebuild give identical files."""
    base = tmp_path_factory.mktemp("seq")
    home = Path(os.environ["HOME"])
    shutil.rmtree(home / ".agent", ignore_errors=True)
    store = new_store(base / "proj")
    for command in sequence:
        run_command(store, command)
        refresh(store)  # incremental, after every command
    incremental = derived_files(store, home)
    again = refresh(store)
    assert again.folded == 0 and derived_files(store, home) == incremental  # replaying twice changes nothing
    delete_derived(store, home)
    outcome = refresh(store)
    assert outcome.rebuilt
    assert derived_files(store, home) == incremental
    assert refresh(store, rebuild=True).folded == outcome.folded
    assert derived_files(store, home) == incremental


def append_at(store: Store, clock: FakeClock, message: str) -> Any:
    log = FileEventLog(store.events_dir, store.local_dir, node=store.node(), clock_us=clock)
    return log.append(WorkLogged(project="demo", message=message))


def test_an_event_merged_in_the_past_is_folded_in(tmp_path: Path) -> None:
    """A file landing before the checkpoint (same day) triggers a rebuild that includes it."""
    store = new_store(tmp_path / "proj")
    clock = FakeClock()
    first = append_at(store, clock, "first")
    clock.advance(10_000_000)
    append_at(store, clock, "third")
    assert refresh(store).folded == 2
    other = MemoryEventLog(node="zzzzzzzz", clock_us=FakeClock(clock.now - 5_000_000))
    other.put_raw(first.name, first.raw)
    merged = other.append(WorkLogged(project="demo", message="second, from another clone"))
    Path(store.open_log().path_of(merged.name)).write_bytes(merged.raw)
    outcome = refresh(store)
    assert outcome.rebuilt and "events before the last catch-up changed (a merge brought some" in outcome.warnings[0]
    messages = [entry.message for entry in outcome.models.project("demo").recent]
    assert messages == ["first", "second, from another clone", "third"]


def test_an_event_merged_into_an_older_day_is_folded_in(tmp_path: Path) -> None:
    """A file landing in an older day's folder (its mtime moves) triggers a rebuild."""
    store = new_store(tmp_path / "proj")
    clock = FakeClock()
    first = append_at(store, clock, "day one")
    clock.advance(2 * 86_400_000_000)
    append_at(store, clock, "day three")
    refresh(store)
    other = MemoryEventLog(node="zzzzzzzz", clock_us=FakeClock(clock.now - 2 * 86_400_000_000 + 1_000_000))
    other.put_raw(first.name, first.raw)
    merged = other.append(WorkLogged(project="demo", message="day one, later, elsewhere"))
    Path(store.open_log().path_of(merged.name)).write_bytes(merged.raw)
    outcome = refresh(store)
    assert outcome.rebuilt
    assert [e.message for e in outcome.models.project("demo").recent] == [
        "day one", "day one, later, elsewhere", "day three"]


def test_new_events_are_folded_incrementally(tmp_path: Path) -> None:
    """After a catch-up, only new events are read."""
    store = new_store(tmp_path / "proj")
    for i in range(5):
        store.open_log().append(WorkLogged(project="demo", message=str(i)))
    assert refresh(store).folded == 5
    store.open_log().append(WorkLogged(project="demo", message="new"))
    outcome = refresh(store)
    assert (outcome.rebuilt, outcome.folded, outcome.warnings) == (False, 1, [])
    assert outcome.models.project("demo").events == 6


def test_a_corrupt_saved_projection_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    """Garbage in the saved fold: rebuilt from the log, one warning."""
    store = new_store(tmp_path / "proj")
    store.open_log().append(WorkLogged(project="demo", message="x"))
    refresh(store)
    for saved in Path(models_dir(store)).iterdir():
        saved.write_bytes(b"\x00garbage")
    outcome = refresh(store)
    assert outcome.rebuilt and outcome.models.project("demo").events == 1
    assert outcome.warnings == ["the saved projection was unreadable (damaged, cut short or not a saved model): "
                                "projections rebuilt from 1 events"]


def test_a_rebuild_says_which_models_and_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning of a catch-up that rebuilds names the models and what it found: another release's format of a
    model (an upgrade: the formats), a saved model deleted."""
    from projections.registry import REGISTRY

    store = new_store(tmp_path / "proj")
    store.open_log().append(WorkLogged(project="demo", message="x"))
    refresh(store)
    worklog = REGISTRY["worklog"]
    monkeypatch.setattr(worklog, "format", worklog.format + 1)
    outcome = refresh(store)
    assert outcome.rebuilt and outcome.models.project("demo").events == 1
    was, now = worklog.format - 1, worklog.format
    assert outcome.warnings == [f"the saved projection was written in another format of the model ({was}; this "
                                f"release reads {now}): projections (worklog) rebuilt from 1 events"]
    assert refresh(store).warnings == []  # saved in this format now
    Path(models_dir(store), "sessions.msgpack").unlink()
    assert refresh(store).warnings == ["the saved projection was missing: projections (sessions) rebuilt from 1 events"]


def test_projects_json_holds_every_project(tmp_path: Path) -> None:
    """projects.json holds the fold of every project and the last event folded."""
    store = new_store(tmp_path / "proj")
    stored = store.open_log().append(CheckpointRecorded(project="demo", summary=Summary(next=("go",))))
    refresh(store)
    document = msgspec.json.decode(Path(store.path, "projects.json").read_bytes())
    assert document["last_event"] == stored.name and document["events_folded"] == 1
    assert document["projects"]["demo"]["work"]["next"] == ["go"]


def test_state_json_is_seed_shaped(tmp_path: Path) -> None:
    """state.json is seed 004's five keys (I14): the newest event, no archive yet, ms time."""
    store = new_store(tmp_path / "proj")
    stored = store.open_log().append(CheckpointRecorded(project="demo", summary=Summary(next=("go",))))
    refresh(store)
    document = msgspec.json.decode(Path(store.path, "state.json").read_bytes())
    assert list(document) == ["project", "latest_event", "latest_archive", "latest_markdown_archive", "updated_at"]
    assert document == {
        "project": "demo", "latest_event": f".agent/runtime-continuity/events/{stored.name[:8]}/{stored.name}",
        "latest_archive": None, "latest_markdown_archive": None, "updated_at": stored.event.created_at[:23] + "Z",
    }
