"""The plain append path (`log`, `checkpoint`, record-only hooks) against the msgspec path, on real stores.

Each property runs one input twice on the same fresh store, with the clock and the node
pinned: once as users run it (the plain path first), once through argparse and the typed
handlers only. Exit code, stdout, stderr, hooks.log and every byte and name under
`events/` must be the same.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.adapters import hook_fast
from continuity.adapters.hooks import run_hook, run_typed
from continuity.cli import main, plain_log
from continuity.core import store as stores
from tests.helpers import all_event_files, pin_node

NODE = "feed1234"
START_US = 1_785_000_000_000_000
SECRET = "ghp_" + "A1b2" * 9
#: Values any field takes: letters, digits, spaces, punctuation, tab and newline, non-ASCII.
BENIGN = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), whitelist_characters="\t\n"), max_size=20),
    st.sampled_from(["line one\nline two", "tab\there", "é 😀 ünïcode", 'quote " and \\ backslash', "</script>",
                     "a" * 1000, "trailing newline\n"]),
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,12}\Z"),
)
VALUES = st.one_of(
    BENIGN,
    st.text(max_size=12),
    st.sampled_from(["edited the parser", "", "-x", "-5", "a..b", "x" * 1001, "line\nbreak", "\x1b[31m", "\u2028",
                     "\x00", SECRET, "password=hunter2secret", "curl https://u:s3cretpass@h/x", "é 😀", "--json",
                     "[x]", "a/b", "ok-name", "{root}/src/a.py", "{root}//src/a.py", "{root}/../b.py"]),
)
NAMES = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,12}\Z")
NAME_FLAGS = ["--type", "--phase", "--project", "--host", "--agent", "--session", "--run", "--task", "--mission"]
FLAGS = ["--done", "--in-progress", "--next", "--blocker", "--file", "--artifact", "--handoff",
         "--command", "--exit-code", "--command-summary", *NAME_FLAGS]
ODD_FLAGS = ["-m", "--message", "--note-json", "--mess", "--agen", "--log-level", "--json", "--redact", "--root"]


@st.composite
def log_argvs(draw: Any) -> list[str]:
    """`log`/`checkpoint` argument vectors: half well-formed, half with hostile values and odd spellings."""
    hostile = draw(st.booleans())
    values = VALUES if hostile else BENIGN
    argv: list[str] = draw(st.lists(st.sampled_from([["--json"], ["--debug"], ["--root", "{root}"]]), max_size=2)
                           .map(lambda parts: [arg for part in parts for arg in part]))
    argv.append(draw(st.sampled_from(["log", "checkpoint"])))
    if not hostile:
        argv.append(draw(BENIGN.filter(lambda text: text.strip() and not text.startswith("-"))))
    for _ in range(draw(st.integers(0, 6))):
        choice = draw(st.integers(0, 9))
        if choice < 6:
            flag = draw(st.sampled_from(FLAGS + ODD_FLAGS if hostile else FLAGS))
            if flag == "--exit-code":
                value = draw(st.one_of(values, st.integers(-(2**33), 2**33).map(str)) if hostile
                             else st.integers(-(2**31), 2**32 - 1).map(str))
            else:
                value = draw(NAMES if flag in NAME_FLAGS and not hostile else values)
            argv.extend([f"{flag}={value}"] if draw(st.booleans()) else [flag, value])
            if flag == "--exit-code" and not hostile:
                argv.extend(["--command", draw(values)])
        elif choice < 8 and hostile:
            argv.append(draw(values))
        elif hostile:
            argv.append(draw(st.sampled_from(["--json", "--redact", "--debug", "-mquick", "--", "-h"])))
    return argv


@pytest.fixture
def template(tmp_path: Path) -> Path:
    """An initialized project whose node id is pinned (copied fresh for every run)."""
    root = tmp_path / "template"
    root.mkdir()
    assert main(["--root", str(root), "init", "--project", "demo"]) == 0
    pin_node(root, NODE)
    return root


class Runs:
    """Runs one input on a fresh copy of the template, at a fixed path and time."""

    def __init__(self, template: Path, work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.template, self.root = template, work
        self.monkeypatch = monkeypatch
        self.clock = [START_US]
        monkeypatch.setattr(stores, "now_us", lambda: self.clock[0])

    def fresh(self, config: bytes | None = None, hint: str | None = None) -> None:
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(self.template, self.root, symlinks=True)
        pin_node(self.root, NODE)
        store = self.root / ".agent" / "runtime-continuity"
        if config is not None:
            (store / "config.json").write_bytes(config)
        if hint is not None:
            (store / "local" / "runs").mkdir(parents=True, exist_ok=True)
            (store / "local" / "runs" / "current-s1").write_text(hint)
        self.monkeypatch.chdir(self.root)  # as Claude Code's installed command runs: in the project root

    def outcome(self) -> dict[str, Any]:
        store = self.root / ".agent" / "runtime-continuity"
        files = {str(path.relative_to(self.root)): path.read_bytes() for path in all_event_files(self.root)}
        hooks_log = store / "local" / "hooks.log"
        lines = [json.loads(line) for line in hooks_log.read_text().splitlines()] if hooks_log.exists() else []
        return {"files": files, "hooks_log": [{k: v for k, v in line.items() if k != "ts"} for line in lines]}


@pytest.fixture
def runs(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runs]:
    yield Runs(template, tmp_path / "work", monkeypatch)


def typed_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plain_log, "run", lambda argv: None)


CONFIGS = [None, b'{"project": "demo", "record_prompts": true}', b"{not json", b"", b'{"project": "a b"}']


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=log_argvs(), config=st.sampled_from(CONFIGS), session=st.sampled_from([None, "s1", SECRET]),
       hint=st.sampled_from([None, "run-7 task-2\n", "run-8\n"]))
def test_log_writes_the_same_bytes_and_says_the_same_either_way(
        runs: Runs, capsys: pytest.CaptureFixture[str], argv: list[str], config: bytes | None,
        session: str | None, hint: str | None) -> None:
    """Any `log`/`checkpoint` argv: the plain path and argparse + msgspec give the same code, output and files."""
    argv = [arg.replace("{root}", str(runs.root)) for arg in argv]
    results = []
    for typed in (False, True):
        runs.fresh(config, hint)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root)
            if session:
                patch.setenv("CONTINUITY_SESSION_ID", session)
            if typed:
                typed_only(patch)
            code = main(list(argv))
        out = capsys.readouterr()
        results.append((code, out.out, out.err, runs.outcome()))
    assert results[0] == results[1]


def test_the_common_log_forms_take_the_plain_path(runs: Runs, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What hooks and scripts run is handled without argparse: each form appends one event on the plain path."""
    runs.fresh()
    monkeypatch.chdir(runs.root)
    handled: list[int | None] = []
    real_run = plain_log.run
    monkeypatch.setattr(plain_log, "run", lambda argv: handled.append(real_run(argv)) or handled[-1])
    forms = [["log", "-m", "edited the parser", "--agent", "a1"], ["log", "fixed the test"],
             ["checkpoint", "-m", "parser done", "--next", "wire the CLI", "--done", "parser"],
             ["--json", "log", "x", "--file", "a.py", "--file", "b.py"],
             ["log", "ran tests", "--command", "pytest -q", "--exit-code=-9", "--command-summary", "1 failed"],
             ["--root", str(runs.root), "log", "--message=with equals", "--phase", "testing", "--type", "decision"]]
    for argv in forms:
        assert main(argv) == 0, argv
    assert handled == [0] * len(forms)
    assert len(all_event_files(runs.root)) == len(forms)
    capsys.readouterr()
    assert main(["verify"]) == 0


