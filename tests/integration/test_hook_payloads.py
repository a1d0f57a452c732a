"""Hook payloads as the harnesses really send them: failures, Codex patches, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from continuity.adapters.hooks import run_hook
from tests.helpers import all_event_files, cli_process

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"


def payload(name: str, cwd: Path) -> bytes:
    return (FIXTURES / f"{name}.json").read_text().replace("{cwd}", str(cwd)).encode()


def stored(project: Path) -> list[dict[str, Any]]:
    return [json.loads(path.read_bytes()) for path in all_event_files(project)]


def record(project: Path, harness: str, body: str, *, typed: bool) -> None:
    """One hook payload recorded by the typed handlers in process, or by the installed command (the plain path)."""
    if typed:
        assert run_hook(harness, body.encode(), root=str(project)).recorded
    else:
        done = cli_process("hook", harness, "--root", str(project), cwd=project, stdin=body,
                           env={"HOME": os.environ["HOME"]})
        assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_a_failed_bash_call_is_recorded_with_its_exit_code_and_error(project: Path) -> None:
    """PostToolUseFailure: the command, exit code 1 and the error's last line are recorded."""
    result = cli_process("hook", "claude-code", cwd=project, stdin=payload("claude_post_tool_use_failure_bash", project)
                         .decode(), env={"HOME": os.environ["HOME"]})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    [event] = stored(project)
    assert event["type"] == "command_failed" and event["refs"]["commands"][0]["exit_code"] == 1
    assert event["refs"]["commands"][0]["command"] == "pytest -q tests/test_refunds.py"
    assert "1 failed, 4 passed" in event["refs"]["commands"][0]["summary"]
    assert event["note"]["error"] == "1 failed, 4 passed in 0.31s"


@pytest.mark.parametrize(("tool", "tool_input"), [
    ("Edit", {"file_path": "src/a.py"}),
    ("Read", {"file_path": "src/a.py"}),
    ("WebFetch", {"url": "https://example.invalid/"}),
])
def test_other_failures_are_recorded_too(project: Path, tool: str, tool_input: dict[str, Any]) -> None:
    """A failed edit or any other tool: one event naming the tool and the error."""
    body = {"hook_event_name": "PostToolUseFailure", "session_id": "s1", "cwd": str(project), "tool_name": tool,
            "tool_input": tool_input, "error": "permission denied"}
    assert run_hook("claude-code", json.dumps(body).encode(), root=str(project)).recorded
    [event] = stored(project)
    assert event["type"] in ("edit_failed", "tool_failed") and tool in event["message"]
    assert event["note"]["error"] == "permission denied"


