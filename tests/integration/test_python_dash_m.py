"""`python -m continuity` in a project whose own modules are named like continuity's packages.

Python puts the working folder first on the import path for `python -m`: a project's `events.py` or
`projections/` package stood in for continuity's own (a traceback from continuity's imports, or the project's
code run by continuity). The working folder comes off the path for the two commands run that way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _project(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path / "project"
    (root / "projections").mkdir(parents=True)
    marker = tmp_path / "the-projects-code-ran"
    (root / "events.py").write_text(f"open({str(marker)!r}, 'a').write('events\\n')\n")
    (root / "projections" / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('projections\\n')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "PYTHONSAFEPATH"))}
    env["HOME"] = str(tmp_path)
    return root, marker, env


@pytest.mark.parametrize("module", ["continuity", "continuity.adapters.compat.runtime_continuity"])
def test_a_projects_own_events_module_never_stands_in_for_continuitys(tmp_path: Path, module: str) -> None:
    root, marker, env = _project(tmp_path)
    if module == "continuity":
        commands = [["init", "--project", "demo"], ["log", "-m", "hello"], ["resume-bundle"]]
    else:
        commands = [["log", "--project", "demo", "--gate", "agent", "--message", "hello"],
                    ["resume-bundle", "--project", "demo"]]
    for args in commands:
        done = subprocess.run([sys.executable, "-m", module, *args], cwd=root, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert args[0] != "resume-bundle" or ("hello" if module == "continuity" else '"project": "demo"') in done.stdout
    assert not marker.exists(), marker.read_text()


def test_the_mcp_servers_own_entry_never_imports_the_projects_events(tmp_path: Path) -> None:
    """`python -m continuity.adapters.mcp` (the server's entry, documented for harness configs) imported the
    project's `events.py` too: it is not one of the two commands, and only they took the working folder off."""
    import json

    root, marker, env = _project(tmp_path)
    assert subprocess.run([sys.executable, "-m", "continuity", "init", "--project", "demo"], cwd=root, env=env,
                          capture_output=True, timeout=60).returncode == 0
    opening = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    done = subprocess.run([sys.executable, "-m", "continuity.adapters.mcp", "--root", str(root)], cwd=root, env=env,
                          input=opening + "\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["id"] == 1
    assert not marker.exists(), marker.read_text()


def test_a_program_importing_continuity_keeps_its_import_path(tmp_path: Path) -> None:
    """Only the commands change the path: a program that imports continuity keeps its working folder first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "PYTHONSAFEPATH"))}
    done = subprocess.run([sys.executable, "-c", "import sys, continuity; print(repr(sys.path[0]))"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "''"  # `-c` puts the working folder first as ''; continuity left it there
