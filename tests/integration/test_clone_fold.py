"""clone-store folding the read models batch by batch: the cases where that must give way, or say no more.

Real git (a bare remote and clones in temp folders, tests/integration/test_sync.py's World),
the CLI in-process, and the real fold worker process where a case needs it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_sync import World, append, cli, event_names, git
from tests.integration.test_sync import _git_identity as _git_identity  # autouse: a git identity

STORE = Path(".agent/runtime-continuity")
DAY_US = 86_400 * 1_000_000


def history(world: World, monkeypatch: pytest.MonkeyPatch, days: int = 5) -> None:
    """Three events a day on `days` past days in clone a, synced."""
    import continuity.core.store as store_module

    real = store_module.now_us
    for back in range(days, 0, -1):
        monkeypatch.setattr(store_module, "now_us", lambda back=back: real() - back * DAY_US)
        append(world.a, *(f"day -{back}: {n}" for n in range(3)))
    monkeypatch.setattr(store_module, "now_us", real)
    assert cli("sync", "--root", str(world.a))[0] == 0


def models(root: Path) -> dict[str, Any]:
    """Each read model's state as saved (its folder marks aside), by name."""
    from continuity.core.store import Store
    from continuity.readside import catchup
    from projections.registry import REGISTRY

    store = Store(root)
    found = {}
    for name in REGISTRY:
        saved = catchup.load(store, REGISTRY[name])
        assert saved is not None, name
        found[name] = (saved.state, saved.last_read, {day: mark.count for day, mark in saved.days.items()})
    return found


def rebuilt_models(root: Path) -> dict[str, Any]:
    assert cli("rebuild", "--root", str(root))[0] == 0
    return models(root)


def counted_catch_ups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int]]:
    """(rebuilt, folded) of each catch-up in this process."""
    from continuity.readside import catchup

    seen: list[tuple[bool, int]] = []
    real = catchup._catch_up

    def counting(*args: Any, **kw: Any) -> Any:
        outcome, saved = real(*args, **kw)
        seen.append((outcome.rebuilt, outcome.folded))
        return outcome, saved

    monkeypatch.setattr(catchup, "_catch_up", counting)
    return seen


@pytest.mark.parametrize("where", ["here", "worker"])
def test_events_brought_in_before_the_batches_make_one_rebuild_not_one_per_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """A local `continuity` branch behind the remote's (a worktree's, or an older clone's): sync brings the
    newest events in first, then restores the older days a batch at a time. Those batches sort before what
    the store holds, so folding each would rebuild every model once per batch (quadratic in the history) and
    count the events again each time: the second batch's rebuild stops the folding, and one rebuild after
    the restore gives the models a rebuild gives, and the true count."""
    import continuity.sync.clone as clone_module
    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch)
    append(world.a, "today 1", "today 2")
    assert cli("sync", "--root", str(world.a))[0] == 0
    fresh = world.clone("d", init=False)
    git(fresh, "branch", "continuity", "origin/continuity~1")
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)  # a batch per day: five
    if where == "here":
        monkeypatch.setattr(clone_module.Folding, "here", 10**6)
    seen = counted_catch_ups(monkeypatch)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    assert out["events"] == len(event_names(fresh)) == len(event_names(world.a)) == 17
    assert not [line for line in out["warnings"] if "rebuilt" in line or "failed" in line], out["warnings"]
    rebuilds = [folded for rebuilt, folded in seen if rebuilt]
    assert len(rebuilds) <= (3 if where == "here" else 2), seen  # first batch, (second here), and once after
    assert rebuilds[-1] == 17
    assert models(fresh) == rebuilt_models(fresh)


