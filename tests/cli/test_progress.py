"""Progress on stderr for long work: shown on a pseudo-terminal, never when piped or with --json."""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from continuity.cli import main
from continuity.recall import index
from tests.integration.test_recall import STORE, write_events
from tests.integration.test_sync import IDENTITY, World


def env() -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    return {**found, **IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "COLUMNS": "100"}


def on_pty(*argv: str, cwd: Path) -> tuple[int, str, str]:
    """Run `continuity ARGV` with stderr on a pseudo-terminal; (exit code, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal has a size
    child = subprocess.Popen([sys.executable, "-m", "continuity", *argv], cwd=cwd, env=env(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError as error:  # EIO: every writer of the terminal has gone
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    return child.wait(timeout=60), out, seen.decode(errors="replace")


def piped(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "continuity", *argv], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=60)


@pytest.fixture
def busy(project: Path) -> Path:
    """A project with 3,000 events over a few days."""
    write_events(project, 3000)
    return project


def test_rebuild_shows_progress_on_a_terminal_only(busy: Path) -> None:
    """rebuild: a bar on a terminal; nothing on a pipe; nothing with --json even on a terminal."""
    code, out, terminal = on_pty("rebuild", cwd=busy)
    assert code == 0 and "rebuilt from 3000 events" in out
    assert "rebuilding projections" in terminal and "/3000" in terminal
    done = piped("rebuild", cwd=busy)
    assert done.returncode == 0 and done.stderr == ""
    code, out, terminal = on_pty("rebuild", "--json", cwd=busy)
    assert code == 0 and '"events": 3000' in out and terminal == ""


def test_the_recall_index_build_shows_progress_and_rebuild_rebuilds_it(busy: Path) -> None:
    """The first recall builds the index with a bar; rebuild rebuilds an existing index, with a bar."""
    code, out, terminal = on_pty("recall", "topic7", cwd=busy)
    assert code == 0 and "topic7" in out
    assert "indexing for recall" in terminal and "/3000" in terminal
    code, out, terminal = on_pty("recall", "topic7", cwd=busy)  # current: nothing to show
    assert code == 0 and terminal == ""
    done = piped("rebuild", "--json", cwd=busy)
    assert '"recall_indexed": 3000' in done.stdout and done.stderr == ""
    code, out, terminal = on_pty("rebuild", cwd=busy)
    assert "recall index: 3000 events" in out and "indexing for recall" in terminal


def test_rebuild_leaves_no_index_where_there_was_none(busy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The recall index is made by the first recall, not by rebuild (which stays as fast as before)."""
    assert main(["rebuild"]) == 0
    assert not (busy / STORE / "local" / index.INDEX_NAME).exists()


def test_sync_and_clone_store_show_progress_on_a_terminal_only(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """sync and clone-store: their stages on a terminal; nothing on a pipe."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    world = World(tmp_path)
    write_events(world.a, 1500)
    code, out, terminal = on_pty("sync", cwd=world.a)
    assert code == 0 and "synced" in out
    assert "sync:" in terminal and "events" in terminal
    write_events(world.b, 10)  # b's own events, then b takes a's
    done = piped("sync", cwd=world.b)
    assert done.returncode == 0 and done.stderr == ""
    fresh = world.clone("c", init=False)
    code, out, terminal = on_pty("clone-store", "origin", cwd=fresh)
    assert code == 0 and "cloned" in out
    assert "clone-store:" in terminal and "events" in terminal
