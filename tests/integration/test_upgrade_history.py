"""Stores written by older commits of continuity, read and written by this one (DESIGN.md 3.7).

`tests/fixtures/store_a5e0dfb` was written by the first commit (a5e0dfb): `init --project demo`,
`log "parsed the input" --file src/parse.py`, `checkpoint -m "tests green" --phase testing --done
parser --next "wire the CLI" --command "pytest -q" --exit-code 0`. That release kept events in hour
folders, `events/<YYYYMMDD>/<HH>/`; every later one in `events/<YYYYMMDD>/`. Only its events and
config.json are kept.

`tests/fixtures/store_6ec4b99` (sync, hooks and archives; before the read-model registry) and
`tests/fixtures/store_c0b8445` (tasks, runs, roles, messages, handoffs, snapshots, park and a
tracked workstream) were written in a project at /tmp/continuity-demo/proj by `init`, `log`,
`checkpoint`, `archive`, `host-switch`, `resume-bundle --record`, the Claude Code SessionStart,
PostToolUse and SessionEnd hooks and, at c0b8445, every team and task command it had (the commands
are listed in the message of the commit that added them). Their events and config.json are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from continuity.cli import main
from tests.helpers import cli_process

Capture = pytest.CaptureFixture[str]

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "store_a5e0dfb"
DAY, HOUR = "20261202", "05"
LOGGED = "RCE-20261202_054839_363794-66b8a99f"
CHECKPOINT = "RCE-20261202_054839_521485-66b8a99f"
CHECKPOINT_FILE = "20261202_054839_521485-66b8a99f-3ae30ebef258.json"


@pytest.fixture
def first_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The a5e0dfb store in a fresh project (the working directory)."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root / ".agent" / "runtime-continuity")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(root)
    return root


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` with a fixed identity and no user or system config; its stdout."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def _events(root: Path) -> Path:
    return root / ".agent" / "runtime-continuity" / "events"


def test_the_first_releases_hour_folders_are_read_whole(first_release: Path, capsys: Capture) -> None:
    """The first read after the upgrade counts both events of the first release (it said 0 events), saying it
    moved them into their day folder, byte for byte; events list, verify and the brief see them."""
    before = {path.name: path.read_bytes() for path in (_events(first_release) / DAY / HOUR).iterdir()}
    assert main(["status"]) == 0
    captured = capsys.readouterr()
    assert "(2 events)" in captured.out
    assert "moved 2 event(s) of the first release's hour folders" in captured.err
    assert main(["--json", "events", "list"]) == 0
    assert [event["event_id"] for event in json.loads(capsys.readouterr().out)["events"]] == [LOGGED, CHECKPOINT]
    assert not (_events(first_release) / DAY / HOUR).exists()
    assert {name: (_events(first_release) / DAY / name).read_bytes() for name in before} == before
    assert main(["--json", "verify"]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == 2
    assert main(["resume-bundle"]) == 0
    assert "wire the CLI" in capsys.readouterr().out


def test_events_list_as_the_first_command_after_the_upgrade_lists_them(first_release: Path, capsys: Capture) -> None:
    """`events list`, which reads the log without the read models, lists the first release's events too, also
    beside a file that sorts before the hour folder (a Finder's .DS_Store)."""
    (_events(first_release) / DAY / ".DS_Store").write_bytes(b"")
    assert main(["--json", "events", "list"]) == 0
    assert [event["event_id"] for event in json.loads(capsys.readouterr().out)["events"]] == [LOGGED, CHECKPOINT]


@pytest.mark.parametrize(("argv", "expected"), [
    (["events", "show", LOGGED], "parsed the input"),
    (["recall", "parsed"], LOGGED),
    (["timeline", "--out", "page.html"], "timeline of 2 events"),
])
def test_readers_without_the_read_models_see_them_as_the_first_command(
    first_release: Path, capsys: Capture, argv: list[str], expected: str,
) -> None:
    """`events show` (was 'no event', exit 7), `recall` (was 'no matches') and `timeline` (was 0 events) read
    the first release's events when they are the first command after the upgrade."""
    assert main(argv) == 0
    assert expected in capsys.readouterr().out


def test_runtime_continuity_lists_the_first_releases_events(first_release: Path, capsys: Capture) -> None:
    """`runtime-continuity resume-bundle` as the first command names both event files in runtime_events
    (it listed none: its listing reads day folders itself)."""
    from continuity.adapters.compat.runtime_continuity import main as runtime_continuity

    assert runtime_continuity(["resume-bundle", "--project", "demo"]) == 0
    listed = json.loads(capsys.readouterr().out)["runtime_events"]
    assert [path.rsplit("/", 2)[-2:] for path in listed] == [
        [DAY, CHECKPOINT_FILE], [DAY, "20261202_054839_363794-66b8a99f-39302d5cca2b.json"]]


def test_the_first_write_after_the_upgrade_chains_to_the_first_releases_head(first_release: Path) -> None:
    """A `log` as a new process (the plain append path) is the checkpoint's child, not a second root."""
    done = cli_process("log", "wired the CLI", cwd=first_release, env={"HOME": str(first_release.parent / "home")})
    assert done.returncode == 0, done.stderr
    newest = max(_events(first_release).glob("*/*.json"), key=lambda path: path.name)  # today's day, or DAY
    checkpoint = (_events(first_release) / DAY / CHECKPOINT_FILE).read_bytes()
    assert json.loads(newest.read_bytes())["prev"] == hashlib.sha256(checkpoint).hexdigest()
    verified = cli_process("--json", "verify", cwd=first_release, env={"HOME": str(first_release.parent / "home")})
    report = json.loads(verified.stdout)
    assert (verified.returncode, report["events"], report["roots"]) == (0, 3, 1)


def test_a_link_planted_in_an_hour_folder_is_not_moved_into_the_log(first_release: Path, capsys: Capture) -> None:
    """A symlink under an event's name in an hour folder stays there, unread (never becomes an event path that
    leads out of the store); the real events move, and verify names the folder (exit 1)."""
    outside = first_release.parent / "outside.json"
    outside.write_bytes(b"{}")
    planted = _events(first_release) / DAY / HOUR / "20261202_054839_900000-66b8a99f-000000000000.json"
    planted.symlink_to(outside)
    assert main(["verify"]) == 1
    assert f"UNREAD: events/{DAY}/{HOUR}/" in capsys.readouterr().out
    assert planted.is_symlink()
    assert not (_events(first_release) / DAY / planted.name).exists()
    assert (_events(first_release) / DAY / CHECKPOINT_FILE).is_file()


def test_verify_after_the_upgrade_says_each_catch_up_warning_once(first_release: Path, capsys: Capture) -> None:
    """The models rebuilt for the workstream and the task checks are one warning line, not the same line twice."""
    assert main(["verify"]) == 0
    out = capsys.readouterr().out
    assert out.count("rebuilt from 2 events") == 1
    assert out.endswith("ok: the log is intact\n")


def test_an_hour_folder_file_that_cannot_be_moved_fails_verify(first_release: Path, capsys: Capture) -> None:
    """An event of another day left in an hour folder is named by verify (exit 1) and warned of by reads,
    never silently unread."""
    stray = _events(first_release) / DAY / HOUR / "20261203_010203_000000-66b8a99f-000000000000.json"
    stray.write_bytes(b"{}")
    assert main(["status"]) == 0
    assert f"events/{DAY}/{HOUR}/ holds files that are not read" in capsys.readouterr().err
    assert main(["verify"]) == 1
    out = capsys.readouterr().out
    assert f"UNREAD: events/{DAY}/{HOUR}/" in out
    assert "BROKEN: 1 hour folder(s) of the first release hold files no reader takes" in out
    assert sorted(path.name for path in (_events(first_release) / DAY).glob("*.json"))[-1] == CHECKPOINT_FILE


def test_a_first_sync_after_the_upgrade_pushes_the_first_releases_events(first_release: Path, capsys: Capture,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`sync` as the first command records and pushes both events (it said 'recorded 0 local event(s)' and
    pushed nothing), and `clone-store` on a second clone brings them back, verified."""
    for key, value in {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                       "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid"}.items():
        monkeypatch.setenv(key, value)
    remote = first_release.parent / "remote.git"
    git(first_release.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    git(first_release, "init", "-q", "-b", "main")
    git(first_release, "remote", "add", "origin", str(remote))
    assert main(["--json", "sync"]) == 0
    assert json.loads(capsys.readouterr().out)["added_local"] == 2
    assert git(remote, "ls-tree", "-r", "--name-only", "continuity").split() == [
        f"events/{DAY}/{path.name}" for path in sorted((_events(first_release) / DAY).glob("*.json"))]
    other = first_release.parent / "other"
    git(first_release.parent, "clone", "-q", str(remote), str(other))
    monkeypatch.chdir(other)
    assert main(["clone-store", "origin"]) == 0
    capsys.readouterr()
    assert main(["--json", "verify"]) == 0
    assert json.loads(capsys.readouterr().out)["events"] == 2


#: Per fixture: how many events, and how many of the briefs it served replay to their recorded hash. The
#: last brief c0b8445 served is rendered today with a team-resume section it did not have (docs/architecture.md).
OLDER = {"store_6ec4b99": (12, 3), "store_c0b8445": (26, 2)}


@pytest.fixture(params=sorted(OLDER))
def older(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An older commit's store in a fresh git project (the working directory)."""
    root = tmp_path / "proj"
    store = root / ".agent" / "runtime-continuity"
    shutil.copytree(FIXTURE.parent / request.param, store)
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(root)
    return request.param, store


def _derived(store: Path) -> dict[str, bytes]:
    return {str(path.relative_to(store)): path.read_bytes() for path in sorted(store.rglob("*"))
            if path.is_file() and path.relative_to(store).parts[0] not in ("events", "local")}


def test_an_older_store_verifies_and_its_catch_up_equals_a_rebuild(older: tuple[str, Path], capsys: Capture) -> None:
    """Every event of the older store decodes (verify 0), and the files the first reads derive equal a rebuild's."""
    name, store = older
    assert main(["--json", "verify"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["events"], report["unknown_types"], report["roots"]) == (OLDER[name][0], {}, 1)
    for argv in (["status"], ["resume-bundle"], ["restore", "--list"], ["task", "list"], ["handoff", "list"],
                 ["role", "list", "core"], ["inbox", "core", "--agent", "bob"], ["memory", "list"]):
        assert main(argv) == 0, argv
    caught_up = _derived(store)
    assert main(["rebuild"]) == 0
    assert _derived(store) == caught_up


def test_the_briefs_an_older_store_served_replay(older: tuple[str, Path], capsys: Capture) -> None:
    """`resume-bundle --as-of` of each served brief exits 0; those whose sections have not changed since
    reproduce the recorded hash (no mismatch warning)."""
    name, _ = older
    assert main(["--json", "events", "list", "--kind", "context.served"]) == 0
    served = [event["event_id"] for event in json.loads(capsys.readouterr().out)["events"]]
    matching = 0
    for event_id in served:
        assert main(["resume-bundle", "--as-of", event_id]) == 0
        matching += "does not match the hash" not in capsys.readouterr().err
    assert (len(served), matching) == (3, OLDER[name][1])


def test_the_features_of_a_c0b8445_store_read_after_the_upgrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: Capture) -> None:
    """The task and its memory, the handoff, the role, bob's message and the workstream of c0b8445 all show."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE.parent / "store_c0b8445", root / ".agent" / "runtime-continuity")
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(root)
    shown = {}
    for argv in (["task", "list"], ["memory", "list"], ["handoff", "list"], ["role", "list", "core"],
                 ["inbox", "core", "--agent", "bob"], ["work", "status"]):
        assert main(["--json", *argv]) == 0
        shown[argv[0]] = json.loads(capsys.readouterr().out)
    assert [task["title"] for task in shown["task"]["tasks"]] == ["refunds"]
    assert [memory["title"] for memory in shown["memory"]["memories"]] == ["Task complete: refunds"]
    assert [handoff["to"]["agent"] for handoff in shown["handoff"]["handoffs"]] == ["bob"]
    assert [role["role"] for role in shown["role"]["roles"]] == ["reviewer"]
    assert [message["text"] for message in shown["inbox"]["messages"]] == ["please review"]
    assert shown["work"]["activeWorkstream"]["id"] == "WS-1"


def test_an_hour_folder_after_the_events_of_its_day_is_still_moved(first_release: Path, capsys: Capture) -> None:
    """An hour folder named "21"-"23" beside events already in the day folder (a move stopped half way): it
    sorts after event names of the 2020s, and the first listing still finds it and moves its events (was:
    only an hour sorting before every event name was noticed, so these stayed unread)."""
    events = _events(first_release)
    late = events / DAY / "23"
    (events / DAY / HOUR).rename(late)
    os.link(late / CHECKPOINT_FILE, events / DAY / CHECKPOINT_FILE)  # a move that stopped before its unlinks
    assert main(["events", "show", LOGGED]) == 0
    assert not late.exists() and (events / DAY / CHECKPOINT_FILE).exists()


def test_a_stray_file_named_like_an_hour_never_takes_the_writers_lock(first_release: Path, capsys: Capture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A file (not a folder) named "00" in a day folder: readers list the day as it is, without the writers'
    lock and the scan of every day folder that a move costs (was: both, on every read)."""
    from events.durable import DurableFolder

    assert main(["events", "list"]) == 0  # the first release's folders moved
    (_events(first_release) / DAY / "00").write_text("stray\n")
    capsys.readouterr()

    def refuse(self: DurableFolder) -> tuple[int, list[str]]:
        raise AssertionError("a move was attempted for a stray file")

    monkeypatch.setattr(DurableFolder, "adopt_hour_folders", refuse)
    assert main(["events", "list"]) == 0
    assert main(["resume-bundle"]) == 0
