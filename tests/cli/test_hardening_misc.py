"""Smaller hardening: empty logs, future audit points, a log head ahead of the clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main
from continuity.core.initialize import init_store
from events.base import Summary
from events.filelog import FileEventLog
from events.worklog import CheckpointRecorded, WorkLogged
from tests.helpers import all_event_files, plant_impersonation

Capture = pytest.CaptureFixture[str]


@pytest.mark.parametrize("args", [["log"], ["log", ""], ["log", "-m", "   "], ["log", "--type", "note"]])
def test_a_log_with_nothing_to_record_is_refused(project: Path, capsys: Capture, args: list[str]) -> None:
    """`log` with no content at all: exit 2, one line, nothing written."""
    assert main(args) == 2
    assert "nothing to record" in capsys.readouterr().err
    assert all_event_files(project) == []


def test_a_log_with_only_structured_content_is_kept(project: Path) -> None:
    """No message but a next step or a file: that is content."""
    assert main(["log", "--next", "ship"]) == 0 and main(["log", "--file", "a.py"]) == 0


@pytest.mark.parametrize("command", ["status", "restore", "resume-bundle"])
def test_an_as_of_in_the_future_is_an_error(project: Path, capsys: Capture, command: str) -> None:
    """--as-of after now: exit 2 and one line, not a view "generated in 2099"."""
    main(["log", "-m", "x"])
    capsys.readouterr()
    assert main([command, "--as-of", "2099-01-01T00:00:00Z"]) == 2
    err = capsys.readouterr().err
    assert "in the future" in err and err.count("\n") == 1


def test_a_log_head_ahead_of_the_clock_is_reported(project: Path, capsys: Capture) -> None:
    """An event stamped a day ahead (a skewed writer): status and verify say so; order is kept."""
    store, _ = init_store(project, project="demo", language=None)
    ahead = FileEventLog(store.events_dir, store.local_dir, node="skewed01",
                         clock_us=lambda: __import__("time").time_ns() // 1000 + 86_400_000_000)
    ahead.append(WorkLogged(project="demo", message="from the future"))
    ahead.close()
    main(["log", "-m", "now"])
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "ahead of this machine's clock" in capsys.readouterr().err
    assert main(["verify", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["clock_warning"] and "ahead" in data["clock_warning"]
    names = [path.name for path in all_event_files(project)]
    assert names == sorted(names)
    assert json.loads(all_event_files(project)[-1].read_bytes())["message"] == "now"


def test_an_as_of_the_log_holds_is_not_the_future_when_the_log_is_stamped_ahead(project: Path,
                                                                               capsys: Capture) -> None:
    """Events stamped an hour ahead (a fast writer's clock): an audit of a time between now and the newest event
    was refused as "in the future" although the log holds events of that time; past the newest, it still is.
    `replay --until` names its own flag."""
    import time

    from events import clock

    store, _ = init_store(project, project="demo", language=None)
    ahead = FileEventLog(store.events_dir, store.local_dir, node="skewed01",
                         clock_us=lambda: time.time_ns() // 1000 + 3_600_000_000)
    ahead.append(WorkLogged(project="demo", message="from the future", summary=Summary(next=("later",))))
    ahead.close()
    capsys.readouterr()
    half_hour = clock.iso(time.time_ns() // 1000 + 1_800_000_000)
    assert main(["status", "--as-of", half_hour]) == 0, capsys.readouterr().err
    assert main(["status", "--as-of", clock.iso(time.time_ns() // 1000 + 7_200_000_000)]) == 2
    assert "in the future" in capsys.readouterr().err
    assert main(["replay", "--until", "bogus", "--out", str(project.parent / "out")]) == 2
    assert capsys.readouterr().err.startswith("continuity: error: --until: 'bogus' is neither an event id")


@pytest.mark.parametrize("ahead", ["end of time", "a year"])
def test_an_event_stamped_far_ahead_never_stops_or_drags_the_writes(project: Path, capsys: Capture,
                                                                     ahead: str) -> None:
    """A synced event stamped 9999-12-31T23:59:59.999999Z (nothing can follow it) stopped every write of every
    clone for good (exit 5, or 3), while `verify` said the log was intact; one stamped a year ahead moved every
    later stamp a year ahead. Such an event is stamped early (its day folder starts more than a day past this
    clock): every write path appends, chained to the newest event that is not, stamped by this clock; the hooks
    record; the read models leave it out with one warning; verify stays ok and names its day folder."""
    import hashlib
    import itertools
    import time

    from continuity.adapters.hooks import run_hook
    from events import clock, names

    store, _ = init_store(project, project="demo", language=None)
    main(["log", "-m", "before"])
    [real_head] = all_event_files(project)
    at = clock.LAST_US if ahead == "end of time" else time.time_ns() // 1000 + 366 * 86_400_000_000
    forged = FileEventLog(store.events_dir, store.local_dir, node="forged01", clock_us=lambda: at)
    forged.append(WorkLogged(project="demo", message="from the future", summary=Summary(next=("forged next action",))))
    forged.close()
    capsys.readouterr()
    started = time.time_ns() // 1000
    for args, code in ((["log", "-m", "plain"], 0), (["log", "-m", "typed", "--note-json", "{}"], 0),
                       (["checkpoint", "-m", "c", "--next", "the real next action"], 0),
                       (["task", "create", "--title", "t"], 0),
                       (["snapshot", "core", "ash", "t1", "--objective", "o"], 0)):
        assert main(args) == code, (args, capsys.readouterr().err)
    payload = json.dumps({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "ls"}}).encode()
    assert len(run_hook("claude-code", payload, root=str(project)).recorded) == 1
    assert "Traceback" not in capsys.readouterr().err
    written = [path for path in all_event_files(project) if "forged01" not in path.name and path != real_head]
    assert len(written) == 6
    chain = [real_head, *written]
    for before, after in itertools.pairwise(chain):  # one chain, stamped by this clock
        event = json.loads(after.read_bytes())
        assert event["prev"] == hashlib.sha256(before.read_bytes()).hexdigest()
        assert started <= clock.parse_iso(event["created_at"]) <= time.time_ns() // 1000
    early = names.shard_of(next(path.name for path in all_event_files(project) if "forged01" in path.name))
    assert main(["resume-bundle"]) == 0
    captured = capsys.readouterr()
    assert "the real next action" in captured.out and "forged next action" not in captured.out
    assert f"from events/{early}/ on" in captured.err and "leave them out" in captured.err
    assert main(["verify", "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["ok"] and checked["clock_warning"] is None and checked["early_day_folders"] == [f"events/{early}/"]


def test_no_clock_warning_when_the_clock_agrees(project: Path, capsys: Capture) -> None:
    """A log written now: no clock warning in verify."""
    main(["log", "-m", "x"])
    capsys.readouterr()
    assert main(["verify", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["clock_warning"] is None


def test_the_brief_keeps_real_work_ahead_of_routine_events(project: Path, capsys: Capture) -> None:
    """Forty turn markers and briefs after an edit and a checkpoint: the brief still lists both."""
    from continuity.adapters.hooks import run_hook

    main(["log", "-m", "edited the refund handler", "--file", "src/refunds.py"])
    main(["checkpoint", "-m", "refunds done", "--next", "partial refunds"])
    for turn in range(20):
        for hook in ("UserPromptSubmit", "Stop"):
            body = {"hook_event_name": hook, "session_id": "s1", "cwd": str(project), "turn_id": f"t{turn}"}
            run_hook("claude-code", json.dumps(body).encode(), root=str(project))
    capsys.readouterr()
    assert main(["resume-bundle", "--format", "json"]) == 0
    events = json.loads(capsys.readouterr().out)["runtime_events"]
    messages = [event["message"] for event in events]
    assert "edited the refund handler" in messages and "refunds done" in messages
    assert len(events) == 20 and any(event["type"] == "turn_end" for event in events)
    times = [event["created_at"] for event in events]
    assert times == sorted(times, reverse=True)  # newest first, as before


@pytest.mark.parametrize(("command", "loop"), [("watch", "continuity.adapters.watch.follow"),
                                               ("mcp", "continuity.adapters.mcp.server.serve")])
def test_the_commands_that_keep_running_collect_garbage_as_usual(tmp_path: Path, command: str, loop: str) -> None:
    """A command that runs and exits raises the collector's thresholds; `watch` and `mcp` give them back
    before they start serving (a real process; only the serving loop is replaced, to report them)."""
    import subprocess
    import sys

    from continuity.core.guard import GC_THRESHOLDS, SERVING_GC_THRESHOLDS

    init_store(tmp_path, project="demo", language="en")
    module, _, name = loop.rpartition(".")
    code = (f"import gc, importlib, sys\nsetattr(importlib.import_module({module!r}), {name!r}, "
            "lambda *a, **k: print(gc.get_threshold()))\nfrom continuity.cli import main\n"
            f"from continuity.core.guard import exit_with\nsys.argv = ['continuity', {command!r}]\n"
            "print(gc.get_threshold())\nexit_with(main)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == str(SERVING_GC_THRESHOLDS) != str(GC_THRESHOLDS)


@pytest.mark.parametrize("argv", [
    ["log", "-m", "x", "--agent", "a1\n"],
    ["log", "-m", "x", "--type", "note\n"],
    ["checkpoint", "-m", "x", "--session", "s1\n"],
    ["snapshot", "core", "ash\n", "refunds", "--objective", "o"],
    ["role", "create", "core", "reviewer\n"],
    ["role", "create", "core\n", "reviewer"],
    ["handoff", "create", "--to", "agent:bob\n", "-m", "over to you"],
])
def test_a_name_or_id_ending_in_a_newline_is_refused(project: Path, capsys: Capture, argv: list[str]) -> None:
    """Names, ids, labels and titles are checked to their very end (a pattern's `$` also matches before a
    final newline): refused with a usage or validation exit code, nothing written, no file named with it."""
    before = all_event_files(project)
    code = main(argv)
    assert code in (2, 4), capsys.readouterr()
    assert all_event_files(project) == before
    assert not [path for path in project.rglob("*") if "\n" in path.name]


def test_an_event_stored_with_a_name_ending_in_a_newline_still_reads(project: Path, capsys: Capture) -> None:
    """Such a name could be written before the check covered the end: the event still reads (the newline
    taken off), in the projections and for `verify`."""
    from events import names
    from events.codec import default_codec
    from events.sealing import seal

    main(["log", "-m", "first"])
    [head] = all_event_files(project)
    import time

    from events.sealing import sha256_hex

    old = seal(WorkLogged(project="demo", agent_id="a1\n", message="from an older writer"),
               at_us=time.time_ns() // 1000 + 3_600_000_000, node="oldnode1", prev=sha256_hex(head.read_bytes()),
               codec=default_codec())
    folder = head.parent.parent / names.shard_of(old.name)
    folder.mkdir(exist_ok=True)
    (folder / old.name).write_bytes(old.raw)
    capsys.readouterr()
    assert main(["events", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [event.get("agent_id") for event in listed["events"]][-1] == "a1"
    assert main(["verify"]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0 and json.loads(capsys.readouterr().out)["events"] == 2


def test_json_output_in_a_folder_whose_name_is_not_utf8(tmp_path: Path, capsys: Capture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A project folder whose name holds bytes that are not UTF-8 (Python keeps them as lone surrogates): --json
    writes them as `\\uXXXX` escapes, and the path decodes back to the same bytes (it was exit 70)."""
    import os

    root = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9"))
    root.mkdir()
    monkeypatch.chdir(root)
    for args in (["init", "--project", "demo", "--json"], ["log", "-m", "x", "--json"], ["status", "--json"],
                 ["resume-bundle", "--json"], ["events", "list", "--json"], ["verify", "--json"]):
        capsys.readouterr()
        assert main(args) == 0, (args, capsys.readouterr().err)
        json.loads(capsys.readouterr().out)
    capsys.readouterr()
    assert main(["init", "--project", "demo", "--json"]) == 0
    assert os.fsencode(json.loads(capsys.readouterr().out)["store"]).startswith(os.fsencode(str(root)))


@pytest.mark.parametrize("args", [["status"], ["events", "list", "--json"], ["events", "list"], ["log", "-m", "kept"],
                                  ["log", "-m", "kept", "--json"], ["resume-bundle"]])
def test_a_full_stdout_is_one_line_and_the_write_failed_code(project: Path, args: list[str]) -> None:
    """stdout that takes nothing (/dev/full: ENOSPC): exit 5 and one stderr line saying the output was not written and
    what was stored stays (it was exit 70, and a traceback for `events list --json`)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "continuity", *args], cwd=project, env=env, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and "output not written (No space left on device)" in done.stderr
    assert "Traceback" not in done.stderr
    if args[0] == "log":
        assert len(all_event_files(project)) == 1


@pytest.mark.parametrize("args", [["resume-bundle", "--format", "json"], ["events", "list"],
                                  ["events", "list", "--json"], ["--json", "events", "tail", "-n", "40"]])
def test_output_cut_by_a_file_size_limit_is_the_write_failed_code(project: Path, args: list[str]) -> None:
    """stdout redirected to a file under `ulimit -f` (1 KiB): a write past the limit is short, and Python's buffered
    stream dropped the rest without a word (a JSON document cut at 1 KiB, exit 0). Exit 5 and the one line now;
    the same output unlimited is whole and parses."""
    import os
    import resource
    import subprocess
    import sys

    for index in range(40):  # output well past 1 KiB whatever the command
        assert main(["log", "-m", f"step {index} of a long enough session to fill a page of output"]) == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
    command = [sys.executable, "-m", "continuity", *args]
    with open(project / "out.txt", "wb") as out:
        done = subprocess.run(command, cwd=project, env=env, stdout=out, stderr=subprocess.PIPE, text=True,
                              timeout=60, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024)))
    errors = [line for line in done.stderr.splitlines() if "projections not saved" not in line]
    assert done.returncode == 5, done.stderr
    assert errors == ["continuity: error: output not written (File too large); what the command wrote to the store "
                      "stays written"]
    with open(project / "out.txt", "wb") as out:
        done = subprocess.run(command, cwd=project, env=env, stdout=out, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0 and (project / "out.txt").stat().st_size > 4096
    text = (project / "out.txt").read_text()
    if "tail" in args:  # one JSON document per line
        assert len([json.loads(line) for line in text.splitlines()]) == 40
    elif "json" in args or "--json" in args:
        json.loads(text)


def test_events_stamped_early_fold_once_this_clock_reaches_their_day(project: Path, capsys: Capture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A teammate's clock three days ahead: its checkpoint waits (the brief keeps this clone's next action) until
    this clock is within a day of its day folder; then the read models and the recall index take it."""
    import time

    from continuity.core import store as store_module

    store, _ = init_store(project, project="demo", language=None)
    main(["checkpoint", "-m", "here", "--next", "our next action"])
    real = time.time_ns() // 1000
    ahead = FileEventLog(store.events_dir, store.local_dir, node="teammate",
                         clock_us=lambda: real + 3 * 86_400_000_000)
    ahead.append(CheckpointRecorded(project="demo", message="there, with zebra", summary=Summary(next=("theirs",))))
    ahead.close()
    capsys.readouterr()
    assert main(["resume-bundle", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["next_action"] == "our next action" and "leave them out" in captured.err
    assert main(["recall", "zebra", "--json"]) == 0 and json.loads(capsys.readouterr().out)["hits"] == []
    monkeypatch.setattr(store_module, "now_us", lambda: real + 2 * 86_400_000_000 + 3_600_000_000)
    assert main(["resume-bundle", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["next_action"] == "theirs" and "leave them out" not in captured.err
    assert main(["recall", "zebra", "--json"]) == 0 and len(json.loads(capsys.readouterr().out)["hits"]) == 1


def test_a_clock_that_went_back_keeps_following_what_it_wrote_itself(project: Path, capsys: Capture,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's clock falls three days back (it lost its time): its own events are not stamped early. New
    events follow them (one chain, later stamps, as before), and the read models keep them; a teammate's event
    from the same future days would wait."""
    import hashlib
    import time

    from continuity.core import store as store_module

    main(["checkpoint", "-m", "today", "--next", "written today"])
    [today] = all_event_files(project)
    real = time.time_ns() // 1000
    monkeypatch.setattr(store_module, "now_us", lambda: real - 3 * 86_400_000_000)
    capsys.readouterr()
    assert main(["checkpoint", "-m", "after the clock fell back", "--next", "still ours"]) == 0
    later = [path for path in all_event_files(project) if path != today]
    assert len(later) == 1 and later[0].name > today.name
    assert json.loads(later[0].read_bytes())["prev"] == hashlib.sha256(today.read_bytes()).hexdigest()
    capsys.readouterr()
    assert main(["resume-bundle", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["next_action"] == "still ours" and "leave them out" not in captured.err
    assert main(["verify", "--json"]) == 0 and json.loads(capsys.readouterr().out)["early_day_folders"] == []


def test_an_event_forged_under_this_nodes_id_far_ahead_is_early_too(project: Path, capsys: Capture) -> None:
    """A node id is in every file name, so a peer can push an event under ours: stamped at the end of time, it was
    followed as this node's own (a clock gone back) and stopped every write here for good. Past 30 days ahead, an
    event of this node is early like any other."""
    from events import clock
    from events.durable import own_node

    store, _ = init_store(project, project="demo", language=None)
    assert main(["log", "-m", "before"]) == 0
    node = own_node(store.local_dir)
    assert node is not None
    forged = FileEventLog(store.events_dir, store.local_dir, node=node, clock_us=lambda: clock.LAST_US)
    forged.append(WorkLogged(project="demo", message="forged under our id"))
    forged.close()
    capsys.readouterr()
    assert main(["log", "-m", "after"]) == 0
    capsys.readouterr()
    assert main(["verify", "--json"]) == 1  # a second child of one parent from one node: verify names the forgery
    report = json.loads(capsys.readouterr().out)
    assert report["early_day_folders"] == ["events/99991231/"]
    assert report["first_problem"]["name"].startswith("99991231_") and "same node" in report["first_problem"]["reason"]


def test_a_node_file_made_on_another_host_is_not_this_machines(project: Path, capsys: Capture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A store copied from another machine: its node's events three days ahead are early for the reads, as they
    are for the writer, which makes a node of its own (before, reads took them as this machine's own and the
    first write, by the new node, did not follow them)."""
    import time

    from continuity.core import store as store_module

    real = time.time_ns() // 1000
    assert main(["checkpoint", "-m", "today", "--next", "today's next"]) == 0
    monkeypatch.setattr(store_module, "now_us", lambda: real + 3 * 86_400_000_000)
    assert main(["checkpoint", "-m", "ahead", "--next", "ahead's next"]) == 0
    monkeypatch.setattr(store_module, "now_us", lambda: real)
    node_file = project / ".agent" / "runtime-continuity" / "local" / "node"
    node_file.write_text(node_file.read_text().split(" ")[0] + " another-host\n")
    capsys.readouterr()
    assert main(["resume-bundle", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["next_action"] == "today's next" and "leave them out" in captured.err


def test_replay_until_a_future_time_is_refused_beside_an_early_event(project: Path, capsys: Capture) -> None:
    """An event stamped early made a time two days ahead look like one the log holds (exit 0, "replayed")."""
    import time

    from continuity.core.initialize import init_store as make
    from events import clock

    store, _ = make(project, project="demo", language=None)
    main(["log", "-m", "now"])
    real = time.time_ns() // 1000
    ahead = FileEventLog(store.events_dir, store.local_dir, node="teammate",
                         clock_us=lambda: real + 3 * 86_400_000_000)
    ahead.append(WorkLogged(project="demo", message="ahead"))
    ahead.close()
    capsys.readouterr()
    when = clock.iso(real + 2 * 86_400_000_000)
    assert main(["replay", "--until", when, "--out", str(project.parent / "r")]) == 2
    assert "is in the future" in capsys.readouterr().err


def test_every_read_of_the_newest_events_leaves_early_ones_out(project: Path, capsys: Capture) -> None:
    """With two events stamped three days ahead: `events tail -n 2` followed from them (nothing ever showed);
    seed 004's `runtime-continuity resume-bundle` listed them first and `archive` stored them in `latest_events`;
    `recall` left them out without a word. Now each leaves them out, and recall says so."""
    import time

    from continuity.adapters.compat.runtime_continuity import main as compat_main
    from continuity.cli.watch_cmd import start_after

    store, _ = init_store(project, project="demo", language=None)
    for text in ("one zebra", "two zebra"):
        assert main(["log", "-m", text]) == 0
    real = time.time_ns() // 1000
    ahead = FileEventLog(store.events_dir, store.local_dir, node="teammate",
                         clock_us=lambda: real + 3 * 86_400_000_000)
    for text in ("ahead zebra one", "ahead zebra two"):
        ahead.append(WorkLogged(project="demo", message=text))
    ahead.close()
    newest = [path.name for path in all_event_files(project) if "teammate" not in path.name]
    assert start_after(store.open_reader(), 1) == newest[0]  # follow after the first: the second shows
    capsys.readouterr()
    assert compat_main(["resume-bundle", "--project", "demo"]) == 0
    bundle = json.loads(capsys.readouterr().out)
    listed = json.dumps(bundle["runtime_events"])
    assert "teammate" not in listed and newest[-1] in listed
    assert main(["recall", "zebra", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [hit["snippet"] for hit in answer["hits"]] and all("ahead" not in hit["snippet"] for hit in answer["hits"])
    assert any("leave them out" in warning for warning in answer["warnings"])


@pytest.mark.parametrize("claim", ["another event's id", "another time"])
def test_an_event_whose_content_is_not_its_name_is_left_out_of_what_agents_read(project: Path, capsys: Capture,
                                                                                claim: str) -> None:
    """A peer pushed a well-named file (its hash matches) whose content claims a real event's id, or another time:
    the brief showed its message and recall gave it under that id; only `verify` said "renamed or forged". The read
    models and the recall index leave it out now, with one warning naming it."""


    assert main(["log", "-m", "genuine entry", "--next", "the real next step"]) == 0
    [genuine] = all_event_files(project)
    summary = json.loads(genuine.read_bytes())["summary"]
    name = plant_impersonation(genuine, claim, summary={**summary, "next": ["run the forged step"]}).name
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    captured = capsys.readouterr()
    assert "IMPERSONATED" not in captured.out and "the real next step" in captured.out
    assert name in captured.err and "renamed or forged" in captured.err
    assert main(["recall", "IMPERSONATED", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["hits"] == [] and any("renamed or forged" in warning for warning in answer["warnings"])
    assert main(["verify"]) == 1


@pytest.mark.parametrize("args", [["resume-bundle"], ["log", "-m", "x"], ["status"], ["init"], ["sync"],
                                  ["work", "import", "/tmp"], ["install", "claude-code"], ["hook", "claude-code"]])
def test_a_working_folder_removed_under_the_shell_is_a_missing_store_not_an_internal_error(
        tmp_path: Path, args: list[str]) -> None:
    """A shell left in a deleted worktree or temp folder: every command that looks for the store from the working
    folder said "internal error: FileNotFoundError" (exit 70); it is exit 3 with one line, and a hook exits 0."""
    import os
    import shlex
    import subprocess
    import sys

    command = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "continuity", *args])
    script = f"mkdir gone && cd gone && rmdir ../gone && exec {command}"
    payload = json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")},
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(["sh", "-c", script], cwd=tmp_path, env=env, input=payload, capture_output=True,
                            text=True, timeout=60)
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert result.returncode == (0 if args[0] == "hook" else 3), result.stderr
    assert "the working folder no longer exists" in result.stderr and result.stderr.count("\n") == 1
    assert "restart the server there" in result.stderr  # the same words reach an MCP client (it cannot cd)


@pytest.mark.parametrize("args", [["--root", "p2", "status"], ["--root", "p2", "log", "-m", "x"]])
def test_a_relative_root_from_a_working_folder_removed_is_a_missing_store_not_an_internal_error(
        tmp_path: Path, args: list[str]) -> None:
    """A relative `--root` (the API's `root`) is taken from the working folder: with that folder removed it ended
    in "internal error: FileNotFoundError" (exit 70; a raw FileNotFoundError from the API). Exit 3, one line."""
    import os
    import shlex
    import subprocess
    import sys

    command = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "continuity", *args])
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")},
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(["sh", "-c", f"mkdir gone && cd gone && rmdir ../gone && exec {command}"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 3 and result.stderr.count("\n") == 1, result.stderr
    assert "--root 'p2' is relative to the working folder, which no longer exists" in result.stderr
    code = ("import os; os.mkdir('gone'); os.chdir('gone'); os.rmdir('../gone')\n"
            "from continuity.api import Continuity\n"
            "from continuity.core.errors import StoreNotFound\n"
            "try:\n    Continuity('p2').status()\nexcept StoreNotFound as error:\n    print(error.exit_code)")
    api = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert api.stdout.strip() == "3" and api.stderr == "", api.stderr


def test_commands_with_root_from_a_removed_folder_answer(project: Path, tmp_path: Path) -> None:
    """With --root the store is found: `warm --auto` records the session with no `cwd` rather than failing, and
    `verify` and `rebuild` (which ended in an internal error: a relative path resolved against the working
    folder) answer as anywhere else."""
    import os
    import shlex
    import subprocess
    import sys

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")},
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for args in (["warm", "--auto", "--json"], ["verify"], ["rebuild"]):
        command = " ".join(shlex.quote(part) for part in [sys.executable, "-m", "continuity", "--root", str(project),
                                                          *args])
        result = subprocess.run(["sh", "-c", f"mkdir gone && cd gone && rmdir ../gone && exec {command}"],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (args, result.stderr)
    started = [json.loads(path.read_bytes()) for path in all_event_files(project)]
    assert [event["kind"] for event in started] == ["session.started"] and started[0]["cwd"] is None


def test_archive_under_a_home_that_does_not_exist_makes_no_home_and_says_the_markdown_is_not_written(
        project: Path, tmp_path: Path) -> None:
    """HOME=/nonexistent (a container, a service account): the Markdown copy made the whole home folder to put
    ~/.agent/contexts in it, and the text named a file that may not be there. The archive's JSON is written;
    the Markdown is not, and both the warning and the text say so."""
    from tests.helpers import cli_process

    home = tmp_path / "nohome" / "x"
    result = cli_process("archive", "--gate", "agent", "--reason", "r", cwd=project, env={"HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "nohome").exists()
    assert f"the home folder {home} does not exist" in result.stderr
    assert "markdown: not written (it would be " in result.stdout
    assert len(list((project / ".agent" / "runtime-continuity" / "archives").glob("RC-*.json"))) == 1
    shown = cli_process("archive", "--gate", "agent", "--reason", "r", cwd=project, env={"HOME": str(tmp_path)})
    assert shown.returncode == 0 and "markdown: " + str(tmp_path / ".agent" / "contexts") in shown.stdout


@pytest.mark.parametrize("unsafe", ["events-link", "models-file"])
def test_an_as_of_point_on_an_unsafe_store_fails_open(project: Path, capsys: Capture, unsafe: str) -> None:
    """`status --as-of RCE-x` on a store a read refuses (events/ a link, local/models a file) ended in "internal
    error: Invalid isoformat string": the point was parsed as a time with no log to find it in. Reads fail open."""
    import shutil

    assert main(["log", "-m", "a"]) == 0
    store = project / ".agent" / "runtime-continuity"
    if unsafe == "events-link":
        (store / "events").rename(store / "elsewhere")
        (store / "events").symlink_to("elsewhere")
    else:
        shutil.rmtree(store / "local" / "models", ignore_errors=True)
        (store / "local" / "models").write_text("")
    capsys.readouterr()
    if unsafe == "events-link":  # no log to find the point in: the empty log's answer
        assert main(["status", "--as-of", "RCE-x"]) == 0
        assert "nothing read" in capsys.readouterr().err
    else:  # only local/ is refused: the log is read (in memory), and it holds no such event
        assert main(["status", "--as-of", "RCE-x"]) == 7
        assert "no event 'RCE-x'" in capsys.readouterr().err


READS_WITH_A_PROJECT = [["recall", "push"], ["timeline"], ["task", "list"], ["memory", "list"], ["status"],
                        ["resume-bundle"], ["restore"], ["work", "status"]]


@pytest.mark.parametrize("name", ["../..", "x\ny", "..", "a/b", "a\\b", "x[1]", ".", "x\x7f", "x" * 129])
@pytest.mark.parametrize("argv", READS_WITH_A_PROJECT, ids=lambda argv: " ".join(argv))
def test_a_project_no_event_can_name_is_refused_by_every_read(
        project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], name: str) -> None:
    """`--project` that is no project name: exit 2 with one line, as `status` always said; never an empty answer
    ("no tasks", an empty timeline page) that reads as "nothing was recorded"."""
    capsys.readouterr()
    assert main([*argv, "--project", name]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "invalid project name" in captured.err and captured.err.count("\n") == 1
    assert not (project / ".agent/runtime-continuity/local/timeline.html").exists()


@pytest.mark.parametrize("name", ["web app", "我的 项目", "it's", "-x", "a$(touch pwned)"])
def test_every_read_answers_for_a_project_runtime_continuity_wrote(
        project: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """runtime-continuity names a project any folder name (contract I4: `web app`); every continuity read refused
    it as "invalid project name" while the brief's own warning pointed at --project to name it. Reads answer for it
    (a served brief recorded under it, as MCP records it), the brief's command runs as printed in a real shell, and
    continuity's own writes still take only its own names. (`--project=-x`: argparse takes `--project -x` for a
    missing value and an option, as it takes any value that starts with `-`.)"""
    import subprocess
    import sys

    from continuity.adapters.compat.runtime_continuity import main as runtime_continuity

    assert runtime_continuity(["log", "--project", name, "--gate", "agent", "--message", "pushed the parser"]) == 0
    capsys.readouterr()
    for argv in ([*argv, f"--project={name}"] for argv in READS_WITH_A_PROJECT):
        assert main(argv) == 0, (argv, capsys.readouterr().err)
        captured = capsys.readouterr()
        assert "invalid project name" not in captured.err, argv
    assert main(["recall", "parser", f"--project={name}", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["project"] == name and [hit["snippet"] for hit in found["hits"]] == ["pushed the [parser]"]
    assert main(["resume-bundle", f"--project={name}", "--record", "--format", "json"]) == 0
    command = json.loads(capsys.readouterr().out)["recommended_commands"][0]
    served = [json.loads(path.read_bytes()) for path in all_event_files(project)][-1]
    assert served["kind"] == "context.served" and served["project"] == name
    bin_dir = str(Path(sys.executable).parent)
    shell = subprocess.run(["sh", "-c", command], cwd=project, capture_output=True, text=True, timeout=60,
                           env={"PATH": bin_dir + ":/usr/bin:/bin", "HOME": str(project.parent / "home")})
    assert shell.returncode == 0 and shell.stdout.startswith(f"# Resume: {name}\n"), (command, shell.stderr)
    assert not (project / "pwned").exists()
    before = all_event_files(project)
    assert main(["log", "-m", "x", f"--project={name}"]) == 2
    assert "invalid project name" in capsys.readouterr().err and all_event_files(project) == before


def test_events_list_refuses_a_kind_no_event_has_and_takes_a_family(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--kind work.log` (a typo) is refused, exit 2, as recall refuses it; `--kind work` is the family."""
    assert main(["log", "-m", "edited the parser"]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--kind", "work.log"]) == 2
    assert "unknown kind 'work.log'" in capsys.readouterr().err
    for kind in ("work", "work.logged"):
        assert main(["events", "list", "--kind", kind]) == 0
        assert "edited the parser" in capsys.readouterr().out
    assert main(["events", "list", "--kind", "checkpoint"]) == 0
    assert "edited the parser" not in capsys.readouterr().out


def test_a_timeline_written_over_a_private_file_stays_private(project: Path, tmp_path: Path) -> None:
    """`timeline --out` over a file the user made 0600 keeps 0600 (the page holds every event); a new page is
    0644 under the usual umask."""
    import os
    import stat
    private = tmp_path / "private.html"
    private.write_text("mine")
    private.chmod(0o600)
    old = os.umask(0o022)
    try:
        assert main(["timeline", "--out", str(private)]) == 0
        assert main(["timeline", "--out", str(tmp_path / "new.html")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() != "mine"
    assert stat.S_IMODE((tmp_path / "new.html").stat().st_mode) == 0o644


@pytest.mark.parametrize("argv", [*READS_WITH_A_PROJECT, ["init"]], ids=lambda argv: " ".join(argv))
def test_a_project_named_like_a_secret_is_refused_and_never_echoed(
        project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """`init --project <token>` wrote the token to config.json (which is not git-ignored) and printed it, and every
    write after was refused for the project field; reads echoed it. Every command now refuses it (exit 4, one line,
    the rule named, the value never shown)."""
    token = "gh" + "p_" + "a1B2c3D4" * 4 + "e5F6"
    capsys.readouterr()
    before = (project / ".agent/runtime-continuity/config.json").read_bytes()
    assert main([*argv, "--project", token]) == 4
    captured = capsys.readouterr()
    assert captured.out == "" and "looks like a secret (rule github-token)" in captured.err
    assert token not in captured.err and captured.err.count("\n") == 1
    assert (project / ".agent/runtime-continuity/config.json").read_bytes() == before


def test_a_folder_named_like_a_secret_gets_no_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without `--project` a store is named after its folder: a folder named like a token made a store whose
    config.json held it (the folder made too, under --root). Refused before anything is made."""
    root = tmp_path / ("gh" + "p_" + "a1B2c3D4" * 4 + "e5F6")
    assert main(["--root", str(root), "init"]) == 4
    assert "looks like a secret" in capsys.readouterr().err and not root.exists()


def test_a_config_naming_a_project_now_refused_as_a_secret_can_be_repaired(project: Path) -> None:
    """An earlier version took a project name that now reads as a secret: every command refused the store, `init
    --repair` too. The config is reported as naming no valid project (reads answer, with a warning) and `init
    --repair` names it after its events."""
    config = project / ".agent/runtime-continuity/config.json"
    assert main(["log", "-m", "before"]) == 0
    data = json.loads(config.read_text())
    data["project"] = "fc-" + "0123456789abcdef" * 2
    config.write_text(json.dumps(data))
    assert main(["status"]) == 0  # a read answers for the project its events name, with a warning
    assert main(["init", "--repair"]) == 0
    assert json.loads(config.read_text())["project"] == "demo"


def test_warm_auto_prints_the_rhythm_when_the_session_start_cannot_be_recorded(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`warm --auto` is a session start: on a full disk (or with no store) it printed nothing and exited 5 (3),
    so the agent started without its working rhythm. It prints it now, says the start is not recorded, exit 0,
    as `resume-bundle --record` serves its brief; nothing is written."""
    import errno

    from continuity.cli.sessions import WARM_PROMPT
    from tests.injected import SyscallFaults, event_files, run

    before = event_files(project)
    code, out, err = run(["warm", "--auto"], SyscallFaults(errno.ENOSPC, at=0))
    assert code == 0 and out.startswith(WARM_PROMPT) and "recorded:" not in out, (code, err)
    assert err.startswith("continuity: warning: the session start is not recorded: ") and err.count("\n") == 1
    assert event_files(project) == before
    code, out, err = run(["--json", "warm", "--auto"], SyscallFaults(errno.ENOSPC, at=0))
    answer = json.loads(out)
    assert code == 0 and answer["auto_init"] is False and "event_id" not in answer
    assert answer["prompt_for_host_paste"] == WARM_PROMPT and len(answer["warnings"]) == 1
    elsewhere = tmp_path / "no-store"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run(["warm", "--auto"])
    assert code == 0 and out.startswith(WARM_PROMPT) and "no store" in err.lower(), err
    monkeypatch.chdir(project)
    code, out, _ = run(["warm", "--auto"])
    assert code == 0 and "recorded: " in out and len(event_files(project)) == len(before) + 1


@pytest.mark.parametrize("claim", ["another event's id", "another time"])
def test_the_event_listings_leave_out_an_event_whose_content_is_not_its_name(project: Path, capsys: Capture,
                                                                              claim: str) -> None:
    """`events list` printed two lines with one id (the genuine event and the impersonator), `--after` that id
    started at the impersonator, `events tail` printed its false time, all with no warning, while every other
    read left it out. The listings leave it out with the warning reads give; `events show` of its own id prints
    what it holds (evidence), with that warning."""
    assert main(["log", "-m", "genuine entry"]) == 0
    [genuine] = all_event_files(project)
    forged = plant_impersonation(genuine, claim)
    own_id = "RCE-" + forged.name[:22] + "-forger01"
    assert main(["log", "-m", "later entry"]) == 0
    capsys.readouterr()
    for args in (["events", "list"], ["events", "tail"], ["events", "list", "--last", "5"]):
        assert main(args) == 0, args
        out, err = capsys.readouterr()
        assert "IMPERSONATED" not in out and out.count("genuine entry") == 1 and "later entry" in out, (args, out)
        assert f"{forged.name}: renamed or forged" in err, (args, err)
    assert main(["--json", "events", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["message"] for e in listed["events"]] == ["genuine entry", "later entry"]
    assert any("renamed or forged" in warning for warning in listed["warnings"])
    genuine_id = listed["events"][0]["event_id"]
    assert main(["--json", "events", "list", "--after", genuine_id]) == 0
    assert [e["message"] for e in json.loads(capsys.readouterr().out)["events"]] == ["later entry"]
    assert main(["events", "show", own_id]) == 0
    out, err = capsys.readouterr()
    assert "IMPERSONATED" in out and f"{forged.name}: renamed or forged" in err


@pytest.mark.parametrize("planted", ["a symlink", "a file"])
def test_the_event_listings_say_what_stands_where_a_day_folder_was(project: Path, tmp_path: Path, capsys: Capture,
                                                                   planted: str) -> None:
    """A day folder that is a symlink (to a folder of real events) or a file: the brief and verify said so, `events
    list` and `events tail` listed the rest as if that day held nothing."""
    assert main(["log", "-m", "today"]) == 0
    day = project / ".agent" / "runtime-continuity" / "events" / "20261101"
    if planted == "a symlink":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        day.symlink_to(elsewhere)
        said = "events/20261101 is a symlink: its events are not read"
    else:
        day.write_text("not a folder")
        said = "events/20261101 is no folder: it holds no events"
    capsys.readouterr()
    for args in (["events", "list"], ["events", "tail"]):
        assert main(args) == 0
        out, err = capsys.readouterr()
        assert said in err and "today" in out, (args, err)
    assert main(["--json", "events", "list"]) == 0
    assert any(said in warning for warning in json.loads(capsys.readouterr().out)["warnings"])


def test_events_list_refuses_limit_with_last_and_names_an_event_it_cannot_read(project: Path,
                                                                                capsys: Capture) -> None:
    """`--limit 1 --last 3` printed three events (one option dropped without a word); `events show` of an event
    that cannot be read said "not JSON: ..." naming nothing, and `--after` it failed the same way, though a place
    in the log needs only its name."""
    for message in ("one", "two", "three"):
        assert main(["log", "-m", message]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--limit", "1", "--last", "3"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    files = all_event_files(project)
    files[1].write_bytes(b"garbage")
    assert main(["--json", "events", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["message"] for e in listed["events"]] == ["one", "three"]
    damaged = "RCE-" + "-".join(files[1].name.split("-")[:2])
    assert main(["--json", "events", "list", "--after", damaged]) == 0
    assert [e["message"] for e in json.loads(capsys.readouterr().out)["events"]] == ["three"]
    assert main(["events", "show", damaged]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"continuity: error: event {damaged} ({files[1].parent.name}/{files[1].name}) cannot be "
                          "read (not JSON: ") and err.count("\n") == 1


def test_a_contexts_folder_whose_name_is_not_utf8_is_no_internal_error(tmp_path: Path) -> None:
    """HOME (or CONTINUITY_CONTEXTS_DIR) named with bytes that are not UTF-8: `archive` recorded its event, then
    ended in exit 70 (state.json could not hold the path), and so did every later `status`, `resume-bundle` and
    `rebuild` (the catch-up that writes it was never saved). The path is written as its escape."""
    import os

    from tests.helpers import cli_process

    root = tmp_path / "proj"
    root.mkdir()
    home = os.fsdecode(bytes(tmp_path) + b"/h\xff")
    os.mkdir(home)
    assert cli_process("init", "--project", "ne", cwd=root, env={"HOME": home}).returncode == 0
    assert cli_process("log", "-m", "x", "--next", "n", cwd=root, env={"HOME": home}).returncode == 0
    for args in (["archive"], ["status"], ["resume-bundle"], ["rebuild"], ["host-switch", "--from-host", "a",
                                                                         "--to-host", "b"]):
        done = cli_process(*args, cwd=root, env={"HOME": home})
        assert done.returncode == 0 and "internal error" not in done.stderr, (args, done.stderr)
    state = json.loads((root / ".agent" / "runtime-continuity" / "state.json").read_bytes())
    assert os.fsencode(state["latest_markdown_archive"]) == bytes(tmp_path) + b"/h\xff/.agent/contexts/ne/latest.md"


@pytest.mark.parametrize("note", ['{"next": [null, false]}', '{"done": ["a", {"k": 1}]}', '{"goal": true}',
                                  '{"goal": 0}', '{"in_progress": {"k": 1}}', '{"blocked": ["x"]}',
                                  '{"blockers": [2.5]}'])
def test_archive_refuses_a_note_whose_values_are_no_text(project: Path, capsys: Capture, note: str) -> None:
    """`archive --note-json '{"next": [null, false]}'` stored `["None", "False"]` (Python's reprs; a dict's as
    `{'k': 1}`), and `goal: 0` silently became no goal: refused (exit 2, nothing written), as the message the code
    already had says."""
    assert main(["log", "-m", "work", "--next", "n"]) == 0
    before = all_event_files(project)
    capsys.readouterr()
    for command in ("archive", "host-switch"):
        args = [command, "--note-json", note] + (["--from-host", "a", "--to-host", "b"] if command != "archive" else [])
        assert main(args) == 2, args
        assert "--note-json: " in capsys.readouterr().err
    assert all_event_files(project) == before
    assert main(["archive", "--note-json", '{"next": ["ship", ""], "goal": "g", "in_progress": null}']) == 0


def test_init_repair_names_a_config_that_is_a_folder_and_the_way_out(project: Path, capsys: Capture) -> None:
    """config.json turned into a folder with something in it: every command said "run `continuity init --repair`",
    and repair said "store not initialized: Directory not empty (<the store>)", exit 5, naming the store. It names
    the folder and how to get out: move it away, then repair."""
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.unlink()
    (config / "sub").mkdir(parents=True)
    capsys.readouterr()
    assert main(["init", "--repair"]) == 5
    assert capsys.readouterr().err == (f"continuity: error: store not initialized: {config} is a folder: move it out "
                                       "of the store, then run `continuity init --repair`\n")
    (config / "sub").rmdir()
    config.rmdir()
    assert main(["init", "--repair"]) == 0 and config.is_file()


def test_a_project_folder_with_a_line_break_prints_one_line_per_path(tmp_path: Path) -> None:
    """`init` and `archive` printed a project root holding a line break as it is: one path on two lines, the
    second one able to pass for another line of output. Each path is one line, the break a visible stand-in."""
    from tests.helpers import cli_process

    root = tmp_path / "a\nnext action: forged"
    root.mkdir()
    home = {"HOME": str(tmp_path / "home")}
    made = cli_process("init", "--project", "nl", cwd=root, env=home)
    archived = cli_process("archive", cwd=root, env=home)
    assert made.returncode == 0 and archived.returncode == 0, (made.stderr, archived.stderr)
    assert made.stdout.count("\n") == 1 and "\u240a" in made.stdout
    assert [line.split(":")[0] for line in archived.stdout.splitlines()] == [
        archived.stdout.split(":")[0], "markdown", "next action"]


@pytest.mark.parametrize(("args", "code"), [
    (["log", "--message=--", "--note-json", "{}"], 0), (["status", "--as-of=--"], 2), (["restore", "--as-of=--"], 2),
    (["resume-bundle", "--max-chars=--"], 2), (["archive", "--note-json=--"], 2),
    (["log", "-m", "x", "--note-json=--"], 2), (["log", "-m", "x", "--host=--", "--note-json", "{}"], 2),
    (["archive", "--reason=--"], 0),
    (["restore", "--load=--"], 7), (["task", "create", "--title=--", "--priority=--"], 2),
])
def test_a_flag_given_as_double_dash_is_that_value(project: Path, capsys: pytest.CaptureFixture[str],
                                                   args: list[str], code: int) -> None:
    """`--opt=--`: argparse took the `--` for the end of the options and gave the command an empty list, past the
    flag's own checks: "internal error" (exit 70) in several commands, a flag dropped without a word in others
    (`--host=--`). The value is `--`, checked as any value: stored, or refused with the flag's own code."""
    assert main(["log", "-m", "first", "--next", "n"]) == 0
    capsys.readouterr()
    assert main(args) == code, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "internal error" not in err and err.count("\n") <= 1, err
    if code == 0:  # recorded with `--` as the text given
        assert main(["events", "list", "--last", "1", "--json"]) == 0
        [event] = json.loads(capsys.readouterr().out)["events"]
        assert event["reason" if "--reason=--" in args else "message"] == "--", event


@pytest.mark.parametrize("where", [".agent/runtime-continuity", ".agent/runtime-continuity/events", "x\u0000y"])
def test_a_contexts_dir_inside_the_store_or_holding_a_nul_is_never_written_through(
        project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """`contexts_dir` inside the store: archive put its `latest.md` symlink there and `verify` failed from then on.
    Holding a NUL: every archive, status, restore and rebuild ended in an internal error (exit 70) after the
    archive was recorded. The first is a warning (no Markdown written); the second is read as the default."""
    monkeypatch.delenv("CONTINUITY_CONTEXTS_DIR", raising=False)
    config = project / ".agent" / "runtime-continuity" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "contexts_dir": where}))
    assert main(["log", "-m", "a", "--next", "b"]) == 0
    for args in (["archive"], ["host-switch", "--from-host", "a", "--to-host", "b"], ["status"], ["restore"],
                 ["restore", "--list"], ["resume-bundle"], ["rebuild"]):
        capsys.readouterr()
        assert main(args) == 0, (args, capsys.readouterr().err)
        assert "internal error" not in capsys.readouterr().err
    assert main(["verify"]) == 0
    store = project / ".agent" / "runtime-continuity"
    assert not [path for path in store.rglob("*") if path.is_symlink() or path.name.startswith("ctx_")]
    if "\u0000" in where:  # the default, under HOME
        assert list((Path.home() / ".agent" / "contexts" / "demo").glob("ctx_*.md"))


@pytest.mark.parametrize("args", [["log", "--next", ""], ["log", "-m", "x", "--done", "  "],
                                  ["checkpoint", "-m", "c", "--blocker", ""], ["log", "-m", "x", "--in-progress", " "],
                                  ["checkpoint", "-m", "c", "--next", "real", "--next", "\t"]])
def test_an_item_that_says_nothing_is_refused_on_both_paths(project: Path, capsys: pytest.CaptureFixture[str],
                                                             args: list[str]) -> None:
    """`--next ""` was taken: the brief's next action became a blank line and the real one was gone (a checkpoint
    with `--blocker ""` cleared it too). Refused, exit 2, nothing written, on the plain path as on argparse's."""
    import subprocess
    import sys

    assert main(["checkpoint", "-m", "real work", "--next", "the real next step"]) == 0
    before = all_event_files(project)
    for extra in ([], ["--log-level", "error"]):  # the plain append path, then argparse's
        done = subprocess.run([sys.executable, "-m", "continuity", *args, *extra], cwd=project, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and "is empty: give what it says" in done.stderr, (extra, done.stderr)
    assert all_event_files(project) == before
    capsys.readouterr()
    assert main(["resume-bundle"]) == 0
    assert "## Next action\nthe real next step\n" in capsys.readouterr().out


def test_session_command_edges_answer_as_documented(project: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Four edges of the session commands: `restore --load ""` read as the latest archive; an archive id of
    100,000 digits gave an error line of 200 kB; `warm --auto --project ../x` exited 2 without the rhythm (a session
    start that cannot be recorded is a warning); `log --project ""` was taken on the plain path and refused on
    argparse's."""
    import subprocess
    import sys

    assert main(["log", "-m", "a", "--next", "b"]) == 0 and main(["archive"]) == 0
    capsys.readouterr()
    assert main(["restore", "--load", ""]) == 2
    assert "give an archive id" in capsys.readouterr().err
    assert main(["restore", "--load", "RC-" + "9" * 100_000]) == 7
    assert len(capsys.readouterr().err) < 1000
    assert main(["warm", "--auto", "--project", "../x"]) == 0
    out, err = capsys.readouterr()
    assert "Work in windows of about 5 hours" in out and "the session start is not recorded" in err
    for extra in ([], ["--log-level", "error"]):
        done = subprocess.run([sys.executable, "-m", "continuity", "log", "-m", "x", "--project", "", *extra],
                              cwd=project, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "invalid project name" in done.stderr, (extra, done.stderr)


def test_a_relative_contexts_dir_variable_is_taken_from_the_project_root(
        project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """CONTINUITY_CONTEXTS_DIR=relctx was taken from the working folder: an archive made in `sub/deeper` wrote
    there (inside the work tree), and `restore` from `sub` named a file that does not exist. From the project root
    now, as a relative `contexts_dir` in config.json is."""
    monkeypatch.setenv("CONTINUITY_CONTEXTS_DIR", "relctx")
    (project / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(project / "sub" / "deeper")
    assert main(["log", "-m", "a", "--next", "b"]) == 0 and main(["archive"]) == 0
    monkeypatch.chdir(project / "sub")
    capsys.readouterr()
    assert main(["restore", "--json"]) == 0
    markdown = Path(json.loads(capsys.readouterr().out)["markdown_path"])
    assert markdown.is_file() and markdown.parent.parent == project / "relctx"
    assert not (project / "sub" / "deeper" / "relctx").exists()


@pytest.mark.parametrize(("arguments", "named"), [
    ({"in_progress": ""}, "in_progress"), ({"blockers": [" "]}, "blockers"), ({"next": [""]}, "next"),
    ({"done": ["\t"]}, "done"),
])
def test_an_item_that_says_nothing_is_named_by_its_argument_over_mcp_and_the_api(
        project: Path, arguments: dict[str, object], named: str) -> None:
    """The MCP `log` tool (and the Python API, through the same registry) refuses an item that says nothing as the
    CLI does, naming the argument (`blockers`), never the CLI's flag (`--blocker`)."""
    from continuity.api import Continuity
    from continuity.core.errors import UsageError

    with pytest.raises(UsageError) as refused:
        Continuity(project).call("log", message="x", **arguments)
    assert str(refused.value).startswith(f"{named} is empty") and "--" not in str(refused.value)


def test_a_command_line_of_thousands_of_arguments_is_refused_at_once(project: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """100,000 arguments took argparse a minute (its time grows with the square of the count) before the one-line
    refusal of a list past its bound: past 16,384 arguments, twice what the longest command takes, it is a usage
    error at once; the longest a command takes (path lists of 1,024 items) still goes."""
    argv = ["log", "-m", "hi", *(["--done", "x"] * 50_000)]
    assert main(argv) == 2
    assert capsys.readouterr().err == "continuity: error: 100003 arguments: at most 16384 (no command takes half " \
                                      "as many)\n"
    paths = [arg for n in range(1024) for arg in ("--file", f"src/f{n}.py", "--artifact", f"out/a{n}",
                                                 "--handoff", f"h/{n}.md")]
    texts = [arg for n in range(256) for arg in ("--done", f"d{n}", "--next", f"n{n}", "--blocker", f"b{n}")]
    assert main(["checkpoint", "-m", "hi", *paths, *texts]) == 0, capsys.readouterr().err


def _every_option(parser: Any) -> set[str]:
    import argparse

    found: set[str] = set()
    for action in parser._actions:
        found.update(option for option in action.option_strings if option.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _every_option(sub)
    return found


@pytest.mark.parametrize("before", [[], ["--root", "."], ["--json"], ["--log-level", "error"]])
def test_a_separator_where_the_command_goes_ends_the_options(
        project: Path, capsys: pytest.CaptureFixture[str], before: list[str]) -> None:
    """`continuity -- status` was "invalid choice: '--' (choose from 'status')" (argparse took the `--` for the
    command): it runs the command, as POSIX reads a `--` before it; a `--` after the command stays the command's."""
    assert main(["log", "-m", "first"]) == 0
    capsys.readouterr()
    assert main([*before, "--", "status"]) == 0, capsys.readouterr().err
    assert "demo" in capsys.readouterr().out
    assert main([*before, "--", "log", "--", "--next"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["events", "list", "--last", "1", "--json"]) == 0
    assert [event["message"] for event in json.loads(capsys.readouterr().out)["events"]] == ["--next"]
    assert main([*before, "--"]) == 2 and "choose a command" in capsys.readouterr().err


def test_json_and_debug_abbreviated_are_taken_for_them_on_every_way_out(project: Path) -> None:
    """`--jso` printed JSON on success (argparse takes an abbreviation) but a bare line on a usage error, and
    `--deb` never showed a traceback: the flags are found as argparse finds them. The shortest prefixes taken are
    shared by no other option of any command (checked on the whole command tree)."""
    from continuity.cli.common import build_parser
    from tests.helpers import cli_process

    options = _every_option(build_parser())
    assert len(options) > 50
    assert [option for option in options if option.startswith("--j")] == ["--json"]
    assert [option for option in options if option.startswith("--deb")] == ["--debug"]
    done = cli_process("log", "x", "--jso", "--exit-code", "zz", cwd=project)
    assert done.returncode == 2 and json.loads(done.stdout)["ok"] is False, done
    done = cli_process("log", "--", "--json", cwd=project)  # a message, not the flag
    assert done.returncode == 0 and not done.stdout.startswith("{"), done


@pytest.mark.parametrize("after", ["", " ", "\t"])
def test_events_list_after_an_empty_id_is_refused_not_the_whole_log(project: Path, capsys: Capture,
                                                                    after: str) -> None:
    """`events list --after ""` listed every event (the empty string read as "not given"), where `--as-of ""` is a
    usage error: the same, exit 2, nothing listed. A non-empty id that names no event stays exit 7."""
    for message in ("one", "two"):
        assert main(["log", "-m", message]) == 0
    capsys.readouterr()
    assert main(["events", "list", "--after", after]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--after" in err and "no event id" in err
    assert main(["events", "list", "--after", "RCE-nothing"]) == 7
