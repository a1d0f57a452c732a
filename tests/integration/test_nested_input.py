"""JSON nested past the interpreter's recursion limit, wherever continuity reads JSON it did not just write.

msgspec and the standard library's json decode one level per C or Python call and raise
RecursionError (not a decode error) near a depth of 1,000. Such bytes are easy to make:
a hook payload, a checkpoint document, a settings file, a store file, and an event that a
teammate's clone syncs here, named by its own hash. Each must end like any other malformed
input: a read warns and goes on (reads fail open), a write or an import is refused with one
line and its documented exit code, a hook exits 0 and says why in `hooks.log`; never exit
70 ("internal error") or a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import all_event_files, cli_process
from tests.workstream_docs import tracked

STORE = Path(".agent") / "runtime-continuity"
#: Deeper than msgspec's and json's limits (about 1,000 levels) by far, and just past them.
DEPTHS = [1_200, 100_000]


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def run(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = cli_process(*args, cwd=root, env={"HOME": str(root.parent)}, stdin=stdin)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, (args, done.stderr)
    assert done.returncode != 70, (args, done.stderr)
    return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
    run(root, "checkpoint", "-m", "parser done", "--next", "wire the CLI")
    return root


def plant_event(root: Path, where: str, depth: int) -> str:
    """A well-named event file (its name carries its own hash) with a field nested `depth` deep."""
    first = all_event_files(root)[0]
    event = json.loads(first.read_bytes())
    stamp, node = "20200101_000000_000001", "deadbeef"
    event.update(event_id=f"RCE-{stamp}-{node}", created_at="2020-01-01T00:00:00.000001Z", prev=None)
    text = json.dumps(event, sort_keys=True, separators=(",", ":"))
    if where == "unknown field":
        text = text[:-1] + ',"zz":' + deep(depth) + "}"
    else:
        text = text.replace(json.dumps(event["message"]), deep(depth))
    raw = text.encode()
    name = f"{stamp}-{node}-{hashlib.sha256(raw).hexdigest()[:12]}.json"
    folder = root / STORE / "events" / "20200101"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(raw)
    return name


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("where", ["unknown field", "known field"])
def test_a_deep_event_file_is_named_by_verify_and_skipped_by_every_read(project: Path, where: str,
                                                                        depth: int) -> None:
    """verify reports the file (exit 1); status, events list, the timeline, recall and rebuild warn and
    answer; resume-bundle and SessionStart serve the brief; a later log still writes."""
    name = plant_event(project, where, depth)
    checked = run(project, "verify")
    assert checked.returncode == 1 and name in checked.stdout + checked.stderr
    assert "nested too deeply" in checked.stdout + checked.stderr
    # status folds the file first (the warning comes with the fold that skips it), rebuild folds it again
    for args in (("status",), ("events", "list"), ("timeline", "--json"), ("recall", "parser"), ("rebuild",)):
        done = run(project, *args)
        assert done.returncode == 0, (args, done.stderr)
        assert name in done.stderr and "nested too deeply" in done.stderr, (args, done.stderr)
    brief = run(project, "resume-bundle")
    assert "wire the CLI" in brief.stdout
    served = run(project, "hook", "claude-code",
                 stdin=json.dumps({"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup"}))
    assert served.returncode == 0 and "wire the CLI" in served.stdout
    assert run(project, "log", "-m", "still writing").returncode == 0


def test_a_deep_event_synced_from_a_teammate_is_carried_and_skipped(tmp_path: Path) -> None:
    """A clone that holds such a file syncs it; the other clone's sync exits 0 and its reads warn."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    clones = []
    for name in ("a", "b"):
        root = tmp_path / name
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "remote", "add", "origin", str(remote)], check=True)
        assert cli_process("init", "--project", "demo", cwd=root).returncode == 0
        run(root, "log", "-m", f"from {name}")
        clones.append(root)
    planted = plant_event(clones[0], "unknown field", 5_000)
    assert run(clones[0], "sync").returncode == 0
    synced = run(clones[1], "sync")
    assert synced.returncode == 0
    assert any(path.name == planted for path in all_event_files(clones[1]))
    status = run(clones[1], "status")  # the sync's own catch-up folded (and named) it first
    assert status.returncode == 0 and planted in synced.stderr + status.stderr
    assert run(clones[1], "verify").returncode == 1
    assert "from a" in run(clones[1], "events", "list").stdout


