"""kill -9 during appends: no partial event is ever visible, no returned append is lost."""

from __future__ import annotations

import os
import random
import select
import signal
import time
from pathlib import Path

import pytest

from events import names
from events.filelog import FileEventLog
from events.worklog import WorkLogged


def open_log(base: Path) -> FileEventLog:
    return FileEventLog(base / "events", base / "local", node="node0001",
                        clock_us=lambda: time.time_ns() // 1000)


def appender(base: Path, write_fd: int) -> None:
    """Child: append forever, reporting each name only after append returned."""
    log = open_log(base)
    i = 0
    while True:
        stored = log.append(WorkLogged(project="demo", message=f"entry {i} " + "x" * 300))
        os.write(write_fd, stored.name.encode() + b"\n")
        i += 1


def test_kill9_loop_never_shows_a_partial_event(tmp_path: Path) -> None:
    """120 kill -9s of an appending child: all visible events decode, none returned is lost."""
    rng = random.Random(1234)
    returned: set[str] = set()
    kills = 0
    while kills < 120:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            os.close(read_fd)
            try:
                appender(tmp_path, write_fd)
            finally:
                os._exit(1)
        os.close(write_fd)
        buffer = b""
        deadline = time.monotonic() + rng.uniform(0.0005, 0.02)
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read_fd], [], [], 0.001)
            if ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                buffer += chunk
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        while chunk := os.read(read_fd, 65536):
            buffer += chunk
        os.close(read_fd)
        kills += 1
        returned.update(line.decode() for line in buffer.split(b"\n")[:-1])

        visible = {stored.name for stored in open_log(tmp_path).read()}  # raises on a bad event
        assert returned <= visible
        for path in (tmp_path / "events").rglob("*"):
            if path.is_file():
                assert names.parse_name(path.name) is not None, path

    log = open_log(tmp_path)
    log.append(WorkLogged(project="demo", message="after the storm"))  # sweeps temp files
    assert list((tmp_path / "local" / "tmp").iterdir()) == []
    report = log.verify()
    assert report.ok, report.problems[:3]
    assert report.events >= len(returned) + 1
    assert len(returned) > 0, "the child never got to append; the loop tested nothing"


@pytest.mark.stress
def test_kill9_stress_thousand_kills(tmp_path: Path) -> None:
    """The same loop, 1000 times, with a process that appends in batches."""
    rng = random.Random(99)
    for _ in range(1000):
        pid = os.fork()
        if pid == 0:  # pragma: no cover
            try:
                log = open_log(tmp_path)
                while True:
                    log.append_many([WorkLogged(project="demo", message=str(i)) for i in range(5)])
            finally:
                os._exit(1)
        time.sleep(rng.uniform(0, 0.01))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    log = open_log(tmp_path)
    log.append(WorkLogged(project="demo", message="done"))
    report = log.verify()
    assert report.ok, report.problems[:3]
