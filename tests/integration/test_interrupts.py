"""Ctrl-C at any moment of a command: exit 130 and no traceback, from the first module loaded to the last line.

A command takes 40-100 ms, most of it loading modules; Ctrl-C there printed the traceback of
whichever import it landed in, and (1 in about 100 here) one landing while msgspec built a
decoder crashed the process with SIGSEGV. Each moment is reached here deterministically: the
child sends itself SIGINT at that point.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import default_sigint

REPO = Path(__file__).resolve().parents[2]


def child(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a new interpreter named as the console script names itself, SIGINT at its default."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["PYTHONPATH"] = str(REPO)
    script = "import sys\nsys.argv[0] = '/usr/local/bin/continuity'\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, preexec_fn=default_sigint)


def test_ctrl_c_while_the_modules_load_exits_130_in_silence(tmp_path: Path) -> None:
    """Before the command's guard runs (the package is being imported, the console script has not called it)."""
    done = child("""
        import continuity, os, signal
        os.kill(os.getpid(), signal.SIGINT)
        import continuity.cli
        print("not interrupted")
    """, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


@pytest.mark.parametrize("arguments", [[], ["-m", "continuity"], ["-mcontinuity", "-c", "x"]])
def test_a_program_importing_continuity_keeps_its_own_ctrl_c(tmp_path: Path, arguments: list[str]) -> None:
    """Only a command changes how SIGINT is handled: a program (a test runner, an API caller) gets its
    KeyboardInterrupt as before, also when its own arguments hold `-m continuity` (`pytest -m continuity`
    selects a marker: only the interpreter's options name the module it runs)."""
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent("""
        import os, signal, continuity
        try:
            os.kill(os.getpid(), signal.SIGINT)
            import time; time.sleep(5)
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """))
    done = subprocess.run([sys.executable, "-W", "ignore", str(program), *arguments], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=60, preexec_fn=default_sigint)
    assert (done.returncode, done.stdout) == (0, "KeyboardInterrupt\n"), done.stderr


@pytest.mark.parametrize(("options", "command"), [
    (["-X", "utf8", "-m", "continuity"], True), (["-m", "continuity.adapters.compat.runtime_continuity"], True),
    (["-Im", "continuity"], True), (["-IW", "ignore", "-m", "continuity"], True),
    (["-qX", "utf8", "-mcontinuity"], True),
    (["-Xutf8", "-P", "-m", "continuity"], True), (["-Ic", "import continuity"], False),
    (["script.py", "-m", "continuity"], False), (["-m", "pytest", "-m", "continuity"], False),
])
def test_python_dash_m_of_the_commands_counts_as_the_command(tmp_path: Path, options: list[str],
                                                             command: bool) -> None:
    """`python -X utf8 -m continuity` (the start again in UTF-8 mode), the launcher's `-m` of the compat CLI and
    short options run together (`-Im`) are the commands: their start is covered; nothing else is."""
    done = subprocess.run([sys.executable, "-c", "import sys; sys.orig_argv[:] = [sys.executable, *sys.argv[1:]]; "
                           "import continuity; print(continuity._as_command())", *options], cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60)
    assert done.stdout == f"{command}\n", done.stderr


def test_ctrl_c_while_msgspec_builds_a_type_ends_the_command_at_once(tmp_path: Path) -> None:
    """An exception raised inside msgspec's callbacks while it builds a decoder can crash the process; an
    interrupt landing in msgspec's own Python code exits 130 at once instead (as a kill would: every write
    survives one), never a KeyboardInterrupt raised into msgspec."""
    done = child("""
        import continuity, os, signal
        continuity.interrupts_as_usual()
        import msgspec, msgspec._utils as helpers
        original = helpers._get_class_annotations
        namespace = {**vars(helpers), "os": os, "signal": signal, "original": original}
        exec("def _get_class_annotations(*args):\\n    os.kill(os.getpid(), signal.SIGINT)\\n"
             "    return original(*args)\\n", namespace)
        helpers._get_class_annotations = namespace["_get_class_annotations"]

        class Shape(msgspec.Struct):
            size: int

        try:
            msgspec.json.Decoder(Shape)
        except KeyboardInterrupt:
            print("KeyboardInterrupt raised inside msgspec")
    """, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")


INTERRUPTED = """
    def interrupted(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        finally:
            print("cleaned up", flush=True)
"""


def test_ctrl_c_elsewhere_is_a_keyboard_interrupt_the_guard_ends_in_130(tmp_path: Path) -> None:
    """After the start, Ctrl-C in continuity's own code is a KeyboardInterrupt, so cleanup (`finally`) runs;
    runtime-continuity, which has no guard of its own, ended such an interrupt with a traceback."""
    for patched, argv in (("continuity.cli.sessions.open_store", "continuity status"),
                          ("continuity.adapters.compat.runtime_continuity.dispatch", "runtime-continuity status")):
        module, name = patched.rsplit(".", 1)
        entry = "continuity.cli" if argv.startswith("continuity") else "continuity.adapters.compat.runtime_continuity"
        done = child(f"""
            import os, signal, sys, time
            import continuity, {module}, {entry}
            {textwrap.indent(textwrap.dedent(INTERRUPTED), "            ").strip()}
            {module}.{name} = interrupted
            sys.argv = {argv.split()!r}
            {entry}.run()
        """, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (130, "cleaned up\n", ""), (argv, done.stderr)
