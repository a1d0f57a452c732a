"""Catch-ups that write take turns (`local/catchup.lock`): real processes holding the turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from continuity.core.initialize import init_store
from continuity.core.store import Store
from continuity.readside import catchup
from continuity.readside.writers import refresh
from events.worklog import WorkLogged
from tests.helpers import REPO

HOLDER = textwrap.dedent(
    """
    import sys, time
    from continuity.core.store import Store
    from continuity.readside.catchup import writing_turn
    with writing_turn(Store(sys.argv[1])) as turn:
        print("held" if turn else "none", flush=True)
        time.sleep(float(sys.argv[2])) if sys.argv[2] != "stdin" else sys.stdin.read()
    """
)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    init_store(tmp_path, project="demo", language=None)
    found = Store(str(tmp_path))
    found.open_log().append(WorkLogged(project="demo", message="first"))
    return found


def _holding(store: Store, seconds: float | None) -> subprocess.Popen[str]:
    """A process holding the turn for `seconds`, or (None) until its stdin is closed."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, store.root, "stdin" if seconds is None else str(seconds)],
                              cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _released(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0


def test_a_catch_up_waits_for_the_turn_and_then_writes(store: Store) -> None:
    """While another process holds the turn, a catch-up waits; when it ends, the catch-up writes and saves."""
    import threading

    holder = _holding(store, None)
    assert holder.stdin is not None
    release = threading.Timer(1.0, holder.stdin.close)  # the turn ends a second after the wait starts, not before
    started = time.monotonic()
    release.start()
    outcome = refresh(store)
    waited = time.monotonic() - started
    assert holder.wait(timeout=30) == 0
    assert waited >= 1.0 and outcome.saved and outcome.folded == 1
    assert not any("folded in memory" in line for line in outcome.warnings)
    assert json.loads((Path(store.path) / "state.json").read_text())


def test_a_turn_that_does_not_come_gives_an_answer_from_memory(store: Store,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn held past the wait (a long rebuild): the catch-up answers from memory, says so, and writes nothing."""
    monkeypatch.setattr(catchup, "TURN_WAIT_SECONDS", 0.2)
    models = Path(store.path) / "local" / "models"
    before = {path.name: path.read_bytes() for path in models.glob("*")}
    holder = _holding(store, 5.0)
    try:
        outcome = refresh(store)
    finally:
        holder.kill()
        holder.wait()
    assert outcome.models.state("worklog").last_name is not None  # the answer holds the event
    assert any("folded in memory and nothing was saved" in line for line in outcome.warnings), outcome.warnings
    assert not (Path(store.path) / "state.json").exists()
    assert {path.name: path.read_bytes() for path in models.glob("*")} == before


def test_a_command_catching_up_twice_waits_for_a_turn_that_does_not_come_once(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """`archive` catches up before its decision and after its append: with a stopped rebuild holding the turn
    (Ctrl-Z), it waited the whole turn wait twice (21 s). The second catch-up waits MISSED_WAIT_SECONDS; its
    answer is still folded in memory and said so, and the archive is taken."""
    from continuity.core.identity import Identity
    from continuity.sessions import service
    from continuity.sessions.decide import ArchiveRequest
    from events import osfs

    monkeypatch.setattr(catchup, "TURN_WAIT_SECONDS", 2.0)
    monkeypatch.setattr(catchup, "MISSED_WAIT_SECONDS", 0.25)
    waits: list[float] = []
    real = osfs.lock_within

    def counted(fd: int, seconds: float, *, shared: bool = False) -> bool:
        if os.path.samefile(f"/proc/self/fd/{fd}", Path(store.local_dir, "models")):  # the turn's lock
            waits.append(seconds)
        return real(fd, seconds, shared=shared)

    monkeypatch.setattr(osfs, "lock_within", counted)
    holder = _holding(store, None)
    try:
        stored, warnings = service.archive(store, Identity(project="demo"), ArchiveRequest(gate="agent", reason="r"))
    finally:
        _released(holder)
    assert [stored_event.event.kind for stored_event in stored] == ["archive.created"]
    assert waits == [2.0, 0.25], waits
    assert any("folded in memory and nothing was saved" in line for line in warnings), warnings


def test_after_a_turn_waited_for_in_vain_the_next_still_waits_for_a_short_catch_up(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-running process (the MCP server) that once waited in vain: its next catch-up, meeting another
    process's ordinary turn of a few hundred ms, waits for it and writes, instead of answering from memory."""
    monkeypatch.setattr(catchup, "TURN_WAIT_SECONDS", 0.3)
    holder = _holding(store, None)
    try:
        assert any("folded in memory" in line for line in refresh(store).warnings)
    finally:
        _released(holder)
    monkeypatch.setattr(catchup, "TURN_WAIT_SECONDS", 30.0)  # the miss stays recent
    monkeypatch.setattr(catchup, "MISSED_WAIT_SECONDS", 10.0)
    holder = _holding(store, 0.2)  # a catch-up of 0.2 s by another process
    try:
        outcome = refresh(store)
    finally:
        holder.wait(timeout=30)
    assert outcome.saved and not any("folded in memory" in line for line in outcome.warnings), outcome.warnings


def test_a_catch_up_inside_a_turn_takes_no_second(store: Store) -> None:
    """A writer that catches up again within this process's turn does not wait for itself."""
    started = time.monotonic()
    with catchup.writing_turn(store, wait=30) as turn:
        assert turn
        with catchup.writing_turn(store, wait=30) as inner:
            assert inner
        assert refresh(store).saved
    assert time.monotonic() - started < 10


PAUSED = textwrap.dedent(
    """
    import os, sys, time
    from continuity.core.store import Store
    from continuity.readside import writers

    root, where, mark, go = sys.argv[1:5]

    def paused(real):
        def call(*args, **kwargs):
            open(mark, "w").close()
            while not os.path.exists(go):
                time.sleep(0.005)
            return real(*args, **kwargs)
        return call

    setattr(writers, where, paused(getattr(writers, where)))  # "flush": files not yet written; "save": written
    writers.refresh(Store(root), ("workstreams",))
    """
)


def _cursor_moved(store: Store, next_action: str) -> None:
    from events.workstream import Cursor, CursorMoved

    store.open_log().append(CursorMoved(project="demo", workstream_id="WS-1",
                                        cursor=Cursor(next_action=next_action)))


def _paused(store: Store, tmp_path: Path, name: str, where: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    mark, go = tmp_path / f"{name}.at", tmp_path / f"{name}.go"
    process = subprocess.Popen([sys.executable, "-c", PAUSED, store.root, where, str(mark), str(go)], cwd=REPO)
    return process, mark, go


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_catch_up_that_folded_less_never_writes_after_one_that_folded_more(tmp_path: Path) -> None:
    """The race the turns close, step by step: catch-up A folds the cursor's first move and stops before writing;
    a second move lands; catch-up B folds both and writes the workstream's file, then stops before saving; A
    writes its older file and saves; B saves. The file said the first move under a model saved past the second,
    and every later catch-up, having nothing to fold, left it so. Now B waits for A's turn, then folds the rest."""
    from tests.workstream_docs import tracked

    project = tmp_path / "proj"
    project.mkdir()
    init_store(project, project="demo", language=None)
    (project / ".ai-bridge").mkdir()
    (project / ".ai-bridge" / "context-checkpoint.json").write_text(json.dumps(tracked("WS-1")))
    from tests.helpers import cli_process

    assert cli_process("work", "checkpoint", cwd=project).returncode == 0
    store = Store(str(project))
    _cursor_moved(store, "the first move")
    a, a_at, a_go = _paused(store, tmp_path, "a", "flush")
    try:
        assert _wait_for(a_at, 60)  # A folded the first move; its files are not written
        _cursor_moved(store, "the second move")
        b, b_at, b_go = _paused(store, tmp_path, "b", "save")
        try:
            b_first = _wait_for(b_at, 3)  # without turns, B writes its files and stops before saving
            a_go.touch()
            assert a.wait(timeout=60) == 0
            assert _wait_for(b_at, 60)
            b_go.touch()
            assert b.wait(timeout=60) == 0
        finally:
            b.kill()
    finally:
        a.kill()
    refresh(store, ("workstreams",))
    document = json.loads((Path(store.path) / "workstreams" / "active" / "WS-1.json").read_text())
    assert document["cursor"]["nextAction"] == "the second move", document["cursor"]
    assert not b_first, "B caught up while A held its turn"
