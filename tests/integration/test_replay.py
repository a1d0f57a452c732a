"""The audit replay says exactly what a session was told: `resume-bundle --as-of <context.served>`.

Each test serves a brief through a real command, changes what a replay could trip on (a sync
bringing events stamped earlier, live facts, the format asked for), and checks the replay's
output against what the serving command printed, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from continuity.cli import main

Capture = pytest.CaptureFixture[str]
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.invalid",
                "GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.invalid",
                "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity from the environment only (HOME is isolated: no ~/.gitconfig)."""
    for key, value in GIT_IDENTITY.items():
        monkeypatch.setenv(key, value)


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout (fails the test when git fails)."""
    result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                            env={**os.environ, "LC_ALL": "C"})
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def run(capsys: Capture, root: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """The CLI in-process in the project at `root`: (exit code, stdout, stderr)."""
    import io
    import sys

    capsys.readouterr()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode()))
    try:
        code = main([*args, "--root", str(root)] if args[0] != "hook" else list(args))
    finally:
        sys.stdin = saved
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def served_events(capsys: Capture, root: Path) -> list[dict[str, Any]]:
    """The `context.served` events of the store at `root`, oldest first."""
    code, out, err = run(capsys, root, "events", "list", "--kind", "context.served", "--json")
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)["events"]
    return found


def serve(capsys: Capture, root: Path, *args: str) -> tuple[str, dict[str, Any]]:
    """`resume-bundle --record ARGS`: what it printed and the event that recorded it."""
    code, out, err = run(capsys, root, "resume-bundle", "--record", *args)
    assert code == 0 and "not recorded" not in err, err
    return out, served_events(capsys, root)[-1]


class Clones:
    """A bare remote and two clones `a` and `b` of one project, each with a store."""

    def __init__(self, tmp_path: Path, capsys: Capture) -> None:
        self.capsys = capsys
        self.remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(self.remote))
        self.a = self.clone(tmp_path, "a")
        (self.a / "README.md").write_text("the code\n")
        git(self.a, "add", "README.md", ".gitignore")
        git(self.a, "commit", "-q", "-m", "code")
        git(self.a, "push", "-q", "origin", "main")
        self.b = self.clone(tmp_path, "b")

    def clone(self, tmp_path: Path, name: str) -> Path:
        path = tmp_path / name
        git(tmp_path, "clone", "-q", str(self.remote), str(path))
        assert run(self.capsys, path, "init", "--project", "demo")[0] == 0
        return path

    def sync(self, root: Path) -> None:
        code, _, err = run(self.capsys, root, "sync")
        assert code == 0, err


def test_a_sync_bringing_earlier_events_leaves_a_served_brief_as_served(tmp_path: Path, capsys: Capture) -> None:
    """Events from another clone stamped before a served brief, synced in after it, stay out of its replay."""
    clones = Clones(tmp_path, capsys)
    run(capsys, clones.b, "log", "b edited the parser", "--file", "parse.py")  # stamped before a's brief
    run(capsys, clones.a, "checkpoint", "-m", "a's work", "--next", "wire the CLI")
    text, event = serve(capsys, clones.a, "--session", "S1")
    clones.sync(clones.b)
    clones.sync(clones.a)
    code, replayed, err = run(capsys, clones.a, "resume-bundle", "--as-of", event["event_id"])
    assert code == 0 and err == ""
    assert replayed == text
    assert hashlib.sha256(replayed.encode()).hexdigest() == event["brief_sha256"]
    # the log now holds b's event, stamped before the brief's last event: a replay to a time sees it
    code, now, _ = run(capsys, clones.a, "resume-bundle", "--as-of", event["created_at"])
    assert code == 0 and "b edited the parser" in now


def test_every_view_as_of_a_served_brief_leaves_out_what_a_later_sync_brought(
    tmp_path: Path, capsys: Capture,
) -> None:
    """`status`, `restore`, `task list` and `replay --until` at a served brief answer as the store stood when it was
    served, as `resume-bundle --as-of` does: another clone's archive and task, stamped earlier but synced in later,
    are left out; the serving clone's own events up to the point stay in."""
    clones = Clones(tmp_path, capsys)
    run(capsys, clones.b, "archive", "--gate", "agent", "--reason", "b's offline archive")
    run(capsys, clones.b, "task", "create", "--title", "b's offline task")
    run(capsys, clones.a, "checkpoint", "-m", "a's work", "--next", "wire the CLI")
    run(capsys, clones.a, "task", "create", "--title", "a's own task")
    _, event = serve(capsys, clones.a, "--session", "S1")
    point = event["event_id"]
    before = {args: run(capsys, clones.a, *args, "--as-of", point)[1]
              for args in (("status",), ("restore",), ("task", "list"))}
    assert "no archive yet" in before[("status",)] and "a's own task" in before[("task", "list")]
    clones.sync(clones.b)
    clones.sync(clones.a)
    for args, answer in before.items():
        code, out, err = run(capsys, clones.a, *args, "--as-of", point)
        assert (code, out) == (0, answer), args
    assert "b's offline task" in run(capsys, clones.a, "task", "list")[1]  # now, the merged log has it
    code, _, err = run(capsys, clones.a, "replay", "--until", point, "--out", str(tmp_path / "audit"))
    assert code == 0, err
    state = json.loads((tmp_path / "audit" / "state.json").read_text())
    assert "b's offline archive" not in json.dumps(state)
    # any other point is the log up to there as it is now: b's events, stamped before it, are in
    code, out, _ = run(capsys, clones.a, "task", "list", "--as-of", event["created_at"])
    assert code == 0 and "b's offline task" in out


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
#: Text the secret guard refuses (an AWS access key id's shape), as a file name in the work tree.
SECRET_NAME = "AKIAIOSFODNN7EXAMPLQ.txt"


