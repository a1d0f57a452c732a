"""The Python API (continuity/api.py): the MCP tools for harnesses written in Python, on a real store."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from continuity.api import Continuity
from continuity.core.errors import EXIT_NOT_FOUND, EXIT_SECRET, EXIT_USAGE, UsageError
from continuity.core.initialize import init_store
from events.errors import ContinuityError, SecretRefused
from tests.helpers import all_event_files, cli_process


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [name for name in os.environ if name.startswith("CONTINUITY_")]:
        monkeypatch.delenv(name)
    project = tmp_path / "proj"
    project.mkdir()
    init_store(project, project="demo", language=None)
    return project


def stored(root: Path) -> list[dict[str, object]]:
    return [json.loads(path.read_bytes()) for path in all_event_files(root)]


def test_the_api_writes_what_the_cli_reads_and_answers_in_jsons_types(root: Path) -> None:
    """log, checkpoint and a task through the API are events the CLI then reads back; `host` is recorded as an MCP
    client's name is; answers are JSON-shaped (lists, not tuples)."""
    api = Continuity(str(root), host="my-harness")
    logged = api.log(message="parsed the config", files=["src/config.py"])
    assert logged["ok"] is True and logged["event"]["refs"]["files"] == ["src/config.py"]
    api.checkpoint(message="parser done", next=["write the tests"])
    task = api.call("create_task", title="Fix login")
    assert task["status"] == "queued"
    kinds = [event["kind"] for event in stored(root)]
    assert kinds == ["work.logged", "checkpoint.recorded", "task.created"]
    assert {event["host"] for event in stored(root)} == {"my-harness"}
    bundle = cli_process("resume-bundle", "--format", "json", cwd=root)
    assert bundle.returncode == 0 and json.loads(bundle.stdout)["next_action"] == "write the tests"
    assert "Fix login" in cli_process("task", "list", cwd=root).stdout
    brief = api.resume_bundle(format="md")["brief"]
    assert "## Next action\nwrite the tests" in brief
    assert api.events(limit=2)["count"] == 2 and api.status()["events"] == 3
    assert api.tools()[:6] == ["log", "checkpoint", "archive", "resume_bundle", "status", "events"]


def test_refusals_raise_the_commands_errors_with_their_exit_codes_and_write_nothing(root: Path) -> None:
    """A misspelt argument, an unknown tool, a secret, an unknown task: the error the CLI exits with (its
    exit_code), worded for a Python caller (`redact=True`, never a CLI flag); nothing is written."""
    api = Continuity(str(root))
    with pytest.raises(UsageError, match="unknown field `mesage`") as refused:
        api.log(mesage="a typo")
    assert refused.value.exit_code == EXIT_USAGE
    with pytest.raises(UsageError, match="unknown tool 'lgo'"):
        api.call("lgo", message="x")
    with pytest.raises(SecretRefused, match=r"redact=True") as secret:
        api.log(message="key AKIAIOSFODNN7EXAMPLE")
    assert secret.value.exit_code == 4 and "AKIAIOSFODNN7EXAMPLE" not in str(secret.value)
    assert "--redact" not in str(secret.value)
    with pytest.raises(ContinuityError) as missing:
        api.call("update_task", task_id="task-0000000000", status="completed")
    assert missing.value.exit_code == EXIT_NOT_FOUND
    assert stored(root) == []
    assert api.log(message="key AKIAIOSFODNN7EXAMPLE", redact=True)["event"]["redacted"]


def test_threads_of_one_process_each_get_their_event(root: Path) -> None:
    """Calls from eight threads at once (the store's lock and temp names are per process): every entry is
    written once and the log verifies."""
    api = Continuity(str(root))
    errors: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            for number in range(10):
                api.log(message=f"thread {thread} entry {number}")
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    messages = sorted(str(event["message"]) for event in stored(root))
    assert messages == sorted(f"thread {t} entry {n}" for t in range(8) for n in range(10))
    assert cli_process("verify", cwd=root).returncode == 0


