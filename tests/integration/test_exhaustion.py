"""A process short of what it runs on: a stderr that takes nothing, a stdout that is full, no file descriptor left.
Reads still answer, hooks still exit 0, and a full stdout is exit 5, as for every other command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from continuity.core.errors import EXIT_WRITE_FAILED
from tests.helpers import all_event_files

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}, **extra}


@pytest.mark.parametrize("command", [["resume-bundle"], ["resume-bundle", "--format", "json"], ["status"],
                                     ["task", "list", "--limit", "1"], ["task", "list", "--status", "blocked"]])
def test_a_read_with_a_warning_answers_when_stderr_takes_nothing(project: Path, command: list[str]) -> None:
    """No git on PATH (the brief warns that git facts are unavailable), a listing cut short or empty (a line for
    people on stderr), and a stderr that is full: the line failed to print, and the read printed nothing or ended
    in exit 5; the answer is given, exit 0."""
    for title in ("first", "second"):
        subprocess.run([sys.executable, "-m", "continuity", "task", "create", "--title", title], cwd=project,
                       env=_env(), check=True, capture_output=True, timeout=60)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "continuity", *command], cwd=project, stdout=subprocess.PIPE,
                              stderr=full, env=_env(PATH=""), timeout=60)
    assert done.returncode == 0 and (done.stdout.strip() or command[-1] == "blocked"), done


def test_the_mcp_server_with_a_full_stdout_is_exit_5(project: Path) -> None:
    """stdout on a full device: exit 5 and one line, as every command (it was "internal error", exit 70)."""
    requests = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "log", "arguments": {
            "message": "logged while stdout is full"}}}]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "continuity", "mcp"], cwd=project, stdout=full,
                              stderr=subprocess.PIPE, env=_env(), timeout=120,
                              input="".join(json.dumps(each) + "\n" for each in requests).encode())
    err = done.stderr.decode()
    assert done.returncode == EXIT_WRITE_FAILED, err
    assert err.count("\n") == 1 and "output not written" in err and "internal error" not in err


def test_a_hook_with_no_file_descriptor_left_exits_0(project: Path) -> None:
    """A limit of a few open files: the hook failed where it reported its own failure (an import needs a
    descriptor) and ended in "internal error", exit 70. It exits 0, with one line when stderr takes it."""
    import resource

    payload = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}, "cwd": str(project)})
    tried = 0
    for limit in (5, 6, 7, 8, 10):
        def limited(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        started = subprocess.run([sys.executable, "-c", "import continuity.adapters.hook_fast"], cwd=project,
                                 env=_env(), capture_output=True, preexec_fn=limited, timeout=60)
        if started.returncode != 0:  # the interpreter itself does not start with so few: nothing to ask a hook
            continue
        tried += 1
        done = subprocess.run([sys.executable, "-m", "continuity", "hook", "claude-code"], cwd=project, env=_env(),
                              input=payload.encode(), capture_output=True, preexec_fn=limited, timeout=60)
        assert done.returncode == 0, (limit, done.stderr)
        assert done.stderr.count(b"\n") <= 1 and b"Traceback" not in done.stderr, (limit, done.stderr)
    assert tried >= 3
    assert all_event_files(project)  # with enough descriptors the command was recorded


def _into_a_pipe_nobody_reads(project: Path, command: list[str]) -> subprocess.CompletedProcess[bytes]:
    """`continuity COMMAND` with stdout a pipe whose reader has gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "continuity", *command], cwd=project, stdout=write_end,
                              stderr=subprocess.PIPE, env=_env(), timeout=60)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("command", [["--version"], ["--help"], ["events", "--help"], ["events", "list"]])
def test_help_and_version_into_a_pipe_nobody_reads_exit_0(project: Path, command: list[str]) -> None:
    """`continuity --version | true`: the help and version texts were still buffered when the reader was gone, and
    their last flush ended in "output not written (Broken pipe)", exit 5, where every other command exits 0."""
    done = _into_a_pipe_nobody_reads(project, command)
    assert (done.returncode, done.stderr) == (0, b""), done


@pytest.mark.parametrize("as_json", [False, True])
def test_a_reports_verdict_stands_when_nobody_reads_it(project: Path, as_json: bool) -> None:
    """`continuity verify | head -1` (a reader gone before the report is out): a broken event's exit 1, documented
    as the report's verdict, became exit 0 as the closed pipe ended the command."""
    for message in ("one", "two", "three"):
        subprocess.run([sys.executable, "-m", "continuity", "log", "-m", message], cwd=project, env=_env(),
                       check=True, capture_output=True, timeout=60)
    first = sorted(all_event_files(project))[0]
    first.write_bytes(first.read_bytes().replace(b'"one"', b'"One"'))
    done = _into_a_pipe_nobody_reads(project, ["verify", *(["--json"] if as_json else [])])
    assert done.returncode == 1 and b"Traceback" not in done.stderr, done


