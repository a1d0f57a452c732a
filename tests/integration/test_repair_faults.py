"""`init --repair` of a config.json that does not parse, under an I/O error at each disk-changing call.

The repair first copies the file to `local/config.unparsed-<time>.json`, then writes a new one.
Whatever call fails (tests/injected.py), the user's settings survive: config.json keeps its bytes,
or a whole copy of them is durable under local/ (named by the repair's output or found there).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.injected import SyscallFaults, run

TYPED = b'{"project": "demo", "sync_remote": "team", "brief_budget": 900,}\n'


def _store(project: Path) -> Path:
    return project / ".agent" / "runtime-continuity"


def _kept(project: Path) -> list[bytes]:
    return [path.read_bytes() for path in (_store(project) / "local").glob("config.unparsed-*.json")]


def _prepared(project: Path) -> None:
    assert run(["log", "-m", "first"])[0] == 0
    (_store(project) / "config.json").write_bytes(TYPED)


def _calls(project: Path) -> int:
    counter = SyscallFaults(errno.ENOSPC)
    assert run(["init", "--repair"], counter)[0] == 0
    return counter.calls


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EIO], ids=errno.errorcode.get)
def test_a_repair_failing_at_any_call_keeps_the_typed_settings(project: Path, error: int) -> None:
    """At each disk-changing call of the repair in turn: exit 0, or the write-failure code with one line; either
    config.json still holds the typed bytes or a whole copy of them is under local/; a second repair finishes."""
    _prepared(project)
    total = _calls(project)
    assert total > 3
    for at in range(total):
        for path in (_store(project) / "local").glob("config.unparsed-*.json"):
            path.unlink()
        (_store(project) / "config.json").write_bytes(TYPED)
        code, _, err = run(["init", "--repair"], SyscallFaults(error, at=at, persistent=error == errno.ENOSPC))
        assert "Traceback" not in err
        assert code in (0, 5), (at, code, err)
        if code:
            assert err.count("\n") == 1, err
        assert (_store(project) / "config.json").read_bytes() == TYPED or TYPED in _kept(project), (at, err)
        assert not [name for name in os.listdir(_store(project) / "local") if name.endswith(".tmp")], at
        assert run(["init", "--repair"])[0] == 0
        assert TYPED in _kept(project)


def _folder_fsync(name: str, first: Any) -> bool:
    return name == "fsync" and isinstance(first, int) and stat.S_ISDIR(os.fstat(first).st_mode)


def test_the_copy_is_durable_in_its_folder_before_config_json_is_replaced(project: Path) -> None:
    """The copy's name is made durable (local/ fsynced) before config.json is replaced: when that fsync fails the
    repair stops with config.json untouched (it replaced it, the copy's name not yet on disk: a power cut then lost
    both)."""
    _prepared(project)
    code, _, err = run(["init", "--repair"], SyscallFaults(errno.EIO, match=_folder_fsync))
    assert (code, err.count("\n")) == (5, 1), err
    assert "config.json not repaired" in err
    assert (_store(project) / "config.json").read_bytes() == TYPED
