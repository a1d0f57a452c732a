"""The checkpoint channel through the real CLI: the four config states, the note, tags, the sinks
(outbox, command: failing, hanging, missing), exactly-once delivery, and reads that never emit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.errors import EXIT_USAGE, EXIT_WRITE_FAILED
from tests.helpers import all_event_files

Capture = pytest.CaptureFixture[str]
STORE = Path(".agent", "runtime-continuity")
BUS = STORE / "team" / "core" / "_coord" / "bus-v3"
CONFIG = BUS / "checkpoints.json"
OUTBOX = BUS / "checkpoints.outbox.jsonl"
TYPE = "MomentAnnotation/a09350b2-e245-4348-ae63-bfb35c712c49"
FULL = {"agent": "tag-agent", "platform": "tag-platform", "harness": "tag-harness", "model": "tag-model"}


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def configure(raw: str | dict[str, Any], tags: dict[str, Any] | None = None) -> None:
    BUS.mkdir(parents=True, exist_ok=True)
    CONFIG.write_text(raw if isinstance(raw, str) else json.dumps(raw))
    if tags is not None:
        (BUS / "tags.json").write_text(json.dumps({"schema": "coord.bus-tags.v1", "base": "tag-base", "agents": tags}))


def ok_config(**extra: Any) -> dict[str, Any]:
    return {"schema": "coord.checkpoints-channel.v1", "data_type": TYPE, "api_version": "v1alpha1", **extra}


def outbox() -> list[dict[str, Any]]:
    if not OUTBOX.exists():
        return []
    return [json.loads(line) for line in OUTBOX.read_text().splitlines()]


def snapshot(capsys: Capture, task: str = "build", objective: str = "ship it", agent: str = "ash") -> tuple[
        int, str, str]:
    return run(capsys, "snapshot", "core", agent, task, "--objective", objective)


def held(capsys: Capture, *names: str, agent: str = "amy") -> None:
    for name in names:
        assert run(capsys, "role", "create", "core", name)[0] == 0
        assert run(capsys, "role", "claim", "core", name, "--agent", agent)[0] == 0


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(f"import sys\n{body}\n")
    return [sys.executable, str(path)]


def test_absent_config_is_silent(project: Path, capsys: Capture) -> None:
    """No checkpoints.json: the snapshot prints as always, stderr is empty, nothing is delivered anywhere."""
    code, out, err = snapshot(capsys)
    assert (code, err) == (0, "") and out.startswith("snapshot CHK-")
    assert not BUS.exists()
    code, out, err = run(capsys, "moments", "list", "core", "--json")
    data = json.loads(out)
    assert (code, err, data["channel"]["state"], data["channel"]["sinks"]) == (0, "", "absent", [])
    assert [item["task"] for item in data["moments"]] == ["build"]


def test_ok_config_emits_one_moment_per_snapshot(project: Path, capsys: Capture) -> None:
    """ok: each snapshot appends one line to the default outbox: data type, source, tags and the note in order."""
    configure(ok_config(), tags={"ash": FULL})
    code, out, err = snapshot(capsys, task="feat/Sub Task", objective="ship the layer")
    assert (code, err) == (0, "") and out.startswith("snapshot CHK-")
    (line,) = outbox()
    assert list(line) == ["moment_id", "team", "data_type", "api_version", "source", "recorded_at", "tags", "note"]
    assert (line["data_type"], line["api_version"], line["source"], line["team"]) == (TYPE, "v1alpha1", "ash", "core")
    assert line["tags"] == ["tag-agent", "tag-platform", "tag-harness", "tag-model", "tag-base"]
    path = "team/core/member/ash/continuity/feat-Sub-Task/latest.json"
    assert line["note"] == ('{"v":1,"kind":"checkpoint","agent":"ash","task":"feat-Sub-Task",'
                            f'"objective":"ship the layer","path":"{path}"}}')
    assert json.loads((STORE / path).read_text())["objective"] == "ship the layer"
    assert snapshot(capsys, task="two")[0] == 0
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["feat-Sub-Task", "two"]


def test_the_output_is_the_same_whatever_the_channel(project: Path, capsys: Capture) -> None:
    """A snapshot's stdout has the same shape with the channel absent, ok, invalid or failing."""
    shapes = []
    for raw in (None, ok_config(), "{not json", ok_config(command=["/nonexistent/sink"])):
        if raw is not None:
            configure(raw)
        code, out, _ = run(capsys, "snapshot", "core", "ash", "t", "--objective", "o", "--json")
        data = json.loads(out)
        shapes.append((code, sorted(data), data["ok"]))
    assert len(set(map(repr, shapes))) == 1 and shapes[0][0] == 0