HARNESS_PAYLOADS = {
    "claude-code": {"session_id": "s-1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "ls"}, "tool_response": {"exitCode": 0}},
    "codex": {"session_id": "s-1", "hook_event_name": "PostToolUse", "tool_name": "shell",
              "tool_input": {"command": ["ls"]}},
    "gemini": {"session_id": "s-1", "hook_event_name": "AfterTool", "tool_name": "run_shell_command",
               "tool_input": {"command": "ls"}},
    "cursor": {"conversation_id": "s-1", "hook_event_name": "afterShellExecution", "command": "ls"},
}


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("harness", sorted(HARNESS_PAYLOADS))
@pytest.mark.parametrize("shape", ["the whole payload", "one field"])
def test_a_deep_hook_payload_exits_0_and_says_why(project: Path, harness: str, shape: str, depth: int) -> None:
    """Nothing recorded, exit 0, one line on stderr and in hooks.log naming the nesting."""
    before = all_event_files(project)
    if shape == "the whole payload":
        stdin = deep(depth)
    else:
        text = json.dumps(HARNESS_PAYLOADS[harness])
        stdin = text[:-1] + ', "extra": ' + deep(depth) + "}"
    done = run(project, "hook", harness, stdin=stdin)
    assert done.returncode == 0
    assert "nested too deeply" in done.stderr
    assert "nested too deeply" in (project / STORE / "local" / "hooks.log").read_text()
    assert all_event_files(project) == before


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_checkpoint_document_is_refused(project: Path, depth: int) -> None:
    """`work checkpoint`: exit 2, the document named, nothing written; a valid document after it is taken."""
    before = all_event_files(project)
    document = project / "doc.json"
    document.write_text('{"a": ' * depth + "1" + "}" * depth)
    done = run(project, "work", "checkpoint", "--file", str(document), "--keep")
    assert done.returncode == 2 and "nested too deeply" in done.stderr and str(document) in done.stderr
    assert all_event_files(project) == before
    document.write_text(json.dumps(tracked()))
    assert run(project, "work", "checkpoint", "--file", str(document)).returncode == 0


def test_a_deep_transfer_manifest_is_refused(project: Path) -> None:
    """`work import` of a manifest nested too deeply: refused with import's own code, nothing written."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    before = all_event_files(project)
    folder = project.parent / "transfer"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"cursor": {"a": ' + deep(5_000) + "}}")  # cursor: any JSON
    done = run(project, "work", "import", str(folder))
    assert done.returncode not in (0, 70)
    assert "invalid transfer manifest" in done.stderr and "nested too deeply" in done.stderr
    assert all_event_files(project) == before


def test_a_deep_settings_file_is_refused_by_install(project: Path) -> None:
    """install cannot merge into a settings file nested too deeply: exit 2, the file left as it was."""
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    text = '{"hooks": ' + deep(5_000) + "}"
    settings.write_text(text)
    done = run(project, "install", "claude-code")
    assert done.returncode == 2 and "nested too deeply" in done.stderr
    assert settings.read_text() == text


@pytest.mark.parametrize("relative", ["config.json", "local/sync-state.json"])
def test_a_deep_store_file_is_a_broken_file_not_a_crash(project: Path, relative: str) -> None:
    """config.json: writes refused with the broken-config code (9), reads warn; sync-state: reads answer."""
    path = project / STORE / relative
    path.write_text('{"project": ' + deep(5_000) + "}")
    read = run(project, "status")
    assert read.returncode == 0
    write = run(project, "log", "-m", "after")
    if relative == "config.json":
        assert write.returncode == 9 and "config.json" in write.stderr
        assert "config.json" in read.stderr
    else:
        assert write.returncode == 0
        assert run(project, "sync", "--status").returncode == 0


def test_a_deep_archive_record_is_unreadable_not_a_crash(project: Path) -> None:
    """`restore --load` of an archive file nested too deeply: exit 7 naming it; the seed-004 reads skip it."""
    archived = run(project, "archive", "--gate", "agent", "--reason", "done", "--json")
    assert archived.returncode == 0
    folder = project / STORE / "archives"
    old = "RC-20200101_000000_000000"  # not among the archives the fold keeps: read back from its file
    (folder / f"{old}.json").write_text('{"zz": ' + deep(5_000) + "}")
    done = run(project, "restore", "--load", old)
    assert done.returncode == 7 and f"archive {old} cannot be read" in done.stderr
    assert "nested too deeply" in done.stderr
    (folder / "latest.json").write_text('{"zz": ' + deep(5_000) + "}")
    compat = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", "resume-bundle",
                             "--project", "demo"], cwd=project, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "HOME": str(project.parent)})
    assert compat.returncode == 0 and "Traceback" not in compat.stderr, compat.stderr
    assert json.loads(compat.stdout)["ok"] is True


def nested_note(levels: int) -> str:
    """A --note object whose innermost value sits `levels` levels below the note itself."""
    return '{"a": ' + deep(levels) + "}"


@pytest.mark.parametrize("typed", [False, True], ids=["plain path", "typed path"])
def test_both_write_paths_take_a_note_up_to_63_levels_and_refuse_deeper(project: Path, typed: bool,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A note nested deeper than the plain path takes is refused on the typed path too (exit 2, nothing
    written), so no event is stored that `--json` output cannot print."""
    import continuity.cli as cli

    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(project.parent))
    if typed:
        monkeypatch.setattr(cli, "_log_fast_path", lambda args: None)
    before = all_event_files(project)
    assert cli.main(["log", "-m", "shallow enough", "--note", nested_note(63)]) == 0
    written = all_event_files(project)
    assert len(written) == len(before) + 1
    for levels in (64, 300, 900):
        assert cli.main(["log", "-m", "too deep", "--note", nested_note(levels)]) == 2
        assert "note nested more than 63 levels deep" in capsys.readouterr().err
    assert all_event_files(project) == written