def test_the_worker_imports_nothing_from_the_project_it_runs_in(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's project may hold modules named like continuity's (`events.py`, `projections/`, even a
    checkout of continuity): the fold worker, run in the project, imports none of them."""
    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch)
    fresh = world.clone("d", init=False)
    marker = "open(__file__ + '.ran', 'w').close()\nraise SystemExit(9)\n"
    (fresh / "events.py").write_text(marker)
    (fresh / "msgspec.py").write_text(marker)
    for package in ("continuity", "projections"):
        (fresh / package / "sync").mkdir(parents=True)
        (fresh / package / "__init__.py").write_text(marker)
    (fresh / "continuity" / "sync" / "foldworker.py").write_text(marker)
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    seen = counted_catch_ups(monkeypatch)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    assert sorted(p.name for p in fresh.rglob("*.ran")) == []
    assert out["warnings"] == [] and out["events"] == 15
    assert [rebuilt for rebuilt, _ in seen] == [True, False]  # the first batch here, then the final pass
    assert not (fresh / STORE / "local" / "fold-worker.log").exists()  # it printed nothing
    assert models(fresh) == rebuilt_models(fresh)


def test_what_a_failing_worker_prints_goes_to_a_log_in_the_store_not_the_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """A worker that dies printing a traceback: clone-store finishes by rebuilding from the files, its warning
    names local/fold-worker.log, which holds what the worker printed; the terminal shows none of it."""
    import sys

    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch)
    fresh = world.clone("d", init=False)
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'Traceback (most recent call last): boom' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    real = sys.executable
    monkeypatch.setattr(sys, "executable", str(broken))
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    assert out["warnings"] == ["the read models were rebuilt from the files after the restore: folding them as "
                               "the events landed failed (the fold worker stopped; see local/fold-worker.log)"]
    log = fresh / STORE / "local" / "fold-worker.log"
    assert log.read_text() == "Traceback (most recent call last): boom\n" and log.stat().st_mode & 0o077 == 0
    assert "boom" not in capfd.readouterr().err
    monkeypatch.setattr(sys, "executable", real)
    assert models(fresh) == rebuilt_models(fresh)


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("days", ["the older days", "the newest days"])
def test_unreadable_events_in_several_batches_are_one_warning_as_after_one_rebuild(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, days: str, batch: int) -> None:
    """Events this version cannot decode (a newer release's, or damaged before they were named) on three days,
    restored in three batches: one warning with the count and the first, as `rebuild` says it. Also when one
    sits in the newest day, which the refresh after the restore reads again."""
    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch, days=4)
    events = world.a / STORE / "events"
    planted = []
    listed = sorted(events.iterdir())
    for day in listed[:3] if days == "the older days" else listed[-3:]:
        source = sorted(day.glob("*.json"))[0]
        document = json.loads(source.read_bytes())
        del document["kind"], document["type"]  # no event of this version (its id and time those of its name)
        stamp, node, _ = source.name.split("-")
        stamp = f"{stamp[:-1]}{'8' if stamp[-1] == '9' else '9'}"
        document["event_id"] = f"RCE-{stamp}-{node}"
        document["created_at"] = document["created_at"][:-2] + stamp[-1] + "Z"
        raw = json.dumps(document).encode()
        name = f"{stamp}-{node}-{hashlib.sha256(raw).hexdigest()[:12]}.json"
        (day / name).write_bytes(raw)
        planted.append(name)
    assert cli("sync", "--root", str(world.a))[0] == 0
    fresh = world.clone("d", init=False)
    monkeypatch.setattr(engine, "RESTORE_BATCH", batch)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    lines = [line for line in out["warnings"] if "unreadable" in line]
    assert len(lines) == 1 and lines[0].startswith(f"skipped 3 unreadable event(s); first: {min(planted)}: "), lines
    code, again = cli("rebuild", "--root", str(fresh))
    assert code == 0 and [line for line in again["warnings"] if "unreadable" in line] == lines


@pytest.mark.parametrize("batches", ["one", "a day each"])
def test_a_batch_whose_documents_cannot_be_written_counts_and_warns_as_one_rebuild(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: str) -> None:
    """The Markdown archives' folder cannot be written (a read-only home): a catch-up of few events then keeps
    the model unsaved to write the document next time, so folding on batch by batch would fold (and count)
    events twice. clone-store gives way to one rebuild: its event count and warnings are `rebuild`'s."""
    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch, days=3)
    assert cli("archive", "--reason", "pause", "--root", str(world.a))[0] == 0
    assert cli("sync", "--root", str(world.a))[0] == 0
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("CONTINUITY_CONTEXTS_DIR", str(blocker))
    fresh = world.clone("d", init=False)
    if batches == "a day each":
        monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0, out
    code, again = cli("rebuild", "--root", str(fresh))
    assert code == 0
    assert out["events"] == again["events"] == len(event_names(fresh))
    assert out["warnings"] == again["warnings"] and any("Markdown archive not written" in line
                                                        for line in out["warnings"]), out["warnings"]


def test_something_else_at_the_worker_log_name_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO (or a link) where local/fold-worker.log belongs: the worker's output goes nowhere, clone-store
    neither blocks on it nor follows the link, and the folds run in the worker as usual."""
    import os

    import continuity.sync.engine as engine

    world = World(tmp_path)
    history(world, monkeypatch)
    fresh = world.clone("d", init=False)
    local = fresh / STORE / "local"
    local.mkdir(parents=True)
    os.mkfifo(local / "fold-worker.log")
    monkeypatch.setattr(engine, "RESTORE_BATCH", 1)
    code, out = cli("clone-store", "origin", "--root", str(fresh))
    assert code == 0 and out["warnings"] == [] and out["events"] == 15, out
    assert (local / "fold-worker.log").is_fifo()
    assert models(fresh) == rebuilt_models(fresh)