@pytest.mark.parametrize("raw, why", [
    ("not json at all", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    ('{"data_type": "MomentAnnotation/events", "api_version": "v1alpha1"}', "schema is not"),
    ('{"schema": "coord.checkpoints-channel.v2", "data_type": "x"}', "schema is not"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": ""}', "data_type is missing or blank"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "   "}', "data_type is missing or blank"),
    ('{"schema": "coord.checkpoints-channel.v1"}', "data_type is missing or blank"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "api_version": 1}', "api_version"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "../../../escape.jsonl"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "/tmp/abs.jsonl"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "events/20260101/x.json"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "config.json"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "team/core/notes.md"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "outbox": "team//x.jsonl"}', "outbox"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "command": "echo hi"}', "command"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "command": []}', "command"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "command": ["cat\\ud800"]}', "command"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "command": ["cat", "\\udfff"]}', "command"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "timeout_seconds": 0}', "timeout_seconds"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "timeout_seconds": NaN}', "timeout_seconds"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x\\u0000y"}',
     "data_type holds a character that is not printable"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "Moment\\u2028Annotation"}',
     "data_type holds a character that is not printable"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "' + "x" * 1025 + '"}',
     "data_type is over 1024 characters"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "api_version": "v1\\u0007"}',
     "api_version holds a character that is not printable"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "api_version": "' + "v" * 1025 + '"}',
     "api_version is over 1024 characters"),
    ("\xff\xfe", "not JSON"),
    ("[" * 5000 + "]" * 5000, "not JSON"),
    ('{"schema": "coord.checkpoints-channel.v1", "data_type": "x", "command": ' + "[" * 5000 + "]" * 5000 + "}",
     "not JSON"),
])
def test_invalid_config_is_loud_every_time_and_never_rewritten(project: Path, capsys: Capture, raw: str,
                                                               why: str) -> None:
    """invalid: one INVALID line naming the file and the reason on every save, no emission, the bytes untouched."""
    BUS.mkdir(parents=True)
    CONFIG.write_bytes(raw.encode("latin-1") if raw == "\xff\xfe" else raw.encode())
    before = CONFIG.read_bytes()
    for task in ("a", "b"):
        code, out, err = snapshot(capsys, task=task)
        assert code == 0 and out.startswith("snapshot CHK-")
        assert err.count("\n") == 1 and "INVALID" in err and "checkpoints.json" in err and why in err
    assert CONFIG.read_bytes() == before
    assert sorted(os.listdir(BUS)) == ["checkpoints.json"]
    assert not (project.parent / "escape.jsonl").exists()
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert code == 0 and "internal error" not in err


@pytest.mark.parametrize("document", ["checkpoints.json", "tags.json"])
def test_a_document_nested_5000_deep_is_invalid_for_every_moments_command(project: Path, capsys: Capture,
                                                                          document: str) -> None:
    """A config or tag registry nested past the decoder's recursion limit is INVALID, never an internal error."""
    configure(ok_config())
    (BUS / document).write_text("[" * 5000 + "]" * 5000)
    code, out, err = snapshot(capsys)
    assert code == 0 and out.startswith("snapshot CHK-")
    assert err.count("\n") == 1 and "INVALID" in err and document in err
    for action in ("list", "deliver"):
        code, _, err = run(capsys, "moments", action, "core")
        assert code == 0 and "internal error" not in err


@pytest.mark.parametrize("kind", ["folder", "symlink", "dangling"])
def test_unreadable_config_says_so_and_is_read_again_next_time(project: Path, capsys: Capture, tmp_path: Path,
                                                               kind: str) -> None:
    """unreadable (a folder, a symlink): one line saying unreadable, no emission; once fixed, the next save emits."""
    BUS.mkdir(parents=True)
    if kind == "folder":
        CONFIG.mkdir()
    else:
        target = tmp_path / "elsewhere.json"
        if kind == "symlink":
            target.write_text(json.dumps(ok_config()))
        CONFIG.symlink_to(target)
    code, out, err = snapshot(capsys)
    assert code == 0 and out.startswith("snapshot CHK-")
    assert err.count("\n") == 1 and "unreadable" in err and "checkpoints.json" in err
    assert outbox() == []
    if kind == "folder":
        CONFIG.rmdir()
    else:
        CONFIG.unlink()
    configure(ok_config())
    code, out, err = snapshot(capsys, task="again")
    assert (code, err) == (0, "") and out.startswith("snapshot CHK-")
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["again"]


