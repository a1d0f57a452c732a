"""Temp files of the atomic writer left by a kill -9: `verify` warns of them, `rebuild` removes them.

A real child process writes a derived document through `fsio.write_atomic` and is killed
between the temp write and the rename, so the temp's name is the writer's own. Planted
temps stand for the other cases: a live process's temp (kept), an old one (removed), and
entries that must never be touched (other names, a symlink, a folder linked out of the store).
In the project's `.ai-bridge/`, which is the user's folder too, only the temps of the files
continuity writes there are taken.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import cli_process
from tests.workstream_docs import tracked

STORE = Path(".agent") / "runtime-continuity"

#: A child's start: where it would rename, it says "ready" and stops (forever).
STOP_AT_RENAME = """
import os, sys, time
def stop(*args):
    print("ready", flush=True)
    time.sleep(600)
os.replace = stop
"""
#: Child: write `argv[1]` atomically.
CHILD = STOP_AT_RENAME + """
from continuity.core.fsio import write_atomic
write_atomic(sys.argv[1], b'{"half": true}', durable=False, make_parents=True)
"""

#: Child: `continuity work checkpoint` in `argv[1]`, stopped at the rename of its first file in `.ai-bridge/`.
CHECKPOINT_AT_BRIDGE_RENAME = """
import os, sys, time
from continuity.cli import main
replace = os.replace
def stop(source, target, *args, **kwargs):
    if os.sep + ".ai-bridge" + os.sep in os.fspath(target):
        print("ready", flush=True)
        time.sleep(600)
    return replace(source, target, *args, **kwargs)
os.replace = stop
os.chdir(sys.argv[1])
main(["work", "checkpoint"])
"""


def killed_at_rename(code: str, *args: str) -> int:
    """Run `code` (which stops where its rename would happen) in a real process, kill -9 it there; its pid."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                             cwd=Path(__file__).resolve().parents[2])
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    return child.pid


def killed_writer(target: Path) -> Path:
    """Kill -9 a real writer between its temp write and the rename; the temp file it left."""
    temp = target.parent / f".{target.name}.{killed_at_rename(CHILD, str(target))}.tmp"
    assert temp.is_file()
    return temp


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
    assert cli_process("checkpoint", "-m", "parser done", cwd=root).returncode == 0
    return root


def test_rebuild_removes_a_killed_writers_temp_and_keeps_a_live_ones(project: Path, tmp_path: Path) -> None:
    """verify warns (exit 0) of dead or hour-old temps; rebuild removes only those; nothing else is touched."""
    store = project / STORE
    dead = killed_writer(store / "archives" / "latest.json")
    old = store / f".projects.json.{os.getpid()}.tmp"  # a live pid, but an hour and more old
    old.write_bytes(b"{}")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        live = store / f".state.json.{sleeper.pid}.tmp"
        live.write_bytes(b"{}")
        others = [store / ".state.json.tmp", store / "state.json.99999999.tmp", store / f".x.{sleeper.pid}.tmp.bak"]
        for path in others:
            path.write_bytes(b"keep")
        outside = tmp_path / "outside"
        outside.mkdir()
        far = outside / ".secret.json.99999999.tmp"
        far.write_bytes(b"not ours")
        (store / "linked").symlink_to(outside)
        (store / ".link.json.99999999.tmp").symlink_to(far)
        logged = store / "events" / ".x.99999999.tmp"  # the log's folder is not the atomic writer's
        logged.write_bytes(b"")

        checked = cli_process("verify", "--json", cwd=project)
        assert checked.returncode == 1, checked.stderr  # the symlinks planted here are unsafe
        assert json.loads(checked.stdout)["leftover_temps"] == sorted(
            [f"archives/{dead.name}", old.name])
        text = cli_process("verify", cwd=project).stdout
        assert "warning: 2 temp file(s) left by a killed writer (" in text and dead.name in text

        (store / "linked").unlink()
        (store / ".link.json.99999999.tmp").unlink()
        assert cli_process("verify", cwd=project).returncode == 0  # the temps alone are a warning

        (store / "linked").symlink_to(outside)
        (store / ".link.json.99999999.tmp").symlink_to(far)
        rebuilt = cli_process("rebuild", "--json", cwd=project)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert json.loads(rebuilt.stdout)["temps_removed"] == sorted([f"archives/{dead.name}", old.name])
        assert not dead.exists() and not old.exists()
        assert live.read_bytes() == b"{}"
        assert all(path.read_bytes() == b"keep" for path in others)
        assert far.read_bytes() == b"not ours" and (store / ".link.json.99999999.tmp").is_symlink()
        assert logged.exists()
        assert json.loads(cli_process("verify", "--json", cwd=project).stdout)["leftover_temps"] == []
    finally:
        sleeper.kill()
        sleeper.wait()