def test_without_a_root_the_store_is_found_from_the_working_directory(root: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """As the CLI finds it; and with no store anywhere up, the CLI's error (exit 3)."""
    (root / "src").mkdir()
    monkeypatch.chdir(root / "src")
    assert Continuity().log(message="from below")["ok"] is True
    monkeypatch.chdir(root.parent)
    with pytest.raises(ContinuityError) as none:
        Continuity().log(message="nowhere")
    assert none.value.exit_code == 3


TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"


class _Text(str):
    """A `str` subclass, as an enum or a wrapper type hands one over."""


@pytest.mark.parametrize("value", [TOKEN.encode(), bytearray(TOKEN.encode()), memoryview(TOKEN.encode()),
                                   {1, 2}, object(), float("nan"), float("inf"), {1: "a"}, Path("a")])
def test_arguments_outside_jsons_types_are_refused_and_nothing_is_written(root: Path, value: object) -> None:
    """Bytes (a harness's captured output), sets, objects, NaN, keys that are not text, paths: never stored in
    another spelling (bytes became base64, past the secret guard), a `UsageError` naming where, nothing written."""
    api = Continuity(str(root))
    with pytest.raises(UsageError, match=r"log: invalid arguments: note\.stdout"):
        api.log(message="ran the build", note={"stdout": value})
    with pytest.raises(UsageError, match=r"invalid arguments: files\[1\]"):
        api.log(message="ran the build", files=["a.py", value])
    assert stored(root) == []


def test_arguments_are_read_as_an_mcp_client_sends_them(root: Path) -> None:
    """A `str` subclass is its text, a tuple a list; a lone surrogate is read as the CLI reads a path (an
    `os.fsdecode`d name as the UTF-8 its bytes are, else U+FFFD), as MCP stores it, not refused."""
    api = Continuity(root)  # an os.PathLike root
    event = api.log(message=_Text("a\ud800b"), files=("src/\udcc3\udca9.py", os.fsdecode(b"src/\xff.py")))["event"]
    assert event["message"] == "a\ufffdb"
    assert event["refs"]["files"] == ["src/\u00e9.py", "src/\ufffd.py"]
    assert type(stored(root)[0]["message"]) is str
    deep: list[object] = []
    for _ in range(1000):
        deep = [deep]
    with pytest.raises(UsageError, match="nested more than 200 levels"):
        api.log(message="m", note={"a": deep})
    with pytest.raises(UsageError, match="a tool's name is text, not list"):
        api.call(["log"], message="m")  # type: ignore[arg-type]
    for bad in (b".", 5):
        with pytest.raises(UsageError, match="root: a path"):
            Continuity(bad)  # type: ignore[arg-type]
    assert len(stored(root)) == 1


def test_errors_name_the_apis_arguments_and_keep_suggested_commands_whole(root: Path) -> None:
    """`--note-json` is the `note` argument and `--root` the constructor's `root`; a CLI command an error suggests
    is left as it runs (its values were taken for placeholders and dropped)."""
    api = Continuity(str(root))
    with pytest.raises(UsageError) as note:
        api.archive(note={"next": 5})
    assert str(note.value).startswith("note: ") and "--" not in str(note.value)
    with pytest.raises(UsageError, match=r"^root contains a NUL character"):
        Continuity("x\x00y").status()
    item = {"id": "T1", "title": "Failing test", "status": "IN_PROGRESS", "priority": "HIGH"}
    cursor = {"currentItemId": "T1", "lastCompletedItemId": None, "phase": "red", "lastCompletedAction": None,
              "nextAction": "write the failing test"}
    workstream = {"id": "WS-login", "title": "Login race", "status": "IN_PROGRESS", "objective": "No double refresh",
                  "repositories": [{"repository": "web", "role": "primary"}], "cursor": cursor, "items": [item]}
    api.call("work_checkpoint", document={
        "schemaVersion": 2, "repository": "web", "scope": "login", "status": "IN_PROGRESS", "objective": "Fix",
        "confirmedFindings": [], "decisions": [], "rejectedApproaches": [], "validation": [], "openQuestions": [],
        "nextAction": "write the failing test",
        "continuity": {"mode": "tracked", "validationLedger": [], "workstream": workstream}})
    api.call("work_item_update", item_id="T1", status="COMPLETED")
    with pytest.raises(ContinuityError) as reopen:
        api.call("work_item_update", item_id="T1", status="PENDING")
    assert "(continuity work item set T1 --status PENDING --reopen)" in str(reopen.value)


def test_no_error_shows_a_secret_it_was_given(root: Path) -> None:
    """An id that looks like a token, given where none exists: the error (raised, printed by the CLI, sent by
    MCP) says `[REDACTED:<rule>]`, never the token; a team feature's name (a handoff id) is refused as a secret
    before it is looked up (exit 4), as its team, agent and role names are."""
    api = Continuity(str(root))
    for tool, arguments, code in (("update_task", {"task_id": TOKEN, "status": "completed"}, EXIT_NOT_FOUND),
                                  ("start_agent_run", {"task_id": TOKEN}, EXIT_NOT_FOUND),
                                  ("handoff", {"action": "accept", "handoff_id": TOKEN, "agent": "amy"}, EXIT_SECRET)):
        with pytest.raises(ContinuityError) as refused:
            api.call(tool, **arguments)
        assert refused.value.exit_code == code
        assert TOKEN not in str(refused.value)
        assert "[REDACTED:" in str(refused.value) or "looks like a secret" in str(refused.value)
    shown = cli_process("handoff", "accept", TOKEN, "--agent", "amy", cwd=root)
    assert shown.returncode == EXIT_SECRET and TOKEN not in shown.stdout + shown.stderr
    assert "looks like a secret" in shown.stderr
    as_json = cli_process("--json", "task", "update", TOKEN, "--status", "completed", cwd=root)
    assert as_json.returncode == EXIT_NOT_FOUND and TOKEN not in as_json.stdout + as_json.stderr
    assert stored(root) == []


def test_an_error_reworded_for_the_api_keeps_what_the_command_found_before_it_failed() -> None:
    """`as_tool_error` rewords a refusal (flags as arguments, the redact spelling); the warnings the command had
    gathered (a sync that failed after its catch-up warned, say) travel with the reworded error."""
    from continuity.adapters.mcp.registry import load_tools
    from continuity.adapters.mcp.server import as_tool_error

    load_tools()
    worded = UsageError("give --to AGENT")
    worded.warnings = ["events/20990101/ cannot be read"]
    secret = SecretRefused("message", "github-token")
    secret.warnings = ["a warning before"]
    for error, tool in ((worded, "handoff"), (secret, "log")):
        said = as_tool_error(error, tool, "`redact=True`")
        assert said is not error and said.warnings == error.warnings, tool
    plain = UsageError("nothing to reword")
    assert as_tool_error(plain, "log") is plain and plain.warnings == []


def test_an_answer_shows_a_secret_another_clone_wrote_redacted(root: Path) -> None:
    """The guard runs on writes: an event another clone wrote can hold a token. The CLI's `--json` and every MCP
    tool show it redacted; the API returned it as stored (`events`, `list_tasks`)."""
    from tests.integration.test_forged_reads import plant_synced

    api = Continuity(str(root))
    api.log(message="first")
    api.call("create_task", title="rotate the keys")
    plant_synced(root, "deploy with " + TOKEN)
    tasks = root / ".agent" / "runtime-continuity" / "events"
    created = next(json.loads(path.read_bytes()) for path in sorted(tasks.rglob("*.json"))
                   if json.loads(path.read_bytes())["kind"] == "task.created")
    assert created["title"] == "rotate the keys"
    shown = json.dumps([api.events(limit=10), api.status(), api.call("list_tasks")])
    assert TOKEN not in shown and "deploy with [REDACTED:github-token]" in shown
    cli = cli_process("--json", "events", "list", cwd=root)
    assert TOKEN not in cli.stdout and "deploy with [REDACTED:github-token]" in cli.stdout


def test_a_process_forked_while_a_thread_is_in_a_call_can_call(root: Path) -> None:
    """The calls' lock held by another thread at a fork stayed held in the child for good: its first call waited
    forever. The child gets a lock of its own."""
    import subprocess
    import sys

    script = f"""
import os, sys, threading, time
from continuity import api
from continuity.api import Continuity
store = Continuity({str(root)!r})
store.log(message="warm")
held = threading.Event()
def hold():
    with api._SERIAL:  # a call in progress in another thread at the fork
        held.set()
        time.sleep(3)
threading.Thread(target=hold, daemon=True).start()
held.wait()
pid = os.fork()
if pid == 0:
    store.log(message="from the child")
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert [event["message"] for event in stored(root)] == ["warm", "from the child"]


def test_a_relative_root_is_where_it_was_when_given_and_a_host_is_text(root: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative root was looked up from the working directory at each call (after a chdir, another project);
    a host that is not text was dropped without a word (the environment's host recorded instead)."""
    monkeypatch.chdir(root.parent)
    api = Continuity(root.name)
    monkeypatch.chdir(root)
    assert api.log(message="still here")["ok"] is True
    assert [event["message"] for event in stored(root)] == ["still here"]
    monkeypatch.setenv("CONTINUITY_HOST", "from-the-environment")
    for host in (b"my-harness", 5, ["my-harness"]):
        with pytest.raises(UsageError, match="host: text"):
            Continuity(str(root), host=host)  # type: ignore[arg-type]
    Continuity(str(root), host="my-harness").log(message="named")
    assert stored(root)[-1]["host"] == "my-harness"


@pytest.mark.parametrize("given", [{"project": "someotherproject"}, {"project": "../../etc"}, {"project": TOKEN},
                                   {"agent": "amy"}, {"host": "codex"}, {"session_id": "s1"}])
def test_handoff_list_refuses_a_writers_argument_it_would_drop(root: Path, given: dict[str, str]) -> None:
    """`handoff` `list` took and dropped a project (another one, `../../etc`, a token), an agent, a host or a session
    and answered this store's handoffs; the CLI's `handoff list` takes none of them. Refused, naming the argument."""
    api = Continuity(str(root))
    with pytest.raises(UsageError) as refused:
        api.call("handoff", action="list", **given)
    assert str(refused.value) == f"handoff list does not take {next(iter(given))}" and TOKEN not in str(refused.value)
    assert api.call("handoff", action="list")["handoffs"] == []


def test_a_lock_held_at_a_fork_is_released_when_its_holder_is_done(root: Path) -> None:
    """A flock belongs to the open file, which a forked child shares: released by a close alone, the catch-up turn
    a thread held at the fork stayed held while the child lived, and every call (the parent's, the child's, any
    process's) waited out its 10 s and answered "another process kept the read models' files". Each lock is
    unlocked before it is closed."""
    import subprocess
    import sys

    script = f"""
import os, sys, threading, time
from continuity.api import Continuity
from continuity.core.store import Store
from continuity.readside import catchup
store = Continuity({str(root)!r})
store.log(message="warm")
held, done = threading.Event(), threading.Event()
def hold():
    with catchup.writing_turn(Store({str(root)!r})):  # a catch-up in progress in another thread at the fork
        held.set()
        done.wait()
threading.Thread(target=hold).start()
held.wait()
pid = os.fork()
if pid == 0:
    time.sleep(8)  # alive, holding its copies of the parent's descriptors
    os._exit(0)
done.set()
started = time.monotonic()
answer = store.status()
print(round(time.monotonic() - started, 1), answer["warnings"])
os.kill(pid, 9)
os.waitpid(pid, 0)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seconds, warnings = done.stdout.split(" ", 1)
    assert float(seconds) < 5 and "kept the read models' files" not in warnings, done.stdout


def test_the_node_id_lock_is_free_once_the_id_is_written_whatever_a_fork_holds(root: Path) -> None:
    """`Store.node()` writes the node id under the append lock and closed it without unlocking: a child forked while
    it was held kept the lock, and the parent's next append waited for the child's whole life."""
    import subprocess
    import sys

    script = f"""
import os, time
from events import durable, osfs
from continuity.core.store import Store
real = durable.take_lock
def take_then_fork(fd, wait, path):
    real(fd, wait, path)
    if os.fork() == 0:  # a child forked while the lock is held (another thread's fork, in a real process)
        time.sleep(2)
        os._exit(0)
durable.take_lock = take_then_fork
store = Store({str(root)!r})
os.remove(os.path.join(store.local_dir, "node"))
store.node()
probe = os.open(os.path.join(store.local_dir, "lock"), os.O_RDWR)
print(osfs.try_lock(probe))
"""
    Continuity(str(root)).log(message="makes the node id")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "True\n", (done.stdout, done.stderr)
