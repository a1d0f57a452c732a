"""`restore --load` reads an archive file only when it is a regular file of at most 4 MiB inside its folder.

Each planted entry is a real FIFO, a real symlink to a real archive outside the store, or a
real file past the bound that is otherwise a valid archive (so only the new check refuses
it). Commands run as processes under a timeout, so a read that blocks on the FIFO fails
the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.sessions.archives import ARCHIVE_FILE_BYTES
from tests.helpers import cli_process

STORE = Path(".agent") / "runtime-continuity"
OLD_ID = "RC-20200101_000000_000000"  # not among the archives the fold keeps: read back from its file
RC = Path(sys.executable).parent / "runtime-continuity"
COMPAT = [str(RC)] if RC.exists() else [sys.executable, "-m", "continuity.adapters.compat.runtime_continuity"]
TIMEOUT = 20


@pytest.fixture
def archived(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """A project with one archive; (its root, the archive's JSON)."""
    root = tmp_path / "project"
    root.mkdir()
    assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
    assert cli_process("checkpoint", "-m", "parser done", cwd=root).returncode == 0
    done = cli_process("archive", "--gate", "agent", "--reason", "first", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    record = json.loads(Path(json.loads(done.stdout)["archiveJsonPath"]).read_text())
    return root, {**record, "archive_id": OLD_ID, "reason": "planted"}


def plant(kind: str, path: Path, content: bytes, outside: Path) -> None:
    """Put a FIFO, a symlink to `content` outside, or `content` padded past the bound at `path`."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-out":
        outside.write_bytes(content)
        path.symlink_to(outside)
    else:
        path.write_bytes(content + b" " * (ARCHIVE_FILE_BYTES + 1 - len(content)))


@pytest.mark.parametrize("kind", ["fifo", "link-out", "too-big"])
def test_restore_load_refuses_an_unfit_archive_file(archived: tuple[Path, dict[str, object]], kind: str,
                                                    tmp_path: Path) -> None:
    """`continuity restore --load`: one `continuity: error:` line naming the file, exit 7, no traceback, no hang."""
    root, record = archived
    path = root / STORE / "archives" / f"{OLD_ID}.json"
    plant(kind, path, json.dumps(record).encode(), tmp_path / "elsewhere.json")
    done = subprocess.run([sys.executable, "-m", "continuity", "restore", "--load", OLD_ID], cwd=root,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 7, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"continuity: error: archive {OLD_ID} cannot be read: "), lines
    assert str(path) in lines[0]


def test_restore_load_still_reads_a_regular_archive_file(archived: tuple[Path, dict[str, object]]) -> None:
    """The same file, regular and small, loads as before."""
    root, record = archived
    (root / STORE / "archives" / f"{OLD_ID}.json").write_text(json.dumps(record))
    done = cli_process("restore", "--load", OLD_ID, "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["archive"]["reason"] == "planted"


@pytest.mark.parametrize("kind", ["fifo", "link-out", "too-big"])
@pytest.mark.parametrize("wanted", ["latest", "named"])
def test_compat_restore_load_answers_no_archive(archived: tuple[Path, dict[str, object]], kind: str, wanted: str,
                                                tmp_path: Path) -> None:
    """`runtime-continuity restore --load`: the contract's `no_archive_for_project`, exit 0, stderr empty."""
    root, _ = archived
    folder = Path(os.environ["HOME"]) / ".agent" / "contexts" / "demo"
    name = "latest.md" if wanted == "latest" else "ctx_20200101_000000_000000.md"
    target = folder / name
    body = (folder / "latest.md").read_bytes()
    target.unlink(missing_ok=True)
    plant(kind, target, body, tmp_path / "elsewhere.md")
    done = subprocess.run([*COMPAT, "restore", "--project", "demo", "--gate", "user", "--load",
                           "latest" if wanted == "latest" else "20200101_000000_000000"],
                          cwd=root, capture_output=True, text=True, timeout=TIMEOUT)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == json.dumps({"ok": False, "action": "restore", "project": "demo",
                                      "error": "no_archive_for_project"}, indent=2) + "\n"


@pytest.mark.parametrize("kind", ["link-out", "too-big"])
def test_compat_auto_and_resume_bundle_skip_an_unfit_latest_json(archived: tuple[Path, dict[str, object]],
                                                                  kind: str, tmp_path: Path) -> None:
    """`restore --auto` and `resume-bundle` take P's own RC-*.json when latest.json leads out of the store or is
    too big: what lies outside is never printed, and no file is read past 4 MiB."""
    root, record = archived
    latest = root / STORE / "archives" / "latest.json"
    latest.unlink()
    plant(kind, latest, json.dumps({**record, "reason": "from outside"}).encode(), tmp_path / "elsewhere.json")
    for args in (("restore", "--project", "demo", "--auto"), ("resume-bundle", "--project", "demo")):
        done = subprocess.run([*COMPAT, *args], cwd=root, capture_output=True, text=True, timeout=TIMEOUT)
        assert (done.returncode, done.stderr) == (0, ""), args
        data = json.loads(done.stdout)
        assert data["archive"]["reason"] == "first", args
        assert (data.get("archive_json_path") or data["latest_archive"]).endswith(".json")
        assert "latest.json" not in (data.get("archive_json_path") or data["latest_archive"])
