"""`rebuild` on a disk that fills (or fails) while it writes the documents it exists to write.

A rebuild folds from nothing and writes each role's, handoff's and archive's documents as the
events go by. One failing part-way through left a role or a handoff as an earlier event had it,
with the model saved at the log's end, so no later catch-up wrote them again; and the rebuild
said "rebuilt", exit 0, when none of them were written. Now it is exit 5 with one line, and the
next catch-up leaves every derived file as a rebuild that succeeds writes it.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tests.injected import SyscallFaults, identity, run, stale_after_catch_up

STORE = Path(".agent", "runtime-continuity")


def _history(project: Path) -> None:
    with identity():
        assert run(["role", "create", "core", "lead"])[0] == 0
        assert run(["role", "claim", "core", "lead", "--agent", "amy"])[0] == 0
        code, out, err = run(["--json", "handoff", "create", "--to", "bob", "--message", "take the release"])
        assert code == 0, err
        assert run(["archive", "--gate", "agent", "--reason", "before the handoff"])[0] == 0
        assert run(["handoff", "accept", json.loads(out)["handoff_id"], "--agent", "bob"])[0] == 0
        assert run(["role", "renew", "core", "lead", "--agent", "amy", "--ttl", "2h"])[0] == 0


def _documents(project: Path) -> list[Path]:
    store = project / STORE
    return [*store.glob("team/*/roles/*.md"), *store.glob("handoffs/*.json"), *store.glob("archives/RC-*.json")]


@pytest.mark.parametrize("error, persistent", [(errno.ENOSPC, True), (errno.EIO, False)], ids=["ENOSPC", "EIO"])
def test_a_rebuild_failing_at_any_call_says_so_and_the_next_catch_up_converges(
        project: Path, error: int, persistent: bool) -> None:
    home = Path(os.environ["HOME"])
    _history(project)
    counter = SyscallFaults(error)
    assert run(["rebuild"], counter)[0] == 0
    assert counter.calls > 10
    said = set()
    for at in range(counter.calls):
        for path in project.joinpath(STORE, "archives").glob("RC-*.json"):  # derived: anyone may delete them
            path.unlink()
        faults = SyscallFaults(error, at=at, persistent=persistent)
        code, out, err = run(["rebuild"], faults)
        assert "Traceback" not in err
        if code == 0:
            assert out.startswith("rebuilt from") and not any(
                "not written" in line for line in err.splitlines()), (at, err)
        else:
            assert code == 5 and err.count("\n") == 1 and err.startswith("continuity: error: "), (at, code, err)
            said.add(err.split(":")[2].strip())
        assert stale_after_catch_up(project, home) == [], (at, faults.hits[:1])
    if not persistent:  # one call fails: a document, said as such (a full disk fails state.json and the models too)
        assert "rebuild not finished" in said


def test_a_rebuild_with_no_room_for_any_document_is_exit_5(project: Path) -> None:
    _history(project)
    for path in _documents(project):
        path.unlink()
    documents = ("/team/", "/handoffs/", "/archives/")  # only they fail: state.json and the models are written
    no_room = SyscallFaults(errno.ENOSPC, match=lambda name, first: isinstance(first, (str, bytes, os.PathLike))
                            and any(part in os.fsdecode(first) for part in documents))
    code, out, err = run(["rebuild"], no_room)
    assert (code, out) == (5, "") and err.count("\n") == 1, err
    assert err.startswith("continuity: error: rebuild not finished: ") and "No space left" in err, err
    assert _documents(project) == []
    code, _, err = run(["role", "list", "core"])  # the next catch-up rebuilds the models it left, saying why
    assert code == 0 and "the last `continuity rebuild` did not finish writing its documents" in err, err
    assert "was missing" not in err
    assert len(_documents(project)) >= 1  # the role document, written by that catch-up
    assert run(["rebuild"])[0] == 0
    assert len(_documents(project)) == 3
