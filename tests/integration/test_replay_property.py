"""Property: every brief served replays byte for byte, a replay to a time is the state then, and no replay writes.

Random sequences of real commands (work log, checkpoints, archives, host switches, the
SessionStart hook and `resume-bundle --record` in both formats and several budgets, tasks
and runs, seed-002 checkpoint documents, team snapshots and park, config.json changes,
the recall index, a changing work tree, handoff documents and run records, and events from another clone stamped earlier
and brought in by `continuity sync` over a bare remote) run in-process in a real git
clone. Then `resume-bundle --as-of <each context.served>` must print what was served,
`--as-of <a time>` must answer as the live view did then, and neither may write a byte,
even with the saved read models corrupt or gone (docs/projections.md, "Audit replay").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.cli import main
from continuity.core.errors import EXIT_INTERNAL
from tests.helpers import environment
from tests.integration.test_catchup_property import comparable_bundle, stdin_of
from tests.workstream_docs import item, tracked

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
GIT_ENV = {"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.invalid",
           "GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
SESSIONS = ("S1", "S2")
AGENTS = ("amy", "bo")

texts = st.sampled_from(["fix parser", "add tests", "wire CLI", "refund endpoint", "ship it"])
few = st.lists(texts, max_size=2)
commands = st.one_of(
    st.tuples(st.just("log"), texts, st.sampled_from(["log", "decision", "question"])),
    st.tuples(st.just("checkpoint"), texts, few, few, few),
    st.tuples(st.just("archive"), texts),
    st.tuples(st.just("host-switch"), st.sampled_from(["codex", "cursor"])),
    st.tuples(st.just("session-start"), st.sampled_from(SESSIONS), st.sampled_from(AGENTS),
              st.sampled_from(["startup", "compact"])),
    st.tuples(st.just("session-end"), st.sampled_from(SESSIONS)),
    st.tuples(st.just("brief"), st.sampled_from(["md", "json", "--json"]), st.sampled_from([2500, 3000, 8000, 100000]),
              st.sampled_from(SESSIONS), st.sampled_from(AGENTS)),
    st.tuples(st.just("task"), texts, st.sampled_from(AGENTS),
              st.sampled_from(["in_progress", "blocked", "completed"])),
    st.tuples(st.just("run"), st.sampled_from(AGENTS), texts),
    st.tuples(st.just("work-checkpoint"), texts, st.sampled_from(["PENDING", "IN_PROGRESS", "COMPLETED"])),
    st.tuples(st.just("snapshot"), st.sampled_from(AGENTS), texts, few),
    st.tuples(st.just("park"), st.sampled_from(AGENTS)),
    st.tuples(st.just("config"), st.sampled_from(["brief_recall", "hook_max_chars", "contexts_dir"]),
              st.integers(0, 3)),
    st.tuples(st.just("recall"), texts),
    st.tuples(st.just("touch"), st.sampled_from(["app.py", "notes.md", "README.md"])),
    # live files a brief reads: a handoff document (its status and addressee) and a harness's run record
    st.tuples(st.just("handoff"), st.sampled_from(["open", "accepted", None]), st.sampled_from(AGENTS)),
    st.tuples(st.just("run-file"), st.sampled_from(["running", "done", "odd\u0007status"])),
    st.tuples(st.just("other-clone"), texts),  # stamped now, synced in later: earlier than what follows
    st.tuples(st.just("sync")),
    st.tuples(st.just("live"),),  # the view now, to compare with a replay to this time
)
CONFIG_VALUES: dict[str, tuple[Any, ...]] = {
    "brief_recall": (False, 0, 2, True),
    "hook_max_chars": (2500, 3000, 9000, None),
    "contexts_dir": ("ctx-a", "ctx-b", None, None),
}


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout (fails the test when git fails)."""
    result = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                            env={**os.environ, **GIT_ENV})
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


