"""Sync at team scale: many clones at once, a real git server on 127.0.0.1, slow and refusing remotes, health."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from continuity.core.errors import EXIT_REMOTE, EXIT_SYNC_GAVE_UP
from continuity.core.identity import Identity
from continuity.core.store import Store, now_us
from continuity.sessions.service import resume_bundle
from continuity.sync import engine, health
from continuity.sync.objects import TreeWriter
from events.worklog import WorkLogged
from tests.gitserver import serving
from tests.helpers import branch_event_paths, set_config
from tests.integration.test_sync import (  # noqa: F401  # _git_identity: the autouse identity fixture
    STORE,
    _git_identity,
    cli,
    event_names,
    git,
    user_git_state,
)

BOUND = 60.0  # seconds: the default retry time a sync may take before it gives up


class Team:
    """A bare remote (under `srv/`) and `count` clones of one project, each with a store and `events` events."""

    def __init__(self, tmp: Path, count: int, events: int, url: str | None = None) -> None:
        self.tmp = tmp
        self.bare = tmp / "srv" / "remote.git"
        self.bare.parent.mkdir(exist_ok=True)
        git(tmp, "init", "-q", "--bare", "-b", "main", str(self.bare))
        git(self.bare, "config", "receive.autogc", "false")  # no gc racing the test's clean-up
        self.url = url or str(self.bare)
        seed = self._clone("seed")
        (seed / "README.md").write_text("the code\n")
        assert cli("init", "--project", "demo", "--root", str(seed))[0] == 0
        git(seed, "add", "README.md", ".gitignore")
        git(seed, "commit", "-q", "-m", "code")
        git(seed, "push", "-q", "origin", "main")
        self.clones = [self.add(f"c{index:02d}", events) for index in range(count)]

    def _clone(self, name: str) -> Path:
        path = self.tmp / name
        git(self.tmp, "clone", "-q", self.url, str(path))
        return path

    def add(self, name: str, events: int) -> Path:
        """A new clone with a store holding `events` work-log events."""
        path = self._clone(name)
        assert cli("init", "--project", "demo", "--root", str(path))[0] == 0
        Store(path).open_log().append_many(WorkLogged(project="demo", message=f"{name} step {index}")
                                           for index in range(events))
        return path


def start_sync(root: Path, *extra: str) -> subprocess.Popen[bytes]:
    """`continuity sync` of one clone as a new process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    return subprocess.Popen([sys.executable, "-m", "continuity", "sync", "--root", str(root), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def sync_all_at_once(clones: list[Path], bound: float) -> list[tuple[int, float, bytes]]:
    """Start a sync in every clone at the same moment; (exit code, seconds, stderr) of each."""
    started = time.monotonic()
    processes = [start_sync(root) for root in clones]
    results = []
    for process in processes:
        _, stderr = process.communicate(timeout=bound + 120)
        results.append((process.returncode, time.monotonic() - started, stderr))
    return results




def remote_event_count(bare: Path) -> int:
    """How many distinct event files the remote holds: on its continuity branch and the clones' node refs."""
    refs = git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/continuity",
               "refs/continuity/continuity/nodes/").split()
    return len(set().union(*(branch_event_paths(bare, ref) for ref in refs)))


def branch_event_count(bare: Path) -> int:
    """How many event files the remote's shared continuity branch holds."""
    return len(branch_event_paths(bare, "continuity"))


def assert_converged(team: Team, total: int, before: dict[Path, dict[str, str]] | None = None) -> None:
    """Every clone and the remote hold all `total` events, verify passes, the user's git state is untouched."""
    assert remote_event_count(team.bare) == total
    assert branch_event_count(team.bare) == total
    for root in team.clones:
        assert len(event_names(root)) == total, root.name
        assert cli("verify", "--root", str(root))[0] == 0, root.name
        if before is not None:
            assert user_git_state(root) == before[root], root.name


def crowd_converges(team: Team, total: int, bound: float = BOUND) -> None:
    """All clones sync at the same moment: each exits 0 within the bound, and one round converges all."""
    for root in team.clones:
        set_config(root, sync_retry_seconds=bound)
    before = {root: user_git_state(root) for root in team.clones}
    results = sync_all_at_once(team.clones, bound)
    failed = [(code, stderr.decode(errors="replace")[-300:]) for code, _, stderr in results if code != 0]
    assert not failed, failed
    assert max(seconds for _, seconds, _ in results) < bound + 30  # process start-up on a loaded machine
    assert remote_event_count(team.bare) == total  # that single round put every event on the remote
    # the earliest finishers pushed before the last ones: one more quiet round brings them the rest
    for root in team.clones:
        assert cli("sync", "--root", str(root))[0] == 0
    assert_converged(team, total, before)


# -- contention is retried ------------------------------------------------------------------
def test_concurrent_syncs_over_the_git_server_all_succeed(tmp_path: Path) -> None:
    """Six clones syncing at once through git daemon all exit 0 (ref-lock refusals are retried)."""
    with serving(tmp_path / "srv") as daemon:
        team = Team(tmp_path, 6, 5, url=daemon.url("remote.git"))
        crowd_converges(team, 30)


def test_ref_lock_refusal_is_retried_not_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `[remote rejected] (failed to update ref)` answer is retried after a backoff, then the push lands."""
    from continuity.sync.git import Repo

    team = Team(tmp_path, 1, 3)
    real_push = Repo.push_refs
    answers = iter(["[remote rejected] (failed to update ref)", "[remote rejected] (cannot lock ref)"])

    def contended(self: Repo, remote: str, updates: list[tuple[str, str]]) -> dict[str, str | None]:
        answer = next(answers, None)  # the node ref's lock taken too (a `git gc` packing refs on the server)
        return {ref: answer for _, ref in updates} if answer else real_push(self, remote, updates)

    monkeypatch.setattr(Repo, "push_refs", contended)
    code, report = cli("sync", "--root", str(team.clones[0]))
    assert code == 0 and report["pushed"] and report["attempts"] == 3
    assert remote_event_count(team.bare) == 3


def test_refusing_remote_gives_up_with_its_own_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pre-receive hook that refuses every push: exit 10 after the retry time, events safe locally."""
    team = Team(tmp_path, 1, 4)
    hook = team.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    root = team.clones[0]
    set_config(root, sync_retry_seconds=1.5)
    names = event_names(root)
    started = time.monotonic()
    code, _ = cli("sync", "--root", str(root))
    assert code == EXIT_SYNC_GAVE_UP and time.monotonic() - started < 15
    error = capsys.readouterr().err
    assert "safe locally" in error and "next sync will carry them" in error
    assert event_names(root) == names and cli("verify", "--root", str(root))[0] == 0
    code, status = cli("sync", "--status", "--root", str(root))
    assert code == 0 and status["waiting"] == 4 and status["last_success"] is None
    assert status["last_failure"]["exit_code"] == EXIT_SYNC_GAVE_UP
    hook.unlink()
    assert cli("sync", "--root", str(root))[0] == 0 and remote_event_count(team.bare) == 4


def test_slow_git_server_within_the_bound_succeeds(tmp_path: Path) -> None:
    """A server that sleeps before answering every request still takes the sync (exit 0)."""
    with serving(tmp_path / "srv", delay=0.7) as daemon:
        team = Team(tmp_path, 2, 3, url=daemon.url("remote.git"))
        for root in team.clones:
            assert cli("sync", "--root", str(root))[0] == 0
        assert cli("sync", "--root", str(team.clones[0]))[0] == 0
        assert_converged(team, 6)


def test_stopped_git_server_is_a_transport_failure(tmp_path: Path) -> None:
    """With the server gone the sync is exit 8 at once (not retried until the bound), nothing lost."""
    with serving(tmp_path / "srv") as daemon:
        team = Team(tmp_path, 1, 2, url=daemon.url("remote.git"))
    root = team.clones[0]
    started = time.monotonic()
    assert cli("sync", "--root", str(root))[0] == EXIT_REMOTE
    assert time.monotonic() - started < 20 and len(event_names(root)) == 2


# -- health ---------------------------------------------------------------------------------
def test_sync_status_and_the_unsynced_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sync --status` counts what waits to be pushed; `status` warns once such events are a day old."""
    team = Team(tmp_path, 1, 2)
    root = team.clones[0]
    assert health.unsynced_warning(Store(root), now_us() + 3 * 86_400_000_000) is None  # never synced: silent
    assert cli("sync", "--root", str(root))[0] == 0
    code, status = cli("sync", "--status", "--root", str(root))
    assert code == 0 and status["waiting"] == 0 and status["last_success"]["pushed"] is True
    assert status["last_success"]["remote"] == "origin" and status["last_failure"] is None
    Store(root).open_log().append_many(WorkLogged(project="demo", message=f"later {i}") for i in range(3))
    assert cli("sync", "--status", "--root", str(root))[1]["waiting"] == 3
    assert cli("status", "--root", str(root))[1]["warnings"] == []
    monkeypatch.setattr("continuity.sessions.service.now_us", lambda: now_us() + 2 * 86_400_000_000)
    warnings = cli("status", "--root", str(root))[1]["warnings"]
    assert any("3 event(s) older than a day are not synced" in warning for warning in warnings)
    brief = cli("resume-bundle", "--format", "json", "--root", str(root))[1]
    assert any("3 event(s) older than a day are not synced" in warning for warning in brief["warnings"])
    served = resume_bundle(Store(root), Identity(project="demo"), record=True)
    assert "Warning: 3 event(s) older than a day are not synced" in served.text
    assert served.served is not None  # the warning is part of the recorded inputs: the brief replays as served
    replayed = resume_bundle(Store(root), Identity(project="demo"), as_of=served.served.event_id)
    assert replayed.text == served.text
    assert cli("sync", "--root", str(root))[0] == 0
    assert cli("status", "--root", str(root))[1]["warnings"] == []
    after = cli("resume-bundle", "--format", "json", "--root", str(root))[1]
    assert not any("not synced" in warning for warning in after["warnings"])
    assert (root / STORE / "local" / health.STATE_NAME).is_file()


# -- cost that does not grow with history ---------------------------------------------------
def write_history(root: Path, days: int, per_day: int) -> None:
    """Chained events spread over `days` past UTC days, from noon on (each day's events in that day's folder, whatever
    the time of the run; fixtures: written without fsync)."""
    from events.codec import default_codec
    from events.names import shard_of
    from events.sealing import seal, sha256_hex

    store = Store(root)
    node, codec, prev = store.node(), default_codec(), None
    start = (now_us() // 86_400_000_000 - days - 1) * 86_400_000_000 + 43_200_000_000
    for index in range(days * per_day):
        at = start + (index // per_day) * 86_400_000_000 + (index % per_day) * 1_000_000
        stored = seal(WorkLogged(project="demo", message=f"old {index}"), at_us=at, node=node, prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        folder = Path(store.events_dir, shard_of(stored.name))
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)
    (Path(store.local_dir) / "head").unlink(missing_ok=True)


@pytest.mark.parametrize("layout", ["delta", "full"])
def test_record_rewrites_only_the_changed_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """After a long history is on the branch, a new event costs one day tree, the events tree and the root, of
    the index (the whole events tree of the branch, kept here); the pushed commit holds that one event under
    `delta`, and is the index under `full`."""
    team = Team(tmp_path, 1, 0)
    root = team.clones[0]
    set_config(root, sync_layout=layout)
    write_history(root, 5, 40)
    assert cli("sync", "--root", str(root))[0] == 0
    written: list[int] = []
    real_write = TreeWriter.write

    def counting(self: TreeWriter, entries: Any) -> str:
        entries = list(entries)
        written.append(len(entries))
        return real_write(self, entries)

    monkeypatch.setattr(TreeWriter, "write", counting)
    Store(root).open_log().append(WorkLogged(project="demo", message="new"))
    code, report = cli("sync", "--root", str(root))
    assert code == 0 and report["added_local"] == 1
    if layout == "delta":  # the index's day; the commit's day, events/ and root; the index's events/ and root
        assert written == [1, 1, 1, 1, 6, 1]
        listing = git(team.bare, "ls-tree", "-r", "--name-only", "continuity").split()
        assert len(listing) == 1 and listing[0].startswith("events/")
    else:  # today's folder (one event), events/ (six days), the root; the same trees again for the index
        assert written == [1, 6, 1, 6, 1]
        assert len(git(team.bare, "ls-tree", "-r", "--name-only", "continuity").split()) == 201


def test_clone_store_streams_a_long_history_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """clone-store writes the history in bounded batches, reports progress, and ends with every event."""
    team = Team(tmp_path, 1, 0)
    write_history(team.clones[0], 6, 50)
    assert cli("sync", "--root", str(team.clones[0]))[0] == 0
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(team.bare), str(fresh))
    batches: list[int] = []
    real_bring_in = engine.Syncer._bring_in

    def recording(self: engine.Syncer, incoming: Any, local_only: Any, **options: Any) -> int:
        batches.append(len(incoming))
        return real_bring_in(self, incoming, local_only, **options)

    monkeypatch.setattr(engine, "RESTORE_BATCH", 100)
    monkeypatch.setattr(engine.Syncer, "_bring_in", recording)
    messages: list[str] = []  # what a terminal shows (the CLI prints none of it with --json or when piped)
    from continuity.sync.clone import clone_store

    result = clone_store(str(fresh), "origin", progress=messages.append)
    assert result["added_remote"] == 300
    restored = [message for message in messages if message.startswith("restored")]
    assert batches == [100, 100, 100] and len(restored) == 3 and "300 events (6/6 days)" in restored[-1]
    assert messages[-1] == "rebuilt 300/300 events"
    assert event_names(fresh) == event_names(team.clones[0])
    assert cli("verify", "--root", str(fresh))[0] == 0


# -- team scale (stress) --------------------------------------------------------------------
@pytest.mark.stress
def test_fifty_clones_at_once_against_the_git_server(tmp_path: Path) -> None:
    """50 clones x 100 events sync at the same moment over git daemon: all exit 0, all hold 5,000 events."""
    with serving(tmp_path / "srv") as daemon:
        team = Team(tmp_path, 50, 100, url=daemon.url("remote.git"))
        crowd_converges(team, 5000)  # the default retry bound: each clone's own node ref is never contended


@pytest.mark.stress
def test_twenty_clones_at_once_against_a_file_remote(tmp_path: Path) -> None:
    """20 clones x 100 events sync at the same moment against a file remote: all exit 0, all hold 2,000."""
    team = Team(tmp_path, 20, 100)
    crowd_converges(team, 2000)


@pytest.mark.stress
def test_sync_killed_at_random_points_while_others_run(tmp_path: Path) -> None:
    """A sync killed mid-way while ten others run: they finish, its next sync converges, no torn event."""
    rng = random.Random(11)
    with serving(tmp_path / "srv") as daemon:
        team = Team(tmp_path, 11, 30, url=daemon.url("remote.git"))
        victim, others = team.clones[0], team.clones[1:]
        for round_number in range(3):
            for root in team.clones:
                Store(root).open_log().append(WorkLogged(project="demo", message=f"round {round_number}"))
            processes = [start_sync(root) for root in others]
            killed = start_sync(victim)
            time.sleep(rng.uniform(0.05, 1.5))
            killed.send_signal(signal.SIGKILL)
            killed.communicate(timeout=30)
            for process in processes:
                _, stderr = process.communicate(timeout=BOUND + 60)
                assert process.returncode == 0, stderr.decode(errors="replace")[-300:]
            code, _ = cli("sync", "--root", str(victim))
            assert code == 0
            assert cli("verify", "--root", str(victim))[0] == 0
        for root in team.clones:  # one quiet round: everyone catches up with everyone
            assert cli("sync", "--root", str(root))[0] == 0
        total = 11 * 30 + 11 * 3
        assert_converged(team, total)
        leftovers = list((victim / STORE / "local" / "incoming").glob("*"))
        names = event_names(victim)
        assert len(names) == len(set(names)) == total and not leftovers
