"""Machine-local files damaged on disk (a flipped byte, a file grown huge, a folder in a file's place).

`local/` holds hints and saved models, never the truth: whatever happens to them, a write
chains to the real head or refuses, a read answers from the log, and the next command repairs.
Real processes, as harnesses and people run the CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from continuity.core.initialize import init_store
from events import clock
from tests.helpers import all_event_files, cli_process

LOCAL = Path(".agent", "runtime-continuity", "local")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    init_store(root, project="demo", language=None)
    for message in ("one", "two"):
        assert cli_process("log", message, cwd=root).returncode == 0
    return root


def head_hint(root: Path) -> Path:
    return root / LOCAL / "head"


def flip_sha(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    at = raw.index(b" ") + 41  # inside the SHA-256, past the 12 characters the name repeats
    damaged[at] = ord("0") if damaged[at] != ord("0") else ord("1")
    return bytes(damaged)


def flip_name_hash(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    at = raw.index(b" ") + 3  # inside the SHA's first 12 characters, which the name repeats
    damaged[at] = ord("0") if damaged[at] != ord("0") else ord("1")
    return bytes(damaged)


def later_hour(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    damaged[9] = ord("2") if damaged[9] != ord("2") else ord("1")  # the hour's first digit: a time no event has
    return bytes(damaged)


HOOK = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})


@pytest.mark.parametrize("damage", [flip_sha, flip_name_hash, later_hour])
@pytest.mark.parametrize("command", [("log", "three"), ("checkpoint", "-m", "three"), ("hook", "claude-code")])
def test_a_damaged_head_hint_never_reaches_the_log(project: Path, damage: object, command: tuple[str, ...]) -> None:
    """A byte changed in `local/head` (the hint that saves a writer listing today's folder): the next write chained
    to a SHA no event has (`verify`: BROKEN, for good, in every clone) or took the damaged time as the log's (events
    stamped hours ahead). A hint whose SHA does not match its name, or whose event is not there, is not trusted."""
    assert callable(damage)
    newest = max(all_event_files(project))
    hint = head_hint(project)
    hint.write_bytes(damage(hint.read_bytes()))
    done = cli_process(*command, cwd=project, stdin=HOOK if command[0] == "hook" else None)
    assert done.returncode == 0, done.stderr
    written = [path for path in all_event_files(project) if path.name > newest.name]
    assert written, done.stderr
    first = min(written)
    assert json.loads(first.read_bytes())["prev"] == hashlib.sha256(newest.read_bytes()).hexdigest()
    assert abs(clock.parse_stamp(first.name[:22]) / 1e6 - time.time()) < 600  # stamped now, not at a damaged hour
    verified = cli_process("verify", cwd=project)
    assert verified.returncode == 0 and "ahead" not in verified.stdout + verified.stderr, verified.stdout


@pytest.mark.parametrize("how", ["grown", "length"])
def test_a_saved_model_grown_huge_is_read_no_further_than_its_frame(project: Path, how: str) -> None:
    """A saved model file grown to 3 GB behind its frame (or a frame whose length field was damaged) was read whole:
    seconds and 2 GB at session start, and "internal error: MemoryError" (exit 70) under a memory limit, with the
    SessionStart hook printing no brief. The frame is read alone; a length its file cannot hold reads as missing."""
    import resource
    import subprocess
    import sys

    assert cli_process("status", cwd=project).returncode == 0
    model = project / LOCAL / "models" / "overview.msgpack"
    assert model.stat().st_size < 1_000_000
    if how == "grown":
        with open(model, "r+b") as handle:
            handle.truncate(3 * 1024**3)  # sparse: no disk taken
    else:
        raw = bytearray(model.read_bytes())
        raw[8:16] = (2**40).to_bytes(8, "big")
        model.write_bytes(bytes(raw))

    def limited() -> None:  # 1 GB of address space: a whole read of the file cannot fit
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    for args, stdin in ((["status"], None), (["hook", "claude-code"], HOOK)):
        done = subprocess.run([sys.executable, "-m", "continuity", *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, timeout=120, preexec_fn=limited)
        assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
        assert done.stdout.strip(), args
    assert "# Resume" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("damage", ["tmp-file", "tmp-link", "archives-file"])
def test_recall_answers_whatever_the_fast_path_cannot_vouch_for(project: Path, tmp_path: Path, damage: str) -> None:
    """A file or a link where `local/tmp` or `archives/` should be: the plain `recall` (the fast path) exited 6
    "unsafe store" while `recall --kind ...` (the full command) answered, failing open as reads do. Both answer."""
    assert cli_process("recall", "one", cwd=project).returncode == 0
    store = project / ".agent" / "runtime-continuity"
    target = store / ("archives" if damage == "archives-file" else "local/tmp")
    if target.exists():
        target.rmdir()
    if damage == "tmp-link":
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.write_text("")
    for args in (("recall", "one"), ("recall", "one", "--kind", "work.logged")):
        done = cli_process(*args, cwd=project)
        assert done.returncode == 0 and "one" in done.stdout, (args, done.stderr)
    assert list((tmp_path / "elsewhere").iterdir() if damage == "tmp-link" else []) == []


@pytest.mark.parametrize("kind", ["empty", "full"])
def test_a_folder_where_the_node_id_file_belongs(project: Path, kind: str) -> None:
    """`local/node` replaced by a folder stopped every write with "cannot record the node id (Is a directory)"
    (exit 5, "not writable", naming no file) and nothing repaired it. An empty folder is taken away and the file
    made; one holding files is not touched: the refusal names it and says what to do (exit 6)."""
    node = project / LOCAL / "node"
    node.unlink()
    node.mkdir()
    if kind == "full":
        (node / "keep").write_text("someone's\n")
    done = cli_process("log", "three", cwd=project)
    if kind == "empty":
        assert done.returncode == 0 and node.is_file(), done.stderr
        assert cli_process("verify", cwd=project).returncode == 0
    else:
        assert done.returncode == 6 and f"{node} is a folder where the node id file belongs" in done.stderr, \
            done.stderr
        assert (node / "keep").read_text() == "someone's\n" and len(done.stderr.splitlines()) == 1
        hook = cli_process("hook", "claude-code", cwd=project, stdin=HOOK)
        assert hook.returncode == 0 and "# Resume" in hook.stdout