TOOLS = ["Bash", "Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "shell", "exec_command", "Read", ""]
HOOKS = ["PostToolUse", "PostToolUseFailure", "Stop", "UserPromptSubmit", "SubagentStop", "PostCompact",
         "SessionEnd", "Nope"]


@st.composite
def hook_payloads(draw: Any) -> bytes:
    """Hook stdin: payloads of the record-only hooks with hostile values, and some that are not payloads."""
    body: dict[str, Any] = {"hook_event_name": draw(st.sampled_from(HOOKS))}
    if draw(st.booleans()):
        body["session_id"] = "s1"  # the session the current-run hint names
    for key in ("agent_id", "turn_id", "tool_use_id", "prompt", "last_assistant_message", "error", "reason",
                "trigger", "compact_summary", "agent_type"):
        if draw(st.booleans()):
            body[key] = draw(st.one_of(VALUES, st.integers(-3, 3), st.none()))
    if "session_id" not in body and draw(st.booleans()):
        body["session_id"] = draw(st.one_of(VALUES, st.integers(-3, 3)))
    if draw(st.booleans()):
        body["cwd"] = draw(st.sampled_from(["{root}", "/nonexistent", "{root}/.agent"]))
    body["tool_name"] = draw(st.sampled_from(TOOLS))
    command = draw(st.one_of(VALUES, st.lists(VALUES, max_size=3),
                             st.just("*** Begin Patch\n*** Update File: src/a.py\n*** End Patch")))
    body["tool_input"] = draw(st.sampled_from([{"command": command}, {"file_path": command},
                                               {"notebook_path": command}, {"patch": command}, command]))
    body["tool_response"] = draw(st.one_of(st.none(), st.fixed_dictionaries(
        {"exit_code": st.one_of(st.integers(-(2**40), 2**40), st.booleans()), "stderr": VALUES, "stdout": VALUES})))
    if draw(st.booleans()):
        body["is_interrupt"] = draw(st.booleans())
    text = json.dumps(body, ensure_ascii=draw(st.booleans()))
    return draw(st.sampled_from([text.encode(), text.encode(), text.encode(), b"", b"[1]", b"\xff{}",
                                 b'{"hook_event_name": "Stop", "x": NaN}', text.encode()[:-1]]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=hook_payloads(), config=st.sampled_from(CONFIGS), hint=st.sampled_from([None, "run-7 task-2\n"]))
def test_hooks_record_the_same_events_and_reports_either_way(
        runs: Runs, capsys: pytest.CaptureFixture[str], raw: bytes, config: bytes | None, hint: str | None) -> None:
    """Any hook stdin: the plain path and the typed handlers record the same files and report the same lines."""
    raw = raw.replace(b"{root}", str(runs.root).encode())
    results = []
    for handler in (run_hook, run_typed):
        runs.fresh(config, hint)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root)
            recorded = handler("claude-code", raw, None).recorded
        out = capsys.readouterr()
        results.append((recorded, out.out, out.err, runs.outcome()))
    assert results[0] == results[1]


def test_the_record_only_hooks_take_the_plain_path(runs: Runs) -> None:
    """PostToolUse (Bash, Edit, apply_patch), its failure and the turn hooks are recorded without typed handlers."""
    runs.fresh()
    payloads = [
        {"hook_event_name": "PostToolUse", "tool_name": "Bash", "session_id": "s1",
         "tool_input": {"command": "pytest -q"}, "tool_response": {"exit_code": 0, "stdout": "3 passed"}},
        {"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": "src/a.py"}},
        {"hook_event_name": "PostToolUse", "tool_name": "shell",
         "tool_input": {"command": ["apply_patch", "*** Begin Patch\n*** Add File: b.py\n*** End Patch"]}},
        {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": "make"},
         "error": "Exit code 2\nmake: *** [all] Error 2"},
        {"hook_event_name": "UserPromptSubmit", "prompt": "go"}, {"hook_event_name": "Stop"},
        {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"},
    ]
    for payload in payloads:
        payload["cwd"] = str(runs.root)
        recorded = hook_fast.record_plain("claude-code", json.dumps(payload).encode())
        assert recorded is not None and len(recorded) == 1, payload
    assert len(all_event_files(runs.root)) == len(payloads)
    assert hook_fast.record_plain("claude-code", json.dumps({"hook_event_name": "SessionStart"}).encode()) is None


#: Session starts are left out: their brief records the wall clock, and they never take the plain path.
VENDOR_FIXTURES = sorted(path for path in (Path(__file__).resolve().parent.parent / "fixtures" / "hooks").glob(
    "*/*.json") if not path.stem.startswith("session_start"))
#: The record-only events (a session end too, when it only records: no agent, archive or sync after it).
VENDOR_PLAIN = {"before_submit_prompt", "after_file_edit", "after_shell_execution", "stop", "before_agent",
                "after_tool_shell", "after_tool_shell_exit_1", "after_tool_shell_wrapped_exit_3",
                "after_tool_write_file", "after_tool_replace", "after_tool_replace_error", "after_tool_read_file",
                "after_agent", "session_end"}


@pytest.mark.parametrize("fixture", VENDOR_FIXTURES, ids=lambda path: f"{path.parent.name}-{path.stem}")
def test_cursor_and_gemini_hooks_record_the_same_either_way(runs: Runs, capsys: pytest.CaptureFixture[str],
                                                            fixture: Path) -> None:
    """Cursor's and Gemini CLI's record-only events take the plain path, and it writes what the typed handlers do."""
    harness = fixture.parent.name
    results = []
    for handler in (run_hook, run_typed):
        runs.fresh()
        raw = fixture.read_bytes().replace(b"{cwd}", str(runs.root).encode())
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root)
            if handler is run_hook:
                plain = hook_fast.record_plain(harness, raw)
                assert (plain is not None) == (fixture.stem in VENDOR_PLAIN), fixture.stem
                runs.fresh()
            recorded = handler(harness, raw, None).recorded
        out = capsys.readouterr()
        results.append((recorded, out.out, out.err, runs.outcome()))
    assert results[0] == results[1]
    assert (results[0][3]["files"] != {}) == (fixture.stem != "after_tool_read_file")