class World:
    """Clone `a` (where the agent works), clone `b` (a teammate's), their bare remote; what `a` served."""

    def __init__(self, base: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys
        self.remote = base / "remote.git"
        git(base, "init", "-q", "--bare", "-b", "main", str(self.remote))
        self.a, self.b = base / "a", base / "b"
        git(base, "clone", "-q", str(self.remote), str(self.a))
        assert self.cli(self.a, "init", "--project", "demo")[0] == 0
        (self.a / "app.py").write_text("print(1)\n")
        git(self.a, "add", "app.py", ".gitignore")
        git(self.a, "commit", "-q", "-m", "start")
        git(self.a, "push", "-q", "origin", "main")
        git(base, "clone", "-q", str(self.remote), str(self.b))
        assert self.cli(self.b, "init", "--project", "demo")[0] == 0
        #: (event id, what the command printed, the format it asked for) of each brief served.
        self.served: list[tuple[str, str, str]] = []
        #: (time, the JSON bundle then) of each live view taken.
        self.live: list[tuple[str, dict[str, Any]]] = []
        self.synced_in_after: set[int] = set()  # indexes of live views a later sync may have changed
        self.pending_other = False

    def cli(self, root: Path, *args: str, stdin: str | None = None, agent: str = "amy",
            session: str = "S1") -> tuple[int, str, str]:
        """One command in-process in clone `root`: (exit code, stdout, stderr)."""
        self.capsys.readouterr()
        cwd = os.getcwd()
        os.chdir(root)
        try:
            with environment(CONTINUITY_AGENT=agent, CONTINUITY_SESSION_ID=session, CONTINUITY_HOST="claude-code",
                             **GIT_ENV), stdin_of(stdin or ""):
                code = main(list(args))
        finally:
            os.chdir(cwd)
        out, err = self.capsys.readouterr()
        assert code != EXIT_INTERNAL, (args, err)
        return code, out, err

    def newest_served(self) -> str:
        """The id of the newest `context.served` event in clone `a`."""
        code, out, err = self.cli(self.a, "events", "list", "--kind", "context.served", "--json")
        assert code == 0, err
        found: str = json.loads(out)["events"][-1]["event_id"]
        return found

    def count_served(self) -> int:
        code, out, _ = self.cli(self.a, "events", "list", "--kind", "context.served", "--json")
        return int(json.loads(out)["count"]) if code == 0 else 0

    def config(self, key: str, pick: int) -> None:
        """Change one option of clone a's config.json (None: remove it)."""
        path = self.a / ".agent" / "runtime-continuity" / "config.json"
        config = json.loads(path.read_text())
        value = CONFIG_VALUES[key][pick]
        if value is None:
            config.pop(key, None)
        else:
            config[key] = str(self.a.parent / value) if key == "contexts_dir" else value
        path.write_text(json.dumps(config))

    def hook(self, name: str, session: str, agent: str, **fields: str) -> tuple[int, str, str]:
        payload = json.loads((FIXTURES / f"{name}.json").read_text().replace("{cwd}", str(self.a)))
        payload.update(session_id=session, **fields)
        return self.cli(self.a, "hook", "claude-code", stdin=json.dumps(payload), agent=agent, session=session)

    def run(self, command: tuple[Any, ...]) -> None:
        kind, *rest = command
        a = self.a
        if kind == "log":
            text, type_ = rest
            self.cli(a, "log", text, "--type", type_, "--file", "app.py")
        elif kind == "checkpoint":
            text, next_, blocked, done = rest
            self.cli(a, "checkpoint", "-m", text, *[f"--next={n}" for n in next_],
                     *[f"--blocker={b}" for b in blocked], *[f"--done={d}" for d in done])
        elif kind == "archive":
            self.cli(a, "archive", "--gate", "agent", "--reason", rest[0])
        elif kind == "host-switch":
            self.cli(a, "host-switch", "--from-host", "claude-code", "--to-host", rest[0], "--reason", "quota",
                     "--gate", "user")
        elif kind == "session-start":
            session, agent, source = rest
            before = self.count_served()
            code, out, err = self.hook("claude_session_start", session, agent, source=source)
            assert code == 0, err
            assert self.count_served() == before + 1, "the SessionStart brief was not recorded"
            self.served.append((self.newest_served(), json.loads(out)["hookSpecificOutput"]["additionalContext"],
                                "md"))
        elif kind == "session-end":
            self.hook("claude_session_end", rest[0], "amy")
        elif kind == "brief":
            fmt, max_chars, session, agent = rest
            asked = ["--json"] if fmt == "--json" else ["--format", fmt]
            code, out, err = self.cli(a, "resume-bundle", "--record", *asked, "--max-chars", str(max_chars),
                                      agent=agent, session=session)
            assert code == 0 and "not recorded" not in err, err
            self.served.append((self.newest_served(), out, "md" if fmt == "md" else "json"))
        elif kind == "task":
            title, agent, status = rest
            code, out, _ = self.cli(a, "task", "create", "--title", title, "--assign", agent, "--json")
            if code == 0:
                self.cli(a, "task", "update", json.loads(out)["task_id"], "--status", status, "--note", "why")
        elif kind == "run":
            agent, summary = rest
            code, out, _ = self.cli(a, "task", "create", "--title", summary, "--json")
            task = json.loads(out)["task_id"] if code == 0 else None
            if task:
                code, out, _ = self.cli(a, "run", "start", "--task", task, "--json", agent=agent)
                if code == 0:
                    self.cli(a, "run", "complete", json.loads(out)["run_id"], "--output-summary", summary)
        elif kind == "work-checkpoint":
            next_action, status = rest
            path = a / ".ai-bridge" / "context-checkpoint.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(tracked("WS-1", next_action=next_action,
                                               items=[item("A1", status), item("A2", dependsOn=["A1"])])))
            self.cli(a, "work", "checkpoint")
            path.unlink(missing_ok=True)
        elif kind == "snapshot":
            agent, objective, next_ = rest
            self.cli(a, "snapshot", "core", agent, "build", "--objective", objective, *[f"--next={n}" for n in next_])
        elif kind == "park":
            self.cli(a, "role", "create", "core", "rev")
            self.cli(a, "role", "claim", "core", "rev", "--agent", rest[0])
            self.cli(a, "park", "core", "--agent", rest[0])
        elif kind == "config":
            self.config(*rest)
        elif kind == "recall":
            self.cli(a, "recall", rest[0])
        elif kind == "touch":
            with (a / rest[0]).open("a") as file:
                file.write("changed\n")
        elif kind == "handoff":
            status, to = rest
            self.cli(a, "log", "handing over", "--handoff", ".agent/handoffs/H-1.json", "--artifact", "out/a.json")
            path = a / ".agent" / "handoffs" / "H-1.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            if status is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(json.dumps({"status": status, "to": {"agent": to}}))
        elif kind == "run-file":
            path = a / ".agent" / "runs" / "R-1.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"status": rest[0]}))
        elif kind == "other-clone":
            self.cli(self.b, "checkpoint", "-m", f"b: {rest[0]}", f"--next=b: {rest[0]}", agent="bo", session="SB")
            self.pending_other = True
        elif kind == "sync":
            code, _, err = self.cli(self.b, "sync")
            assert code == 0, err
            code, _, err = self.cli(a, "sync")
            assert code == 0, err
            if self.pending_other:  # the live views taken before hold fewer events than the log now does
                self.synced_in_after.update(range(len(self.live)))
                self.pending_other = False
        elif kind == "live":
            code, out, err = self.cli(a, "resume-bundle", "--format", "json")
            assert code == 0, err
            bundle = json.loads(out)
            self.live.append((bundle["generated_at"], bundle))
        else:  # pragma: no cover
            raise AssertionError(kind)


