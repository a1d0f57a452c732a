"""What `recordable` cuts so a brief's inputs fit their `context.served` event, and what it leaves whole."""

from __future__ import annotations

import msgspec

from continuity.sessions.recordable import INPUTS_BYTES, recordable
from events.context import GitNow, ViewInputs

NOW = "2026-12-03T10:00:00.000000Z"
CUT = "git status too long to record: "


def git_with(files: int, width: int = 150) -> GitNow:
    names = tuple(f"src/f{index:05d}_{'x' * width}.py" for index in range(files))
    return GitNow(branch="main", head="0" * 40, status_short="".join(f" M {name}\n" for name in names),
                  dirty_files=names, new_dirty_files=names)


def test_a_big_git_status_is_cut_to_fit_with_one_warning() -> None:
    inputs = ViewInputs(now=NOW, git=git_with(1500))
    assert len(msgspec.json.encode(inputs)) > INPUTS_BYTES
    fitted = recordable(inputs)
    assert fitted.git is not None and 0 < len(fitted.git.dirty_files) < 1500
    assert len(msgspec.json.encode(fitted)) <= INPUTS_BYTES
    assert [w for w in fitted.warnings if w.startswith(CUT)] == [
        f"{CUT}the brief keeps {len(fitted.git.dirty_files)} changed files (`git status` has them all)"]


def test_inputs_too_big_for_another_reason_keep_git_whole_and_blame_nothing() -> None:
    """Long handoff and artifact paths made the inputs big: git's 52 files were cut to none, and the brief said
    twice that git's status was too long (it was 3 KB)."""
    paths = {f"docs/handoffs/{index:03d}_{'h' * 2000}.json": "pending" for index in range(60)}
    git = git_with(52, width=40)
    inputs = ViewInputs(now=NOW, git=git, handoff_states=paths, artifact_states=dict(paths))
    assert len(msgspec.json.encode(inputs)) > INPUTS_BYTES
    fitted = recordable(inputs)
    assert fitted.git == git
    assert not [w for w in fitted.warnings if w.startswith(CUT)]


def test_small_inputs_pass_unchanged() -> None:
    inputs = ViewInputs(now=NOW, git=git_with(10), warnings=("something else",))
    assert recordable(inputs) == inputs