@pytest.mark.parametrize("objective, expected", [
    ("x" * 139 + "CUT" + "y" * 100, "x" * 139 + "C"),
    ("a" * 140, "a" * 140),
    ("a" * 141, "a" * 140),
    ("short", "short"),
    ("é" * 200, "é" * 140),
    ("🙂" * 150, "🙂" * 140),
])
def test_the_objective_is_a_hard_140_character_slice(project: Path, capsys: Capture, objective: str,
                                                     expected: str) -> None:
    """The note carries the objective's first 140 characters, no ellipsis; the snapshot keeps the whole text."""
    configure(ok_config())
    assert snapshot(capsys, objective=objective)[0] == 0
    note = json.loads(outbox()[0]["note"])
    assert note["objective"] == expected and len(note["objective"]) == min(140, len(objective))
    assert json.loads((STORE / note["path"]).read_text())["objective"] == objective


@pytest.mark.parametrize("registry, expected, warned", [
    (None, None, None),
    ({"ash": FULL}, ["tag-agent", "tag-platform", "tag-harness", "tag-model", "tag-base"], None),
    ({"ash": {"agent": "tag-agent", "model": "tag-model"}}, ["tag-agent", "tag-model", "tag-base"], None),
    ({"someone-else": FULL}, ["tag-base"], "no identity tag for 'ash'"),
    ({"ash": {"agent": 7, "platform": "", "harness": "bad\x00", "model": "tag-model"}}, ["tag-model", "tag-base"],
     None),
    ("broken", None, "tags.json is INVALID"),
    ("deep", None, "tags.json is INVALID"),
])
def test_tags_come_from_the_team_registry(project: Path, capsys: Capture, registry: Any, expected: Any,
                                          warned: str | None) -> None:
    """Tags: agent, platform, harness, model, then the base tag; a missing agent gets the base tag and one line."""
    configure(ok_config())
    if registry == "broken":
        (BUS / "tags.json").write_text("{nope")
    elif registry == "deep":
        (BUS / "tags.json").write_text('{"agents": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}")
    elif registry is not None:
        (BUS / "tags.json").write_text(json.dumps({"base": "tag-base", "agents": registry}))
    code, _, err = snapshot(capsys)
    assert code == 0 and outbox()[0]["tags"] == expected
    if warned is None:
        assert err == ""
    else:
        assert err.count("\n") == 1 and warned in err
        listed = run(capsys, "moments", "list", "core")  # a read says the moment is listed, not sent
        assert listed[0] == 0 and warned in listed[2] and "moment listed" in listed[2] and "sent" not in listed[2]


def test_park_emits_one_moment_per_parked_role(project: Path, capsys: Capture) -> None:
    """park: one moment per role it saves, tasks role-<slug>, paths naming the documents written."""
    configure(ok_config(), tags={"amy": FULL})
    held(capsys, "reviewer", "oncall")
    code, out, err = run(capsys, "park", "core", "--agent", "amy", "--objective", "eod")
    assert (code, err) == (0, "")
    notes = [json.loads(each["note"]) for each in outbox()]
    assert [note["task"] for note in notes] == ["role-oncall", "role-reviewer"]
    for note in notes:
        assert f"-> {note['path']}" in out and (STORE / note["path"]).is_file() and note["objective"] == "eod"


@pytest.mark.parametrize("sink", ["fails", "hangs", "missing", "outbox-blocked"])
def test_a_failing_sink_never_changes_park(project: Path, capsys: Capture, tmp_path: Path, sink: str) -> None:
    """A sink that fails, hangs (stopped after its timeout) or is missing: park's exit code and stdout stand."""
    held(capsys, "reviewer")
    code, expected_out, _ = run(capsys, "park", "core", "--agent", "amy")
    assert code == 0
    if sink == "outbox-blocked":
        BUS.mkdir(parents=True)
        OUTBOX.mkdir()  # a folder where the outbox file belongs
        configure(ok_config())
    else:
        command = {"fails": script(tmp_path, "fail.py", "sys.stdin.read(); sys.stderr.write('sink refused'); "
                                   "sys.exit(3)"),
                   "hangs": script(tmp_path, "hang.py", "import time; time.sleep(120)"),
                   "missing": [str(tmp_path / "no-such-sink")]}[sink]
        configure(ok_config(command=command, timeout_seconds=0.5))
    code, out, err = run(capsys, "park", "core", "--agent", "amy")
    assert code == 0 and out == expected_out
    assert err.count("\n") == 1 and "checkpoint moment: delivery to" in err and "FAILED" in err
    reason = {"fails": "exited 3: sink refused", "hangs": "did not finish within 0.5s",
              "missing": "cannot run", "outbox-blocked": "checkpoints.outbox.jsonl"}[sink]
    assert reason in err


@pytest.mark.parametrize("link", ["team/core/_coord/bus-v3", "team/core/_coord"])
def test_a_config_reached_through_a_linked_folder_is_unreadable(project: Path, capsys: Capture, tmp_path: Path,
                                                                link: str) -> None:
    """A folder on the way to the config replaced by a symlink out of the store: unreadable, its command never runs."""
    elsewhere = tmp_path / "elsewhere"
    ran = tmp_path / "ran"
    bus = elsewhere / "bus-v3" if link.endswith("_coord") else elsewhere
    bus.mkdir(parents=True)
    command = script(tmp_path, "sink.py", f"open({str(ran)!r}, 'a').write(sys.stdin.read())")
    (bus / "checkpoints.json").write_text(json.dumps(ok_config(command=command)))
    (STORE / link).parent.mkdir(parents=True, exist_ok=True)
    (STORE / link).symlink_to(elsewhere)
    code, out, err = snapshot(capsys)
    assert code == 0 and out.startswith("snapshot CHK-")
    assert err.count("\n") == 1 and "unreadable" in err and "is a symlink" in err
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert code == 0 and "unreadable" in err
    assert not ran.exists() and sorted(os.listdir(bus)) == ["checkpoints.json"]


def test_the_command_sink_gets_each_moment_on_stdin(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """A command sink runs once per moment with the moment's JSON line on stdin; outbox and command both get it."""
    received = tmp_path / "received.jsonl"
    command = script(tmp_path, "sink.py", f"open({str(received)!r}, 'a').write(sys.stdin.read())")
    configure(ok_config(command=command, outbox="team/core/moments.jsonl"))
    code, out, err = snapshot(capsys)
    assert (code, err) == (0, "") and out.startswith("snapshot CHK-")
    got = [json.loads(line) for line in received.read_text().splitlines()]
    kept = [json.loads(line) for line in (STORE / "team/core/moments.jsonl").read_text().splitlines()]
    assert got == kept and len(got) == 1 and json.loads(got[0]["note"])["task"] == "build"


def test_a_command_that_leaves_a_child_running_has_delivered(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """A command sink that exits 0 and leaves a child holding its stderr open has received the moment: no FAILED
    line after its timeout, and `moments deliver` does not send it again."""
    received = tmp_path / "received.jsonl"
    command = script(tmp_path, "sink.py", f"open({str(received)!r}, 'a').write(sys.stdin.read())\n"
                     "import subprocess; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(5)'])")
    configure(ok_config(command=command, timeout_seconds=2))
    code, out, err = snapshot(capsys)
    assert (code, err) == (0, "") and out.startswith("snapshot CHK-")
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert (code, err) == (0, "")
    assert len(received.read_text().splitlines()) == 1


def test_a_failing_command_shows_the_tail_of_what_it_wrote(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """A failing sink that writes megabytes to stderr: the FAILED line shows only its last words."""
    command = script(tmp_path, "loud.py", "sys.stderr.write('x' * 5_000_000 + 'last words'); sys.exit(4)")
    configure(ok_config(command=command))
    code, _, err = snapshot(capsys)
    assert code == 0 and err.count("\n") == 1 and "exited 4: " in err and err.rstrip().endswith(
        "last words); `continuity moments deliver core` retries")
    assert len(err) < 600


def test_a_folder_planted_as_the_delivery_lock_is_an_unsafe_store(project: Path, capsys: Capture) -> None:
    """`local/moments.lock` replaced by a folder: deliver exits 6 with one line (no internal error); a save still
    exits 0 and says the moment was not sent."""
    from continuity.core.errors import EXIT_UNSAFE_STORE

    configure(ok_config())
    (STORE / "local" / "moments.lock").unlink(missing_ok=True)
    (STORE / "local" / "moments.lock").mkdir()
    code, out, err = snapshot(capsys)
    assert code == 0 and out.startswith("snapshot CHK-") and err.count("\n") == 1 and "moments.lock" in err
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert code == EXIT_UNSAFE_STORE and err.count("\n") == 1 and "is a folder" in err and "internal" not in err


def test_deliver_twice_delivers_nothing_new(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """Moments saved before the channel existed are delivered by `moments deliver`, once; a second run sends none."""
    for task in ("a", "b", "c"):
        assert snapshot(capsys, task=task)[0] == 0
    configure(ok_config())
    code, out, err = run(capsys, "moments", "deliver", "core")
    assert (code, out, err) == (0, "delivered 3 moment(s): 3 to outbox\n", "")
    before = all_event_files(project)
    code, out, _ = run(capsys, "moments", "deliver", "core", "--json")
    assert (code, json.loads(out)["delivered"]) == (0, {})
    assert all_event_files(project) == before
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["a", "b", "c"]
    assert snapshot(capsys, task="d")[0] == 0
    assert run(capsys, "moments", "deliver", "core")[1] == "checkpoint channel for team/core: ok; nothing delivered\n"
    assert len(outbox()) == 4
    listed = json.loads(run(capsys, "moments", "list", "core", "--json")[1])
    assert all(item["pending"] == [] and list(item["delivered"]) == ["outbox"] for item in listed["moments"])


def test_a_failed_sink_stays_due_until_deliver_succeeds(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """What a failing sink did not receive stays pending; `deliver` exits 5 until it lands, then sends it once."""
    flag = tmp_path / "sink-ok"
    received = tmp_path / "received.jsonl"
    command = script(tmp_path, "sink.py", f"import os\nif not os.path.exists({str(flag)!r}): sys.exit(1)\n"
                     f"open({str(received)!r}, 'a').write(sys.stdin.read())")
    configure(ok_config(command=command))
    assert snapshot(capsys)[0] == 0 and snapshot(capsys, task="two")[0] == 0
    listed = json.loads(run(capsys, "moments", "list", "core", "--pending", "--json")[1])
    assert [item["pending"] for item in listed["moments"]] == [["command"], ["command"]]
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert code == EXIT_WRITE_FAILED and "delivery to command FAILED" in err
    flag.write_text("")
    assert run(capsys, "moments", "deliver", "core")[:2] == (0, "delivered 2 moment(s): 2 to command\n")
    assert run(capsys, "moments", "deliver", "core")[0] == 0
    assert [json.loads(json.loads(line)["note"])["task"] for line in received.read_text().splitlines()] == [
        "build", "two"]
    assert json.loads(run(capsys, "moments", "list", "core", "--pending", "--json")[1])["moments"] == []


def test_reads_never_emit(project: Path, capsys: Capture) -> None:
    """resume, checkpoint --role, briefing, moments list: pure reads; no moment, no event."""
    configure(ok_config())
    held(capsys, "reviewer")
    assert run(capsys, "park", "core", "--agent", "amy")[0] == 0
    assert snapshot(capsys)[0] == 0
    before, lines = all_event_files(project), len(outbox())
    for argv in (("resume", "core", "ash"), ("resume", "core", "amy", "--json"),
                 ("checkpoint", "core", "--role", "reviewer"), ("briefing", "core", "--agent", "amy"),
                 ("moments", "list", "core")):
        assert run(capsys, *argv)[0] == 0
    assert all_event_files(project) == before and len(outbox()) == lines == 2


@pytest.mark.parametrize("team", ["../x", "a/b", "a\x00b", "x" * 300])
def test_hostile_team_names_are_refused(project: Path, capsys: Capture, team: str) -> None:
    """moments list/deliver with a bad team name: exit 2, one line, nothing written."""
    before = all_event_files(project)
    for action in ("list", "deliver"):
        code, out, err = run(capsys, "moments", action, team)
        assert code == EXIT_USAGE and out == "" and err.count("\n") == 1
    assert all_event_files(project) == before


def test_moments_survive_a_rebuild_byte_for_byte(project: Path, capsys: Capture) -> None:
    """The moments model after `rebuild` lists the same moments and delivery marks as before."""
    configure(ok_config())
    assert snapshot(capsys)[0] == 0 and snapshot(capsys, task="two")[0] == 0
    before = run(capsys, "moments", "list", "core", "--json")[1]
    assert run(capsys, "rebuild")[0] == 0
    assert run(capsys, "moments", "list", "core", "--json")[1] == before


def test_as_of_shows_the_moments_of_then(project: Path, capsys: Capture) -> None:
    """`moments list --as-of` answers from the log as it stood: later moments and deliveries absent."""
    assert snapshot(capsys)[0] == 0
    first = json.loads(run(capsys, "moments", "list", "core", "--json")[1])["moments"][0]["moment_id"]
    configure(ok_config())
    assert run(capsys, "moments", "deliver", "core")[0] == 0
    assert snapshot(capsys, task="two")[0] == 0
    then = json.loads(run(capsys, "moments", "list", "core", "--json", "--as-of", first)[1])["moments"]
    assert [(item["task"], item["delivered"]) for item in then] == [("build", {})]


def test_a_shell_metacharacter_in_the_command_is_not_interpreted(project: Path, capsys: Capture,
                                                                 tmp_path: Path) -> None:
    """The command is an argument vector, never a shell line: `;` and `$(...)` reach the program as text."""
    received = tmp_path / "argv.json"
    command = [*script(tmp_path, "argv.py", f"import json\nsys.stdin.read()\nopen({str(received)!r}, 'w')"
                       ".write(json.dumps(sys.argv[1:]))"), "; touch pwned", "$(touch pwned2)"]
    configure(ok_config(command=command))
    assert snapshot(capsys)[0] == 0
    assert json.loads(received.read_text()) == ["; touch pwned", "$(touch pwned2)"]
    assert not (project / "pwned").exists() and not (project / "pwned2").exists()


def test_racing_saves_and_deliveries_send_each_moment_once(project: Path) -> None:
    """Snapshots and `moments deliver` in parallel processes: every moment reaches the outbox exactly once."""
    import subprocess

    configure(ok_config())
    env = {key: value for key, value in os.environ.items() if not key.startswith("CONTINUITY_")}
    workers = []
    for index in range(4):
        workers.append(subprocess.Popen([sys.executable, "-m", "continuity", "snapshot", "core", f"a{index}", "t",
                                         "--objective", f"o{index}"], cwd=project, env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        workers.append(subprocess.Popen([sys.executable, "-m", "continuity", "moments", "deliver", "core"],
                                        cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    for worker in workers:
        assert worker.wait(timeout=120) == 0, worker.stderr.read() if worker.stderr else ""
    listed = json.loads(subprocess.run([sys.executable, "-m", "continuity", "moments", "list", "core", "--json"],
                                       cwd=project, env=env, capture_output=True, text=True, timeout=60).stdout)
    ids = [line["moment_id"] for line in outbox()]
    assert sorted(ids) == sorted(item["moment_id"] for item in listed["moments"]) and len(set(ids)) == len(ids) == 4
    assert all(item["pending"] == [] for item in listed["moments"])


def test_a_failed_delivery_gives_the_json_failure_shape(project: Path, capsys: Capture, tmp_path: Path) -> None:
    """`moments deliver --json` exited 5 with no exit_code or message in its JSON."""
    configure(ok_config(command=script(tmp_path, "fail.py", "sys.stdin.read(); sys.exit(3)"), timeout_seconds=5))
    snapshot(capsys)
    code, out, _ = run(capsys, "moments", "deliver", "core", "--json")
    answer = json.loads(out)
    assert code == 5 and answer["ok"] is False and answer["exit_code"] == 5
    assert answer["message"].startswith("moments deliver: not delivered to command")


def delivered_unrecorded(capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> str:
    """Snapshots a and b, then a delivery whose record is refused: the state a kill between a delivery's outbox
    write and its record leaves. The delivery's stderr."""
    from events.filelog import FileEventLog

    for task in ("a", "b"):
        assert snapshot(capsys, task=task)[0] == 0
    configure(ok_config())
    real = FileEventLog.append_many

    def refused(self: Any, drafts: Any, **kwargs: Any) -> Any:
        if any(getattr(draft, "kind", "") == "moments.delivered" for draft in drafts):
            raise OSError(5, "Input/output error")
        return real(self, drafts, **kwargs)

    monkeypatch.setattr(FileEventLog, "append_many", refused)
    code, _, err = run(capsys, "moments", "deliver", "core")
    assert code == 0
    monkeypatch.setattr(FileEventLog, "append_many", real)
    return err


def test_a_delivery_cut_off_before_its_record_sends_nothing_twice(project: Path, capsys: Capture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A delivery killed after the outbox lines were made durable and before `moments.delivered` was recorded
    (here: the record refused, which leaves the same state) wrote the same moments again on the next delivery,
    silently. The outbox lines it finds at its end count as delivered now, and are recorded; a line a kill cut
    short is ended first, so the next line never runs into it."""
    assert "the delivery was not recorded" in delivered_unrecorded(capsys, monkeypatch)
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["a", "b"]
    assert snapshot(capsys, task="c")[0] == 0  # a save delivers its own moment only
    assert run(capsys, "moments", "deliver", "core")[1] == "delivered 2 moment(s): 2 to outbox\n"  # recorded now
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["a", "b", "c"]  # not written again
    assert run(capsys, "moments", "deliver", "core")[1] == "checkpoint channel for team/core: ok; nothing delivered\n"
    with OUTBOX.open("ab") as torn:  # a write a kill cut short
        torn.write(b'{"moment_id":"RCE-cut')
    assert snapshot(capsys, task="d")[0] == 0
    lines = OUTBOX.read_bytes().split(b"\n")
    assert lines[-2].startswith(b'{"moment_id"') and json.loads(lines[-2])["note"].count('"task":"d"') == 1
    assert lines[-3] == b'{"moment_id":"RCE-cut'


def test_a_cut_off_delivery_is_found_however_much_was_delivered_after_it(project: Path, capsys: Capture,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The moments of a delivery whose record was lost are found wherever they are in the outbox: saves after it
    (here 2 MB of other deliveries' lines) append their own moments, and a look at the outbox's last kilobytes
    missed them and wrote them again."""
    delivered_unrecorded(capsys, monkeypatch)
    with OUTBOX.open("ab") as other:
        for number in range(4000):
            other.write(json.dumps({"moment_id": f"RCE-other-{number}", "note": "x" * 400}).encode() + b"\n")
    assert run(capsys, "moments", "deliver", "core")[1] == "delivered 2 moment(s): 2 to outbox\n"
    tasks = [json.loads(each["note"])["task"] for each in outbox() if not each["moment_id"].startswith("RCE-other")]
    assert tasks == ["a", "b"]
    assert not list((project / STORE / "local").glob("moments-outbox-*.intent"))  # recorded: the note is gone


def test_a_note_outlives_nothing_it_was_for(project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delivery killed after its record and before it settled its note left the note for good: every later
    delivery read the outbox from that note's offset (1.3 s a save on a 100 MB outbox). A moment no longer due
    leaves the note at the next settled delivery; an offset past the outbox's end (a consumer emptied it) is read
    from the start; a folder planted at the note's path fails the delivery naming the note, not the outbox."""
    import continuity.moments.deliver as deliver

    configure(ok_config())
    real_settle = deliver.settle
    monkeypatch.setattr(deliver, "settle", lambda *args: None)  # the kill between the record and the settle
    assert snapshot(capsys, task="a")[0] == 0
    monkeypatch.setattr(deliver, "settle", real_settle)
    [note] = (project / STORE / "local").glob("moments-outbox-*.intent")
    assert snapshot(capsys, task="b")[0] == 0
    assert not note.exists()
    assert [json.loads(each["note"])["task"] for each in outbox()] == ["a", "b"]
    second = outbox()[1]
    note.write_text(json.dumps({"offset": 10**9, "moments": [second["moment_id"]]}))
    OUTBOX.write_text(json.dumps(second) + "\n")  # emptied by a consumer but for the one line
    real_pending = deliver.pending
    monkeypatch.setattr(deliver, "pending", lambda moments, sink, only: [  # as if b's record had been lost
        moment for moment in moments.moments.values() if moment.moment_id == second["moment_id"]])
    assert run(capsys, "moments", "deliver", "core")[:2] == (0, "delivered 1 moment(s): 1 to outbox\n")
    assert [each["moment_id"] for each in outbox()] == [second["moment_id"]]
    monkeypatch.setattr(deliver, "pending", real_pending)
    note.mkdir()
    code, _, err = snapshot(capsys, task="c")
    assert code == 0 and "the delivery's note" in err and note.name in err, err
