"""Injected I/O errors in the derived files of the newer write commands: the next catch-up writes them.

The event is durable first; a document that then cannot be written (ENOSPC, EIO) is a
warning and exit 0 (docs/cli.md), and the read model must not be saved past it: saved,
no later catch-up would fold that event again, and the file would stay missing or old
until someone ran `continuity rebuild`.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tests.injected import SyscallFaults, event_files, identity, path_contains, run, stale_after_catch_up
from tests.workstream_docs import tracked


def prepare(root: Path) -> dict[str, str]:
    """A task with a run, roles rev (held by amy) and ops, an active workstream: the ids made."""
    ids: dict[str, str] = {}
    with identity():
        ids["task"] = json.loads(run(["--json", "task", "create", "--title", "t"])[1])["task_id"]
        ids["run"] = json.loads(run(["--json", "run", "start", "--task", ids["task"]])[1])["run_id"]
        for role in ("rev", "ops"):
            assert run(["role", "create", "core", role])[0] == 0
        assert run(["role", "claim", "core", "rev", "--agent", "amy"])[0] == 0
        (root / ".ai-bridge").mkdir()
        (root / ".ai-bridge" / "context-checkpoint.json").write_text(json.dumps(tracked("WS-1")))
        assert run(["work", "checkpoint", "--keep"])[0] == 0
    return ids


#: command -> the derived file whose write fails (a path fragment).
DOCUMENTS = {
    "park-snapshot": (["park", "core", "--agent", "amy", "--next", "n"], "member/amy"),
    "park-role": (["park", "core", "--agent", "amy", "--next", "n"], "roles/.rev.md"),
    "role-claim": (["role", "claim", "core", "ops", "--agent", "amy"], "roles/.ops.md"),
    "work-checkpoint": (["work", "checkpoint", "--keep"], "context-runtime.json"),
    "archive-json": (["archive", "--reason", "r"], "archives/.RC-"),
    "archive-markdown": (["archive", "--reason", "r"], "/.ctx_"),
    "host-switch": (["host-switch", "--from-host", "claude-code", "--to-host", "codex"], "archives/.RC-"),
    "task-completed-memory": (["task", "update", "{task}", "--status", "completed", "--note", "n"], "/memories/"),
    "task-blocked-memory": (["task", "update", "{task}", "--status", "blocked", "--note", "n"], "/memories/"),
}


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("case", sorted(DOCUMENTS))
def test_a_document_that_could_not_be_written_is_written_by_the_next_catch_up(
        project: Path, tmp_path: Path, case: str, error: int) -> None:
    """A derived file failing during a write command: exit 0 with a warning, then the next catch-up writes it."""
    ids = prepare(project)
    argv, fragment = DOCUMENTS[case]
    before = event_files(project)
    faults = SyscallFaults(error, match=path_contains(fragment))
    with identity():
        code, _, err = run([part.format(**ids) for part in argv], faults)
    assert faults.hits, f"nothing touched {fragment}: the case tests nothing"
    assert code == 0, err
    assert "Traceback" not in err and "continuity: warning:" in err and os.strerror(error) in err, err
    assert len(event_files(project)) > len(before)
    assert stale_after_catch_up(project, tmp_path / "home") == []


def test_a_latest_md_link_that_cannot_replace_the_old_one_leaves_no_temp_link(project: Path, tmp_path: Path) -> None:
    """latest.md: when the rename of its new link fails, the temp link is removed (a copy is written instead)."""
    with identity():
        assert run(["archive", "--reason", "first"])[0] == 0
        # the link's rename only: the copy written instead goes through the atomic writer's temp of that name
        faults = SyscallFaults(errno.EIO, match=lambda name, first: name == "replace"
                               and os.path.basename(str(first)).startswith(".latest.md.") and os.path.islink(first))
        code, _, err = run(["archive", "--reason", "second"], faults)
    assert faults.hits and code == 0, err
    folder = tmp_path / "home" / ".agent" / "contexts" / "demo"
    assert [name for name in os.listdir(folder) if name.endswith(".tmp")] == []
    newest = max(name for name in os.listdir(folder) if name.startswith("ctx_"))
    assert (folder / "latest.md").read_bytes() == (folder / newest).read_bytes()


def test_a_folder_that_stays_unwritable_is_not_retried_without_bound(project: Path, tmp_path: Path) -> None:
    """The Markdown archives' folder is a file (ENOTDIR on every try, as in a read-only home): each
    catch-up retries while the events folded again stay few; past RETRY_FOLDS the model is saved with
    one warning that names `continuity rebuild`, and later commands fold nothing again."""
    from continuity.core.store import find_store
    from continuity.readside.writers import RETRY_FOLDS, refresh
    from events.worklog import WorkLogged

    folder = tmp_path / "home" / ".agent" / "contexts" / "demo"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("not a folder\n")
    with identity():
        code, _, err = run(["archive", "--reason", "r"])
    assert code == 0 and "Markdown archive not written" in err, err
    store = find_store(root=str(project))
    log = store.open_log()
    log.append_many([WorkLogged(project="demo", message=f"a {n}") for n in range(5)])
    with identity():
        retried = refresh(store)
        again = refresh(store)
    assert retried.folded >= 6 and again.folded == retried.folded  # not saved: the archive is folded again
    assert not any("not retried" in line for line in retried.warnings)
    log.append_many([WorkLogged(project="demo", message=f"b {n}") for n in range(RETRY_FOLDS)])
    with identity():
        given_up = refresh(store)
        after = refresh(store)
    assert given_up.folded > RETRY_FOLDS and any("`continuity rebuild`" in line for line in given_up.warnings)
    assert after.folded == 0 and not after.warnings