@pytest.fixture
def repo(tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with one commit and a store, as the working directory."""
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("print(1)\n")
    assert run(capsys, root, "init", "--project", "demo")[0] == 0
    git(root, "add", "app.py", ".gitignore")
    git(root, "commit", "-q", "-m", "start")
    monkeypatch.chdir(root)
    run(capsys, root, "checkpoint", "-m", "parser done", "--next", "wire the CLI", "--session", "S1")
    return root


def session_start(capsys: Capture, root: Path) -> str:
    """The SessionStart hook of Claude Code: the brief it answered with."""
    payload = (FIXTURES / "claude_session_start.json").read_text().replace("{cwd}", str(root))
    code, out, _ = run(capsys, root, "hook", "claude-code", stdin=payload)
    assert code == 0
    brief: str = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    return brief


def test_a_secret_like_file_name_in_the_work_tree_is_served_redacted_and_recorded(repo: Path, capsys: Capture) -> None:
    """A brief whose live git facts hold secret-like text is served redacted, recorded, and replayed as served."""
    (repo / SECRET_NAME).write_text("x\n")
    brief = session_start(capsys, repo)
    served = served_events(capsys, repo)
    assert len(served) == 1  # was: refused by the secret guard, so the hook's brief went unrecorded
    assert SECRET_NAME not in brief and "[REDACTED:aws-access-key-id]" in brief
    code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", served[0]["event_id"])
    assert code == 0 and err == "" and replayed == brief
    text, event = serve(capsys, repo, "--format", "json", "--session", "S2")
    assert SECRET_NAME[:-4] not in text and SECRET_NAME[:-4] not in json.dumps(event)
    code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"], "--format", "json")
    assert code == 0 and err == "" and replayed == text


def test_a_tree_with_thousands_of_changed_files_still_records_its_brief(repo: Path, capsys: Capture) -> None:
    """A brief whose git status would not fit its event is rendered from what fits, recorded, and replayed."""
    folder = repo / "generated"
    folder.mkdir()
    for index in range(1500):
        (folder / f"f{index:04d}_{'x' * 150}.txt").write_text("")
    git(repo, "add", "generated")
    brief = session_start(capsys, repo)
    served = served_events(capsys, repo)
    assert len(served) == 1  # was: "event too large", so the hook's brief went unrecorded
    assert "git status too long to record: the brief keeps" in brief
    code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", served[0]["event_id"])
    assert code == 0 and err == "" and replayed == brief
    text, event = serve(capsys, repo, "--format", "json", "--session", "S2")
    code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"], "--format", "json")
    assert code == 0 and err == "" and replayed == text


def test_a_replay_prints_a_served_brief_in_the_format_it_was_served_in(repo: Path, capsys: Capture) -> None:
    """A brief served as JSON replays as the same bytes (bidi marks escaped) whatever --format the asker gives."""
    run(capsys, repo, "log", "right-to-left \u202e text")
    text, event = serve(capsys, repo, "--format", "json", "--session", "S2")
    assert "\\u202e" in text and "\u202e" not in text
    for asked in ([], ["--format", "md"], ["--format", "json"], ["--json"]):
        code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"], *asked)
        assert code == 0 and err == "" and replayed == text, asked
    text, event = serve(capsys, repo, "--session", "S3")
    for asked in ([], ["--format", "json"], ["--json"]):
        code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"], *asked)
        assert code == 0 and err == "" and replayed == text, asked


def newest_event(capsys: Capture, root: Path, project: str) -> dict[str, Any]:
    """The newest event of `project` in the store at `root`."""
    code, out, err = run(capsys, root, "events", "list", "--json")
    assert code == 0, err
    found: dict[str, Any] = [e for e in json.loads(out)["events"] if e["project"] == project][-1]
    return found


def test_as_of_an_event_of_another_project_answers_at_that_events_time(repo: Path, capsys: Capture) -> None:
    """--as-of the id of another project's event is the same point as its time: same `now`, same answer."""
    run(capsys, repo, "archive", "--gate", "agent", "--reason", "before the other project's event")
    run(capsys, repo, "log", "elsewhere", "--project", "other")
    point = newest_event(capsys, repo, "other")
    by_id = json.loads(run(capsys, repo, "resume-bundle", "--as-of", point["event_id"], "--json")[1])
    by_time = json.loads(run(capsys, repo, "resume-bundle", "--as-of", point["created_at"], "--json")[1])
    assert by_id["generated_at"] == point["created_at"]  # was: the time of demo's own newest event
    assert {**by_id, "as_of": None} == {**by_time, "as_of": None}
    status = [json.loads(run(capsys, repo, "status", "--as-of", at, "--json")[1])
              for at in (point["event_id"], point["created_at"])]
    assert {**status[0], "as_of": None} == {**status[1], "as_of": None}


def test_as_of_a_point_the_run_asked_for_counts_and_a_replay_is_never_recorded(repo: Path, capsys: Capture) -> None:
    """`resume-bundle --run R --as-of P` dropped the run asked for (the brief as of the newest event lacked the
    live one's Current run); `--record --as-of` recorded nothing and said nothing: refused, as `inbox --ack` is."""
    def newest() -> str:
        _, out, _ = run(capsys, repo, "events", "list", "--last", "1", "--json")
        found: str = json.loads(out)["events"][-1]["event_id"]
        return found

    code, out, _ = run(capsys, repo, "task", "create", "--title", "Fix login", "--json")
    task = json.loads(out)["task_id"]
    code, out, err = run(capsys, repo, "run", "start", "--agent", "cy", "--task", task, "--json")
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    assert run(capsys, repo, "log", "--agent", "cy", "x")[0] == 0
    point = newest()
    live = run(capsys, repo, "resume-bundle", "--agent", "cy", "--run", run_id, "--format", "json")[1]
    then = run(capsys, repo, "resume-bundle", "--agent", "cy", "--run", run_id, "--format", "json", "--as-of",
               point)[1]
    assert json.loads(live)["tasks"]["current_run"]["run_id"] == run_id
    assert json.loads(then)["tasks"] == json.loads(live)["tasks"]
    code, out, err = run(capsys, repo, "resume-bundle", "--record", "--as-of", point)
    assert code == 2 and out == "" and "--record records; it does not go with --as-of" in err
    assert newest() == point


def test_restore_loads_an_archive_older_than_the_kept_ones_as_of_a_point_after_it(repo: Path, capsys: Capture) -> None:
    """`restore --load` an archive older than the newest ten loads it from its file; with `--as-of` it was "no
    archive" (exit 7) even as of a point after it. As of a point before it was taken it is still exit 7."""
    assert run(capsys, repo, "log", "before any archive")[0] == 0
    _, out, _ = run(capsys, repo, "events", "list", "--last", "1", "--json")
    before = json.loads(out)["events"][-1]["event_id"]
    ids = []
    for number in range(12):
        code, out, err = run(capsys, repo, "archive", "--reason", f"bulk {number}", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["archive_id"])
    _, out, _ = run(capsys, repo, "events", "list", "--last", "1", "--json")
    point = json.loads(out)["events"][-1]["event_id"]
    live = run(capsys, repo, "restore", "--load", ids[0], "--json")
    then = run(capsys, repo, "restore", "--load", ids[0], "--json", "--as-of", point)
    assert live[0] == then[0] == 0 and json.loads(then[1])["archive"]["archive_id"] == ids[0]
    assert run(capsys, repo, "restore", "--load", ids[0], "--as-of", before)[0] == 7


def test_a_brief_as_of_a_point_shows_each_handoff_as_it_stood_then(repo: Path, capsys: Capture) -> None:
    """`resume-bundle --as-of` an event that served no brief read no handoff document: every handoff was "unknown"
    and pending for everyone (bob's, accepted, in carol's brief; "Handoffs for carol" missing). Each is read from
    the handoffs model as it stood at the point, as the live brief reads its document."""
    def point() -> str:
        _, out, _ = run(capsys, repo, "events", "list", "--last", "1", "--json")
        found: str = json.loads(out)["events"][-1]["event_id"]
        return found

    def handoffs(agent: str, *extra: str) -> list[tuple[str, str]]:
        code, out, err = run(capsys, repo, "resume-bundle", "--agent", agent, "--format", "json", *extra)
        assert code == 0, err
        data = json.loads(out)
        return sorted((h["state"], h["path"].rsplit("/", 1)[-1]) for h in data["pending_handoffs"])

    assert run(capsys, repo, "handoff", "create", "--agent", "alice", "--to", "bob", "--message", "checkout")[0] == 0
    created = point()
    _, out, _ = run(capsys, repo, "handoff", "list", "--json")
    to_bob = json.loads(out)["handoffs"][0]["handoff_id"]
    assert run(capsys, repo, "handoff", "accept", to_bob, "--agent", "bob")[0] == 0
    assert run(capsys, repo, "handoff", "create", "--agent", "alice", "--to", "carol", "--message", "review")[0] == 0
    later = point()
    for agent in ("carol", "bob", "dave"):  # as of the newest event: the live brief's answer
        assert handoffs(agent, "--as-of", later) == handoffs(agent), agent
    assert [state for state, _ in handoffs("carol", "--as-of", later)] == ["pending"]
    assert handoffs("bob", "--as-of", later) == [] and handoffs("dave", "--as-of", later) == []
    assert handoffs("bob", "--as-of", created) == [("pending", f"{to_bob}.json")]  # not accepted yet then
    assert handoffs("carol", "--as-of", created) == []
    code, out, _ = run(capsys, repo, "resume-bundle", "--agent", "carol", "--as-of", later)
    assert code == 0 and "## Handoffs for carol" in out and "unknown" not in out


@pytest.mark.parametrize(("point", "code", "message"), [
    ("RCE-20200101_000000_000000-abcdefgh", 7, "continuity: error: no event 'RCE-20200101_000000_000000-abcdefgh'\n"),
    ("RCE-not-an-id", 7, "continuity: error: no event 'RCE-not-an-id'\n"),
    ("yesterday", 2, "continuity: error: --as-of: 'yesterday' is neither an event id (RCE-...) nor an ISO time in "
                     "range\n"),
    ("2999-01-01T00:00:00Z", 2, "continuity: error: --as-of: '2999-01-01T00:00:00Z' is in the future; an audit "
                                "replays the past\n"),
    # long, secret-like or unprintable: cut at 64 characters, never echoed, escaped
    ("9" * 5000, 2, f"continuity: error: --as-of: '{'9' * 64}…' is neither an event id (RCE-...) nor an ISO time in "
                    "range\n"),
    ("RCE-" + "x" * 5000, 7, f"continuity: error: no event 'RCE-{'x' * 60}…'\n"),
    ("ghp_" + "a1B2c3D4e5" * 4, 2, "continuity: error: --as-of: (a value that looks like a secret, not shown) is "
                                   "neither an event id (RCE-...) nor an ISO time in range\n"),
    ("RCE-\u202e\x1b", 7, "continuity: error: no event 'RCE-\\u202e\\u001b'\n"),
])
def test_as_of_a_point_that_is_not_there_is_one_line_and_its_exit_code(
        repo: Path, capsys: Capture, point: str, code: int, message: str) -> None:
    """An unknown id (this store's or another's) is exit 7, a point that is no time exit 2: one line, no output."""
    for command in ("resume-bundle", "status", "restore"):
        assert run(capsys, repo, command, "--as-of", point) == (code, "", message), command


def test_as_of_a_time_before_the_first_event_is_the_empty_log(repo: Path, capsys: Capture) -> None:
    """Before the first event the replay answers for an empty log: no events, no archive, exit 0."""
    code, out, err = run(capsys, repo, "resume-bundle", "--as-of", "2001-01-01T00:00:00Z", "--json")
    bundle = json.loads(out)
    assert (code, err) == (0, "")
    assert bundle["events"] == 0 and bundle["archive"] is None
    assert bundle["generated_at"] == "2001-01-01T00:00:00.000000Z"


def test_run_records_an_event_cannot_hold_as_text_are_served_printable_and_recorded(
        repo: Path, capsys: Capture) -> None:
    """A run file named in non-UTF-8 bytes (one U+FFFD for the byte that is none), a run status with a control
    character: served, recorded, replayed."""
    runs = repo / ".agent" / "runs"
    runs.mkdir(parents=True)
    (runs / "beep.json").write_text(json.dumps({"status": "run\u0007ning"}))
    with open(os.path.join(os.fsencode(runs), b"bad\xff.json"), "wb") as file:
        file.write(b'{"status": "running"}')
    brief = session_start(capsys, repo)  # was: an internal error (non-UTF-8 name), or unrecorded (control)
    served = served_events(capsys, repo)
    assert len(served) == 1
    assert run(capsys, repo, "resume-bundle", "--as-of", served[0]["event_id"]) == (0, brief, "")
    text, event = serve(capsys, repo, "--format", "json", "--session", "S2")  # was: exit 70
    files = json.loads(text)["runs"]["files"]
    assert {(f["path"], f["status"]) for f in files} == {
        (".agent/runs/beep.json", "run\u2407ning"), (".agent/runs/bad\ufffd.json", "running")}
    assert run(capsys, repo, "resume-bundle", "--as-of", event["event_id"], "--format", "json") == (0, text, "")


def test_a_served_brief_records_what_rendered_it_and_a_mismatch_names_both(repo: Path, capsys: Capture) -> None:
    """context.served records the renderer; a replay whose text differs names the one that served it."""
    import unicodedata

    from continuity import __version__
    from continuity.core.store import Store
    from continuity.sessions.brief import BRIEF_REVISION
    from events.context import ContextServed, ViewInputs

    here = f"continuity {__version__} (brief {BRIEF_REVISION}), Unicode {unicodedata.unidata_version}"
    assert serve(capsys, repo, "--session", "S2")[1]["renderer"] == here
    older = Store(str(repo)).open_log().append(ContextServed(  # as an older continuity would have recorded it
        project="demo", brief_sha256="0" * 64, inputs=ViewInputs(now="2026-01-01T00:00:00.000000Z"),
        renderer="continuity 0.0.1, Unicode 9.0.0"))
    code, _, err = run(capsys, repo, "resume-bundle", "--as-of", older.event_id)
    assert code == 0
    assert err == ("continuity: warning: the regenerated brief does not match the hash recorded when it was served "
                   f"(served by continuity 0.0.1, Unicode 9.0.0, replayed by {here})\n")


def listing(*folders: Path) -> dict[str, tuple[int, int]]:
    """Every path under `folders`: (mtime in ns, size)."""
    return {str(path): (path.lstat().st_mtime_ns, path.lstat().st_size)
            for folder in folders for path in sorted(folder.rglob("*"))}


def test_replay_out_never_writes_over_the_store_or_the_live_markdown(repo: Path, capsys: Capture) -> None:
    """`replay --out` into the store or over the live Markdown archives is exit 2, one line, nothing written."""
    run(capsys, repo, "archive", "--gate", "agent", "--reason", "first")
    point = newest_event(capsys, repo, "demo")["event_id"]
    run(capsys, repo, "checkpoint", "-m", "later", "--next", "later still")
    run(capsys, repo, "archive", "--gate", "agent", "--reason", "second")
    store, home = repo / ".agent" / "runtime-continuity", Path(os.environ["HOME"])
    before = listing(store, home)
    for out in (store, store / "archives", store / "events" / "x", home / ".agent"):
        code, stdout, err = run(capsys, repo, "replay", "--until", point, "--out", str(out))
        assert (code, stdout) == (2, "") and err.startswith("continuity: error: --out: ") and err.count("\n") == 1, out
        assert listing(store, home) == before, out  # was: state.json, archives/ and latest.md of the point
    elsewhere = repo.parent / "incident"
    assert run(capsys, repo, "replay", "--until", point, "--out", str(elsewhere))[0] == 0
    assert listing(store, home) == before
    assert json.loads((elsewhere / "archives" / "latest.json").read_text())["reason"] == "first"
    assert run(capsys, repo, "replay", "--until", point, "--out", str(elsewhere))[0] == 0  # its own earlier replay


@pytest.mark.parametrize("target", ["folder", "dangling"])
def test_replay_out_that_is_a_symbolic_link_is_refused_before_anything_is_written(
        repo: Path, capsys: Capture, tmp_path: Path, target: str) -> None:
    """`--out` a link to a folder: the replay wrote its Markdown through it, then stopped as an "unsafe store" (exit
    6) saying "nothing written", its files left behind; a link to nothing was exit 5 "File exists". Either is a
    usage error now (exit 2, one `--out:` line) and nothing is written where it leads."""
    point = newest_event(capsys, repo, "demo")["event_id"]
    aimed = tmp_path / "aimed"
    if target == "folder":
        aimed.mkdir()
    link = tmp_path / "out-link"
    link.symlink_to(aimed)
    code, stdout, err = run(capsys, repo, "replay", "--until", point, "--out", str(link))
    assert (code, stdout) == (2, "") and err.startswith("continuity: error: --out: ") and "symbolic link" in err
    assert err.count("\n") == 1
    assert (list(aimed.iterdir()) == []) if target == "folder" else not aimed.exists()


def test_replay_out_never_writes_into_another_projects_store(repo: Path, capsys: Capture, tmp_path: Path) -> None:
    """Another project's store (a day folder not made yet, its events/, the store itself, a link to it): exit 2,
    one line, nothing written; its `verify` stays intact. A folder merely named like a store's part is taken."""
    point = newest_event(capsys, repo, "demo")["event_id"]
    other = tmp_path / "other"
    other.mkdir()
    assert run(capsys, other, "init", "--project", "other")[0] == 0
    theirs = other / ".agent" / "runtime-continuity"
    (tmp_path / "link").symlink_to(theirs / "events")
    before = contents(theirs)
    for out in (theirs / "events" / "20991231", theirs / "events", theirs, theirs / "new" / "deeper",
                tmp_path / "link" / "20991231"):
        code, stdout, err = run(capsys, repo, "replay", "--until", point, "--out", str(out))
        assert (code, stdout) == (2, "") and "is inside a store" in err and err.count("\n") == 1, out
        assert contents(theirs) == before, out
    assert run(capsys, other, "verify")[0] == 0
    named = tmp_path / "runtime-continuity" / ".agent"  # the parts, in the other order: no store
    assert run(capsys, repo, "replay", "--until", point, "--out", str(named))[0] == 0


def contents(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (relative path: bytes), links included as their targets' names."""
    return {str(path.relative_to(folder)): (os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
            for path in sorted(folder.rglob("*")) if path.is_symlink() or path.is_file()}


def test_a_replay_into_an_earlier_replays_folder_holds_only_its_own_point(repo: Path, capsys: Capture) -> None:
    """Replaying a later point, then an earlier one into the same folder, leaves exactly what a replay of the
    earlier point into a new folder writes (was: the later point's archive, Markdown archive, handoff and team
    documents stayed beside the earlier state.json, which named no archive). A user's own file there stays."""
    from continuity.readside.writers import REPLAY_MARK, REPLAY_WRITES

    point = newest_event(capsys, repo, "demo")["event_id"]
    run(capsys, repo, "archive", "--gate", "agent", "--reason", "later")
    assert run(capsys, repo, "handoff", "create", "--agent", "a1", "--to", "b2", "--message", "take it")[0] == 0
    assert run(capsys, repo, "snapshot", "core", "a1", "T1", "--objective", "ship")[0] == 0
    last = newest_event(capsys, repo, "demo")["event_id"]
    reused, fresh = repo.parent / "incident", repo.parent / "fresh"
    assert run(capsys, repo, "replay", "--until", last, "--out", str(reused))[0] == 0
    written = {path.name for path in reused.iterdir()}
    assert {"archives", "contexts", "handoffs", "team", "state.json"} <= written  # what the sweep must cover
    assert written <= {*REPLAY_WRITES, REPLAY_MARK}, written - {*REPLAY_WRITES, REPLAY_MARK}
    (reused / "my-notes.txt").write_text("mine\n")
    (reused / "team").rename(reused / "team-real")
    (reused / "team").symlink_to(reused / "team-real")  # a link among the swept names is removed, not followed
    assert run(capsys, repo, "replay", "--until", point, "--out", str(reused))[0] == 0
    assert run(capsys, repo, "replay", "--until", point, "--out", str(fresh))[0] == 0
    kept = {"my-notes.txt": b"mine\n"} | {name: data for name, data in contents(reused).items()
                                           if name.startswith("team-real/")}
    assert kept.keys() - {"my-notes.txt"}, "the link's target was followed and emptied"
    assert contents(reused) == contents(fresh) | kept
    assert json.loads((reused / "state.json").read_text())["latest_archive"] is None


def test_replay_out_never_writes_over_a_project_or_a_users_folder(repo: Path, capsys: Capture) -> None:
    """`replay --out .` (the project root) or any folder that holds files and no earlier replay: exit 2, one line,
    nothing written (was: the project's .ai-bridge/context-runtime.json and a user's state.json replaced by the
    point's, so agents read an old resume contract)."""
    run(capsys, repo, "checkpoint", "-m", "first", "--next", "old action")
    point = newest_event(capsys, repo, "demo")["event_id"]
    run(capsys, repo, "checkpoint", "-m", "second", "--next", "NEW action")
    (repo / "state.json").write_text('{"mine": true}')
    notes = repo.parent / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine\n")
    for out in (repo, notes):
        before = listing(out)
        code, stdout, err = run(capsys, repo, "replay", "--until", point, "--out", str(out))
        assert (code, stdout) == (2, "") and "is not empty and holds no earlier replay" in err, out
        assert err.count("\n") == 1 and listing(out) == before, out
    empty = repo.parent / "empty"
    empty.mkdir()
    assert run(capsys, repo, "replay", "--until", point, "--out", str(empty))[0] == 0


def test_a_brief_served_over_mcp_replays_as_served_through_mcp_and_the_cli(tmp_path: Path, capsys: Capture) -> None:
    """The MCP `resume_bundle` tool records its brief; as of it, the tool and the CLI give that brief, as served."""
    from mcp import ClientSession

    from tests.integration.test_mcp_server import make_project, payload, with_session

    root = make_project(tmp_path)

    async def body(session: ClientSession) -> Any:
        await session.call_tool("checkpoint", {"message": "phase one", "next": ["ship phase two"]})
        served = payload(await session.call_tool("resume_bundle", {"record": True, "max_chars": 3000}))
        again = payload(await session.call_tool("resume_bundle", {"as_of": served["recorded"], "format": "json"}))
        return served, again

    served, again = with_session(tmp_path, root, body)
    assert served["recorded"] and "ship phase two" in served["brief"]
    assert (again["format"], again["brief"]) == ("md", served["brief"])  # was: the asker's format, a JSON bundle
    assert run(capsys, root, "resume-bundle", "--as-of", served["recorded"], "--json") == (0, served["brief"], "")


def event_file(root: Path, event_id: str) -> Path:
    """The file of an event in the store at `root`."""
    stamp_node = event_id.removeprefix("RCE-")
    found = list((root / ".agent" / "runtime-continuity" / "events").glob(f"*/{stamp_node}-*.json"))
    assert len(found) == 1
    return found[0]


def test_a_replay_over_unreadable_events_fails_open_or_names_the_event(repo: Path, capsys: Capture) -> None:
    """The brief's last event unreadable: warnings and a brief; the served event itself: exit 1 naming it."""
    _, event = serve(capsys, repo, "--session", "S2")
    damaged = event_file(repo, event["as_of"])
    damaged.write_bytes(b"garbage")
    code, out, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"])
    assert code == 0 and out.startswith("# Resume: demo")  # was: exit 1, "not JSON: ...", naming no event
    lines = err.splitlines()
    # which file, as a catch-up's warning names it (it named none)
    assert lines[0].startswith(
        f"continuity: warning: skipped 1 unreadable event(s) during replay; first: {damaged.name}: ")
    assert lines[1:] == [
        "continuity: warning: the log before this point changed since it was served (0 events of demo now, 1 "
        "then): the brief may differ",
        "continuity: warning: the regenerated brief does not match the hash recorded when it was served"]
    event_file(repo, event["event_id"]).write_bytes(b"garbage")
    code, out, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"])
    assert (code, out) == (1, "") and err.count("\n") == 1
    stored = event_file(repo, event["event_id"])
    assert err.startswith(f"continuity: error: --as-of: event {event['event_id']} ({stored.parent.name}/"
                          f"{stored.name}) cannot be read (not JSON: ")


def test_two_replays_into_one_folder_each_leave_their_whole_output(repo: Path, capsys: Capture) -> None:
    """Two `replay --out R` at once: one swept the files the other was writing (it exited 0 with a partial
    archives/), or failed with "No such file or directory". They take turns on the folder's mark now."""
    import concurrent.futures

    from tests.helpers import cli_process

    early = newest_event(capsys, repo, "demo")["event_id"]
    for index in range(3):
        run(capsys, repo, "archive", "--gate", "agent", "--reason", f"archive {index}")
    late = newest_event(capsys, repo, "demo")["event_id"]
    expected = {}
    shared = repo.parent / "shared"
    for name, point in (("early", early), ("late", late)):  # one after the other (paths inside name the folder)
        assert run(capsys, repo, "replay", "--until", point, "--out", str(shared))[0] == 0
        expected[name] = contents(shared)
    assert expected["early"] != expected["late"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for _ in range(4):
            done = list(pool.map(lambda point: cli_process("replay", "--until", point, "--out", str(shared), cwd=repo),
                                 (early, late)))
            assert [result.returncode for result in done] == [0, 0], [result.stderr for result in done]
            assert contents(shared) in (expected["early"], expected["late"])


def test_a_sweep_that_fails_names_the_path(repo: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the earlier replay that cannot be removed: exit 5, one line naming it (it named the folder)."""
    import errno
    import shutil

    point = newest_event(capsys, repo, "demo")["event_id"]
    run(capsys, repo, "archive", "--gate", "agent", "--reason", "later")
    out = repo.parent / "incident"
    assert run(capsys, repo, "replay", "--until", newest_event(capsys, repo, "demo")["event_id"], "--out",
               str(out))[0] == 0
    stuck = out / "contexts"

    def refuse(path: str, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted", str(stuck / "x.md"))

    monkeypatch.setattr(shutil, "rmtree", refuse)
    code, stdout, err = run(capsys, repo, "replay", "--until", point, "--out", str(out))
    assert (code, stdout) == (5, "") and err.count("\n") == 1
    assert f"({stuck / 'x.md'})" in err and "Operation not permitted" in err


def rewrite(root: Path, event_id: str, new_id: str | None = None, **changes: Any) -> str:
    """The event `event_id` as a writer of ours never wrote it: `changes` at the top (a dict merged one level
    down), under `new_id` (its time too) when given; its file named after its new bytes. The new id."""
    from events import clock, names

    stamp, node = names.parse_event_id(event_id)  # type: ignore[misc]
    old = next((root / ".agent" / "runtime-continuity" / "events").rglob(f"{stamp}-{node}-*.json"))
    event = json.loads(old.read_bytes())
    for key, value in changes.items():
        event[key] = {**event[key], **value} if isinstance(value, dict) else value
    if new_id is not None:
        stamp, node = names.parse_event_id(new_id)  # type: ignore[misc]
        event["event_id"], event["created_at"] = new_id, clock.iso(clock.parse_stamp(stamp))
    raw = json.dumps(event, sort_keys=True, separators=(",", ":")).encode()
    old.unlink()
    folder = old.parent.parent / stamp[:8]
    folder.mkdir(exist_ok=True)
    (folder / names.file_name(stamp, node, hashlib.sha256(raw).hexdigest())).write_bytes(raw)
    return str(event["event_id"])


@pytest.mark.parametrize(("changes", "why"), [
    ({"inputs": {"now": "garbage"}}, "its time 'garbage' is not a time"),
    ({"inputs": {"now": "9999-99-99"}}, "its time '9999-99-99' is not a time"),
    ({"as_of": "RCE-nope"}, "the last event it folded, 'RCE-nope', is no event id"),
])
def test_a_served_brief_whose_record_cannot_be_built_again_shows_the_log_at_that_point(
        repo: Path, capsys: Capture, changes: dict[str, Any], why: str) -> None:
    """A `context.served` whose recorded time is no time ended in an internal error (exit 70), and one whose last
    folded event is no id in "no event 'RCE-nope'" (exit 7, an id the asker never gave). A writer of ours never
    makes either: the replay says so and answers as the log stood at that point, exit 0."""
    _, served = serve(capsys, repo, "--session", "S2")
    damaged = rewrite(repo, served["event_id"], **changes)
    code, out, err = run(capsys, repo, "resume-bundle", "--as-of", damaged)
    assert code == 0 and "wire the CLI" in out, err
    assert err == (f"continuity: warning: {damaged} recorded a brief that cannot be replayed ({why}): shown as "
                   "the log stood at that point\n")


def test_as_of_an_event_stamped_in_the_future_is_refused_as_a_future_time_is(repo: Path, capsys: Capture) -> None:
    """`--as-of 2099-01-01T00:00:00Z` is refused (exit 2), but the id of an event stamped then was taken: the
    replay folded an event every read leaves out until its time, and answered "brief generated 2099-01-01"."""
    code, out, _ = run(capsys, repo, "events", "list", "--json")
    assert code == 0
    first = json.loads(out)["events"][0]["event_id"]
    ahead = f"RCE-20990101_000000_000000-{first.rsplit('-', 1)[1]}"
    rewrite(repo, first, ahead)
    message = f"'{ahead}' is in the future; an audit replays the past\n"
    for command in (["resume-bundle", "--as-of"], ["status", "--as-of"], ["replay", "--out", "r", "--until"]):
        assert run(capsys, repo, *command, ahead) == (2, "", f"continuity: error: {command[-1]}: {message}"), command
    assert not (repo / "r").exists()


@pytest.mark.parametrize("behind", [("worklog", "tasks"), ("overview",)])
def test_a_brief_served_before_its_models_caught_up_replays_as_served(
        repo: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, behind: tuple[str, ...]) -> None:
    """After an upgrade (or a saved model deleted), SessionStart's catch-up runs out of time with the brief's models
    at different points: the rebuilt ones partway, the others at the head. The record took its point from the
    overview alone, so the replay folded every model to one point and showed another next action and other tasks
    than the agent got (with only "does not match the hash" to say so). The record now names each model's point
    when they differ, and the replay folds each model to its own."""
    import continuity.adapters.hooks as hooks
    from continuity.core.store import find_store
    from events.worklog import WorkLogged

    store = find_store(root=str(repo))
    log = store.open_log()
    for start in range(0, 1500, 100):
        log.append_many([WorkLogged(project="demo", message=f"step {n}", host="codex", session_id="s9")
                         for n in range(start, start + 100)])
    assert run(capsys, repo, "task", "create", "--title", "made after the bulk")[0] == 0
    assert run(capsys, repo, "checkpoint", "-m", "bulk done", "--next", "do the task")[0] == 0
    assert run(capsys, repo, "resume-bundle")[0] == 0  # every model caught up and saved
    for name in behind:
        (repo / ".agent/runtime-continuity/local/models" / f"{name}.msgpack").unlink()
    monkeypatch.setattr(hooks, "BRIEF_CATCH_UP_S", 0.0)  # the deadline passes at the first chunk: models cut short
    served = session_start(capsys, repo)
    assert "still catching up" in served, served
    event = served_events(capsys, repo)[-1]
    code, replayed, err = run(capsys, repo, "resume-bundle", "--as-of", event["event_id"])
    assert code == 0 and "does not match" not in err, err
    assert replayed.rstrip("\n") == served.rstrip("\n")
    assert run(capsys, repo, "resume-bundle")[1] != replayed  # caught up now: the brief of today differs
