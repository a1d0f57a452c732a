"""The README's `scripts/run` as a user runs it: with its documented arguments."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers import REPO


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    venv = REPO / ".venv"
    stamp = venv / ".installed-"
    if (venv / ".installed-test").exists() and not stamp.exists():
        stamp.touch()  # the test extras' install holds the plain one: scripts/run need not install again
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CONTINUITY_", "PYTHON"))}
    env["HOME"] = str(home)
    return subprocess.run(["bash", str(REPO / "scripts" / "run"), *args], cwd=home, env=env, capture_output=True,
                          text=True, timeout=600)


def test_scripts_run_takes_its_documented_arguments(tmp_path: Path) -> None:
    """`scripts/run --timeline FILE` (README) and `--help` ended in a pip traceback, exit 2: the venv script it
    sources read `--timeline` as a pip extra. They run the demo (or print its usage) now."""
    helped = _run("--help", home=tmp_path)
    assert helped.returncode == 0 and helped.stdout.startswith("usage: scripts/run"), helped.stderr
    page = tmp_path / "timeline.html"
    done = _run("--timeline", str(page), home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert page.is_file() and page.read_text().startswith("<!DOCTYPE html>")