@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_a_file_of_the_project_is_named_from_its_root_whatever_the_harness_sent(project: Path, tmp_path: Path,
                                                                               typed: bool) -> None:
    """Harnesses name edited files by absolute paths, `log --file` from the project root: one file was two in a
    run's files (and its memory's count), and this machine's path went to every clone. Inside the project (by the
    path the store was found at, its real path, or the harness's cwd through a link to it) the root's part is taken
    off when the rest is a plain path below it, kept as sent; anything else stays as sent."""
    link = tmp_path / "linked"
    link.symlink_to(project)
    (project / "sub").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "sub").symlink_to(project / "sub")  # a link to a subfolder, from outside the project
    (tmp_path / "shared").mkdir()
    (project / "vendor").symlink_to(tmp_path / "shared")  # a folder of the project that leads out of it
    cases = [  # (cwd, path sent, path recorded)
        (project, str(project / "src" / "app.py"), "src/app.py"),
        (link, f"{link}/src/app.py", "src/app.py"),
        (link, f"{project}/src/app.py", "src/app.py"),
        (link / "sub", f"{link}/sub/b.py", "sub/b.py"),
        (f"{link}/sub/", f"{link}/sub/b.py", "sub/b.py"),
        (project, "/etc/hosts", "/etc/hosts"),
        (project, "src/rel.py", "src/rel.py"),
        (project / "sub", "b.py", "sub/b.py"),  # relative to the harness's folder below the root
        (project / "sub", "../c.py", "../c.py"),
        (project, f"{project}/", f"{project}/"),
        (project, str(project), str(project)),
        (project, f"{project}x/app.py", f"{project}x/app.py"),
        (project, f"{project}/https://hooks.slack.com/x", f"{project}/https://hooks.slack.com/x"),
        (project, f"{project}//src/a.py", f"{project}//src/a.py"),  # not /src/a.py: another file
        (project, f"{project}/../other/x.txt", f"{project}/../other/x.txt"),
        (project, f"{project}/./src/a.py", f"{project}/./src/a.py"),
        (tmp_path / "other" / "sub", f"{tmp_path}/other/x.txt", f"{tmp_path}/other/x.txt"),
        ("/a" * 100_000, f"{project}/src/c.py", "src/c.py"),  # a huge cwd is not walked
        # in a folder of the project that is a link out of it: as by the absolute path through the link, never
        # `src/lib.rs`, the project's own file
        (project / "vendor", "src/lib.rs", "vendor/src/lib.rs"),
        (project / "vendor", f"{project}/vendor/src/lib.rs", "vendor/src/lib.rs"),
        (f"{project}/vendor/deep/", "x.rs", "vendor/deep/x.rs"),
        (f"{project}//vendor", "x.rs", "vendor/x.rs"),
        (f"{project}/./vendor/.", "x.rs", "vendor/x.rs"),
        (f"{project}//sub", "b.py", "sub/b.py"),
        (project / "vendor", "../up.rs", "../up.rs"),
    ]
    for where, path, _ in cases:
        body = json.dumps({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(where),
                           "tool_name": "Edit", "tool_input": {"file_path": path}})
        record(project, "claude-code", body, typed=typed)
    files = [event["refs"]["files"] for event in stored(project)]
    assert files == [[recorded] for _, _, recorded in cases]
    assert stored(project)[0]["message"] == "Edit src/app.py"

def test_codex_apply_patch_in_command_records_the_files(project: Path) -> None:
    """Codex's shell call `apply_patch <patch>` is an edit of the files the patch names."""
    assert run_hook("codex", payload("codex_post_tool_use_apply_patch_command", project), root=str(project)).recorded
    [event] = stored(project)
    assert event["type"] == "edit" and event["refs"]["files"] == ["src/orders.rs", "src/legacy.rs"]


def test_codex_apply_patch_as_a_command_string(project: Path) -> None:
    """The same patch given as one command string is recorded the same way."""
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: docs/refunds.md\n+# Refunds\n*** End Patch\nEOF"
    body = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project), "tool_name": "shell",
            "tool_input": {"command": patch}, "tool_response": {"exit_code": 0}}
    assert run_hook("codex", json.dumps(body).encode(), root=str(project)).recorded
    assert stored(project)[0]["refs"]["files"] == ["docs/refunds.md"]


@pytest.mark.parametrize(("raw", "expected"), [
    (b"\xff\xfe{}", "not valid UTF-8"),
    (b"[1, 2]", "not an object"),
    (b"{", "not valid JSON"),
    (b"   ", "empty"),
    (b"{" + b" " * (4 * 1024 * 1024 + 1) + b"}", "over"),
])
def test_unusable_input_is_named_and_logged(project: Path, capsys: pytest.CaptureFixture[str], raw: bytes,
                                            expected: str) -> None:
    """Bad stdin: nothing recorded, one stderr line saying what was wrong, and a hooks.log entry."""
    assert run_hook("claude-code", raw, root=str(project)).recorded == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err
    log = project / ".agent" / "runtime-continuity" / "local" / "hooks.log"
    assert expected in log.read_text()
    assert all_event_files(project) == []