def test_cursor_and_gemini_session_starts_go_to_the_typed_handlers(runs: Runs) -> None:
    """A session start needs the brief: the plain path declines it before writing anything."""
    runs.fresh()
    for harness in ("cursor", "gemini"):
        fixture = Path(__file__).resolve().parent.parent / "fixtures" / "hooks" / harness / "session_start.json"
        raw = fixture.read_bytes().replace(b"{cwd}", str(runs.root).encode())
        assert hook_fast.record_plain(harness, raw) is None
    assert all_event_files(runs.root) == []


VENDOR_HOOKS = {"cursor": ["beforeSubmitPrompt", "afterFileEdit", "afterShellExecution", "stop",
                           "preCompact", "sessionEnd", "postToolUse", "SessionStart"],
                "gemini": ["BeforeAgent", "AfterTool", "AfterAgent", "PreCompress", "SessionEnd", "BeforeTool",
                           "Stop", "PostToolUse"]}


@st.composite
def vendor_payloads(draw: Any) -> tuple[str, bytes]:
    """Cursor and Gemini CLI hook stdin with hostile values in the fields their dialects read."""
    harness = draw(st.sampled_from(["cursor", "gemini"]))
    body: dict[str, Any] = {"hook_event_name": draw(st.sampled_from(VENDOR_HOOKS[harness]))}
    odd = st.one_of(VALUES, st.integers(-3, 3), st.none(), st.lists(VALUES, max_size=2),
                    st.dictionaries(VALUES, VALUES, max_size=2))
    for key in ("conversation_id", "generation_id", "session_id", "file_path", "command", "output", "status",
                "prompt", "prompt_response", "trigger", "exit_code"):
        if draw(st.booleans()):
            body[key] = draw(odd)
    body["workspace_roots"] = draw(st.one_of(st.just(["{root}"]), st.just(["/nonexistent", "{root}"]), odd))
    body["cwd"] = draw(st.sampled_from(["{root}", "/nonexistent"]))
    body["tool_name"] = draw(st.sampled_from(["run_shell_command", "write_file", "replace", "read_file", ""]))
    body["tool_input"] = draw(st.one_of(odd, st.fixed_dictionaries({"command": odd, "file_path": odd})))
    content = st.one_of(odd, st.builds(lambda out, tail: f"Output: {out}\n{tail}", VALUES, st.sampled_from(
        ["Exit Code: 1", "Exit Code: 99999999999", "Signal: 9", "Error: spawn failed\nExit Code: 127",
         "Process Group PGID: 7", ""])))
    body["tool_response"] = draw(st.one_of(odd, st.fixed_dictionaries({"llmContent": content, "error": odd})))
    return harness, json.dumps(body, ensure_ascii=draw(st.booleans())).encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=vendor_payloads(), config=st.sampled_from(CONFIGS))
