"""Every feature that writes events: incremental catch-up, a full rebuild and an as-of replay agree.

Random sequences of CLI commands (sessions, hooks, archives, host switches, briefs served,
tasks and runs, team snapshots, roles, park, messages, beats, handoffs, tracked workstreams,
checkpoint moments) run in-process through `continuity.cli.main`, with full catch-ups at
random points between them (the commands themselves catch up only the models they read).
Then the derived files and every registered read model's state must be the same after a
rebuild from the log, and the resume bundle as of the last event must be the current one
apart from its live facts (docs/projections.md, "Views").
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuity.adapters.compat.runtime_continuity import main as compat_main
from continuity.cli import main
from continuity.core.errors import EXIT_INTERNAL
from continuity.core.fsio import SPARE_SUFFIXES
from continuity.core.store import find_store, now_us
from continuity.readside.catchup import load, models_dir
from continuity.readside.replay import models_until
from continuity.readside.writers import refresh
from events import clock, names
from events.filelog import FileEventLog
from events.memlog import MemoryEventLog
from events.worklog import WorkLogged
from projections.registry import REGISTRY
from tests.helpers import environment
from tests.workstream_docs import item, tracked

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hooks"
#: The recorded Claude Code payloads' session, so hooks and commands share one session.
S1 = "8f2c1e9a-4b7d-4c1e-9a3f-2d6b8e0c5a71"
SESSIONS = (S1, "s2")
AGENTS = ("amy", "bo")
ROLES = ("rev", "ops")
HOOKS = ("claude_session_start", "claude_session_start_compact", "claude_post_tool_use_bash",
         "claude_post_tool_use_edit", "claude_post_tool_use_failure_bash", "claude_pre_compact", "claude_stop",
         "claude_session_end")
CHANNEL = {"schema": "coord.checkpoints-channel.v1", "data_type": "MomentAnnotation/test", "api_version": "v1alpha1"}

texts = st.sampled_from(["fix parser", "add tests", "wire CLI", "docs", "refund endpoint", "ship"])
agents = st.sampled_from(AGENTS)
sessions = st.sampled_from(SESSIONS)
picks = st.integers(0, 3)  # which earlier id (task, run, message, handoff) a command acts on
projects = st.sampled_from(["demo", "demo", "other"])  # a store may hold events of several projects

commands = st.one_of(
    # session commands
    st.tuples(st.just("log"), texts, st.sampled_from(["log", "decision", "question"]), st.booleans(), sessions,
              projects),
    st.tuples(st.just("checkpoint"), texts, st.lists(texts, max_size=2), st.lists(texts, max_size=2), sessions,
              projects),
    st.tuples(st.just("archive"), texts, st.sampled_from(["user", "agent"]), st.booleans(), projects),
    st.tuples(st.just("host-switch"), st.sampled_from(["codex", "cursor"]), texts),
    st.tuples(st.just("warm"), sessions, st.sampled_from(["startup", "resume", "compact"])),
    st.tuples(st.just("hook"), st.sampled_from(HOOKS), agents),
    st.tuples(st.just("brief"), sessions, agents),
    # tasks, runs (memories are synthesized from these and session ends)
    st.tuples(st.just("task-create"), texts, st.one_of(st.none(), agents)),
    st.tuples(st.just("task-update"), picks, st.sampled_from(["in_progress", "completed", "blocked", "failed"])),
    st.tuples(st.just("run-start"), picks, agents, sessions),
    st.tuples(st.just("run-complete"), picks, texts),
    # team continuity
    st.tuples(st.just("snapshot"), agents, st.sampled_from(["build", "review"]), texts, st.lists(texts, max_size=2)),
    st.tuples(st.just("role-create"), st.sampled_from(ROLES)),
    st.tuples(st.just("role-claim"), st.sampled_from(ROLES), agents),
    st.tuples(st.just("role-release"), st.sampled_from(ROLES), agents),
    st.tuples(st.just("role-checkpoint"), st.sampled_from(ROLES), texts),
    st.tuples(st.just("park"), agents),
    st.tuples(st.just("send"), agents, agents, texts),
    st.tuples(st.just("ack"), agents, picks),
    st.tuples(st.just("beat"), agents),
    st.tuples(st.just("moments-deliver"), agents),
    # handoffs
    st.tuples(st.just("handoff-create"), agents, agents, texts),
    st.tuples(st.just("handoff-act"), picks, st.sampled_from(["accept", "reject", "close"]), agents),
    # tracked workstreams (seed 002)
    st.tuples(st.just("work-checkpoint"), texts, st.sampled_from(["PENDING", "IN_PROGRESS", "COMPLETED"]),
              st.sampled_from(["WS-1", "WS-2"])),
    st.tuples(st.just("work-close"), st.sampled_from(["WS-1", "WS-2"]), st.sampled_from(["COMPLETED", "CANCELLED"])),
    st.tuples(st.just("work-item-set"), st.sampled_from(["A1", "A2"]),
              st.sampled_from(["IN_PROGRESS", "BLOCKED", "COMPLETED", "CANCELLED"])),
    st.tuples(st.just("work-item-add"), texts),
    st.tuples(st.just("work-validate"), st.sampled_from(["PASS", "FAIL"])),
    st.tuples(st.just("work-cursor"), texts),
    # seed 004's `runtime-continuity` (its archives cite seed 004's facts; its log writes state.json itself)
    st.tuples(st.just("compat"), st.sampled_from(["log", "checkpoint", "archive", "host-switch"]), texts),
    # the log as a sync leaves it: an event from another clone, earlier than the newest
    st.tuples(st.just("merge"), texts),
    # a clock running a day ahead: every later event follows it into the next day's folder
    st.tuples(st.just("tomorrow"), texts),
)


@contextlib.contextmanager
def stdin_of(text: str) -> Iterator[None]:
    """A hook's stdin: the harness's JSON payload."""
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode()))
    try:
        yield
    finally:
        sys.stdin = saved


def init_with_channel(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`init` in the working directory `root`, and team core's checkpoint channel configured."""
    assert main(["init", "--project", "demo"]) == 0
    channel = store_path(root) / "team" / "core" / "_coord" / "bus-v3" / "checkpoints.json"
    channel.parent.mkdir(parents=True)
    channel.write_text(json.dumps(CHANNEL))
    capsys.readouterr()


