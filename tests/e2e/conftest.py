"""Fixtures of the end-to-end tests: the model stub, continuity installed as a user would, a temp project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.installs import continuity_bin_dir
from tests.e2e.model_stub import ModelStub

RUN_TIMEOUT = 180


@pytest.fixture(scope="session")
def model_stub() -> Iterator[ModelStub]:
    """The model API stub on 127.0.0.1, one per test run; `reset` it per scenario."""
    stub = ModelStub().start()
    yield stub
    stub.stop()


@pytest.fixture(scope="session")
def continuity_bin() -> Path:
    """The `bin` folder of continuity installed from this checkout into its own environment."""
    return continuity_bin_dir()


@dataclass
class Project:
    """A temporary git project with a continuity store, a temp HOME, and the env the harness runs with."""

    root: Path
    home: Path
    env: dict[str, str]

    def run(self, *argv: str | Path, timeout: float = RUN_TIMEOUT,
            **extra_env: str) -> subprocess.CompletedProcess[str]:
        """Run a program in the project with the harness's environment (never the caller's)."""
        return subprocess.run([str(a) for a in argv], cwd=self.root, env={**self.env, **extra_env},
                              capture_output=True, text=True, timeout=timeout)

    def continuity(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`continuity ARGS` as the harness's hooks find it on PATH; fails the test on a non-zero exit."""
        done = self.run("continuity", *args)
        assert done.returncode == 0, f"continuity {' '.join(args)}: {done.stderr}"
        return done

    def events(self) -> list[dict[str, Any]]:
        """Every event continuity recorded, in replay order."""
        return json.loads(self.continuity("events", "list", "--json").stdout)["events"]  # type: ignore[no-any-return]

    @property
    def store(self) -> Path:
        """The store folder."""
        return self.root / ".agent" / "runtime-continuity"


def harness_env(home: Path, path_dirs: list[Path]) -> dict[str, str]:
    """A clean environment: PATH with the given folders first, HOME and the XDG folders in the temp home.

    Nothing of the caller's environment passes (no real home, no vendor keys, no proxies).
    """
    system = ["/usr/local/bin", "/usr/bin", "/bin"]
    node = shutil.which("node")
    dirs = [str(d) for d in path_dirs] + ([os.path.dirname(node)] if node else []) + system
    return {
        "PATH": os.pathsep.join(dict.fromkeys(dirs)), "HOME": str(home), "USER": "e2e", "LOGNAME": "e2e",
        "SHELL": "/bin/bash", "LANG": "C.UTF-8", "TERM": "dumb", "TMPDIR": str(home / "tmp"),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "e2e", "GIT_AUTHOR_EMAIL": "e2e@example.invalid",
        "GIT_COMMITTER_NAME": "e2e", "GIT_COMMITTER_EMAIL": "e2e@example.invalid",
    }


def make_project(tmp_path: Path, path_dirs: list[Path], **env: str) -> Project:
    """An initialized project (git, continuity store with one checkpoint) in a temp folder, with a temp HOME."""
    home = tmp_path / "harness-home"
    (home / "tmp").mkdir(parents=True)
    root = tmp_path / "project"
    root.mkdir()
    project = Project(root, home, {**harness_env(home, path_dirs), **env})
    assert project.run("git", "init", "-q").returncode == 0
    project.continuity("init", "--project", "e2e")
    project.continuity("checkpoint", "-m", "set up the e2e project", "--next", "add the refund tests")
    return project


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """`kind` or, for work-log entries, `type`: the shape of a session at a glance."""
    return [e["type"] if e["kind"] == "work.logged" else e["kind"] for e in events]
