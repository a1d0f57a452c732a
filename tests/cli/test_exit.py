"""How a command leaves its process: without the interpreter's shutdown when nothing would run in it.

Real processes each time: the console script's `exit_with`, then what the shutdown would have done (an
object freed by it, an exit handler, a thread still running) is looked for on disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.core.initialize import init_store
from continuity.core.store import Store
from events.worklog import WorkLogged

EXE = str(Path(sys.executable).with_name("continuity"))

#: A program that runs one command through the console script's entry point, with `setup` before it and an
#: object whose finalizer writes `freed` (it runs only in the interpreter's shutdown).
PROGRAM = """
import sys
from pathlib import Path
from continuity.cli import main
from continuity.core.guard import exit_with

class Freed:
    def __del__(self):
        Path("freed").write_text("freed")

kept = Freed()
{setup}
sys.argv = ["continuity", *{argv!r}]
exit_with(main)
"""


def _run(folder: Path, argv: list[str], setup: str = "") -> subprocess.CompletedProcess[str]:
    code = PROGRAM.format(setup=setup, argv=argv)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=60)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    init_store(tmp_path, project="demo", language="en")
    return tmp_path


def test_a_command_with_nothing_left_skips_the_shutdown_and_keeps_its_output_and_code(store: Path) -> None:
    done = _run(store, ["log", "-m", "parser done", "--agent", "a1"])
    assert done.returncode == 0, done.stderr
    assert not (store / "freed").exists()  # the shutdown did not run
    listed = _run(store, ["events", "list", "--json"])
    assert listed.returncode == 0, listed.stderr
    assert [event["message"] for event in json.loads(listed.stdout)["events"]] == ["parser done"]
    refused = _run(store, ["log", "-m", "x", "--agent", "a b"])
    assert refused.returncode == 2
    assert refused.stderr.startswith("continuity") and refused.stderr.endswith("\n")  # stderr went out whole


@pytest.mark.parametrize("setup", [
    "import atexit\natexit.register(lambda: Path('handled').write_text('ran'))",
    "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), Path('handled').write_text('ran')))"
    ".start()",
    "from concurrent.futures import ThreadPoolExecutor\n"
    "pool = ThreadPoolExecutor(1)\npool.submit(lambda: Path('handled').write_text('ran'))",
])
def test_exit_handlers_and_running_threads_get_the_usual_shutdown(store: Path, setup: str) -> None:
    """An exit handler (a Python API caller's, coverage's), a thread that is not a daemon, a thread pool:
    each is waited on as by `sys.exit`, and the rest of the shutdown runs too."""
    done = _run(store, ["status"], setup)
    assert done.returncode == 0, done.stderr
    assert (store / "handled").read_text() == "ran"
    assert (store / "freed").read_text() == "freed"


@pytest.mark.parametrize("how", ["runpy", "cProfile"])
def test_a_program_running_the_command_gets_control_back(store: Path, tmp_path: Path, how: str) -> None:
    """A caller that catches the command's SystemExit (a program running it with runpy, a profiler, a debugger)
    goes on after it, as with any Python program: the shutdown is skipped only under the console script or
    `python -m continuity`."""
    if how == "runpy":
        code = ("import runpy, sys\nsys.argv = ['continuity', 'status']\ntry:\n"
                "    runpy.run_module('continuity', run_name='__main__')\nexcept SystemExit as leaving:\n"
                "    print('back with', leaving.code)\n")
        done = subprocess.run([sys.executable, "-c", code], cwd=store, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.splitlines()[-1] == "back with 0", done.stderr
    else:
        profile = tmp_path / "status.prof"
        done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "continuity", "status"],
                              cwd=store, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert profile.stat().st_size > 0


def test_python_m_continuity_skips_the_shutdown_too(store: Path) -> None:
    code = ("import runpy, sys\nfrom pathlib import Path\nclass Freed:\n    def __del__(self):\n"
            "        Path('freed').write_text('freed')\nkept = Freed()\n")
    (store / "sitecustomize.py").write_text(code)  # loaded at startup from the folder on PYTHONPATH
    env = {**__import__("os").environ, "PYTHONPATH": str(store)}
    done = subprocess.run([sys.executable, "-m", "continuity", "status"], cwd=store, capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert not (store / "freed").exists()


def test_a_daemon_thread_does_not_hold_the_shutdown_back(store: Path) -> None:
    """Daemon threads are never waited on, with the shutdown or without it."""
    done = _run(store, ["status"], "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), "
                "daemon=True).start()")
    assert done.returncode == 0, done.stderr
    assert not (store / "freed").exists()


def test_a_big_answer_reaches_a_pipe_whole(store: Path) -> None:
    """The console script itself: megabytes of JSON through a pipe, all of it there at exit."""
    log = Store(store).open_log()
    log.append_many([WorkLogged(project="demo", message=f"step {index} " + "x" * 3000) for index in range(300)])
    log.close()
    done = subprocess.run([EXE, "events", "list", "--json", "--limit", "1000"], cwd=store, capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 900_000
    answer = json.loads(done.stdout)
    assert answer["count"] == len(answer["events"]) == 300
