"""Getting the real harnesses and continuity for the end-to-end tests, as a user would, cached per machine.

Harnesses come from the npm registry at pinned versions, installed with `npm install
--prefix` into `${CONTINUITY_E2E_CACHE:-/var/tmp/continuity-e2e}/<package>@<version>`;
continuity goes into its own virtual environment there (`python -m venv` + `pip install
<checkout>`, the README's way), keyed by a hash of the source so an edit makes a new one.
Both are outside the repository and outside any home folder, and reused across runs.
Whatever cannot be had (no node, no npm, the registry unreachable, an install that fails)
is a skip naming the exact obstacle, never a silent pass.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The continuity checkout the tests install (this one unless CONTINUITY_E2E_SOURCE names another).
REPO = Path(os.environ.get("CONTINUITY_E2E_SOURCE") or Path(__file__).resolve().parents[2])
CACHE = Path(os.environ.get("CONTINUITY_E2E_CACHE") or "/var/tmp/continuity-e2e")
NPM_TIMEOUT = 600
PIP_TIMEOUT = 600


@dataclass(frozen=True)
class Harness:
    """An npm package at a pinned version and the program it installs."""

    package: str
    version: str
    program: str
    min_node: int = 18

    @property
    def folder(self) -> Path:
        """Where the package lives in the cache."""
        return CACHE / f"{self.package.replace('/', '__')}@{self.version}"

    @property
    def bin_dir(self) -> Path:
        """The folder holding the program (node_modules/.bin)."""
        return self.folder / "node_modules" / ".bin"


# Pinned: `npm view <package> version` on 2026-12-01. Bump deliberately, one at a time.
CLAUDE_CODE = Harness("@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = Harness("@openai/codex", "0.171.0", "codex")
GEMINI_CLI = Harness("@google/gemini-cli", "0.61.0", "gemini", min_node=20)


@contextmanager
def _locked(name: str) -> Iterator[None]:
    """One installer at a time per cache entry (other test runs on this machine share the cache)."""
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        lock = open(CACHE / f".{name}.lock", "w")  # noqa: SIM115 (closed below, after the flock)
    except OSError as error:
        pytest.skip(f"the e2e cache folder {CACHE} cannot be written ({error.strerror}); "
                    "set CONTINUITY_E2E_CACHE to a writable folder")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def node_major() -> int | None:
    """The major version of `node` on PATH, or None when there is none."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.match(r"v(\d+)", out.strip())
    return int(match.group(1)) if match else None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _npm_error(text: str) -> str:
    """What npm says went wrong: its `npm error` lines but the pointer to its log, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith(("npm error", "npm ERR!"))]
    useful = [line for line in lines if "complete log of this run" not in line and not line.endswith(("error", "ERR!"))]
    return "; ".join(useful[:3])[:400] if useful else _last_line(text)


def installer_env() -> dict[str, str]:
    """The caller's environment with HOME and the npm and pip caches inside the e2e cache: installs read
    registry settings from the environment (npm_config_*, PIP_*) or the system files, never the real home."""
    home = CACHE / "installer-home"
    home.mkdir(parents=True, exist_ok=True)  # after `_locked`: the cache folder is writable
    return {**os.environ, "HOME": str(home), "npm_config_cache": str(CACHE / "npm-cache"),
            "npm_config_update_notifier": "false", "PIP_CACHE_DIR": str(CACHE / "pip-cache")}


def harness_program(harness: Harness) -> Path:
    """The harness's program, installed from the npm registry on first use; a skip when it cannot be."""
    program = harness.bin_dir / harness.program
    if program.exists():
        return program
    major = node_major()
    if major is None:
        pytest.skip(f"{harness.package}@{harness.version}: no `node` on PATH")
    if major < harness.min_node:
        pytest.skip(f"{harness.package}@{harness.version}: needs Node {harness.min_node} or later, found {major}")
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"{harness.package}@{harness.version}: no `npm` on PATH")
    with _locked(harness.folder.name):
        if program.exists():
            return program
        staging = harness.folder.with_name(harness.folder.name + f".partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--loglevel=error",
                "--no-update-notifier", f"{harness.package}@{harness.version}"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=NPM_TIMEOUT, env=installer_env())
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.skip(f"`npm install {harness.package}@{harness.version}` took over {NPM_TIMEOUT} s "
                        "(registry unreachable or slow?)")
        if done.returncode != 0 or not (staging / "node_modules" / ".bin" / harness.program).exists():
            shutil.rmtree(staging, ignore_errors=True)
            pytest.skip(f"`npm install {harness.package}@{harness.version}` failed (exit {done.returncode}): "
                        f"{_npm_error(done.stderr or done.stdout)}")
        shutil.rmtree(harness.folder, ignore_errors=True)
        os.rename(staging, harness.folder)
    return program


def _source_digest() -> str:
    """A hash of what `pip install` builds continuity from: a changed source makes a new environment."""
    digest = hashlib.sha256()
    files = [REPO / "pyproject.toml", REPO / "README.md"]
    for package in ("continuity", "events", "projections"):
        files += sorted(p for p in (REPO / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _prune(days: float = 2) -> None:
    """Remove continuity environments no run has used for `days` (each source change makes one)."""
    import time

    for old in CACHE.glob("continuity-*"):
        marker = old / ".installed"
        try:
            unused = time.time() - marker.stat().st_mtime > days * 86400
        except OSError:
            continue  # being built by another run, or not ours to judge
        if unused:
            shutil.rmtree(old, ignore_errors=True)


def continuity_bin_dir() -> Path:
    """A `bin` folder holding `continuity`, installed from this checkout into its own environment (cached)."""
    venv = CACHE / f"continuity-{_source_digest()}"
    done = venv / ".installed"
    if done.exists():
        done.touch()  # in use: kept by `_prune`
        return venv / "bin"
    _prune()
    with _locked(venv.name):
        if done.exists():
            return venv / "bin"
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True,
                              env=installer_env())
        if made.returncode != 0:
            pytest.skip(f"`python -m venv` failed: {_last_line(made.stderr)}")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        installed = subprocess.run([*pip, str(REPO)], capture_output=True, text=True, timeout=PIP_TIMEOUT,
                                   env=installer_env())
        if installed.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            error = _last_line("\n".join(line for line in installed.stderr.splitlines()
                                         if not line.startswith("WARNING: Location")))
            if "No matching distribution" in error or "Could not find a version" in error:
                pytest.skip(f"`pip install {REPO}` cannot get its build requirements: {error}")
            pytest.fail(f"`pip install {REPO}` failed: {error}")
        done.touch()
    return venv / "bin"