@pytest.mark.parametrize(("raw", "expected"), [
    # Node writes a lone surrogate as an escape: an emoji cut in half by a truncated tool output
    (b'{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", '
     b'"tool_input": {"command": "echo \\ud83d done"}, "tool_response": {"stdout": "\\ud83d"}}', "echo \ufffd done"),
    (b'{"hook_event_name": "PostToolUse", "session_id": "s1", "tool_name": "Bash", "tool_input": {"command": "big"}, '
     b'"tool_response": {"exit_code": ' + b"9" * 5000 + b', "size": 1e400, "ratio": NaN}}', "big"),
], ids=["lone-surrogate", "huge-numbers"])
def test_valid_json_msgspec_refuses_is_still_recorded(project: Path, capsys: pytest.CaptureFixture[str], raw: bytes,
                                                      expected: str) -> None:
    """A payload that is JSON (as Node writes it) but that msgspec refuses: recorded, the surrogate as U+FFFD and the
    numbers no event carries as null (it was "not valid JSON", nothing recorded). SessionStart still briefs."""
    result = run_hook("claude-code", raw, root=str(project))
    assert len(result.recorded) == 1, capsys.readouterr().err
    [path] = all_event_files(project)
    event = json.loads(path.read_bytes())
    assert event["refs"]["commands"][0]["command"] == expected
    session_start = b'{"hook_event_name": "SessionStart", "session_id": "s\\udc00", "source": "startup"}'
    start = run_hook("claude-code", session_start, root=str(project))
    assert json.loads(start.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert len(start.recorded) == 2


def test_a_message_cut_to_its_length_keeps_no_part_of_a_secret(project: Path) -> None:
    """A message longer than its limit (a patch naming many files) is cut before a token the cut would split, for
    every token rule and wherever the cut falls in the token: its first characters match no rule, so the guard
    could not find them, and the event kept them."""
    from continuity.adapters.hook_entries import MESSAGE_CHARS
    from tests.unit.test_guard_corpus import _TOKEN_CASES

    for case in _TOKEN_CASES:
        for inside in (1, 6, 12, len(case.secret) - 1):
            head = f"apply_patch {'a' * 1000}, "
            files = ["a" * 1000, "b" * (MESSAGE_CHARS - len(head) - 2 - inside), case.secret + ".txt"]
            patch = "*** Begin Patch\n" + "".join(f"*** Update File: {name}\n" for name in files) + "*** End Patch"
            body = {"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project),
                    "tool_name": "apply_patch", "tool_input": {"input": patch}}
            before = set(all_event_files(project))
            assert run_hook("codex", json.dumps(body).encode(), root=str(project)).recorded, case.id
            [path] = set(all_event_files(project)) - before
            message = json.loads(path.read_bytes())["message"]
            assert len(message) <= MESSAGE_CHARS and case.secret[:max(inside, 4)] not in message, (case.id, inside)


@pytest.mark.parametrize("parts", [[1] * 50_000, ["ab"] * 30_000, [{"k": "v" * 50}] * 5_000, ["x" * 9_000, "tail"]],
                         ids=["numbers", "short-strings", "objects", "one-long-part"])
def test_a_long_argv_list_is_read_only_as_far_as_it_is_kept(parts: list[object]) -> None:
    """A command given as a list of many parts: only as much is read as the stored command keeps (4,000 characters,
    and what a cut looks at past them), and the text stored is the same as the whole list's would be (a list of
    two million values took 15 s, past the harness's 10 s)."""
    from continuity.adapters.hook_entries import _command_text, _part, _shell_word, text_of

    whole = text_of(" ".join(_shell_word(_part(part)) for part in parts), 4000)
    assert _command_text({"command": parts}) == whole


@pytest.mark.parametrize(("argv", "recorded"), [
    (["bash", "-lc", "cd build && rm -rf *"], "cd build && rm -rf *"),
    (["/bin/zsh", "-c", "make test"], "make test"),
    (["git", "commit", "-m", "it's done"], "git commit -m 'it'\"'\"'s done'"),
    (["python3", "-c", "print(1)"], "python3 -c 'print(1)'"),
    (["ls", "-la", ""], "ls -la ''"),
    (["bash", "-lc"], "bash -lc"),
    (["bash", "-lc", " "], "bash -lc ' '"),  # an empty script is no command: the words as given
])
@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_a_codex_argv_command_is_recorded_as_a_shell_reads_it(project: Path, argv: list[str], recorded: str,
                                                              typed: bool) -> None:
    """Codex gives a shell call's command as an argv list: joined with spaces, `["bash", "-lc", "cd build && rm -rf
    *"]` read as `bash -lc cd build && rm -rf *`, another command. A shell's `-c` script is recorded as the script;
    any other list with its words quoted as a shell needs them."""
    body = json.dumps({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": str(project), "tool_name": "shell",
                       "tool_input": {"command": argv}, "tool_response": {"exit_code": 0}})
    record(project, "codex", body, typed=typed)
    [event] = stored(project)
    assert event["refs"]["commands"][0]["command"] == recorded