def test_an_event_stored_with_a_deep_note_still_prints(project: Path) -> None:
    """An event with a note 300 levels deep (stored before notes were bounded, or carried by a sync):
    `events list --json` and `events show` print it (orjson alone refuses past 255 levels)."""
    first = all_event_files(project)[0]
    event = json.loads(first.read_bytes())
    stamp, node = "20200101_000000_000002", "deadbeef"
    event.update(event_id=f"RCE-{stamp}-{node}", created_at="2020-01-01T00:00:00.000002Z", prev=None,
                 note=json.loads(nested_note(300)))
    raw = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    folder = project / STORE / "events" / "20200101"
    folder.mkdir(exist_ok=True)
    (folder / f"{stamp}-{node}-{hashlib.sha256(raw).hexdigest()[:12]}.json").write_bytes(raw)
    assert run(project, "verify").returncode == 0
    listed = run(project, "events", "list", "--json")
    assert listed.returncode == 0
    notes = [e["note"] for e in json.loads(listed.stdout)["events"] if e["event_id"] == event["event_id"]]
    assert notes == [event["note"]]
    for args in (("events", "show", event["event_id"]), ("events", "show", event["event_id"], "--json")):
        shown = run(project, *args)
        assert shown.returncode == 0
        body = shown.stdout if "--json" in args else shown.stdout.split("\n", 1)[1]
        assert json.loads(body)["note"] == event["note"]


COMPAT_MODES = {
    "log": ("--gate", "agent"),
    "checkpoint": ("--gate", "agent"),
    "archive": ("--gate", "user"),
    "host-switch": ("--gate", "user", "--from-host", "a", "--to-host", "b"),
}
COMPAT_FAILURE = {"log": "write_failed", "checkpoint": "write_failed", "archive": "archive_failed",
                  "host-switch": "host_switch_archive_failed"}


def compat(root: Path, *args: str, said: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    env["HOME"] = str(root.parent)
    done = subprocess.run([sys.executable, "-m", "continuity.adapters.compat.runtime_continuity", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.stderr == said, (args, done.stderr)
    return done


@pytest.mark.parametrize("mode", sorted(COMPAT_MODES))
def test_runtime_continuity_takes_a_note_a_few_hundred_deep_and_refuses_one_too_deep_to_read(
        tmp_path: Path, mode: str) -> None:
    """`runtime-continuity --note-json` nested 350 deep: every mode takes it (its lists joined as JavaScript's
    String(array) joins them); log and checkpoint write their event without the note's copy (I12), deeper than an
    event holds (63 levels), with one warning line (they refused it, `write_failed`, a write the original makes).
    Deeper than the reader goes (1,200 and 30,000, with and without a number JSON.parse reads as
    Infinity): the mode's failure envelope, exit 2, nothing written; never a crash (exit 1)."""
    root = tmp_path / "project"
    root.mkdir()
    extra = COMPAT_MODES[mode]
    note = '{"done": [' + "[" * 349 + '1, null, ["x"]' + "]" * 349 + ', "y"], "next": "go on"}'
    copy = mode in ("log", "checkpoint")
    done = compat(root, mode, "--project", "demo", *extra, "--note-json", note,
                  said="runtime-continuity: warning: the event keeps no copy of --note-json: with it, invalid event: "
                       "note nested more than 63 levels deep\n" if copy else "")
    if copy:
        assert done.returncode == 0, done.stdout
        event = json.loads(done.stdout)["event"]
        assert event["summary"]["done"] == ["1,,x", "y"] and event.get("note") is None
    else:
        assert done.returncode == 0, done.stdout
        record = json.loads(next((root / STORE / "archives").glob("RC-*.json")).read_text())
        assert record["state"]["done"] == ["1,,x", "y"]  # [[...[1, null, ["x"]]...], "y"].map(String)
    written = sorted((root / STORE).rglob("*.json"))
    for depth in (1_200, 30_000):
        for tail in ("", ', "n": 1e400'):
            refused = compat(root, mode, "--project", "demo", *extra,
                             "--note-json", '{"done": ' + deep(depth) + tail + "}")
            assert refused.returncode == 2
            assert json.loads(refused.stdout) == {
                "ok": False, "error": COMPAT_FAILURE[mode],
                "message": "invalid event: --note-json is nested too deeply to read"}
    assert sorted((root / STORE).rglob("*.json")) == written
