"""The hooks' error log (local/hooks.log): one JSON line per record, whole or not there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.core.logs import append_error_line

#: Appends one record of `size` characters to the log named by argv[1], under a file size limit of argv[2] bytes
#: (Python ignores SIGXFSZ: a write past the limit fails with EFBIG, or is cut short at the limit).
WRITER = """
import resource, sys
from continuity.core.logs import append_error_line
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), resource.RLIM_INFINITY))
append_error_line(sys.argv[1], hook="Stop", message="x" * int(sys.argv[3]))
"""


def records(log: Path) -> list[dict[str, object]]:
    """Every line of the log as JSON (a torn line fails the test)."""
    return [json.loads(line) for line in log.read_bytes().splitlines()]


@pytest.mark.parametrize("room", [1, 40, 150])
def test_a_line_a_file_size_limit_cuts_short_is_taken_back(tmp_path: Path, room: int) -> None:
    """Under `ulimit -f` (or on a full disk) the write was cut short and left half a record, which the next one ran
    on into (`..."hook":"Sto{"ts":...`): the part written is cut back off and the next record is whole."""
    log = tmp_path / "local" / "hooks.log"
    append_error_line(str(log), hook="SessionStart", message="first")
    limit = log.stat().st_size + room
    done = subprocess.run([sys.executable, "-c", WRITER, str(log), str(limit), "200"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [record["message"] for record in records(log)] == ["first"]
    append_error_line(str(log), hook="Stop", message="after")
    assert [record["message"] for record in records(log)] == ["first", "after"]


def test_a_torn_last_line_is_ended_before_the_next(tmp_path: Path) -> None:
    """A writer killed mid-line leaves no newline at the end: the next record starts on a line of its own."""
    log = tmp_path / "hooks.log"
    log.write_bytes(b'{"ts":"2026-12-07T00:00:00Z","hook":"Sto')
    append_error_line(str(log), hook="Stop", message="next")
    lines = log.read_bytes().splitlines()
    assert lines[0] == b'{"ts":"2026-12-07T00:00:00Z","hook":"Sto' and json.loads(lines[1])["message"] == "next"
    append_error_line(str(log), hook="Stop", message="third")
    assert [json.loads(line)["message"] for line in log.read_bytes().splitlines()[1:]] == ["next", "third"]
