"""Long logs and models being rebuilt: hooks answer in time and never write from a partial state.

A catch-up that would fold the whole log (a rebuild, an upgrade's new model formats) stops at the hook's deadline,
keeps its progress, and says so; reads that need a yes or no do not scan the history.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest

from continuity.adapters import hooks
from continuity.core.store import Store, find_store
from events import clock
from events.base import Summary
from events.codec import default_codec
from events.sealing import seal, sha256_hex
from events.worklog import CheckpointRecorded

DAY_US = 86_400_000_000
START_US = clock.parse_iso("2026-11-01T09:00:00Z")
PAYLOAD = {"session_id": "S-deadline", "hook_event_name": "SessionStart", "source": "startup"}


def plant(store: Store, stamped: list[tuple[Any, int]], node: str | None = None) -> None:
    """Seal each (draft, time in µs) into the store's day folders, chained as one writer (`node`, else the store's)
    would: fixtures written without the write path."""
    codec, node, prev = default_codec(), node or store.node(), None
    for draft, at_us in stamped:
        stored = seal(draft, at_us=at_us, node=node, prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        folder = Path(store.events_dir, stored.name[:8])
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)


def seed_days(project: Path, days: int) -> None:
    """One checkpoint a day for `days` days (its next step names the day), chained as a writer would."""
    plant(find_store(root=str(project)), [
        (CheckpointRecorded(project="demo", message=f"day {day}", summary=Summary(next=(f"step of day {day}",))),
         START_US + day * DAY_US) for day in range(days)])


def without_models(project: Path, days: int) -> Store:
    """`days` days of checkpoints, and no saved read model (as after a format change): every catch-up rebuilds."""
    seed_days(project, days)
    store = find_store(root=str(project))
    shutil.rmtree(Path(store.local_dir, "models"), ignore_errors=True)
    return store


def brief(project: Path) -> str:
    result = hooks.session_start("claude-code", {**PAYLOAD, "cwd": str(project)}, find_store(root=str(project)))
    text: str = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def within_one_day(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's clock from noon UTC today on, at the real pace: the hooks' own events fall in one day folder
    however near midnight the test runs (a start on each side of it found one more folder to fold)."""
    from continuity.core import store as store_module

    real = store_module.now_us
    began = real()
    noon = began // DAY_US * DAY_US + DAY_US // 2
    monkeypatch.setattr(store_module, "now_us", lambda: noon + real() - began)