@pytest.mark.parametrize(("command", "code"), [
    (["park", "myteam", "--agent", "bob", "--json"], 2),
    (["park", "myteam", "--agent", "bob"], 2),
    (["checkpoint", "myteam", "--role", "nobody", "--json"], 1),
    (["resume", "myteam", "bob", "--max-age", "1s"], 2),
    (["resume", "myteam", "bob", "--max-age", "1s", "--json"], 2),
    (["events", "list"], 0),
    (["events", "list", "--json"], 0),
])
def test_an_exit_code_stands_when_nobody_reads_the_output(project: Path, command: list[str], code: int) -> None:
    """A refusal or a verdict printed to a reader already gone (`| grep -q`): park's "CHECKPOINT NOT WRITTEN" (2),
    a role checkpoint's failure (1) and a stale `resume` (2) each ended 0 as the closed pipe ended the command."""
    done = _into_a_pipe_nobody_reads(project, command)
    assert done.returncode == code and b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr, done


def test_verify_with_no_file_descriptor_left_is_exit_5_not_a_bug(project: Path) -> None:
    """`verify` under a limit of a few open files walked the store with one descriptor a folder and ended in
    "internal error: OSError: [Errno 24] Too many open files", exit 70 (a bug's code); it is the machine's limit."""
    import resource

    for message in ("one", "two"):
        subprocess.run([sys.executable, "-m", "continuity", "log", "-m", message], cwd=project, env=_env(),
                       check=True, capture_output=True, timeout=60)
    outcomes = set()
    for limit in (5, 6, 7, 8):
        def limited(limit: int = limit) -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

        done = subprocess.run([sys.executable, "-m", "continuity", "verify"], cwd=project, env=_env(),
                              capture_output=True, preexec_fn=limited, timeout=60)
        assert done.returncode != 70 and b"internal error" not in done.stderr and b"Traceback" not in done.stderr, (
            limit, done.stderr)
        if done.returncode == EXIT_WRITE_FAILED:
            assert b"Too many open files" in done.stderr and done.stderr.count(b"\n") == 1, done.stderr
        outcomes.add(done.returncode)
    assert EXIT_WRITE_FAILED in outcomes  # some limit was low enough to meet, not only ones too low to start


@pytest.mark.parametrize("device", ["full", "limited"])
def test_a_brief_that_never_reached_the_harness_leaves_a_trace(project: Path, tmp_path: Path, device: str) -> None:
    """SessionStart's stdout on a full device (or a file cut at `ulimit -f`): `context.served` is recorded before
    the brief is printed, and nothing said it never went out (no stderr line, no hooks.log entry): an audit had
    only the record of a brief served. hooks.log (as the SessionStart hook's: it said "?") and stderr name the event
    whose brief the harness did not get whole (cut at the limit, it got part: "nothing" was wrong); exit 0."""
    import resource

    limit = 256 * 1024  # far over any file the hook writes in the store; the stdout file is 100 bytes short of it

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
    target = "/dev/full" if device == "full" else str(tmp_path / "out.json")
    if device == "limited":
        (tmp_path / "out.json").write_bytes(b"\n" * (limit - 100))
    with open(target, "a") as out:
        done = subprocess.run([sys.executable, "-m", "continuity", "hook", "claude-code"], cwd=project,
                              input=payload.encode(), stdout=out, stderr=subprocess.PIPE, env=_env(), timeout=60,
                              preexec_fn=limited if device == "limited" else None)
    assert done.returncode == 0
    if device == "limited":
        assert (tmp_path / "out.json").stat().st_size == limit  # the harness got the brief's first 100 bytes
    listed = subprocess.run([sys.executable, "-m", "continuity", "events", "list", "--kind", "context.served",
                             "--json"], cwd=project, env=_env(), capture_output=True, check=True, timeout=60)
    served = json.loads(listed.stdout)["events"][-1]["event_id"]
    log = (project / ".agent" / "runtime-continuity" / "local" / "hooks.log").read_text()
    error = "No space left on device" if device == "full" else "File too large"
    [record] = [json.loads(line) for line in log.splitlines() if "output not delivered" in line]
    assert record["hook"] == "SessionStart" and record["message"] == (
        f"output not delivered whole ({error}): the harness got none or part of the brief {served} records"), record
    assert b"output not delivered" in done.stderr