def test_cursor_and_gemini_payloads_record_the_same_either_way(
        runs: Runs, capsys: pytest.CaptureFixture[str], drawn: tuple[str, bytes], config: bytes | None) -> None:
    """Any Cursor or Gemini CLI stdin: the plain path and the typed handlers record and report the same."""
    harness, raw = drawn
    raw = raw.replace(b"{root}", str(runs.root).encode())
    results = []
    for handler in (run_hook, run_typed):
        runs.fresh(config)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root)
            recorded = handler(harness, raw, None).recorded
        out = capsys.readouterr()
        results.append((recorded, out.out, out.err, runs.outcome()))
    assert results[0] == results[1]


@pytest.mark.parametrize("config", [b'{"project": "demo", "archive_on_session_end": true}',
                                    b'{"project": "demo", "sync_after": ["session_end"]}', None])
def test_a_session_end_with_more_to_do_goes_to_the_typed_handler(runs: Runs, config: bytes | None) -> None:
    """SessionEnd takes the plain path only when it only records: an agent (roles to park), an archive or
    a sync to start after it send it to the typed handler, before anything is written."""
    runs.fresh(config)
    payload = {"hook_event_name": "SessionEnd", "cwd": str(runs.root), "session_id": "s1"}
    if config is None:
        payload["agent_id"] = "a1"
    assert hook_fast.record_plain("claude-code", json.dumps(payload).encode()) is None
    assert all_event_files(runs.root) == []