def test_a_long_catch_up_stops_at_the_deadline_and_the_next_start_goes_on(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time left, each start folds one more day folder (never none), serves a brief of the log up to
    there with the warning, and keeps its progress; once caught up the brief is the whole log's, as a start
    with time to spare gives it."""
    within_one_day(monkeypatch)
    models = Path(without_models(project, 4).local_dir, "models")
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    first = brief(project)
    assert "still catching up" in first and "ran out of time" in first and "events/20261102/ on" in first
    assert "## Next action\nstep of day 0" in first
    second = brief(project)
    assert "events/20261103/ on" in second and "## Next action\nstep of day 1" in second
    brief(project)
    brief(project)  # the newest day, where this hook's own events are: caught up
    caught_up = brief(project)
    assert "still catching up" not in caught_up and "## Next action\nstep of day 3" in caught_up
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 4.0)
    shutil.rmtree(models)
    in_time = brief(project)
    assert "still catching up" not in in_time and "## Next action\nstep of day 3" in in_time


def test_the_brief_says_first_and_whole_that_it_is_incomplete(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the deadline the brief is the log up to where the catch-up stopped, and a warning says so. It came
    after the others (a rebuild, an unreadable event, a merge's problems) where the brief shows three, so it was
    the first crowded out and the agent got a partial state with no sign of it; and each warning was cut at 200
    characters, which cut this one's way out. It comes first, whole."""
    from continuity.sessions import brief as rendering

    store = without_models(project, 4)
    first_day = sorted(Path(store.events_dir, "20261101").iterdir())
    name = first_day[0].name
    first_day[0].with_name(f"{name[:16]}999999{name[22:-17]}0badbadbad00.json").write_bytes(b"not an event")
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    monkeypatch.setattr(rendering, "WARNINGS_SHOWN", 2)  # as if a merge's problems came before the rest
    warnings = [line for line in brief(project).splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 2 and warnings[0].startswith("Warning: the read models are still catching up"), warnings
    assert warnings[0].endswith("(`continuity rebuild` finishes now)") and "events/20261102/ on" in warnings[0]
    assert "ran out of time" not in warnings[1]


def seed_one_day(project: Path, count: int) -> Store:
    """`count` checkpoints within one day (a swarm's dense day; the next step names each), and no saved model."""
    store = find_store(root=str(project))
    plant(store, [
        (CheckpointRecorded(project="demo", message=f"event {index}", summary=Summary(next=(f"step {index}",))),
         START_US + index * 1_000_000) for index in range(count)])
    shutil.rmtree(Path(store.local_dir, "models"), ignore_errors=True)
    return store


def test_a_dense_day_is_cut_short_inside_and_the_next_start_goes_on_from_there(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One day folder with more events than a start has time for: the catch-up stops inside it (after a first
    chunk), names the event it stopped before, and each start goes on from there without reading the day again
    from its start; caught up, the models are what a rebuild makes."""
    from continuity.readside import catchup
    from continuity.readside.writers import refresh

    store = seed_one_day(project, 2 * catchup.MID_DAY_CHUNK + 100)
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    first = brief(project)
    assert "ran out of time" in first and "events from events/20261101/20261101_" in first
    assert f"## Next action\nstep {catchup.MID_DAY_CHUNK - 1}\n" in first
    second = brief(project)
    assert "ran out of time" in second and f"## Next action\nstep {2 * catchup.MID_DAY_CHUNK - 1}\n" in second
    third = brief(project)  # the dense day's end; this hook's own day waits for the next start
    assert "events from events/20261101/" not in third and "rebuilt" not in third
    assert f"## Next action\nstep {2 * catchup.MID_DAY_CHUNK + 99}\n" in third
    fourth = brief(project)
    assert "still catching up" not in fourth and "rebuilt" not in fourth
    assert f"## Next action\nstep {2 * catchup.MID_DAY_CHUNK + 99}\n" in fourth
    every = tuple(model.name for model in catchup.models(None))
    refresh(store, every)  # the fourth start's own served brief, recorded after its catch-up
    incremental = {name: catchup.load(store, catchup.models((name,))[0]) for name in every}
    refresh(store, every, rebuild=True)
    for model in catchup.models(None):
        saved, again = incremental[model.name], catchup.load(store, model)
        assert saved is not None and again is not None, model.name
        assert msgspec.msgpack.encode(saved.state) == msgspec.msgpack.encode(again.state), model.name


def test_other_reads_and_writes_are_never_cut_short(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Only the session start's brief has a deadline: `resume-bundle` and writes catch up whole."""
    from continuity.cli import main

    without_models(project, 3)
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    assert main(["resume-bundle"]) == 0
    out = capsys.readouterr()
    assert "step of day 2" in out.out and "still catching up" not in out.out + out.err


def test_a_stopped_rebuild_neither_prunes_memory_files_nor_rolls_documents_back(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The brief that stops at the deadline while the models are rebuilt holds the log up to a past day: the
    memory files of later memories stay, and `state.json` keeps its newer head (it was written from the partial
    state, and the files it did not hold yet were deleted)."""
    from continuity.cli import main

    seed_days(project, 3)
    assert main(["task", "create", "--title", "Ship it"]) == 0
    task = capsys.readouterr().out.strip()
    assert main(["task", "update", task, "--status", "completed"]) == 0
    assert main(["rebuild"]) == 0
    store = find_store(root=str(project))
    memories = sorted(Path(store.path, "memories").glob("*.md"))
    state = json.loads(Path(store.path, "state.json").read_text())
    assert memories and state["latest_event"]
    shutil.rmtree(Path(store.local_dir, "models"))
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    assert "still catching up" in brief(project)
    assert sorted(Path(store.path, "memories").glob("*.md")) == memories
    assert json.loads(Path(store.path, "state.json").read_text())["latest_event"] == state["latest_event"]


def kinds_since(project: Path, before: set[str]) -> list[str]:
    """The kinds of the events written since `before` (file names), in name order."""
    found = sorted(path for path in Path(find_store(root=str(project)).events_dir).glob("*/*.json")
                   if path.name not in before)
    return [json.loads(path.read_bytes())["kind"] for path in found]


def names(project: Path) -> set[str]:
    return {path.name for path in Path(find_store(root=str(project)).events_dir).glob("*/*.json")}


def test_pre_compact_out_of_time_logs_the_compaction_instead_of_a_stale_checkpoint(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """PreCompact restates the work state in its checkpoint: when that state cannot be caught up in time, a
    checkpoint would set the next steps back days, so the compaction is a log entry and nothing is parked;
    with time, the checkpoint restates the whole log's next step."""
    store = without_models(project, 3)
    monkeypatch.setattr(hooks, "HOOK_CATCH_UP_S", 0.0)
    payload = {"session_id": "S-1", "hook_event_name": "PreCompact", "trigger": "auto", "cwd": str(project)}
    before = names(project)
    hooks.pre_compact("claude-code", payload, store)
    assert kinds_since(project, before) == ["work.logged"]
    assert "pre-compact checkpoint not written" in capsys.readouterr().err
    monkeypatch.setattr(hooks, "HOOK_CATCH_UP_S", 4.0)
    before = names(project)
    hooks.pre_compact("claude-code", payload, store)
    assert kinds_since(project, before) == ["checkpoint.recorded"]
    [checkpoint] = [json.loads(path.read_bytes()) for path in Path(store.events_dir).glob("*/*.json")
                    if path.name not in before]
    assert checkpoint["summary"]["next"] == ["step of day 2"]


def test_session_end_parks_only_from_whole_role_state_and_each_end_gets_further(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """SessionEnd has about 1.5 s: a role state still being rebuilt is not guessed from (the agent's held role
    could be missing from it), nothing is parked and it says so; the catch-up keeps its progress, so a later
    end parks the role."""
    from continuity.cli import main

    seed_days(project, 3)
    assert main(["role", "create", "core", "rev"]) == 0
    assert main(["role", "claim", "core", "rev", "--agent", "amy", "--ttl", "1d"]) == 0
    store = find_store(root=str(project))
    shutil.rmtree(Path(store.local_dir, "models"), ignore_errors=True)
    monkeypatch.setattr(hooks, "SESSION_END_CATCH_UP_S", 0.0)
    monkeypatch.setenv("CONTINUITY_AGENT", "amy")
    payload = {"session_id": "S-1", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": str(project)}
    capsys.readouterr()
    before = names(project)
    hooks.session_end("claude-code", payload, store)
    assert kinds_since(project, before) == ["session.ended"]
    said = capsys.readouterr().err
    assert "CHECKPOINT NOT WRITTEN" in said and "still catching up" in said and "unreadable" not in said
    for _ in range(10):  # one more day folder of each model each time, then today's: the role is parked
        before = names(project)
        hooks.session_end("claude-code", payload, store)
        if "snapshot.taken" in kinds_since(project, before):
            break
    assert {"snapshot.taken", "role.checkpointed"} <= set(kinds_since(project, before))


def test_the_context_state_asks_whether_anything_waits_not_how_much(project: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`work status` and `work start` need only whether some event of this clone is not pushed: a never-synced
    clone's whole history was listed, parsed and sorted to count it (0.24 s at 100k events, growing)."""
    from continuity.sync import health
    from continuity.workstreams.context_state import decide_state, observe_context

    seed_days(project, 5)
    listed: list[str] = []
    real = health._listing

    def counted(store: object, day: str) -> list[str]:
        listed.append(day)
        return real(store, day)  # type: ignore[arg-type]

    monkeypatch.setattr(health, "_listing", counted)
    facts = observe_context(find_store(root=str(project)))
    assert facts.waiting and decide_state(facts) == "DIRTY_LOCAL_CONTEXT"
    assert listed == ["20261101"]


def test_session_end_takes_no_archive_from_a_partial_state_and_still_parks_nothing_wrong(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`archive_on_session_end`: out of time, the archive (which would claim a state days old as the latest) is not
    taken and the hook says so; it still records the session's end; once caught up, the end archives."""
    config = Path(find_store(root=str(project)).path, "config.json")
    config.write_text(json.dumps({**json.loads(config.read_text()), "archive_on_session_end": True}))
    store = without_models(project, 3)
    monkeypatch.setattr(hooks, "SESSION_END_CATCH_UP_S", 0.0)
    payload = {"session_id": "S-1", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": str(project)}
    before = names(project)
    hooks.session_end("claude-code", payload, store)
    assert kinds_since(project, before) == ["session.ended"]
    assert "archive not taken: the work state is still catching up" in capsys.readouterr().err
    monkeypatch.setattr(hooks, "SESSION_END_CATCH_UP_S", 4.0)
    before = names(project)
    hooks.session_end("claude-code", payload, store)
    assert kinds_since(project, before) == ["session.ended", "archive.created"]


def test_a_hook_waits_for_the_models_turn_no_longer_than_its_deadline(project: Path) -> None:
    """Another process holding the read models' turn (a rebuild): a catch-up with a deadline waits for the turn
    only until the deadline, not the usual 10 s (past the 2 s a SessionEnd has), then answers from memory."""
    import threading
    import time

    from continuity.readside import catchup
    from continuity.readside.writers import refresh

    store = find_store(root=str(project))
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with catchup.writing_turn(store) as turn:
            assert turn
            held.set()
            done.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        outcome = refresh(store, ("roles",), deadline=time.monotonic() + 0.3)
    finally:
        done.set()
        thread.join()
    assert any("kept the read models' files for over 0.3 s" in line for line in outcome.warnings), outcome.warnings


def test_views_as_of_a_brief_cut_short_hold_what_the_store_held(
        project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A brief whose catch-up ran out of time folded less than the store held: `--as-of` at it folds every event up
    to it, another clone's task (synced in before the brief, past where the brief stopped) included."""
    from continuity.cli import main
    from events.task import TaskCreated

    store = find_store(root=str(project))
    seed_days(project, 1)
    plant(store, [(TaskCreated(project="demo", task_id="T-b", title="b's task"), START_US + 2 * DAY_US)],
          node="bbbbbbbb")  # a teammate's
    shutil.rmtree(Path(store.local_dir, "models"), ignore_errors=True)
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)
    result = hooks.session_start("claude-code", {**PAYLOAD, "cwd": str(project)}, store)
    assert "ran out of time" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    capsys.readouterr()
    assert main(["events", "list", "--kind", "context.served", "--json", "--root", str(project)]) == 0
    served = json.loads(capsys.readouterr().out)["events"][-1]["event_id"]
    assert main(["task", "list", "--as-of", served, "--root", str(project)]) == 0
    assert "b's task" in capsys.readouterr().out


def test_a_replay_in_memory_stops_at_its_deadline_and_says_so(project: Path) -> None:
    """`models_until` with a deadline (a brief replayed in memory when `local/` cannot be trusted) stops after a
    chunk of events, with the catch-up's out-of-time words; without one it folds the whole log."""
    import time

    from continuity.readside import catchup
    from continuity.readside.replay import models_until

    store = seed_one_day(project, catchup.MID_DAY_CHUNK + 100)
    warnings: list[str] = []
    cut = models_until(store.open_reader(), "~", warnings, deadline=time.monotonic())
    assert len(warnings) == 1 and catchup.out_of_time(warnings[0])
    assert cut.project("demo").events == catchup.MID_DAY_CHUNK - 1
    whole: list[str] = []
    assert models_until(store.open_reader(), "~", whole).project("demo").events == catchup.MID_DAY_CHUNK + 100
    assert whole == []
