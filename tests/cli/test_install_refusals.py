"""`continuity install` / `uninstall` run as a process on files it must refuse, or must not write where they point."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import cli_process


@pytest.fixture(autouse=True)
def _continuity_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `continuity` on PATH (so project scope writes no settings.local.json) and no XDG_STATE_HOME from outside."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "continuity").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "continuity").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """An empty project folder."""
    root = tmp_path / "proj"
    root.mkdir()
    return root


def nested(depth: int) -> str:
    """A settings object holding a value `depth` objects deep."""
    return '{"x": ' + '{"a":' * depth + "1" + "}" * depth + "}\n"


def test_the_deepest_settings_install_takes_uninstall_takes_too(proj: Path) -> None:
    """Found by halving: the deepest settings file `install` accepts is installed and uninstalled (its bytes back);
    one deeper is refused with one line. Uninstall compared it deeper in the stack and crashed (exit 70)."""
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    taken, refused = 1, 4000
    while refused - taken > 1:
        middle = (taken + refused) // 2
        settings.write_text(nested(middle))
        done = cli_process("install", "claude-code", "--dry-run", cwd=proj)
        assert done.returncode in (0, 2) and "Traceback" not in done.stderr, done.stderr
        taken, refused = (middle, refused) if done.returncode == 0 else (taken, middle)
    settings.write_text(nested(refused))
    done = cli_process("install", "claude-code", cwd=proj)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "nested too deeply" in done.stderr
    settings.write_text(nested(taken))
    for action in ("install", "uninstall"):
        done = cli_process(action, "claude-code", cwd=proj)
        assert done.returncode == 0, (taken, done.stderr)
    assert settings.read_text() == nested(taken) and not (proj / "CLAUDE.md").exists()
