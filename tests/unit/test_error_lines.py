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


#: Appends argv[3] records as the hook named argv[2] (a file size limit of argv[4] bytes when given).
MANY = """
import resource, sys
from continuity.core.logs import append_error_line
if len(sys.argv) > 4:
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[4]), resource.RLIM_INFINITY))
for number in range(int(sys.argv[3])):
    append_error_line(sys.argv[1], hook=sys.argv[2], message=f"line {number}")
"""


def test_writers_at_once_keep_every_line_whole_even_beside_one_at_its_size_limit(tmp_path: Path) -> None:
    """Several processes appending at once: the check for a torn last line read another writer's line half written
    (a blank line added), and a writer cutting back its own short write cut off lines others had appended since.
    They take turns on the file's lock: every line of every writer whole, none blank."""
    log = tmp_path / "hooks.log"
    log.write_bytes(b"0" * 600 + b"\n")
    writers = [subprocess.Popen([sys.executable, "-c", MANY, str(log), f"w{n}", "400"]) for n in range(4)]
    writers.append(subprocess.Popen([sys.executable, "-c", MANY, str(log), "limited", "5000", "1024"]))
    assert [writer.wait(timeout=120) for writer in writers] == [0] * 5
    lines = log.read_bytes().splitlines()[1:]
    assert b"" not in lines
    kept = [json.loads(line) for line in lines]
    for n in range(4):
        assert [record["message"] for record in kept if record["hook"] == f"w{n}"] == [
            f"line {number}" for number in range(400)]
