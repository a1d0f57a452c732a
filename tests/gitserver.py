"""A real git transport for sync tests: `git daemon` on 127.0.0.1, started and stopped by a fixture.

Only the loopback address is used; the port is a free one picked by the kernel. Every wait
is a bounded loop. An optional access hook makes the server answer slowly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.2):
        return True
    return False


class GitDaemon:
    """`git daemon --enable=receive-pack` serving the repositories under `base` at git://127.0.0.1:PORT/."""

    def __init__(self, base: Path, *, delay: float = 0.0) -> None:
        self.base = base
        self.delay = delay
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0

    def url(self, name: str) -> str:
        """The git:// URL of a repository under `base`."""
        return f"git://{HOST}:{self.port}/{name}"

    def start(self) -> None:
        """Start the server on a free port and wait (bounded) until it accepts connections."""
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        args = ["git", "daemon", "--reuseaddr", f"--listen={HOST}", "--export-all", "--enable=receive-pack",
                "--informative-errors", "--max-connections=0", f"--base-path={self.base}"]
        if self.delay:
            hook = self.base / "slow-access-hook"
            hook.write_text(f"#!/bin/sh\nsleep {self.delay}\nexit 0\n")
            hook.chmod(0o755)
            args.append(f"--access-hook={hook}")
        log = open(self.base / "daemon.log", "ab")  # noqa: SIM115  # closed in stop()
        for _ in range(5):  # another process may take the free port between probe and bind
            self.port = _free_port()
            self.process = subprocess.Popen([*args, f"--port={self.port}", str(self.base)],
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            for _ in range(200):
                if self.process.poll() is not None:
                    break
                if _listening(self.port):
                    log.close()
                    return
                time.sleep(0.025)
            self.stop()
        log.close()
        message = (self.base / "daemon.log").read_text(errors="replace")[-300:]
        if "not a git command" in message:
            pytest.skip("this git has no `git daemon`")
        raise RuntimeError(f"git daemon did not start: {message}")

    def stop(self) -> None:
        """Stop the server and its children (one process group per daemon child is not needed: bounded waits)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None


@contextlib.contextmanager
def serving(base: Path, *, delay: float = 0.0) -> Iterator[GitDaemon]:
    """A running git daemon for the repositories under `base`, stopped on exit."""
    os.makedirs(base, exist_ok=True)
    daemon = GitDaemon(base, delay=delay)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()
