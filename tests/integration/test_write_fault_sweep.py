"""An I/O error at every disk-changing call of each newer write command, one point per run.

Each command is first run healthy to count its disk-changing calls (tests/injected.py);
then, in a fresh store each time, the n-th call fails with a real errno: from there on
(ENOSPC: the disk is full) or that call alone (EIO: a transient fault). Whatever the
point, the command exits 0 or with its documented write-failure code, with one error
line and no traceback; it never says it failed after writing its events, nor succeeds
without them; the log then verifies, and the next catch-up equals a rebuild.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from tests.injected import SyscallFaults, event_files, identity, run, stale_after_catch_up
from tests.integration.test_write_faults import prepare

COMMANDS = {
    "task-create": ["task", "create", "--title", "x"],
    "task-update": ["task", "update", "{task}", "--status", "completed", "--note", "why"],
    "run-start": ["run", "start", "--task", "{task}"],
    "run-complete": ["run", "complete", "{run}", "--output-summary", "did"],
    "snapshot": ["snapshot", "core", "amy", "t1", "--objective", "o", "--next", "n"],
    "park": ["park", "core", "--agent", "amy", "--next", "n"],
    "role-claim": ["role", "claim", "core", "ops", "--agent", "amy"],
    "role-release": ["role", "release", "core", "rev", "--agent", "amy"],
    "work-checkpoint": ["work", "checkpoint", "--keep"],
    "work-validate": ["work", "validate", "--id", "V1", "--kind", "unit-tests", "--result", "PASS", "--scope", "all",
                      "--summary", "s", "--repository", "repo-a"],
    "archive": ["archive", "--reason", "r"],
    "host-switch": ["host-switch", "--from-host", "claude-code", "--to-host", "codex"],
}
#: The code each command exits with when its events cannot be written (docs/cli.md; snapshot: seed 000's 3).
WRITE_FAILED = {name: 3 if name == "snapshot" else 5 for name in COMMANDS}


def fresh(base: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, list[str]]:
    """A new initialized project under `base` as the working directory, its own home: (root, home, [])."""
    root, home = base / "proj", base / "home"
    root.mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(root)
    assert run(["init", "--project", "demo"])[0] == 0
    return root, home, []


def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, error: int, *, persistent: bool) -> int:
    """Fail each disk-changing call of `name` in turn; returns how many points were tried."""
    def prepared(label: str) -> tuple[Path, Path, list[str]]:
        root, home, _ = fresh(tmp_path / label, monkeypatch)
        ids = prepare(root)
        return root, home, [part.format(**ids) for part in COMMANDS[name]]

    root, home, argv = prepared("healthy")
    counter = SyscallFaults(error, at=None)
    with identity():
        code, _, err = run(argv, counter)
    assert code == 0, err
    for at in range(1, counter.calls + 1):
        root, home, argv = prepared(f"at{at}")
        before = event_files(root)
        faults = SyscallFaults(error, at=at, persistent=persistent)
        with identity():
            code, _, err = run(argv, faults)
        where = f"{name} failing at call {at} ({faults.hits[:1]}): exit {code}, stderr {err!r}"
        assert code in (0, WRITE_FAILED[name]), where
        assert "Traceback" not in err, where
        if code == 0:
            assert len(event_files(root)) > len(before), where
        else:
            assert event_files(root) == before, where
            assert len([line for line in err.splitlines() if "warning:" not in line]) == 1, where
            assert os.strerror(error) in err, where
        verified = run(["verify"])
        assert verified[0] == 0, (where, verified)
        assert stale_after_catch_up(root, home) == [], where
    return counter.calls


@pytest.mark.parametrize("name", ["task-update", "park", "work-checkpoint", "archive"])
def test_a_full_disk_at_any_point_of_a_write_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     name: str) -> None:
    """ENOSPC from the n-th disk-changing call on, for every n: documented code, nothing half-written, rebuild equal."""
    assert sweep(tmp_path, monkeypatch, name, errno.ENOSPC, persistent=True) > 5


@pytest.mark.stress
@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"host-switch"}))  # archive's path, and the file's 60 s
def test_a_transient_eio_at_any_point_of_a_write_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         name: str) -> None:
    """EIO at the n-th disk-changing call alone, for every n and every newer write command but host-switch."""
    assert sweep(tmp_path, monkeypatch, name, errno.EIO, persistent=False) > 5
