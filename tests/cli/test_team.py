"""`continuity snapshot` and `continuity resume` end to end: files, texts, exit codes, hostile names."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.cli import main
from events import clock
from tests.helpers import all_event_files, cli_process

Capture = pytest.CaptureFixture[str]


def run(capsys: Capture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def team_dir(project: Path) -> Path:
    return project / ".agent" / "runtime-continuity" / "team"


def test_snapshot_materializes_the_document_and_the_pointer(project: Path, capsys: Capture) -> None:
    """snapshot prints `snapshot CHK-...`; latest.json, LATEST.json follow; resume shows the sections in order."""
    code, out, _ = run(capsys, "snapshot", "core", "ash", "Build L6!", "--objective", "ship the layer",
                       "--next", "land the PR", "--decision", "structured json", "--context-percent", "40",
                       "--artifact", "https://example.invalid/pull/5")
    assert code == 0 and out.startswith("snapshot CHK-") and out.endswith("-Build-L6\n")
    folder = team_dir(project) / "core" / "member" / "ash" / "continuity"
    document = json.loads((folder / "Build-L6" / "latest.json").read_text())
    assert list(document) == ["schema", "checkpoint_id", "agent", "task", "objective", "decisions", "next_actions",
                              "open_questions", "artifacts", "context_used_percent", "transcript_path", "created_at"]
    assert document["schema"] == "coord.teams.continuity.v1" and document["open_questions"] == []
    assert document["checkpoint_id"] == out.split()[1]
    pointer = json.loads((folder / "LATEST.json").read_text())
    assert pointer == {"schema": "coord.continuity-latest.v1", "agent": "ash", "task": "Build-L6",
                       "checkpoint_id": document["checkpoint_id"], "created_at": document["created_at"],
                       "path": "team/core/member/ash/continuity/Build-L6/latest.json"}
    assert "  next actions:\n    - land the PR\n  recent decisions:\n    - structured json\n  artifacts:\n    - " \
           "https://example.invalid/pull/5\n  checkpoint age: " in run(capsys, "resume", "core", "ash")[1]


@pytest.mark.parametrize("bound", ["TEAMS_LIMIT", "AGENTS_LIMIT", "TASKS_LIMIT"])
def test_a_snapshot_the_model_let_go_of_is_still_resumed(project: Path, capsys: Capture,
                                                          monkeypatch: pytest.MonkeyPatch, bound: str) -> None:
    """The team model keeps 100 teams, 500 agents a team, 200 tasks an agent (3 here): past them `resume` said "No
    continuity snapshot found." of a snapshot the log holds (and its document showed). It looks in the log."""
    import projections.team
    from continuity.core.store import Store
    from continuity.readside.query import current_view

    monkeypatch.setattr(projections.team, bound, 3)
    assert run(capsys, "snapshot", "t0", "amy", "first", "--objective", "the first task")[0] == 0
    first_point = json.loads(run(capsys, "events", "list", "--json")[1])["events"][-1]["event_id"]
    run(capsys, "snapshot", "t0", "amy", "keep", "--objective", "t0 work")
    for number in range(1, 6):
        where = {"TEAMS_LIMIT": (f"s{number}", "amy", "k"), "AGENTS_LIMIT": ("t0", f"a{number}", "k"),
                 "TASKS_LIMIT": ("t0", "amy", f"task{number}")}[bound]
        run(capsys, "snapshot", *where, "--objective", "later")
    model = current_view(Store(project), ("team",)).models.project("demo").of("team")
    member = model.teams.get("t0", {}).get("amy")
    assert model.forgotten and (member is None or "first" not in member.tasks)  # let go of, as the bound says
    newest = "task5" if bound == "TASKS_LIMIT" else "keep"
    assert run(capsys, "resume", "t0", "amy")[1].startswith(f"Resume: {newest} (as of ")
    assert "objective: the first task" in run(capsys, "resume", "t0", "amy", "first")[1]
    answer = json.loads(run(capsys, "resume", "t0", "amy", "first", "--json")[1])
    assert answer["objective"] == "the first task" and answer["task"] == "first"
    code, out, _ = run(capsys, "resume", "t0", "amy", "never")
    assert code == 0 and out.startswith("No continuity snapshot found.")
    assert run(capsys, "resume", "t0", "amy", "--as-of", first_point)[1].startswith("Resume: first (as of ")
    assert run(capsys, "resume", "t0", "amy", "keep", "--as-of", first_point)[1].startswith(
        "No continuity snapshot found.")