def tree(root: Path, home: Path) -> dict[str, tuple[int, int, str]]:
    """Every path under the clone and HOME: (mtime, size, link target or '')."""
    found = {}
    for base in (root, home):
        for path in sorted(base.rglob("*")):
            if ".git" in path.relative_to(base).parts:
                continue
            info = path.lstat()
            found[str(path)] = (info.st_mtime_ns, info.st_size, os.readlink(path) if path.is_symlink() else "")
    return found


def assert_replays(world: World, home: Path) -> None:
    """Each served brief replays as printed; each live view replays as it was; nothing is written."""
    before = tree(world.a, home)
    for event_id, printed, fmt in world.served:
        code, out, err = world.cli(world.a, "resume-bundle", "--as-of", event_id, "--format", fmt)
        assert (code, err) == (0, ""), (event_id, err)
        assert out == printed, event_id
    for index, (at, bundle) in enumerate(world.live):
        if index in world.synced_in_after:
            continue  # a sync has since brought events stamped before this view: the log then was shorter
        code, out, err = world.cli(world.a, "resume-bundle", "--as-of", at, "--format", "json")
        assert code == 0, err
        assert comparable_bundle(json.loads(out)) == comparable_bundle(bundle), at
    assert tree(world.a, home) == before, "a replay wrote to the store"


def spoil_read_models(root: Path) -> None:
    """Saved read models corrupt, derived files gone: a replay must not need them."""
    store = root / ".agent" / "runtime-continuity"
    for saved in (store / "local" / "models").glob("*"):
        saved.write_bytes(b"\x00not a model")
    for derived in ("state.json", "projects.json"):
        (store / derived).unlink(missing_ok=True)
    shutil.rmtree(store / "archives", ignore_errors=True)


steps = st.lists(commands, min_size=1, max_size=12)


@pytest.mark.stress
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=steps, last_brief=st.sampled_from(["md", "json"]))
def test_every_served_brief_replays_byte_for_byte(
        tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
        sequence: list[tuple[Any, ...]], last_brief: str) -> None:
    """Random commands: each brief served replays as served, each live view replays as it was, no replay writes."""
    home = Path(os.environ["HOME"])
    world = World(tmp_path_factory.mktemp("replay"), capsys)
    # a teammate's event stamped before everything here, and a sync at the end that brings it in
    prologue = [("other-clone", "early work")]
    epilogue = [("brief", last_brief, 8000, "S1", "amy"), ("sync",), ("live",)]
    for command in [*prologue, *sequence, *epilogue]:
        world.run(command)
    assert world.served
    assert_replays(world, home)
    spoil_read_models(world.a)
    assert_replays(world, home)