class Driver:
    """Runs commands in one project and remembers the ids they print."""

    def __init__(self, root: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.root = root
        self.capsys = capsys
        self.ids: dict[str, list[str]] = {"task": [], "run": [], "message": [], "handoff": []}
        self.validations = 0
        self.items = 0
        self.roles: set[str] = set()
        self.workstream = False
        self.merges = 0

    def cli(self, *args: str, agent: str = "amy", session: str = S1, stdin: str | None = None) -> dict[str, Any]:
        """Run one command in-process; its JSON output (or {}) when it succeeded."""
        with environment(CONTINUITY_AGENT=agent, CONTINUITY_SESSION_ID=session, CONTINUITY_HOST="claude-code"), \
                stdin_of(stdin or ""):
            code = main([*args] if stdin is not None else [*args, "--json"])
        out, err = self.capsys.readouterr()
        assert code != EXIT_INTERNAL, (args, err)
        if code != 0 or stdin is not None:
            return {}
        try:
            found: dict[str, Any] = json.loads(out)
        except ValueError:
            return {}
        return found

    def pick(self, kind: str, index: int) -> str:
        """An id a command printed before; the prerequisite is made first when there is none."""
        if not self.ids[kind]:
            self.run(PREREQUISITES[kind])
        known = self.ids[kind]
        return known[index % len(known)] if known else f"{kind}-unknown"

    def role(self, role: str) -> str:
        """A role of team core, created first when this sequence has not created it."""
        if role not in self.roles:
            self.roles.add(role)
            self.cli("role", "create", "core", role)
        return role

    def work_checkpoint(self, doc: dict[str, Any]) -> None:
        """`work checkpoint` of a seed-002 document."""
        path = self.root / ".ai-bridge" / "context-checkpoint.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc))
        if self.cli("work", "checkpoint"):
            self.workstream = True
        path.unlink(missing_ok=True)  # the input, not a derived file (kept when refused)

    def merge(self, text: str) -> None:
        """Land a work-log event from another clone right after the first event, as a sync's union does."""
        store = find_store(root=str(self.root))
        log = store.open_reader()
        first = next(iter(log.read_raw()), None)
        if first is None:
            return
        self.merges += 1
        at = clock.parse_iso(json.loads(first[1])["created_at"]) + self.merges
        other = MemoryEventLog(node="zzzzzzzz", clock_us=lambda: at)
        other.put_raw(*first)
        merged = other.append(WorkLogged(project="demo", message=text, host="codex", session_id="s9"))
        path = Path(log.path_of(merged.name))
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(merged.raw)

    def active_workstream(self) -> None:
        """Start the tracked workstream WS-1 when no checkpoint document has been recorded yet."""
        if not self.workstream:
            self.run(("work-checkpoint", "write the failing test", "IN_PROGRESS", "WS-1"))

    def run(self, command: tuple[Any, ...]) -> None:
        kind, *rest = command
        if kind == "log":
            text, type_, refs, session, project = rest
            extra = ["--handoff", ".agent/handoffs/H-1.json", "--artifact", "out/a.json"] if refs else []
            self.cli("log", text, "--type", type_, *extra, "--project", project, session=session)
        elif kind == "checkpoint":
            text, done, next_, session, project = rest
            self.cli("checkpoint", text, *[f"--done={d}" for d in done], *[f"--next={n}" for n in next_],
                     "--project", project, session=session)
        elif kind == "archive":
            reason, gate, full, project = rest
            self.cli("archive", "--gate", gate, "--reason", reason, *(["--full"] if full else []),
                     "--project", project)
        elif kind == "host-switch":
            to_host, reason = rest
            self.cli("host-switch", "--from-host", "claude-code", "--to-host", to_host, "--reason", reason)
        elif kind == "warm":
            session, source = rest
            self.cli("warm", "--auto", "--source", source, session=session)
        elif kind == "hook":
            name, agent = rest
            payload = (FIXTURES / f"{name}.json").read_text().replace("{cwd}", str(self.root))
            self.cli("hook", "claude-code", stdin=payload, agent=agent)
        elif kind == "brief":
            session, agent = rest
            self.cli("resume-bundle", "--record", session=session, agent=agent)
        elif kind == "task-create":
            title, assign = rest
            found = self.cli("task", "create", "--title", title, *(["--assign", assign] if assign else []))
            if found:
                self.ids["task"].append(found["task_id"])
        elif kind == "task-update":
            index, status = rest
            self.cli("task", "update", self.pick("task", index), "--status", status, "--note", "why")
        elif kind == "run-start":
            index, agent, session = rest
            found = self.cli("run", "start", "--task", self.pick("task", index), agent=agent, session=session)
            if found:
                self.ids["run"].append(found["run_id"])
        elif kind == "run-complete":
            index, summary = rest
            self.cli("run", "complete", self.pick("run", index), "--output-summary", summary)
        elif kind == "snapshot":
            agent, task, objective, next_ = rest
            self.cli("snapshot", "core", agent, task, "--objective", objective, *[f"--next={n}" for n in next_])
        elif kind == "role-create":
            self.roles.add(rest[0])
            self.cli("role", "create", "core", rest[0])
        elif kind == "role-claim":
            role, agent = rest
            self.cli("role", "claim", "core", self.role(role), "--agent", agent)
        elif kind == "role-release":
            role, agent = rest
            self.cli("role", "release", "core", self.role(role), "--agent", agent)
        elif kind == "role-checkpoint":
            role, text = rest
            self.cli("checkpoint", "core", "--role", self.role(role), "--ref", f"notes/{text.replace(' ', '-')}.json")
        elif kind == "park":
            self.cli("role", "claim", "core", self.role("rev"), "--agent", rest[0])  # park snapshots held roles
            self.cli("park", "core", "--agent", rest[0])
        elif kind == "send":
            sender, to, text = rest
            found = self.cli("send", "core", "--agent", sender, "--to", to, "--message", text)
            if found:
                self.ids["message"].append(found["message_id"])
        elif kind == "ack":
            agent, index = rest
            self.cli("inbox", "core", "--agent", agent, "--ack", self.pick("message", index))
        elif kind == "beat":
            self.cli("beat", "core", "--agent", rest[0])
        elif kind == "moments-deliver":
            self.cli("moments", "deliver", "core", "--agent", rest[0])
        elif kind == "handoff-create":
            sender, to, text = rest
            found = self.cli("handoff", "create", "--agent", sender, "--to", to, "--message", text)
            if found:
                self.ids["handoff"].append(found["handoff_id"])
        elif kind == "handoff-act":
            index, action, agent = rest
            self.cli("handoff", action, self.pick("handoff", index), "--agent", agent, "--note", "n")
        elif kind == "work-checkpoint":
            next_action, status, ws_id = rest
            self.work_checkpoint(tracked(ws_id, next_action=next_action,
                                         items=[item("A1", status), item("A2", dependsOn=["A1"])]))
        elif kind == "work-close":
            ws_id, status = rest
            self.work_checkpoint(tracked(ws_id, status=status, next_action="none",
                                         items=[item("A1", "COMPLETED"), item("A2", "COMPLETED")]))
        elif kind == "merge":
            self.merge(rest[0])
        elif kind == "tomorrow":
            store = find_store(root=str(self.root))
            ahead = FileEventLog(store.events_dir, store.local_dir, node=store.node(),
                                 clock_us=lambda: now_us() + 86_400_000_000)
            ahead.append(WorkLogged(project="demo", message=rest[0], host="claude-code", session_id=S1))
        elif kind == "compat":
            action, text = rest
            extra = {"host-switch": ["--gate", "user", "--to-host", "codex"], "archive": ["--gate", "user"]}.get(
                action, ["--gate", "agent", "--message", text, "--next", text])
            with environment(CONTINUITY_SESSION_ID=S1):
                code = compat_main([action, "--project", "demo", *extra])
            assert code in (0, 1), self.capsys.readouterr()  # 1: seed 004's refusals
            self.capsys.readouterr()
        elif kind == "work-item-set":
            item_id, status = rest
            self.active_workstream()
            self.cli("work", "item", "set", item_id, "--status", status, "--note", "n")
        elif kind == "work-item-add":
            self.active_workstream()
            self.items += 1
            self.cli("work", "item", "add", f"B{self.items}", "--title", rest[0])
        elif kind == "work-validate":
            self.active_workstream()
            self.validations += 1
            self.cli("work", "validate", "--id", f"V{self.validations}", "--kind", "unit-tests", "--result", rest[0],
                     "--scope", "all", "--summary", "pytest -q", "--command", "pytest -q", "--repository", "repo-a")
        elif kind == "work-cursor":
            self.active_workstream()
            self.cli("work", "cursor", "set", "--next-action", rest[0])
        else:  # pragma: no cover
            raise AssertionError(kind)


#: What `init` writes and the log: not derived, never rebuilt.
STORE_INPUTS = ("events", "local", "config.json", "README.md", ".gitignore", "event.schema.json")


#: What makes the id a command acts on, when the sequence has made none yet.
PREREQUISITES: dict[str, tuple[Any, ...]] = {
    "task": ("task-create", "triage", "amy"),
    "run": ("run-start", 0, "amy", S1),
    "message": ("send", "bo", "amy", "ping"),
    "handoff": ("handoff-create", "bo", "amy", "take over"),
}


def store_path(root: Path) -> Path:
    return root / ".agent" / "runtime-continuity"


def is_input(relative: tuple[str, ...]) -> bool:
    """What in the store is not derived: the log, machine-local state, config, and the moments channel.

    `team/<team>/_coord/bus-v3/` holds the channel's config (never written) and its outbox
    sink, which receives each moment once and is not a projection (docs/team.md, "the
    checkpoint channel"). The spare file the catch-up keeps beside state.json and projects.json
    (fsio.write_swapped) holds an earlier version of it, and is no document either.
    """
    return relative[0] in STORE_INPUTS or (
        len(relative) > 2 and relative[0] == "team" and relative[2] == "_coord") or (
        len(relative) == 1 and relative[0].startswith(".") and relative[0].endswith(SPARE_SUFFIXES))


def derived_files(root: Path, home: Path) -> dict[str, bytes]:
    """Every derived file's bytes (a symlink: its target), by where it lives; the workstream runtime files as the
    log alone writes them (a write of this clone's adds what it observed of the worktree)."""
    from tests.injected import log_only_runtime

    files: dict[str, bytes] = {}
    bases = {"store": store_path(root), "ai-bridge": root / ".ai-bridge", "contexts": home / ".agent" / "contexts"}
    for label, base in bases.items():
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(base).parts
            if label == "store" and is_input(relative):
                continue
            if label == "ai-bridge" and relative == ("context-checkpoint.json",):
                continue
            if path.is_symlink():
                files[f"{label}/{'/'.join(relative)}"] = b"-> " + os.readlink(path).encode()
            elif path.is_file():
                files[f"{label}/{'/'.join(relative)}"] = path.read_bytes()
    return log_only_runtime(files)


def delete_derived(root: Path, home: Path) -> None:
    """Delete every derived file and the saved read models."""
    store = store_path(root)
    for path in list(store.iterdir()):
        if path.name in STORE_INPUTS:
            continue
        if path.name == "team":
            for team in path.iterdir():
                for entry in team.iterdir():
                    if entry.name != "_coord":
                        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    for name in ("context-runtime.json", "context-runtime.md"):
        (root / ".ai-bridge" / name).unlink(missing_ok=True)
    shutil.rmtree(home / ".agent" / "contexts", ignore_errors=True)
    shutil.rmtree(models_dir(find_store(root=str(root))), ignore_errors=True)
    (store / "local" / "memories-written").unlink(missing_ok=True)


def saved_states(root: Path) -> dict[str, bytes]:
    """Every registered model's saved state, encoded."""
    store = find_store(root=str(root))
    found: dict[str, bytes] = {}
    for name in REGISTRY:
        saved = load(store, REGISTRY[name])
        assert saved is not None, f"model {name} not saved"
        found[name] = msgspec.msgpack.encode(saved.state)
    return found


def last_event(root: Path) -> str | None:
    """The newest event file's name."""
    found = stored_events(root)
    return found[-1][0] if found else None


def stored_events(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every event in log order: (file name, its JSON)."""
    return [(name, json.loads(raw)) for name, raw in find_store(root=str(root)).open_reader().read_raw()]


def served_briefs(root: Path) -> list[str]:
    """The ids of the `context.served` events."""
    return [event["event_id"] for _, event in stored_events(root) if event["kind"] == "context.served"]


#: The bundle's fields computed from live facts (`ViewInputs`, continuity/facts.py), not the log:
#: docs/projections.md "Views" (the time, git, run records, handoff and artifact file states,
#: read-first files) and continuity/sessions/service.py `resume_bundle`. A replay has none of them.
LIVE_KEYS = ("generated_at", "git", "warnings", "read_first", "latest_markdown_archive", "earlier")
AGE_KEYS = ("age", "archive_age", "last_checkpoint_age", "checkpoint_age_seconds", "mentioned", "updated", "started")


def without_live(bundle: Any) -> Any:
    """The bundle without its live facts: the time and ages, git, files on disk, warnings."""
    if isinstance(bundle, dict):
        return {key: without_live(value) for key, value in bundle.items() if key not in AGE_KEYS}
    if isinstance(bundle, list):
        return [without_live(value) for value in bundle]
    return bundle


def comparable_bundle(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle less its live facts (see LIVE_KEYS) and the `as_of` it echoes."""
    data = {key: value for key, value in bundle.items() if key not in LIVE_KEYS and key != "as_of"}
    data["runs"] = {**data["runs"], "files": None}  # `.agent/runs/` record files
    # Handoff and artifact states and addressees are read from their JSON files (ViewInputs
    # `handoff_states`, `handoff_to`, `artifact_states`): which mentions are pending, and
    # for whom, is live, so only the mentions themselves are compared.
    data["artifact_states"] = [entry["path"] for entry in data["artifact_states"]]
    data["pending_handoffs"] = None
    # Which sessions are active and which stale depends on now (DESIGN.md section 4, "Views are
    # not projections"): compare the sessions, not the split.
    sessions = data["sessions"]
    data["sessions"] = {**sessions, "active": None, "stale": sorted(
        (entry for entry in sessions["active"] + sessions["stale"]), key=lambda entry: entry["session_id"])}
    team = data["team"]
    if team is not None:
        team = {key: value for key, value in team.items() if key != "handoffs"}
        data["team"] = team if team["teams"] else None  # without teams it is only the handoffs part
    return without_live(data)  # type: ignore[no-any-return]


def bundle_json(driver: Driver, *extra: str) -> dict[str, Any]:
    with environment(CONTINUITY_AGENT="amy", CONTINUITY_SESSION_ID=S1, CONTINUITY_HOST="claude-code"):
        code = main(["resume-bundle", "--format", "json", *extra])
    out, err = driver.capsys.readouterr()
    assert code == 0, err
    found: dict[str, Any] = json.loads(out)
    return found


steps = st.lists(st.tuples(commands, st.booleans()), min_size=1, max_size=10)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=steps)
def test_catch_up_rebuild_and_replay_agree_for_every_feature(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        sequence: list[tuple[tuple[Any, ...], bool]]) -> None:
    """Random commands of every feature: catch-up at random points equals a rebuild and an as-of replay."""
    root = tmp_path_factory.mktemp("seq") / "proj"
    root.mkdir()
    home = Path(os.environ["HOME"])
    shutil.rmtree(home / ".agent", ignore_errors=True)
    monkeypatch.chdir(root)
    init_with_channel(root, capsys)
    driver = Driver(root, capsys)
    store = find_store(root=str(root))
    for command, catch_up in sequence:
        driver.run(command)
        if catch_up:
            refresh(store, tuple(REGISTRY))
    refresh(store, tuple(REGISTRY))
    incremental, states = derived_files(root, home), saved_states(root)
    assert refresh(store, tuple(REGISTRY)).folded == 0 and derived_files(root, home) == incremental

    last = last_event(root)
    if last is not None and dict(stored_events(root))[last]["kind"] == "context.served":
        # As of a served brief, resume-bundle renders that brief again (docs/projections.md,
        # "Audit replay"), not the log as it stood: end on an event that is not one.
        driver.run(("log", "last word", "log", False, S1, "demo"))
        refresh(store, tuple(REGISTRY))
        incremental, states = derived_files(root, home), saved_states(root)
        last = last_event(root)
    if last is not None:
        replayed = models_until(store.open_reader(), last, [], tuple(REGISTRY))
        assert {name: msgspec.msgpack.encode(state) for name, state in replayed.states.items()} == states
        live = bundle_json(driver)
        as_of = bundle_json(driver, "--as-of", names.id_of_name(last))
        assert comparable_bundle(as_of) == comparable_bundle(live)
        # Each brief served renders again, byte for byte, even when a merge has since brought
        # events stamped before it (docs/projections.md, "Audit replay").
        for served in served_briefs(root):
            assert main(["resume-bundle", "--as-of", served]) == 0
            assert capsys.readouterr().err == ""

    delete_derived(root, home)
    assert main(["rebuild"]) == 0
    capsys.readouterr()
    assert derived_files(root, home) == incremental
    assert saved_states(root) == states