def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_the_markdown_archives_folder_outside_the_store_is_swept_too(project: Path, tmp_path: Path) -> None:
    """`latest.md` is linked by a temp symlink renamed into place, in the contexts folder outside the store;
    a writer killed between the two leaves `.latest.md.<pid>.tmp` there (and the atomic writer its temps):
    verify names them in full, rebuild removes them, and nothing else in that folder is touched."""
    contexts = tmp_path / "contexts"
    env = {"CONTINUITY_CONTEXTS_DIR": str(contexts)}
    assert cli_process("archive", "--gate", "agent", "--reason", "end of day", cwd=project, env=env).returncode == 0
    folder = contexts / "demo"
    latest = folder / "latest.md"
    assert latest.is_symlink()
    pid = dead_pid()
    link_temp = folder / f".latest.md.{pid}.tmp"
    link_temp.symlink_to(os.readlink(latest))
    file_temp = folder / f".ctx_x.md.{pid}.tmp"
    file_temp.write_text("half")
    other_link = folder / f".notes.md.{pid}.tmp"  # a symlink by another name is not ours to remove
    other_link.symlink_to(os.readlink(latest))
    checked = json.loads(cli_process("verify", "--json", cwd=project, env=env).stdout)
    assert checked["leftover_temps"] == [str(file_temp), str(link_temp)]
    rebuilt = cli_process("rebuild", "--json", cwd=project, env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["temps_removed"] == [str(file_temp), str(link_temp)]
    assert not os.path.lexists(link_temp) and not file_temp.exists()
    assert other_link.is_symlink() and latest.is_symlink() and latest.read_text()


def test_latest_md_is_linked_through_the_writers_temp_name(project: Path, tmp_path: Path) -> None:
    """A writer that stops between making the temp link and renaming it leaves `.latest.md.<pid>.tmp`."""
    code = STOP_AT_RENAME + "from continuity.readside.writers import link_latest\nlink_latest(*sys.argv[1:3])\n"
    pid = killed_at_rename(code, str(tmp_path / "latest.md"), str(tmp_path / "ctx_1.md"))
    assert os.readlink(tmp_path / f".latest.md.{pid}.tmp") == "ctx_1.md"


def test_ai_bridge_temps_of_continuitys_own_files_are_swept_and_the_users_are_not(project: Path) -> None:
    """A `work checkpoint` killed at the rename of `.ai-bridge/context-runtime.json` leaves its temp: verify
    names it, rebuild removes it (and `work export`'s); the user's similar names, other folders and links stay."""
    bridge = project / ".ai-bridge"
    bridge.mkdir()
    (bridge / "context-checkpoint.json").write_text(json.dumps(tracked()))
    dead = bridge / f".context-runtime.json.{killed_at_rename(CHECKPOINT_AT_BRIDGE_RENAME, str(project))}.tmp"
    assert dead.is_file() and not (bridge / "context-runtime.json").exists()
    pid = dead_pid()
    (bridge / "context-transfer").mkdir()
    export_temp = bridge / "context-transfer" / f".context.bundle.{pid}.tmp"
    export_temp.write_bytes(b"half a bundle")
    (bridge / "notes").mkdir()
    users = [bridge / f".context-checkpoint.json.{pid}.tmp", bridge / f".notes.md.{pid}.tmp",
             bridge / f"context-runtime.json.{pid}.tmp", bridge / f".context-runtime.json.{pid}.tmp.bak",
             bridge / "notes" / f".context-runtime.json.{pid}.tmp"]
    for path in users:
        path.write_bytes(b"keep")
    (bridge / f".context-runtime.md.{pid}.tmp").symlink_to(users[0])

    checked = cli_process("verify", "--json", cwd=project)
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["leftover_temps"] == [str(dead), str(export_temp)]
    rebuilt = cli_process("rebuild", "--json", cwd=project)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert json.loads(rebuilt.stdout)["temps_removed"] == [str(dead), str(export_temp)]
    assert not dead.exists() and not export_temp.exists()
    assert all(path.read_bytes() == b"keep" for path in users)
    assert (bridge / f".context-runtime.md.{pid}.tmp").is_symlink()
    assert json.loads((bridge / "context-runtime.json").read_text())["activeWorkstream"]["id"] == "WS-1"
    assert json.loads(cli_process("verify", "--json", cwd=project).stdout)["leftover_temps"] == []


def test_a_temp_that_cannot_be_removed_is_named_where_it_is(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Removal refused (an injected EACCES): the warning names a store temp relative to the store, and one in
    `.ai-bridge/` by its full path (relative to the store it would point at a file that is not there)."""
    import errno

    from continuity.cli import main

    pid = dead_pid()
    bridge_temp = project / ".ai-bridge" / f".context-runtime.json.{pid}.tmp"
    bridge_temp.parent.mkdir()
    bridge_temp.write_bytes(b"half")
    store_temp = project / ".agent/runtime-continuity/local" / f".sync-state.json.{pid}.tmp"
    store_temp.write_bytes(b"half")
    real_unlink = os.unlink

    def refused(path: str, *args: object, **kwargs: object) -> None:
        if str(path).endswith(f".{pid}.tmp"):
            raise PermissionError(errno.EACCES, "Permission denied")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", refused)
    capsys.readouterr()
    assert main(["rebuild", "--root", str(project)]) == 0
    err = capsys.readouterr().err
    assert f"left-over temp file not removed: {bridge_temp} (Permission denied)" in err
    assert f"left-over temp file not removed: local/.sync-state.json.{pid}.tmp (Permission denied)" in err
    assert bridge_temp.exists() and store_temp.exists()