def test_a_brief_for_a_stdout_closed_from_the_start_leaves_a_trace(project: Path) -> None:
    """SessionStart run with its stdout closed (`>&-`): the stream is the null device (exit 0), so the print
    succeeded and the brief was recorded as served with nothing saying no one got it. hooks.log and stderr say so."""
    import os

    payload = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
    done = subprocess.run([sys.executable, "-m", "continuity", "hook", "claude-code"], cwd=project,
                          input=payload.encode(), stderr=subprocess.PIPE, env=_env(), timeout=60,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 0
    listed = subprocess.run([sys.executable, "-m", "continuity", "events", "list", "--kind", "context.served",
                             "--json"], cwd=project, env=_env(), capture_output=True, check=True, timeout=60)
    served = json.loads(listed.stdout)["events"][-1]["event_id"]
    log = (project / ".agent" / "runtime-continuity" / "local" / "hooks.log").read_text()
    [record] = [json.loads(line) for line in log.splitlines() if "output not delivered" in line]
    assert record["message"] == ("output not delivered whole (stdout was closed when the hook started): the harness "
                                 f"got none or part of the brief {served} records"), record
    assert b"output not delivered" in done.stderr


def test_a_process_out_of_memory_is_exit_5_not_a_bug(project: Path) -> None:
    """`ulimit -v` too low for a read's work: Python's MemoryError (or a shared library the loader could not map)
    ended in "internal error", exit 70 (a bug's code), where an ENOMEM from the system was exit 5. All are the
    machine's limit: exit 5, one line."""
    import resource

    for message in ("one", "two"):
        subprocess.run([sys.executable, "-m", "continuity", "log", "-m", message], cwd=project, env=_env(),
                       check=True, capture_output=True, timeout=60)
    seen = set()
    for kilobytes in range(14_000, 60_000, 1_000):
        def limited(kilobytes: int = kilobytes) -> None:
            resource.setrlimit(resource.RLIMIT_AS, (kilobytes << 10, kilobytes << 10))

        done = subprocess.run([sys.executable, "-m", "continuity", "resume-bundle"], cwd=project, env=_env(),
                              capture_output=True, preexec_fn=limited, timeout=60)
        assert b"internal error" not in done.stderr, (kilobytes, done.stderr)
        if b"out of memory" in done.stderr:
            assert done.returncode == EXIT_WRITE_FAILED and done.stderr.count(b"\n") == 1, done.stderr
        seen.add(done.returncode)
        if done.returncode == 0:
            break
    assert EXIT_WRITE_FAILED in seen and 0 in seen, seen  # a limit that bit, then one that let it answer


def test_an_error_that_hides_a_memory_error_is_out_of_memory() -> None:
    """CPython's "<function ...> returned a result with an exception set" is a SystemError raised from the error it
    hid: when that was a MemoryError, the process ran out of memory, whatever its limits."""
    from continuity.core.guard import _out_of_memory

    try:
        try:
            raise MemoryError
        except MemoryError as hidden:
            raise SystemError("<function f> returned a result with an exception set") from hidden
    except SystemError as error:
        assert _out_of_memory(error)
    assert not _out_of_memory(SystemError("<function f> returned a result with an exception set"))


def test_the_interpreters_silent_failure_is_out_of_memory_only_under_a_memory_limit() -> None:
    """Under `ulimit -v` an import whose allocation failed can end in "SystemError: error return without exception
    set" (or "<function _find_and_load ...> returned NULL without setting an exception" when the import went through
    `importlib.import_module`): CPython returned no error. It was "internal error", exit 70, in one run of three of
    the test above. Near a limit of the process's memory (half of it used) it is the machine's limit; under a limit
    far above what the process uses, or none, it stays a bug's error, as does any other SystemError (a built-in
    function's NULL among them)."""
    script = """
import resource, sys
from continuity.core.guard import _out_of_memory
pages = [int(field) * resource.getpagesize() for field in open("/proc/self/statm").read().split()]
used, data = pages[0], pages[5]
hard = resource.getrlimit(resource.RLIMIT_AS)[1]
if sys.argv[1] == "near":
    resource.setrlimit(resource.RLIMIT_AS, (used * 3 // 2, hard))
elif sys.argv[1].startswith("far"):
    resource.setrlimit(resource.RLIMIT_AS, (used * 1000, hard))
if sys.argv[1] == "far, no descriptor left":  # /proc unreadable for want of descriptors: not a sign of memory
    import os
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) - 1,
                                                resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
elif sys.argv[1] == "data near":
    resource.setrlimit(resource.RLIMIT_DATA, (data * 3 // 2, resource.getrlimit(resource.RLIMIT_DATA)[1]))
elif sys.argv[1] == "data far":  # (its address space is bigger than half the limit: the data is what counts)
    resource.setrlimit(resource.RLIMIT_DATA, (max(data * 4, used), resource.getrlimit(resource.RLIMIT_DATA)[1]))
print(_out_of_memory(SystemError("error return without exception set")),
      _out_of_memory(SystemError("compile returned NULL")),
      _out_of_memory(SystemError("<built-in function f> returned NULL without setting an exception")),
      _out_of_memory(SystemError("<function _find_and_load at 0x7f940d96fce0> returned NULL without setting an "
                                 "exception")))
"""
    import resource

    unlimited = all(resource.getrlimit(kind)[0] == resource.RLIM_INFINITY
                    for kind in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
    for case, expected in (("near", "True True False True"), ("far", "False False False False"),
                           ("far, no descriptor left", "False False False False"),
                           ("data near", "True True False True"), ("data far", "False False False False"),
                           ("as started", "False False False False" if unlimited else None)):
        done = subprocess.run([sys.executable, "-c", script, case], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert expected is None or done.stdout.strip() == expected, (case, done.stdout)