def test_the_log_is_read_for_resume_as_the_model_read_it(project: Path, capsys: Capture,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback replays as the model folds: an event file renamed (not the event its name says) is left out,
    as the model left it; with `local/` a planted link, the log is still read (a warning, exit 0)."""
    import projections.team
    from tests.helpers import all_event_files

    monkeypatch.setattr(projections.team, "TEAMS_LIMIT", 2)
    run(capsys, "snapshot", "core", "ash", "task1", "--objective", "forged objective")
    [moved] = all_event_files(project)
    stem = moved.name
    moved.rename(moved.with_name(stem[:9] + f"{(int(stem[9:15]) + 1) % 1_000_000:06d}" + stem[15:]))
    for number in range(3):
        run(capsys, "snapshot", f"t{number}", "bo", "work", "--objective", "other")
    assert run(capsys, "rebuild")[0] == 0
    assert run(capsys, "resume", "core", "ash")[1].startswith("No continuity snapshot found.")
    run(capsys, "snapshot", "core", "ash", "task2", "--objective", "real")
    for number in range(3, 6):
        run(capsys, "snapshot", f"t{number}", "bo", "work", "--objective", "other")
    local = project / ".agent" / "runtime-continuity" / "local"
    shutil.move(str(local), str(project.parent / "elsewhere"))
    local.symlink_to(project.parent / "elsewhere")
    code, out, err = run(capsys, "resume", "core", "ash")
    assert code == 0 and out.startswith("Resume: task2 (as of "), err
    assert "symlink" in err

def test_resume_folds_to_the_newest_task(project: Path, capsys: Capture) -> None:
    """Bare resume takes the newest snapshot across tasks; naming a task narrows it."""
    run(capsys, "snapshot", "core", "ash", "first", "--objective", "one")
    run(capsys, "snapshot", "core", "ash", "second", "--objective", "two", "--open-question", "which way?")
    code, out, _ = run(capsys, "resume", "core", "ash")
    assert code == 0 and out.startswith("Resume: second (as of ")
    assert "  open questions:\n    - which way?\n" in out and "checkpoint age: " in out
    assert "objective: one" in run(capsys, "resume", "core", "ash", "first")[1]


def test_resume_finds_a_task_by_the_name_snapshot_was_given(project: Path, capsys: Capture) -> None:
    """resume <task> slugifies the task as snapshot did: the raw name and the saved name find the same snapshot."""
    run(capsys, "snapshot", "core", "ash", "Build L6!", "--objective", "ship the layer")
    run(capsys, "snapshot", "core", "ash", "a...b" + "c" * 130, "--objective", "long")
    assert run(capsys, "resume", "core", "ash", "Build L6!")[1].startswith("Resume: Build-L6 (as of ")
    assert run(capsys, "resume", "core", "ash", "Build-L6")[1].startswith("Resume: Build-L6 (as of ")
    saved = json.loads(run(capsys, "resume", "core", "ash", "a...b" + "c" * 130, "--json")[1])["task"]
    assert saved == "a.b" + "c" * 125
    assert json.loads(run(capsys, "resume", "core", "ash", saved, "--json")[1])["task"] == saved
    assert run(capsys, "resume", "core", "ash", "../..")[1].startswith("No continuity snapshot found.")


def test_resume_finds_a_task_saved_under_an_earlier_slug(project: Path, capsys: Capture) -> None:
    """A snapshot whose task an earlier slug saved (cut to 128 after trimming, so it ends in `-`) is found by the
    name resume printed for it."""
    from continuity.core.store import Store
    from events.team import SnapshotTaken

    saved = "a" * 127 + "-"
    Store(project).open_log().append_many(
        [SnapshotTaken(project="demo", team="core", agent="ash", task=saved, objective="old")])
    assert run(capsys, "resume", "core", "ash", saved)[1].startswith(f"Resume: {saved} (as of ")


@pytest.mark.parametrize("task", ["LATEST.json", "latest.json", "LATEST..json", " LATEST.json!"])
def test_a_task_named_like_the_pointer_is_refused(project: Path, capsys: Capture, task: str) -> None:
    """A task whose folder would be the agent's LATEST.json pointer: exit 2, nothing written (in-process and plain)."""
    run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    before = all_event_files(project)
    code, out, err = run(capsys, "snapshot", "core", "ash", task, "--objective", "o")
    assert (code, out) == (2, "") and "LATEST.json pointer" in err and err.count("\n") == 1
    done = cli_process("snapshot", "core", "ash", task, "--objective", "o", cwd=project)
    assert (done.returncode, done.stdout) == (2, "") and "LATEST.json pointer" in done.stderr
    assert all_event_files(project) == before
    pointer = team_dir(project) / "core" / "member" / "ash" / "continuity" / "LATEST.json"
    assert json.loads(pointer.read_text())["task"] == "t"


def test_a_synced_snapshot_of_the_pointer_task_leaves_the_pointer_whole(project: Path, capsys: Capture) -> None:
    """A teammate's event naming task LATEST.json (which the CLI refuses) writes no folder over the pointer."""
    from continuity.core.store import Store
    from events.team import SnapshotTaken

    Store(project).open_log().append_many(
        [SnapshotTaken(project="demo", team="core", agent="ash", task="LATEST.json", objective="planted")])
    run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    code, out, err = run(capsys, "resume", "core", "ash")
    assert code == 0 and out.startswith("Resume: t (as of ") and err == ""
    pointer = team_dir(project) / "core" / "member" / "ash" / "continuity" / "LATEST.json"
    assert pointer.is_file() and json.loads(pointer.read_text())["task"] == "t"
    assert run(capsys, "rebuild")[2] == ""


def test_resume_without_a_snapshot(project: Path, capsys: Capture) -> None:
    """No snapshot: the fixed text, exit 0; the exact JSON object; with --max-age exit 2 and the code."""
    assert run(capsys, "resume", "core", "nobody") == (0, "No continuity snapshot found.\n  checkpoint age: unknown\n",
                                                       "")
    code, out, _ = run(capsys, "resume", "core", "nobody", "--json")
    assert code == 0 and json.loads(out) == {"snapshot": None, "checkpoint_age_seconds": None, "error_code": None}
    code, out, err = run(capsys, "resume", "core", "nobody", "--json", "--max-age", "1h")
    assert code == 2 and json.loads(out)["error_code"] == "checkpoint-age-unknown"
    assert err == "resume: checkpoint age is unknown; freshness requirement failed\n"


@pytest.mark.parametrize(("max_age", "code", "error_code"), [
    ("1h", 0, None), ("abc", 2, "invalid-max-age"), ("-1h", 2, "invalid-max-age"), ("1w", 2, "invalid-max-age"),
    ("1000000000d", 2, "invalid-max-age"), ("999999999d", 0, None), (".5h", 0, None),
])
def test_max_age(project: Path, capsys: Capture, max_age: str, code: int, error_code: str | None) -> None:
    """--max-age: valid bounds pass; invalid ones exit 2 after printing, with the contract's code."""
    run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    result, out, err = run(capsys, "resume", "core", "ash", "--json", "--max-age", max_age)
    assert result == code and json.loads(out)["error_code"] == error_code
    if code:
        assert err == f"resume: invalid --max-age duration '{max_age}'; use s, m, h, or d\n"


def test_a_stale_snapshot_fails_the_bound(project: Path, capsys: Capture) -> None:
    """An old snapshot (replayed as of a later time) exits 2 with checkpoint-stale, output printed first."""
    run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    code, out, err = run(capsys, "resume", "core", "ash", "--max-age", "0.001s")
    assert code == 2 and out.startswith("Resume: t") and err.startswith("resume: checkpoint is ")
    assert "exceeding --max-age 0.001s" in err


def test_resume_as_of_an_earlier_point(project: Path, capsys: Capture) -> None:
    """--as-of the first snapshot's event: resume answers with that snapshot, not the later one."""
    run(capsys, "snapshot", "core", "ash", "first", "--objective", "one")
    first = json.loads(all_event_files(project)[-1].read_text())["event_id"]
    run(capsys, "snapshot", "core", "ash", "second", "--objective", "two")
    code, out, _ = run(capsys, "resume", "core", "ash", "--as-of", first)
    assert code == 0 and out.startswith("Resume: first") and "checkpoint age: 0s" in out


def test_team_documents_rebuild_byte_for_byte(project: Path, capsys: Capture) -> None:
    """Delete every team document and the saved models: rebuild writes the same bytes."""
    for task in ("a", "b", "a"):
        run(capsys, "snapshot", "core", "ash", task, "--objective", f"work on {task}")
    run(capsys, "snapshot", "core", "bo", "c", "--objective", "other agent")
    before = {path: path.read_bytes() for path in team_dir(project).rglob("*") if path.is_file()}
    assert len(before) == 5
    shutil.rmtree(team_dir(project))
    shutil.rmtree(project / ".agent" / "runtime-continuity" / "local" / "models")
    assert run(capsys, "rebuild")[0] == 0
    assert {path: path.read_bytes() for path in team_dir(project).rglob("*") if path.is_file()} == before


@pytest.mark.parametrize("names", [("../x", "ash", "t"), ("core", "a/b", "t"), ("core", "ash\x00", "t"),
                                   ("core", "..", "t"), ("core", "ash", "../../etc"), ("", "ash", "t")])
def test_hostile_names_write_nothing_outside(project: Path, capsys: Capture, names: tuple[str, str, str]) -> None:
    """Path tricks in team or agent are refused; a task becomes one safe segment; never a file outside."""
    outside = sorted(str(path) for path in project.parent.rglob("*") if ".agent" not in path.parts)
    code, _, err = run(capsys, "snapshot", *names, "--objective", "o")
    if code == 0:  # only the task may be made safe, as one segment under the agent's folder
        made = [path for path in team_dir(project).rglob("latest.json")]
        assert made and all(team_dir(project) in path.parents for path in made)
        assert all(".." not in path.relative_to(team_dir(project)).parts for path in made)
    else:
        assert code == 2 and err.count("\n") == 1 and all_event_files(project) == []
    assert sorted(str(path) for path in project.parent.rglob("*") if ".agent" not in path.parts) == outside


@pytest.mark.parametrize("path", ["plain", "typed"])
@pytest.mark.parametrize("unsafe", ["day folder", "events folder"])
def test_a_snapshot_into_an_unsafe_store_says_nothing_was_saved_and_exits_3(
        project: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, path: str, unsafe: str) -> None:
    """A symlink planted where the snapshot's day folder (or the events folder) belongs: the snapshot
    cannot be made durable, so one line saying nothing was saved and seed 000's exit 3 on both paths;
    nothing is written through the link."""
    import continuity.cli as cli
    from continuity.core.store import now_us
    from events.names import shard_of

    if path == "typed":
        monkeypatch.setattr(cli, "_snapshot_fast_path", lambda args: None)
    events = project / ".agent" / "runtime-continuity" / "events"
    outside = project.parent / "elsewhere"
    outside.mkdir()
    if unsafe == "day folder":
        import time

        stamp = time.strftime("%Y%m%d_%H%M%S", time.gmtime(now_us() / 1e6)) + "_000000"
        (events / shard_of(stamp)).symlink_to(outside, target_is_directory=True)
    else:
        shutil.rmtree(events)
        events.symlink_to(outside, target_is_directory=True)
    code, out, err = run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    assert (code, out) == (3, "") and "snapshot: nothing was saved (unsafe store" in err and err.count("\n") == 1
    assert list(outside.iterdir()) == []


def test_oversized_objective_is_refused(project: Path, capsys: Capture) -> None:
    """A 10 MB objective: exit 2, one line, nothing written."""
    code, _, err = run(capsys, "snapshot", "core", "ash", "t", "--objective", "x" * 10_000_000)
    assert code == 2 and err.count("\n") == 1 and all_event_files(project) == []


def test_a_snapshot_that_cannot_be_saved_exits_3(project: Path, capsys: Capture,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync failing (EIO): one line saying nothing was saved, exit 3 (seed 000's code)."""
    import errno

    def broken_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    code, _, err = run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    monkeypatch.undo()
    assert code == 3 and "nothing was saved" in err and err.count("\n") == 1
    assert all_event_files(project) == []


TOKEN = "ghp_" + "a1B2c3D4e5" * 4  # a made-up GitHub token: the guard's rule matches its shape


@pytest.mark.parametrize("argv", [
    ("snapshot", "core", "ash", "t", "--objective", f"deploy with {TOKEN}"),
    ("park", "core", "--agent", "amy", "--objective", f"deploy with {TOKEN}"),
    ("send", "core", "--agent", "amy", "--to", "ben", "--message", f"use {TOKEN}"),
], ids=["snapshot", "park", "send"])
def test_a_command_without_redact_never_tells_the_user_to_pass_it(project: Path, capsys: Capture,
                                                                   argv: tuple[str, ...]) -> None:
    """The secret refusal (exit 4, nothing written) says "remove it" where the command has no --redact (it
    said "pass --redact", which the command then refused as an unknown argument); the secret is not echoed."""
    assert run(capsys, "role", "create", "core", "r1")[0] == 0
    assert run(capsys, "role", "claim", "core", "r1", "--agent", "amy")[0] == 0
    before = all_event_files(project)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (4, "") and err.count("\n") == 1, err
    assert "looks like a secret" in err and err.rstrip().endswith("remove it") and "--redact" not in err
    assert TOKEN not in err and all_event_files(project) == before
    code, _, err = run(capsys, *argv, "--redact")
    assert code == 2 and "unrecognized arguments: --redact" in err


def test_a_role_checkpoint_takes_redact_and_never_prints_the_secret(project: Path, capsys: Capture) -> None:
    """`checkpoint <team> --role R --ref ...` has --redact (checkpoint's): without it the refusal offers it, with it
    the ref is stored redacted and what is printed is the stored ref (it printed the secret as given)."""
    assert run(capsys, "role", "create", "core", "r1")[0] == 0
    code, _, err = run(capsys, "checkpoint", "core", "--role", "r1", "--ref", f"notes/{TOKEN}.md")
    assert code == 4 and "pass --redact" in err and TOKEN not in err
    code, out, err = run(capsys, "checkpoint", "core", "--role", "r1", "--ref", f"notes/{TOKEN}.md", "--redact")
    assert code == 0 and TOKEN not in out + err
    assert out.startswith("checkpoint_ref for role r1 -> notes/[REDACTED:github-token].md (redacted: ")
    code, out, _ = run(capsys, "checkpoint", "core", "--role", "r1", "--ref", f"n/{TOKEN}", "--redact", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["checkpoint_ref"] == "n/[REDACTED:github-token]" and answer["redacted"]
    assert TOKEN not in out and not any(TOKEN in path.read_text() for path in all_event_files(project))


@pytest.mark.parametrize("flag", ["--agent", "--role"])
def test_park_refuses_a_secret_like_name_without_echoing_it(project: Path, capsys: Capture, flag: str) -> None:
    """`park --agent <token>` answered "park: <token> holds no fresh roles" (exit 2): now exit 4, as every other
    write refuses a secret-like id, and the token is in no output."""
    argv = ["park", "core", "--agent", "amy", flag, TOKEN] if flag == "--role" else ["park", "core", flag, TOKEN]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (4, "") and "looks like a secret" in err and TOKEN not in err
    assert all_event_files(project) == []


@pytest.mark.parametrize("broken", ["no store", "empty config", "invalid config"])
def test_park_on_a_store_it_cannot_open_prints_the_banner_and_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Capture, broken: str) -> None:
    """No store, or a config.json that cannot be read: seed 000's "could not determine" banner with exit 1 (it
    was exit 3 or 9 with no banner, and 3 is also --handoff's findings code), the reason on the line before it."""
    root = tmp_path / "proj"
    root.mkdir()
    monkeypatch.chdir(root)
    if broken != "no store":
        assert run(capsys, "init", "--project", "demo")[0] == 0
        (root / ".agent/runtime-continuity/config.json").write_text("" if broken == "empty config" else "{")
    code, out, err = run(capsys, "park", "core", "--agent", "amy")
    lines = err.splitlines()
    assert (code, out, len(lines)) == (1, "", 2), err
    assert lines[0].startswith("park: ") and ("no store" in lines[0] or "config.json" in lines[0])
    assert lines[1] == ("park: could not determine which fresh roles amy holds in team/core (role state unreadable, "
                        "not empty) — CHECKPOINT NOT WRITTEN. Nothing was parked; retry before ending the session.")
    code, out, _ = run(capsys, "park", "core", "--agent", "amy", "--json")
    answer = json.loads(out)
    assert code == 1 and answer["ok"] is False and answer["exit_code"] == 1 and "CHECKPOINT NOT WRITTEN" in \
        answer["message"]
    assert not list(root.rglob("*.json")) or broken != "no store"


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300) | st.from_regex(r"[-._]{0,3}[A-Za-z0-9 _.!-]{0,20}", fullmatch=True))
def test_every_task_slug_is_a_valid_id_and_its_own_slug(task: str) -> None:
    """Whatever the task, snapshot either refuses it as a usage error (nothing usable, the pointer's name) or makes
    it an id the event takes: `_build` and `__init__` were refused as invalid events (exit 2)."""
    import msgspec

    from continuity.core.errors import UsageError
    from continuity.team.plain import task_slug
    from events.base import Name

    try:
        slug = task_slug(task)
    except UsageError:
        return
    assert msgspec.convert(slug, Name) == slug and task_slug(slug) == slug


@pytest.mark.parametrize(("task", "slug"), [("_build", "build"), ("__init__", "init__"), ("-._x", "x")])
def test_a_task_starting_with_an_underscore_is_saved_under_its_slug(project: Path, capsys: Capture, task: str,
                                                                   slug: str) -> None:
    code, out, err = run(capsys, "snapshot", "core", "ash", task, "--objective", "o")
    assert (code, err) == (0, "") and out.rstrip().endswith(f"-{slug}")
    assert (team_dir(project) / "core/member/ash/continuity" / slug / "latest.json").is_file()
    code, out, _ = run(capsys, "resume", "core", "ash", task, "--json")
    assert code == 0 and json.loads(out)["task"] == slug


def test_tasks_named_in_other_letters_stay_apart_and_one_name_is_one_task_in_either_form(project: Path,
                                                                                       capsys: Capture) -> None:
    """Letters outside ASCII became `-`: `fix 登录` and `fix 注册` were one task `fix` (the second snapshot replaced
    the first, and `resume` of the first printed the other's objective), a name of such letters alone was refused,
    and `café` typed on a Mac (NFD) was another task than `café` typed elsewhere (NFC)."""
    import unicodedata

    for task, objective in (("fix 登录", "login bug"), ("fix 注册", "signup bug"), ("修复登录", "cjk only"),
                            (unicodedata.normalize("NFD", "café-menu"), "from a mac")):
        assert run(capsys, "snapshot", "core", "ash", task, "--objective", objective)[0] == 0
    for task, objective in (("fix 登录", "login bug"), ("fix 注册", "signup bug"), ("修复登录", "cjk only"),
                            (unicodedata.normalize("NFC", "café-menu"), "from a mac")):
        code, out, _ = run(capsys, "resume", "core", "ash", task, "--json")
        assert code == 0 and json.loads(out)["objective"] == objective, (task, out)
    folder = team_dir(project) / "core/member/ash/continuity"
    slugs = sorted(path.parent.name for path in folder.glob("*/latest.json"))
    assert len(slugs) == 4 and [slug for slug in slugs if slug.startswith("cafe-menu-")], slugs


def test_a_snapshot_saved_under_the_earlier_slug_is_still_found_by_its_name(project: Path, capsys: Capture) -> None:
    """An earlier release saved `café` as task `caf` (letters outside ASCII as `-`): `resume core ash café` found it;
    with the digest slug it looked for `cafe-850f7dc4` alone and said no snapshot."""
    assert run(capsys, "snapshot", "core", "ash", "caf", "--objective", "menu work")[0] == 0  # as saved before
    code, out, _ = run(capsys, "resume", "core", "ash", "café", "--json")
    assert code == 0 and json.loads(out)["objective"] == "menu work", out


def _pointer(project: Path) -> Path:
    return team_dir(project) / "core/member/ash/continuity/LATEST.json"


@pytest.mark.parametrize("objective_flag", ["--objective", "--obj"], ids=["plain path", "argparse path"])
def test_a_pointer_planted_as_a_link_is_never_read_or_written_through(project: Path, capsys: Capture,
                                                                      tmp_path: Path, objective_flag: str) -> None:
    """LATEST.json a link to a file outside the store naming a "newer" snapshot: the file outside is neither
    trusted nor written, and the pointer names the new snapshot (it was left alone, silently)."""
    assert run(capsys, "snapshot", "core", "ash", "t1", "--objective", "o1")[0] == 0
    outside = tmp_path / "outside.json"
    forged = {"schema": "coord.continuity-latest.v1", "agent": "ash", "task": "z", "created_at":
              "2999-01-01T00:00:00.000000Z", "checkpoint_id": "CHK-2999-01-01T00:00:00.000000Z-z", "path": "x"}
    outside.write_text(json.dumps(forged))
    _pointer(project).unlink()
    _pointer(project).symlink_to(outside)
    code, _, _ = run(capsys, "snapshot", "core", "ash", "t2", objective_flag, "o2")
    assert code == 0 and json.loads(outside.read_text()) == forged
    assert not _pointer(project).is_symlink() and json.loads(_pointer(project).read_text())["task"] == "t2"


@pytest.mark.parametrize("forged", [
    {"created_at": "9999", "task": "z", "checkpoint_id": "z"},
    {"created_at": "9999-99-99T99:99:99.999999Z", "task": "z", "checkpoint_id": "CHK-other-z"},
    {"created_at": ["2999"], "task": "z", "checkpoint_id": "z"},
])
def test_a_pointer_edited_by_hand_does_not_hold_the_next_snapshot_back(project: Path, capsys: Capture,
                                                                       forged: dict[str, object]) -> None:
    """A pointer whose time is not the log's spelling, or whose id does not agree with it, is not "newer"."""
    assert run(capsys, "snapshot", "core", "ash", "t1", "--objective", "o1")[0] == 0
    _pointer(project).write_text(json.dumps(forged))
    assert run(capsys, "snapshot", "core", "ash", "t2", "--objective", "o2")[0] == 0
    assert json.loads(_pointer(project).read_text())["task"] == "t2"


@pytest.mark.parametrize("objective_flag", ["--objective", "--obj"], ids=["plain path", "argparse path"])
def test_a_link_on_the_way_to_the_channel_config_is_reported_on_both_paths(project: Path, capsys: Capture,
                                                                           tmp_path: Path,
                                                                           objective_flag: str) -> None:
    """`team/core/_coord` a dangling link: the snapshot is saved and one line says the config is unreadable (the
    plain path said nothing: it asked whether the config exists through the link)."""
    (team_dir(project) / "core").mkdir(parents=True)
    (team_dir(project) / "core/_coord").symlink_to(tmp_path / "nowhere")
    code, out, err = run(capsys, "snapshot", "core", "ash", "t", objective_flag, "o")
    assert code == 0 and out.startswith("snapshot CHK-")
    assert err.count("\n") == 1 and "is unreadable (team/core/_coord is a symlink)" in err


def test_a_log_stamped_ahead_leaves_a_fresh_snapshot_fresh(project: Path, capsys: Capture) -> None:
    """A teammate's clock ten minutes fast (an event synced in, stamped ahead): every later event is stamped after
    it, so a snapshot taken now had a `created_at` ten minutes ahead and its age was "unknown" (`--max-age`
    failed, health lost the stale flag). Its age is read from the writer's own clock (`taken_at`) now; a
    snapshot whose own writer's clock was ahead is still "unknown" (seed 000's skew rule)."""
    from continuity.core.store import Store, now_us
    from events.filelog import FileEventLog
    from events.team import SnapshotTaken

    store = Store(str(project))
    ahead = lambda: now_us() + 600 * 10**6  # noqa: E731
    fast = FileEventLog(store.events_dir, store.local_dir, node="fastnode", clock_us=ahead)
    fast.append(SnapshotTaken(project="demo", team="core", agent="bob", task="t", objective="from a fast clock"))
    assert run(capsys, "snapshot", "core", "carl", "fresh", "--objective", "just now")[0] == 0
    code, out, err = run(capsys, "resume", "core", "carl", "--max-age", "1h", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["created_at"] > clock.iso(now_us() + 500 * 10**6)  # stamped after the fast event
    assert answer["checkpoint_age_seconds"] is not None and answer["checkpoint_age_seconds"] < 60
    code, out, err = run(capsys, "resume", "core", "bob", "--max-age", "1h")
    assert code == 2 and "checkpoint age is unknown" in out + err  # its own writer's clock was ahead (no taken_at:
    # an event of an earlier version, its age read from created_at as before)


def test_resume_with_no_store_is_no_snapshot_as_seed_000_reads_an_empty_team_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """With no store anywhere up, `resume` was the "no store" error (exit 3) and printed no brief: a script reading
    seed 000's `{"snapshot": null, ...}` or `--max-age`'s exit 2 got neither. Now: no snapshot, one warning."""
    monkeypatch.chdir(tmp_path)
    assert main(["resume", "core", "amy"]) == 0
    out, err = capsys.readouterr()
    assert out == "No continuity snapshot found.\n  checkpoint age: unknown\n"
    assert err.count("\n") == 1 and "no store found" in err
    assert main(["resume", "core", "amy", "--max-age", "1h", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out) == {"snapshot": None, "checkpoint_age_seconds": None, "error_code": "checkpoint-age-unknown"}
    assert err.splitlines()[-1] == "resume: checkpoint age is unknown; freshness requirement failed"


def test_snapshot_and_role_checkpoint_with_no_store_answer_as_seed_000(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """No store anywhere up: `snapshot` says in its one line that nothing was saved (exit 3), and `checkpoint
    --role` finds no role (seed 000's exit 1 and line); both were the bare "no store" error, exit 3."""
    monkeypatch.chdir(tmp_path)
    assert main(["snapshot", "core", "amy", "t", "--objective", "o"]) == 3
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "snapshot: nothing was saved (no store found" in err
    for extra in ([], ["--ref", "notes/next.md"]):
        assert main(["checkpoint", "core", "--role", "lead", *extra]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err == "checkpoint failed: role lead not found/parseable\n"
    assert not (tmp_path / ".agent").exists()


@pytest.mark.parametrize(("team", "agent", "said"), [("../x", "ash", "team"), ("core", "a b", "agent"),
                                                      ("core", "", "agent"), ("co/re", "ash", "team")])
def test_resume_refuses_a_name_no_snapshot_can_have(project: Path, capsys: Capture, team: str, agent: str,
                                                    said: str) -> None:
    """A team or agent snapshot would refuse: the no-snapshot brief (a session start reads on, as briefing does) and
    a warning naming the mistake, not "No continuity snapshot found." alone; --max-age still fails."""
    run(capsys, "snapshot", "core", "ash", "t", "--objective", "o")
    code, out, err = run(capsys, "resume", team, agent)
    assert (code, out) == (0, "No continuity snapshot found.\n  checkpoint age: unknown\n")
    assert f"resume: invalid {said} name" in err and len(err.splitlines()) == 1
    code, out, err = run(capsys, "resume", team, agent, "--max-age", "1h", "--json")
    assert code == 2 and json.loads(out)["error_code"] == "checkpoint-age-unknown" and f"invalid {said} name" in err


@pytest.mark.parametrize("typed", [True, False])
def test_blank_list_items_are_left_out_of_a_snapshot(project: Path, capsys: Capture, typed: bool) -> None:
    """`--next ""` (an empty shell variable) adds no empty item, on the typed path and the plain one alike."""
    args = ("snapshot", "core", "ash", "t", "--objective", "o", "--next", "", "--next", " \t", "--next", "land it",
            "--decision", "", "--open-question", "  ", "--artifact", "")
    if typed:
        assert run(capsys, *args)[0] == 0
    else:
        assert cli_process(*args, cwd=project).returncode == 0
    document = json.loads((team_dir(project) / "core" / "member" / "ash" / "continuity" / "t" / "latest.json")
                          .read_text())
    assert (document["next_actions"], document["decisions"], document["open_questions"], document["artifacts"]) \
        == (["land it"], [], [], [])
    assert "  next actions:\n    - land it\n  checkpoint age: " in run(capsys, "resume", "core", "ash")[1]


def test_a_role_checkpoint_refuses_a_work_checkpoints_options(project: Path, capsys: Capture) -> None:
    """`checkpoint core --role r -m x` would drop the message without a word: refused, exit 2, nothing written."""
    assert run(capsys, "role", "create", "core", "r")[0] == 0
    before = all_event_files(project)
    for extra in (("-m", "x"), ("--next", "y"), ("--ref", "p", "--done", "z"), ("--exit-code", "0")):
        code, out, err = run(capsys, "checkpoint", "core", "--role", "r", *extra)
        assert (code, out) == (2, "") and "belong to a work checkpoint" in err and extra[-2] in err
    assert all_event_files(project) == before
    assert run(capsys, "checkpoint", "core", "--role", "r", "--ref", "p")[0] == 0


@pytest.mark.parametrize("command", [["inbox", "core", "--agent", "bo"], ["queue", "core", "--agent", "bo"],
                                     ["role", "list", "core"], ["briefing", "core", "--agent", "bo"]])
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_team_read_of_a_store_with_a_broken_config_warns_once(project: Path, capsys: Capture, command: list[str],
                                                                as_json: bool) -> None:
    """Reads warn of a config.json they cannot read and go on: `inbox` and `queue` said the same line twice."""
    assert run(capsys, "send", "core", "--agent", "amy", "--to", "bo", "--message", "hi")[0] == 0
    (project / ".agent/runtime-continuity/config.json").write_text("{not json")
    code, out, err = run(capsys, *(["--json"] if as_json else []), *command)
    assert code == 0 and (isinstance(json.loads(out), dict) if as_json else out), err
    warned = [line for line in err.splitlines() if "config.json" in line]
    assert len(warned) == 1 and warned[0].startswith("continuity: warning: "), err
