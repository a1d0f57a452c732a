"""A store shared by a group of users on one machine: every file continuity makes follows the umask.

Folders always did; the append lock, the head hint, the saved models and the sync lock were made 0644 whatever
the umask, so under a group's umask (002, a setgid folder) a teammate could read the store but not write to it:
`log` failed with "store is not writable" on the first user's `local/lock`.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest


def _run(root: Path, umask: int, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(root.parent)
    done = subprocess.run([sys.executable, "-m", "continuity", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60, preexec_fn=lambda: os.umask(umask))
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077])
def test_every_file_of_the_store_follows_the_umask(tmp_path: Path, umask: int) -> None:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(remote)], check=True)
    for args in (("init", "--project", "demo"), ("log", "-m", "one"), ("checkpoint", "-m", "c", "--next", "n"),
                 ("status",), ("archive", "--gate", "agent", "--reason", "r"), ("sync",), ("recall", "one")):
        _run(root, umask, *args)
    store = root / ".agent" / "runtime-continuity"
    modes: dict[str, int] = {}
    for folder, _, files in os.walk(store):
        for name in files:
            path = Path(folder, name)
            modes[str(path.relative_to(store))] = stat.S_IMODE(path.lstat().st_mode)
    assert {"local/lock", "local/head", "local/node", "local/models/worklog.msgpack", "local/sync.lock",
            "local/recall.sqlite3",
            "latest.json" if (store / "latest.json").exists() else "archives/latest.json"} <= set(modes), modes
    wrong = {path: oct(mode) for path, mode in modes.items()
             if mode != (0o444 if path.startswith("events/") else 0o666) & ~umask}
    assert wrong == {}
