"""An archive records the work state every log built up: it must be recordable whatever the log accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from continuity.cli import main
from events.base import MAX_EVENT_BYTES
from tests.helpers import all_event_files


def _archive_event(project: Path) -> dict[str, object]:
    [path] = [path for path in all_event_files(project) if b'"archive.created"' in path.read_bytes()][-1:]
    assert path.stat().st_size <= MAX_EVENT_BYTES
    found: dict[str, object] = json.loads(path.read_bytes())
    return found


def test_an_archive_fits_however_many_long_done_items_the_logs_gathered(project: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty logs of thirteen done items of 360 CJK characters each: every one accepted, then every `archive`
    (and the SessionEnd auto-archive) refused, "event too large", until a note cleared the list. The archive keeps
    the newest done items within its bound, and the next action whole."""
    for log in range(20):
        items = [f"{log:02d}-{item:02d} " + "完成了" * 120 for item in range(13)]
        assert main(["log", "-m", f"log {log}", *[arg for item in items for arg in ("--done", item)],
                     "--next", "ship it"]) == 0
    capsys.readouterr()
    assert main(["archive"]) == 0, capsys.readouterr().err
    state = _archive_event(project)["state"]
    assert isinstance(state, dict)
    done = state["done"]
    assert 0 < len(done) < 256 and done[-1].startswith("19-12 ") and state["next"] == ["ship it"]
    assert main(["host-switch", "--from-host", "a", "--to-host", "b"]) == 0


@pytest.mark.parametrize("goal", ["a\u0000b", "\u001b[2J clear", "g" * 20_000])
def test_a_goal_a_log_note_set_never_stops_an_archive(project: Path, capsys: pytest.CaptureFixture[str],
                                                       goal: str) -> None:
    """`log --note-json '{"goal": ...}'` takes any text; an archive takes a goal without control characters of at
    most 16,384: every archive was refused (exit 2) for the log's goal. It is recorded with U+FFFD and cut."""
    assert main(["log", "-m", "x", "--note-json", json.dumps({"goal": goal})]) == 0
    capsys.readouterr()
    assert main(["archive"]) == 0, capsys.readouterr().err
    recorded = _archive_event(project)["state"]
    assert isinstance(recorded, dict)
    kept = recorded["current_goal"]
    assert isinstance(kept, str) and len(kept) <= 16384 and not any(ord(c) < 32 and c not in "\t\n\r" for c in kept)


def test_an_archive_fits_beside_the_most_git_facts_it_carries(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The work state's own bounds left out what the same event carries beside it: with 1,100 untracked files
    (the dirty list and status, up to 160 KiB), six done items of 16,000 characters and a goal of 16,384, the
    archive was 277 kB, refused. The work state gives way (oldest done items, then the goal) to the git facts."""
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    for number in range(1100):
        (project / (f"f{number:04d}_" + "x" * 90)).touch()
    big = "d" * 16_000
    assert main(["log", "-m", "many done", *[arg for n in range(6) for arg in ("--done", f"{n}{big}")]]) == 0
    assert main(["log", "-m", "goal", "--note-json", json.dumps({"goal": "g" * 16_384})]) == 0
    capsys.readouterr()
    assert main(["archive"]) == 0, capsys.readouterr().err
    state = _archive_event(project)["state"]
    assert isinstance(state, dict) and state["done"] and state["done"][-1].startswith("5d")
    capsys.readouterr()
    assert main(["archive", "--note-json", json.dumps({"done": [big] * 16})]) == 2  # a note's own lists: as given
    assert "event too large" in capsys.readouterr().err