def imported_by(argv: list[str], cwd: Path, stdin: bytes = b"") -> set[str]:
    """The modules a real `continuity ...` process imports (from `python -X importtime`)."""
    exe = str(Path(sys.executable).with_name("continuity"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    result = subprocess.run([sys.executable, "-X", "importtime", exe, *argv], cwd=cwd, env=env, input=stdin,
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr[-500:]
    lines = result.stderr.decode().splitlines()
    assert not [line for line in lines if not line.startswith("import time:")], result.stderr[-500:]
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


def loaded_by(argv: list[str], cwd: Path, stdin: bytes = b"") -> set[str]:
    """The modules a real `continuity ...` process holds when it exits (`sys.modules`: `-X importtime` does not list
    what `importlib.import_module` loads, as the registry loads the read models)."""
    exe = str(Path(sys.executable).with_name("continuity"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    with tempfile.TemporaryDirectory() as scratch:
        listed = Path(scratch, "modules")
        code = ("import atexit, runpy, sys\n"
                f"atexit.register(lambda: open({str(listed)!r}, 'w').write('\\n'.join(sorted(sys.modules))))\n"
                f"sys.argv = [{exe!r}, *{argv!r}]\n"
                f"runpy.run_path({exe!r}, run_name='__main__')\n")
        result = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, input=stdin, capture_output=True,
                                timeout=60)
        assert result.returncode == 0, result.stderr[-500:]
        return set(listed.read_text().splitlines())


def python_says(code: str) -> str:
    """What `python -c code` prints (stripped), in a new interpreter; it must succeed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip()


HEAVY = {"msgspec", "typing_extensions", "argparse", "decimal", "uuid", "orjson", "structlog", "inspect", "ast",
         "typing", "datetime", "subprocess"}  # the last three: a few ms of every hook's start each


def test_log_and_post_tool_use_import_no_msgspec_in_a_real_process(template: Path) -> None:
    """`continuity log` and the PostToolUse hook, run as the installed command, never import msgspec or argparse."""
    modules = imported_by(["log", "-m", "edited the parser", "--agent", "a1"], template)
    assert {"events.plain", "events.durable"} <= modules
    assert {name.split(".")[0] for name in modules} & HEAVY == set()
    payload = json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": str(template),
                          "tool_input": {"command": "ls"}, "tool_response": {"exit_code": 0}}).encode()
    modules = imported_by(["hook", "claude-code"], template, payload)
    assert "continuity.adapters.hook_fast" in modules
    assert {name.split(".")[0] for name in modules} & HEAVY == set()
    assert len(all_event_files(template)) == 2
    for harness, name in (("cursor", "after_shell_execution"), ("gemini", "after_tool_shell")):
        fixture = Path(__file__).resolve().parent.parent / "fixtures" / "hooks" / harness / f"{name}.json"
        modules = imported_by(["hook", harness], template, fixture.read_bytes().replace(b"{cwd}", bytes(template)))
        assert {name.split(".")[0] for name in modules} & HEAVY == set(), harness
    assert len(all_event_files(template)) == 4
    end = json.dumps({"hook_event_name": "SessionEnd", "cwd": str(template), "session_id": "s1", "reason": "exit"})
    modules = imported_by(["hook", "claude-code"], template, end.encode())
    assert {name.split(".")[0] for name in modules} & HEAVY == set()
    assert len(all_event_files(template)) == 5
    # and the check can fail: a typed command does import them
    assert "msgspec" in imported_by(["events", "list"], template)


def test_session_start_loads_msgspec_without_typing_extensions_in_a_real_process(template: Path) -> None:
    """The SessionStart hook (typed: msgspec and the read models) leaves out what only costs it time:
    typing_extensions (events/loading.py), orjson with the dataclasses and inspect it brings, sqlite3
    while no recall index exists (the brief's recall section has nothing to read then), msgspec's
    JSON-schema modules with `textwrap` (stand-ins until used), and `subprocess` outside a git work tree."""
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(template), "session_id": "s1",
                          "source": "startup"}).encode()
    modules = imported_by(["hook", "claude-code"], template, payload)
    assert {"msgspec", "continuity.sessions.brief"} <= modules
    # -X importtime lists refused imports and stand-ins too: typing_extensions and msgspec.inspect show, but never
    # load what they import
    assert modules & {"inspect", "ast", "dataclasses", "orjson", "sqlite3", "textwrap", "subprocess"} == set()
    assert {"session.started", "context.served"} <= {json.loads(path.read_bytes())["kind"]
                                                     for path in all_event_files(template)}


#: The folds, views and document writers of the models a project may never use (views.SPARSE_MODELS).
UNUSED_FEATURES = {"projections.tasks", "projections.team", "projections.workstreams", "projections.handoffs",
                   "projections.memories", "continuity.tasks.resume", "continuity.team.brief",
                   "continuity.workstreams.documents", "continuity.readside.memory_files", "continuity.team.files",
                   "continuity.workstreams.files", "continuity.handoffs.files"}


def test_session_start_loads_no_model_its_project_never_used_in_a_real_process(template: Path) -> None:
    """A project that never made a task, run, snapshot, workstream or handoff: its SessionStart brief imports none of
    those models' folds, views or writers (nor decodes their saved states); once it makes a task, it does."""
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(template), "session_id": "s1",
                          "source": "startup"}).encode()
    assert main(["--root", str(template), "log", "-m", "edited the parser"]) == 0
    # the first builds the saved models (and sweeps the memory files a rebuild no longer makes), the next read them
    assert loaded_by(["hook", "claude-code"], template, payload) & UNUSED_FEATURES <= {
        "continuity.readside.memory_files", "projections.memories", "projections.tasks"}
    modules = loaded_by(["hook", "claude-code"], template, payload)
    assert {"continuity.sessions.brief", "projections.worklog", "projections.sessions"} <= modules
    assert modules & UNUSED_FEATURES == set()
    # nor their events' Structs (events/kind_table.py: the codec imports an event family when it meets one)
    assert modules & {"events.task", "events.team", "events.workstream", "events.handoff", "events.catalog"} == set()
    # and the check can fail: the project's own task is read and shown
    assert main(["--root", str(template), "task", "create", "--title", "a task of its own"]) == 0
    modules = loaded_by(["hook", "claude-code"], template, payload)
    assert {"projections.tasks", "continuity.tasks.resume"} <= modules


#: Modules whose Structs every session start decodes: defined without `from __future__ import annotations`, so
#: msgspec reads their annotations as objects instead of compiling and evaluating each string in every process.
EAGER_ANNOTATIONS = ("events.base", "events.session", "events.context", "events.worklog", "events.archive",
                     "projections.overview", "projections.worklog", "projections.sessions", "projections.refs",
                     "projections.archives", "projections.agentwork", "continuity.core.identity")


def test_the_structs_a_session_start_decodes_have_no_annotation_strings() -> None:
    """Every field annotation of their Structs is an object, not a string (a `from __future__ import annotations`
    added back would make msgspec evaluate each one when a decoder is built)."""
    import importlib

    import msgspec

    for name in EAGER_ANNOTATIONS:
        module = importlib.import_module(name)
        structs = [value for value in vars(module).values()
                   if isinstance(value, type) and issubclass(value, msgspec.Struct) and value.__module__ == name]
        assert structs, name
        for struct in structs:
            strings = [field for field, hint in vars(struct).get("__annotations__", {}).items()
                       if isinstance(hint, str)]
            assert strings == [], (name, struct.__name__, strings)


def test_work_checkpoint_loads_only_what_its_document_needs_in_a_real_process(template: Path) -> None:
    """`work checkpoint` of a document with no validation ledger: no orjson without a member config, not the plain
    `log` path. (It observes the worktree once, for the runtime files' freshness, after the events are written.)"""
    from tests.workstream_docs import tracked

    (template / "doc.json").write_text(json.dumps(tracked()))
    modules = imported_by(["work", "checkpoint", "--file", "doc.json"], template)
    assert {"msgspec", "continuity.workstreams.decide"} <= modules
    assert modules & {"orjson", "dataclasses", "inspect", "continuity.cli.plain_log"} == set()
    assert any(json.loads(path.read_bytes())["kind"] == "context.checkpointed" for path in all_event_files(template))


def test_msgspec_without_typing_extensions_decodes_as_with_it() -> None:
    """Loaded the way events/loading.py loads it, msgspec still checks every constraint, and anyone
    else can import typing_extensions afterwards."""
    code = (
        "import sys, events, msgspec\n"
        "assert 'typing_extensions' not in sys.modules\n"
        "import msgspec._utils as helpers\n"
        "assert helpers._get_type_hints.__module__ == 'typing'\n"
        "from typing import Annotated\n"
        "class T(msgspec.Struct, kw_only=True):\n"
        "    n: Annotated[int, msgspec.Meta(ge=0)]\n"
        "    name: Annotated[str, msgspec.Meta(pattern='^[a-z]+$')] | None = None\n"
        "assert msgspec.json.decode(b'{\"n\": 1, \"name\": \"ab\"}', type=T) == T(n=1, name='ab')\n"
        "for bad in (b'{\"n\": -1}', b'{\"n\": 1, \"name\": \"A\"}', b'{\"name\": \"ab\"}'):\n"
        "    try:\n"
        "        msgspec.json.decode(bad, type=T)\n"
        "    except msgspec.ValidationError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(bad)\n"
        "from events.codec import default_codec\n"
        "assert default_codec().schema()\n"
        "import typing_extensions\n"
        "print(typing_extensions.__name__)\n"
    )
    assert python_says(code) == "typing_extensions"


@pytest.mark.parametrize("first_use", ["schema", "inspect", "from-import", "import-as", "source"])
def test_msgspec_schema_modules_load_on_first_use_and_are_the_real_ones_after(first_use: str) -> None:
    """msgspec's package loads `msgspec.inspect` and `msgspec._json_schema` (and `textwrap`) only when something of
    them is used (events/loading.py); whatever the first use, it answers as the real module does, and from then on
    every way of reaching them gives the real module."""
    uses = {
        "schema": "assert msgspec.json.schema(int) == {'type': 'integer'}",
        "inspect": "assert msgspec.inspect.type_info(int) == msgspec.inspect.IntType()",
        "from-import": "from msgspec.inspect import IntType; assert IntType.__module__ == 'msgspec.inspect'",
        "import-as": "import msgspec._json_schema as js; assert js.schema(str) == {'type': 'string'}",
        "source": "import inspect; assert 'def type_info' in inspect.getsource(msgspec.inspect)",
    }
    code = (
        "import sys, events, msgspec\n"
        "assert 'textwrap' not in sys.modules and 'msgspec.inspect' in sys.modules\n"
        f"{uses[first_use]}\n"
        "held = sys.modules['msgspec._json_schema']\n"  # a stand-in, or the real module when the use loaded it
        "assert held.schema(bool) == {'type': 'boolean'}\n"
        "assert msgspec.inspect.IntType\n"
        "import msgspec.inspect, msgspec._json_schema as js\n"
        "real = sys.modules['msgspec.inspect']\n"
        "assert real.__file__.endswith('inspect.py') and msgspec.inspect is real\n"
        "assert js.mi.type_info is real.type_info and js.mi.IntType is real.IntType\n"
        "assert sys.modules['msgspec._json_schema'] is js and js.__file__.endswith('_json_schema.py')\n"
        "assert held.schema is js.schema\n"  # what holds a stand-in reads the real names
        "class T(msgspec.Struct):\n"
        "    n: int\n"
        "assert msgspec.json.schema_components([T])[1]['T']['required'] == ['n']\n"
        "print('textwrap' in sys.modules)\n"
    )
    assert python_says(code) == "True"


def test_threads_using_msgspecs_schema_modules_first_at_once_get_one_whole_module() -> None:
    """Thread B first uses `msgspec.inspect` and is held while the real module loads; meanwhile thread A asks
    `msgspec.json.schema` (which needs it) and uses the stand-in too. A waits for B's module instead of reading it
    half loaded (an AttributeError) or loading a second copy (whose classes fail every isinstance check)."""
    code = (
        "import sys, threading, time\n"
        "import events, msgspec\n"
        "stand_in, held, results = msgspec.inspect, threading.Event(), {}\n"
        "def tracer(frame, event, arg):\n"
        "    code = frame.f_code\n"
        "    if event == 'call' and code.co_name == '<module>' and code.co_filename.endswith('msgspec/inspect.py'):\n"
        "        def local(frame, event, arg):\n"
        "            if event == 'line' and not held.is_set():\n"
        "                held.set()\n"
        "                time.sleep(0.3)\n"
        "            return local\n"
        "        return local\n"
        "def first_use():\n"
        "    sys.settrace(tracer)\n"
        "    results['b'] = stand_in.type_info(int)\n"
        "    sys.settrace(None)\n"
        "b = threading.Thread(target=first_use)\n"
        "b.start()\n"
        "assert held.wait(20)\n"
        "results['schema'] = msgspec.json.schema(int)\n"
        "results['a'] = stand_in.type_info(int)\n"
        "b.join()\n"
        "real = sys.modules['msgspec.inspect']\n"
        "assert results['schema'] == {'type': 'integer'}, results\n"
        "assert isinstance(results['a'], real.IntType) and isinstance(results['b'], real.IntType), results\n"
        "assert msgspec.inspect is real and stand_in.IntType is real.IntType\n"
        "print('ok')\n"
    )
    assert python_says(code) == "ok"


def test_a_reloaded_or_listed_stand_in_answers_as_the_real_module() -> None:
    """`dir()` of a stand-in lists the real names; `importlib.reload` of one makes it the real module, which then
    says what it lacks as any module does (it asked itself again, without end); pickle finds msgspec.json.schema
    before and after its module loads."""
    code = (
        "import sys, importlib, pickle, events, msgspec\n"
        "assert 'type_info' in dir(msgspec.inspect)\n"
        "assert pickle.loads(pickle.dumps(msgspec.json.schema))(int) == {'type': 'integer'}\n"
        "assert pickle.loads(pickle.dumps(msgspec.json.schema)) is msgspec.json.schema\n"
        "assert msgspec.json.schema is sys.modules['msgspec._json_schema'].schema\n"
        "js = sys.modules['msgspec._json_schema']\n"
        "assert js.__file__.endswith('_json_schema.py') and 'Generate a JSON Schema' in js.schema.__doc__\n"
        "stand_in = sys.modules['msgspec.inspect']\n"
        "importlib.reload(stand_in)\n"
        "assert not hasattr(stand_in, 'no_such_name') and isinstance(stand_in.type_info(int), stand_in.IntType)\n"
        "assert 'type_info' in dir(stand_in)\n"
        "print('ok')\n"
    )
    assert python_says(code) == "ok"


def test_msgspec_loads_uuid_without_platform_and_platform_stays_whole() -> None:
    """On Linux `uuid` (imported by msgspec) runs with a `platform` of one function (events/loading.py): the real
    module's nine regular expressions are not compiled. It answers as the real one does, and once `uuid` has loaded
    it is gone: a later `import platform` (or a `mock.patch` of it) gets the real module."""
    code = (
        "import sys, events, msgspec, uuid\n"
        "assert 'platform' not in sys.modules, 'the real platform was loaded, or the stand-in left'\n"
        "assert uuid._LINUX and not uuid._AIX\n"
        "assert msgspec.json.decode(msgspec.json.encode(uuid.uuid4()), type=uuid.UUID).version == 4\n"
        "assert uuid.uuid1().version == 1\n"
        "import inspect\n"
        "assert 'def uuid4' in inspect.getsource(uuid)\n"
        "from unittest import mock\n"
        "import platform\n"
        "assert '__file__' in vars(platform)\n"
        "with mock.patch('platform.python_version', return_value='9.9.9'):\n"
        "    import platform as again\n"
        "    assert again.python_version() == '9.9.9'\n"
        "print(platform.system(), platform.machine() == platform.uname().machine)\n"
    )
    assert python_says(code).split() == ["Linux", "True"]
    # and without continuity's package first, uuid loads the real platform as usual
    assert python_says("import sys, uuid; print('__file__' in vars(sys.modules['platform']))") == "True"


def test_plain_and_typed_writers_interleave_into_one_chain(template: Path) -> None:
    """Processes appending through the plain path and through the typed path at once make one intact log."""
    code = ("import sys; from continuity.cli import main, plain_log\n"
            "if sys.argv[1] == 'typed': plain_log.run = lambda argv: None\n"
            "for i in range(15):\n    assert main(['log', sys.argv[1] + str(i)]) == 0\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    workers = [subprocess.Popen([sys.executable, "-c", code, kind], cwd=template, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
               for kind in ("plain", "plain", "typed", "plain", "typed")]
    for worker in workers:
        assert worker.wait(timeout=120) == 0, worker.stderr.read() if worker.stderr else ""
    assert len(all_event_files(template)) == 75
    result = subprocess.run([sys.executable, "-m", "continuity", "verify", "--json"], cwd=template, env=env,
                            capture_output=True, text=True, timeout=60)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"] is True
    assert (report["events"], report["roots"], report["forks"]) == (75, 1, [])  # one chain, nothing lost


def test_kill9_during_plain_appends_never_shows_a_partial_event(tmp_path: Path) -> None:
    """40 kill -9s of a child appending on the plain path: every visible event decodes, none returned is lost."""
    import random
    import select
    import signal
    import time

    from events import plain
    from events.durable import DurableFolder
    from events.filelog import FileEventLog

    def reader() -> FileEventLog:
        return FileEventLog(tmp_path / "events", tmp_path / "local", node="node0001", clock_us=lambda: 0)

    rng, returned, kills = random.Random(99), set(), 0
    while kills < 40:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child never returns
            os.close(read_fd)
            try:
                folder, count = DurableFolder(tmp_path / "events", tmp_path / "local"), 0
                while True:
                    tree = plain.prepare(plain.complete("work.logged", {"project": "demo", "message": f"{count}"}))
                    sealed = plain.append(folder, "node0001", lambda: time.time_ns() // 1000, [tree])
                    os.write(write_fd, sealed[0].name.encode() + b"\n")
                    count += 1
            finally:
                os._exit(1)
        os.close(write_fd)
        buffer, deadline = b"", time.monotonic() + rng.uniform(0.0005, 0.02)
        while time.monotonic() < deadline:
            if select.select([read_fd], [], [], 0.001)[0]:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                buffer += chunk
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        while chunk := os.read(read_fd, 65536):
            buffer += chunk
        os.close(read_fd)
        kills += 1
        returned.update(line.decode() for line in buffer.split(b"\n")[:-1])
        assert returned <= {stored.name for stored in reader().read()}  # read() raises on a partial event
    assert returned, "the child never got to append; the loop tested nothing"
    report = reader().verify()
    assert report.ok and report.forks == [], report.problems[:3]


def test_the_plain_parser_knows_each_log_flag_as_argparse_does() -> None:
    """Every flag the plain parser reads has argparse's destination and kind; the rest are left to argparse."""
    import argparse

    from continuity.cli.common import build_parser

    for command in ("log", "checkpoint"):
        parser = build_parser([command])
        sub = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
        actions = {flag: action for action in sub.choices[command]._actions for flag in action.option_strings}
        for flag, dest in plain_log._SWITCHES.items():
            assert isinstance(actions[flag], argparse._StoreTrueAction) and actions[flag].dest == dest, flag
        for flag, dest in plain_log._SINGLE.items():
            kind = "exit_code" if flag == "--exit-code" else "text"
            assert type(actions[flag]) is argparse._StoreAction and actions[flag].nargs is None, flag
            assert actions[flag].dest == dest and (kind == "exit_code") == (actions[flag].type is not None), flag
        for flag, dest in plain_log._REPEATED.items():
            assert isinstance(actions[flag], argparse._AppendAction) and actions[flag].dest == dest, flag
        known = set(plain_log._SWITCHES) | set(plain_log._SINGLE) | set(plain_log._REPEATED)
        # Left to argparse: help, JSON notes, logging, and the team form of checkpoint (`<team> --role R`).
        team_form = {"--role", "--ref"} if command == "checkpoint" else set()
        assert set(actions) - known == {"-h", "--help", "--note-json", "--log-level"} | team_form
        positionals = [action.dest for action in sub.choices[command]._actions if not action.option_strings]
        assert positionals == ["text"]


def test_session_start_and_status_do_not_load_the_sync_engine(template: Path) -> None:
    """The SessionStart brief and `status` ask sync health whether events wait; they load no git sync code."""
    payload = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1",
                          "cwd": str(template)}).encode()
    for argv, stdin in ((["hook", "claude-code"], payload), (["status"], b"")):
        modules = imported_by(argv, template, stdin)
        assert "continuity.sync.health" in modules  # the question is asked (so the check below can fail)
        assert {"continuity.sync.engine", "continuity.sync.clone", "continuity.sync.git"} & modules == set()


@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_log_names_a_file_of_the_project_from_its_root(runs: Runs, capsys: pytest.CaptureFixture[str],
                                                       typed: bool) -> None:
    """`log --file` took a path as typed: an absolute one, or one relative to a subfolder, named the same file as a
    hook's path from the root differently. Inside the project it is named from the root (only a plain path gains
    or loses the prefix); elsewhere, or not plain, as given."""
    runs.fresh()
    (runs.root / "src").mkdir()
    given = [str(runs.root / "src" / "a.py"), "b.py", "../c.py", "./d.py", "/etc/hosts", f"{runs.root}//e.py"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(runs.root / "src")
        if typed:
            typed_only(patch)
        assert main(["log", "edited", *[arg for path in given for arg in ("--file", path)]]) == 0
    capsys.readouterr()
    [event] = [json.loads(path.read_bytes()) for path in all_event_files(runs.root)]
    assert event["refs"]["files"] == ["src/a.py", "src/b.py", "../c.py", "./d.py", "/etc/hosts", f"{runs.root}//e.py"]


@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_log_in_a_linked_folder_of_the_project_names_a_file_through_the_link(runs: Runs, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str],
                                                                            typed: bool) -> None:
    """In `vendor/`, a folder of the project that is a link out of it, `log --root P --file x.rs` named the project's
    own `x.rs` (the process's folder is the link's target, outside the project). Where the shell says it is (`$PWD`,
    when that is this folder) it is `vendor/x.rs`, as a hook's path through the link is; a `$PWD` naming another
    folder is not believed."""
    runs.fresh()
    (tmp_path / "lib").mkdir()
    (runs.root / "vendor").symlink_to(tmp_path / "lib")
    recorded = []
    for pwd in (f"{runs.root}/vendor", str(runs.root)):
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(runs.root / "vendor")
            patch.setenv("PWD", pwd)
            if typed:
                typed_only(patch)
            assert main(["log", "edited", "--file", "x.rs", "--root", str(runs.root)]) == 0  # (found from the
            # process's folder, as git finds a repository, the store is not: outside the project)
        capsys.readouterr()
        recorded.append(sorted(json.loads(path.read_bytes())["refs"]["files"] for path in all_event_files(runs.root)))
    assert recorded[0] == [["vendor/x.rs"]]
    assert sorted(recorded[1]) == [["vendor/x.rs"], ["x.rs"]]  # $PWD at the root is not this folder: as given


@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_log_with_a_root_from_a_removed_folder_keeps_a_relative_file_as_given(runs: Runs, tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str],
                                                                             typed: bool) -> None:
    """`log --root P --file x.py` from a folder removed under the shell: the file is kept as given (there is no
    folder to name it from), not an internal error."""
    runs.fresh()
    gone = tmp_path / "gone"
    gone.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(gone)
        gone.rmdir()
        if typed:
            typed_only(patch)
        assert main(["log", "edited", "--file", "x.py", "--root", str(runs.root)]) == 0
    capsys.readouterr()
    [event] = [json.loads(path.read_bytes()) for path in all_event_files(runs.root)]
    assert event["refs"]["files"] == ["x.py"]
