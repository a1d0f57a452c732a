"""Harness hook handlers: Claude Code, Codex, Cursor and Gemini CLI call `continuity hook <harness>` with JSON on stdin.

Each payload is first put in one shape (continuity/adapters/hook_dialects.py). Each handler
records what happened as events and, for SessionStart, prints the resume brief in the
harness's context-injection field. A hook must never block or break an agent: every path
ends with exit 0; problems go to `local/hooks.log` in the store and one stderr line.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

from continuity.adapters.hook_dialects import brief_output, normalize, store_start
from continuity.adapters.hook_entries import input_problem, lenient_payload, simple_entry, text_of, tool_entry
from continuity.adapters.hook_fast import HOOK_LOCK_S
from continuity.core.identity import Identity, clean_label, clean_name, resolve_identity
from continuity.core.store import Store, find_store
from events.base import CommandRef, Event, Refs
from events.errors import ContinuityError


class HookResult:
    """What a handler produced: stdout text (may be empty), the ids it recorded, and (SessionStart's brief) the
    `context.served` event that records the stdout as served."""

    def __init__(self, stdout: str = "", recorded: list[str] | None = None, *, served: str | None = None) -> None:
        self.stdout = stdout
        self.recorded = recorded or []
        self.served = served


def identity(harness: str, payload: dict[str, Any], store: Store) -> Identity:
    """Who the events of one hook call are from: the harness's payload, else the environment.

    An id that is not valid as given is recorded as a hashed id (`clean_name`), noted in hooks.log.
    """
    given = {"host": harness, "session_id": payload.get("session_id"), "agent_id": payload.get("agent_id")}
    from continuity.tasks.current import with_current_run

    changed: list[tuple[str, str, str]] = []
    who = resolve_identity(store.project, harness=given, clean=clean_name, changed=changed)
    for name, where, value in changed:  # never the id as given: it may be a secret, or hold control characters
        report(store, harness, str(payload.get("hook_event_name") or "?"),
               f"warning: {name} from {where} is not a valid id (or looks like a secret); recorded as {value}",
               quiet=True)
    return with_current_run(who, store.local_dir)


def envelope(harness: str, payload: dict[str, Any], store: Store) -> dict[str, Any]:
    """The identity fields the events of one hook call carry."""
    return identity(harness, payload, store).fields()


def _append(store: Store, events: list[Event]) -> list[str]:
    stored = store.open_log().append_many(events, redact=True)
    return [item.event_id for item in stored]


# -- handlers --------------------------------------------------------------------------------
def session_start(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record the session, then answer with the resume brief (recorded as context.served)."""
    import time

    from continuity import facts

    deadline = time.monotonic() + BRIEF_CATCH_UP_S
    facts.start_git_facts(store.root)  # git reads the tree while the brief's modules load
    from continuity.core.errors import ConfigBroken
    from continuity.sessions.decide import decide_session_start
    from continuity.sessions.service import NOT_RECORDED, resume_bundle
    from events.errors import StoreUnsafe

    recorded: list[str] = []
    export = False  # the session's id into Claude Code's shell (_export_session), once who it is is known
    try:
        who = identity(harness, payload, store)
    except (ConfigBroken, StoreUnsafe) as error:  # never record under a guessed project or through a planted link;
        project, warnings = store.reading_project()  # still serve what the log knows
        said = str(error) if isinstance(error, StoreUnsafe) else warnings[0]
        report(store, harness, "SessionStart", f"{said}; nothing recorded")
        who, record = Identity(project=project, host=harness), False
    else:
        export = harness == "claude-code"
        source = clean_label(payload.get("source")) or "startup"
        started = decide_session_start(
            who, source=source, model=clean_label(payload.get("model")),
            transcript_path=text_of(payload.get("transcript_path"), 1024), cwd=text_of(payload.get("cwd"), 1024),
            message=f"session {source} on {harness}",
        )
        try:
            recorded, record = _append(store, started), True
        except ContinuityError as error:  # the brief is served whatever happens to the recording
            report(store, harness, "SessionStart", f"session not recorded ({error}); the brief is served anyway")
            record = False
    brief = resume_bundle(store, who, fmt="md", max_chars=_max_chars(store, harness), record=record,
                          deadline=deadline, recorded=len(recorded))
    if export:
        sessions = brief.data.get("sessions") or {}
        _export_session(store, who.session_id, {str(seen.get("session_id")) for part in ("active", "stale")
                                                for seen in sessions.get(part) or ()
                                                if isinstance(seen, dict) and seen.get("host")})  # a harness's
    for warning in brief.warnings:  # in the brief already; a record that failed is said on stderr too, as the
        # session's own (hooks.log may fail with it: a full disk)
        report(store, harness, "SessionStart", f"warning: {warning}", quiet=not warning.startswith(NOT_RECORDED))
    if brief.served is not None:
        recorded.append(brief.served.event_id)
    import msgspec  # already loaded by the log; orjson would cost the hook path a few ms more

    return HookResult(msgspec.json.encode(brief_output(harness, brief.text)).decode(), recorded,
                      served=None if brief.served is None else brief.served.event_id)


def _export_session(store: Store, session_id: str | None, harness_sessions: set[str]) -> None:
    """Claude Code's SessionStart gives its hooks `CLAUDE_ENV_FILE`, a script sourced before each Bash command of
    the session: an `export CONTINUITY_SESSION_ID=<id>` there makes the agent's own `continuity` commands (`run
    start`, `log`) the session's, so a run started from the shell is the one its PostToolUse hook attributes
    edits to. Not when the user set the variable, nor for an id a shell word could not hold as it is. A variable
    naming another session a harness started here (`harness_sessions`, the brief's active and stale ones) was not
    the user's: it came with the environment of a session launched from that one's shell (`claude -p` run by an
    agent), whose runs would have become the other session's."""
    from continuity.tasks.current import plain_id

    path = os.environ.get("CLAUDE_ENV_FILE")
    given = os.environ.get("CONTINUITY_SESSION_ID")
    inherited = bool(given) and given != session_id and given in harness_sessions
    if not path or not session_id or (given and not inherited) or not plain_id(session_id):
        return
    line = f"export CONTINUITY_SESSION_ID={session_id}".encode()
    try:
        with open(path, "a+b") as env_file:  # the harness's own file, where it says
            env_file.seek(0)
            if line in env_file.read(16 << 20).splitlines():  # a script of exports: megabytes at the very most
                return  # a compaction or resume of the same session: said already
            size = env_file.seek(0, os.SEEK_END)
            ended = not size or (env_file.seek(size - 1), env_file.read(1))[1] == b"\n"
            env_file.write((b"" if ended else b"\n") + line + b"\n")  # the line before it stays whole
    except OSError as error:
        report(store, "claude-code", "SessionStart", f"CLAUDE_ENV_FILE not written ({error.strerror or error}); "
               "the session's shell commands are not attributed to it", quiet=True)


#: How long SessionStart's two records (the session, the brief served) wait for the append lock (other hooks:
#: hook_fast.HOOK_LOCK_S): the brief comes whatever happens to them, within HOOK_TIMEOUT after its catch-up.
SESSION_START_LOCK_S = 2.0
#: How long SessionStart's brief may spend catching the read models up (a first catch-up after a format change
#: folds the whole log: seconds at 100k events) before it answers from what it folded: the install gives the hook
#: HOOK_TIMEOUT (10 s), after which the harness kills it and the session starts with no brief at all.
BRIEF_CATCH_UP_S = 4.0
#: The same for PreCompact's checkpoint and parking (HOOK_TIMEOUT too), and for SessionEnd's parking (the
#: install gives SessionEnd 2 s, Claude Code about 1.5 s): past it they write nothing that restates state,
#: say so, and the catch-up keeps its progress for the next hook or command.
HOOK_CATCH_UP_S = 4.0
SESSION_END_CATCH_UP_S = 0.8


#: Harnesses that cut a hook's output string past 10,000 characters to a preview (Claude Code, and Codex, whose
#: output follows its shape): their brief never goes past that, whatever `hook_max_chars` asks.
PREVIEW_CUT = {"claude-code": 10_000, "codex": 10_000}


def _max_chars(store: Store, harness: str | None = None) -> int:
    """The brief's budget for hooks: `hook_max_chars` in config.json, within sane bounds (the harness's cut)."""
    from continuity.sessions.brief import DEFAULT_MAX_CHARS, MIN_MAX_CHARS

    value = store.config.get("hook_max_chars")
    found = DEFAULT_MAX_CHARS
    if isinstance(value, int) and not isinstance(value, bool):
        found = min(max(value, MIN_MAX_CHARS), 100_000)
    return min(found, PREVIEW_CUT.get(harness or "", found))


def post_tool_use(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record a file edit or a shell command (secret-like text redacted); ignore other tools."""
    event = _tool_event(harness, payload, store, failed=False)
    return HookResult() if event is None else HookResult(recorded=_append(store, [event]))


def post_tool_use_failure(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record a failed tool call: what was tried, its exit code and the error line."""
    event = _tool_event(harness, payload, store, failed=True)
    return HookResult() if event is None else HookResult(recorded=_append(store, [event]))


def _tool_event(harness: str, payload: dict[str, Any], store: Store, *, failed: bool) -> Event | None:
    """The work-log entry for one tool call (an edit or a command), or None for other tools."""
    from events.worklog import WorkLogged

    env = envelope(harness, payload, store)  # first: a broken config is reported even for a tool not recorded
    entry = tool_entry(payload, failed=failed, root=store.root)
    if entry is None:
        return None
    refs = entry.pop("refs", {})
    return WorkLogged(**env, **entry, refs=Refs(files=tuple(refs.get("files", ())), commands=tuple(
        CommandRef(**command) for command in refs.get("commands", ()))))


def pre_compact(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Checkpoint the session's state before the context is compacted.

    The checkpoint restates the agent's work state, so that state must be whole: when its catch-up cannot
    finish within HOOK_CATCH_UP_S (a rebuild after an upgrade), the compaction is recorded as a log entry
    instead (a checkpoint from a state days old would set next steps back), and nothing is parked.
    """
    import time

    from continuity.readside.decided import OutOfTime, record_decided, viewed
    from continuity.sessions.decide import decide_pre_compact
    from events.errors import ContinuityError
    from projections.registry import REGISTRY

    deadline = time.monotonic() + HOOK_CATCH_UP_S
    who = identity(harness, payload, store)
    note = {key: value for key, value in {
        "trigger": text_of(payload.get("trigger"), 40),
        "custom_instructions": text_of(payload.get("custom_instructions")),
        "last_assistant_message": text_of(payload.get("last_assistant_message")),
    }.items() if value}
    # The checkpoint restates the agent's work state: an entry logged between the read and the append (a new
    # blocker, a next step) would be set back by it, so it is decided again under the lock (readside/decided.py).
    name = _work_model(who)
    decided: list[Any] = []

    def deciding(state: Any) -> list[Any]:
        decided[:] = [_own(state, who)]
        return decide_pre_compact(decided[0], who, note)

    try:
        stored, _ = record_decided(store, REGISTRY[name], who.project, viewed(name, deadline), deciding, redact=True,
                                   what="work state")
    except OutOfTime:
        from continuity.readside.catchup import OUT_OF_TIME as why
        from events.worklog import WorkLogged

        report(store, harness, "PreCompact", f"pre-compact checkpoint not written and no role parked: {why}; "
                                             "the compaction is recorded as a log entry")
        entry = WorkLogged(**who.fields(), phase="pre-compact", note=note or None,
                           message=f"context about to be compacted ({note.get('trigger', 'auto')}); no checkpoint: "
                                   f"{why}")
        return HookResult(recorded=_append(store, [entry]))
    except ContinuityError as error:  # an unsafe store, a write refused (a newest event edited by hand): the roles'
        # park is still tried, and says what it could not do
        report(store, harness, "PreCompact", f"pre-compact checkpoint not written: {error}")
        return HookResult(recorded=_park_held(harness, "PreCompact", store, who, decided[0] if decided else None,
                                              deadline))
    return HookResult(recorded=[item.event_id for item in stored]
                      + _park_held(harness, "PreCompact", store, who, decided[0], deadline))


def own_work(store: Store, who: Identity, deadline: float | None = None) -> Any:
    """The work state a write on the agent's behalf restates: its own (projections/agentwork.py).

    Without a known agent, the project's: one agent, or agents that do not say who they are. None when
    `deadline` passed before the state was caught up (a state days old would restate old work).
    """
    from continuity.readside.query import current_view

    name = _work_model(who)
    view = current_view(store, (name,), deadline=deadline)
    return None if view.out_of_time else _own(view.project(who.project).of(name), who)


def _work_model(who: Identity) -> str:
    """The read model holding the work state a write on `who`'s behalf restates (own_work)."""
    return "agentwork" if who.agent_id else "worklog"


def _own(state: Any, who: Identity) -> Any:
    """`who`'s work state in a project's state of `_work_model(who)`."""
    if not who.agent_id:
        return state
    from projections.agentwork import own_work as agent_work

    return agent_work(state, who.agent_id)


def _park_held(harness: str, hook: str, store: Store, who: Identity, work: Any = None,
               deadline: float | None = None) -> list[str]:
    """Park the roles the agent holds (PreCompact, SessionEnd), with the work log's goal and next steps.

    Fail open: a park that cannot be written is reported (hooks.log and one stderr line), never raised.
    `deadline`: the state it parks from must be caught up by then (park_held).
    """
    from continuity.readside.catchup import OUT_OF_TIME
    from continuity.team.parking import park_held
    from events.errors import ContinuityError

    def content() -> tuple[str | None, tuple[str, ...]]:
        nonlocal work
        if work is None:
            work = own_work(store, who, deadline)
        if work is None:
            raise ContinuityError(f"{OUT_OF_TIME}, so the snapshot's objective and next steps are unknown")
        return work.current_goal or None, tuple(work.next)[:50]

    done = park_held(store, who, content, deadline)
    for line in done.problems:
        report(store, harness, hook, line)
    for line in done.warnings:
        report(store, harness, hook, f"warning: {line}", quiet=True)
    return done.recorded


def simple_event(kind: str) -> Callable[[str, dict[str, Any], Store], HookResult]:
    """Handlers that record one work-log entry (turns, compactions, subagents)."""

    def handle(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
        from events.worklog import WorkLogged

        env = envelope(harness, payload, store)
        entry = simple_entry(kind, payload, record_prompts=store.flag("record_prompts"))
        return HookResult(recorded=_append(store, [WorkLogged(**env, **entry)]))

    return handle


def session_end(harness: str, payload: dict[str, Any], store: Store) -> HookResult:
    """Record the end of the session; archive too when `archive_on_session_end` is set."""
    import time

    from continuity.sessions.decide import ArchiveRequest, decide_session_end
    from events.errors import ContinuityError

    deadline = time.monotonic() + SESSION_END_CATCH_UP_S
    who = identity(harness, payload, store)
    try:
        recorded = _append(store, decide_session_end(who, reason=text_of(payload.get("reason"), 200)))
    except ContinuityError as error:  # a write refused (a newest event edited by hand): the roles' park says so too
        report(store, harness, "SessionEnd", f"session end not recorded: {error}")
        recorded = []
    if store.flag("archive_on_session_end"):
        from continuity.sessions.service import archive

        request = ArchiveRequest(gate="agent", reason="session ended", from_host=harness)
        try:
            stored, _ = archive(store, who, request, redact=True, deadline=deadline)
        except ContinuityError as error:  # the roles are still parked
            report(store, harness, "SessionEnd", str(error))
        else:
            recorded.extend(item.event_id for item in stored)
    recorded.extend(_park_held(harness, "SessionEnd", store, who, deadline=deadline))
    from continuity.sync import auto as autosync

    warning = autosync.start(store, "session_end")
    if warning:
        report(store, harness, "SessionEnd", warning)
    return HookResult(recorded=recorded)


HANDLERS: dict[str, Callable[[str, dict[str, Any], Store], HookResult]] = {
    "SessionStart": session_start,
    "PostToolUse": post_tool_use,
    "PostToolUseFailure": post_tool_use_failure,
    "PreCompact": pre_compact,
    "PostCompact": simple_event("compaction"),
    "Stop": simple_event("turn_end"),
    "SubagentStop": simple_event("subagent_end"),
    "UserPromptSubmit": simple_event("turn_start"),
    "SessionEnd": session_end,
}


def _safe_to_log(store: Store) -> bool:
    """Whether hooks.log may be written: never through a store, `local/` or `events/` that is a symlink (the line
    would land, and a file be made, wherever the link leads)."""
    try:
        store.check_safe(reading=True)
    except (ContinuityError, OSError):
        return False
    return True


def report(store: Store | None, harness: str, hook: str, message: str, *, quiet: bool = False) -> None:
    """Record a hook problem in local/hooks.log (and, unless quiet, one stderr line)."""
    import sys

    from continuity.core.logs import append_error_line
    from continuity.core.text import one_line
    from events.guard import redact_text

    # A store path may hold what a terminal acts on (Gemini CLI shows a hook's stderr to the user): stand-ins, as
    # every other view shows them; what looks like a secret is redacted before the line reaches stderr or hooks.log.
    line = one_line(" ".join(redact_text(message)[0].split()))[:500]
    from continuity.core.logs import log

    log("warning", "hook problem", harness=harness, hook=hook, message=line)
    if store is not None and _safe_to_log(store):
        append_error_line(os.path.join(store.local_dir, "hooks.log"), harness=harness, hook=hook, message=line)
    if not quiet:
        with contextlib.suppress(OSError):  # a full or broken stderr: hooks.log has the line, the hook exits 0
            sys.stderr.write(f"continuity hook: {line}\n")
            sys.stderr.flush()


def run_hook(harness: str, raw: bytes, root: str | None = None) -> HookResult:
    """Handle one hook call: the plain append path when it can vouch for it, else `run_typed`. Never raises."""
    from continuity.adapters.hook_fast import record_plain

    recorded = record_plain(harness, raw, root)
    return run_typed(harness, raw, root) if recorded is None else HookResult(recorded=recorded)


def run_typed(harness: str, raw: bytes, root: str | None = None) -> HookResult:
    """Handle one hook call with the typed handlers. Never raises: a problem becomes a report and an empty result."""
    import msgspec

    from events.errors import ContinuityError

    store: Store | None = None
    hook = "?"
    try:
        problem = input_problem(raw)
        payload = None
        if problem is None:
            try:
                payload = msgspec.json.decode(raw)
            except msgspec.DecodeError as error:
                payload = lenient_payload(raw)  # JSON all the same: a lone surrogate escape, a huge number
                if payload is None:
                    problem = f"hook input is not valid JSON ({error}); nothing recorded"
            except RecursionError:
                problem = "hook input is nested too deeply; nothing recorded"
        if problem is None and not isinstance(payload, dict):
            problem = f"hook input is JSON but not an object ({type(payload).__name__}); nothing recorded"
        if problem is not None or not isinstance(payload, dict):
            report(_store_for_logging(root), harness, hook, problem or "hook input unusable; nothing recorded")
            return HookResult()
        payload = normalize(harness, payload)
        hook = str(payload.get("hook_event_name") or "?")
        handler = HANDLERS.get(hook)
        if handler is None:
            return HookResult()
        from continuity.core.logs import log

        log("debug", "hook called", harness=harness, hook=hook)
        try:
            store = find_store(start=store_start(harness, payload), root=root)
        except ContinuityError as error:
            from continuity.core.errors import StoreNotFound

            # Gemini CLI shows a hook's stderr to the user as a system message: hooks installed for the user (every
            # project) would say so on every call in each project without a store. `doctor` names a project whose
            # installed hooks have none; the other harnesses keep the line (their users see it only when asking).
            report(None, harness, hook, f"{error}; nothing recorded",
                   quiet=harness == "gemini" and isinstance(error, StoreNotFound))
            return HookResult()
        store.lock_wait = SESSION_START_LOCK_S if hook == "SessionStart" else HOOK_LOCK_S
        return handler(harness, payload, store)
    except ContinuityError as error:
        report(store, harness, hook, str(error))
    except Exception as error:  # a hook must never break the agent
        from continuity.core.guard import broken_install

        report(store, harness, hook, broken_install(error) or f"internal error: {type(error).__name__}: {error}")
    return HookResult()


def _store_for_logging(root: str | None) -> Store | None:
    """The store to keep a hooks.log entry in when the payload (and its cwd) is unusable."""
    from events.errors import ContinuityError

    try:
        return find_store(root=root)
    except (ContinuityError, OSError):
        return None
