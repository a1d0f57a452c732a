"""The write modes: `log`, `checkpoint` (§8), `warm` (§6), `archive` (§9), `host-switch` (§10).

Each reads its flags by the contract's rules, calls continuity's decisions through the
log, mirrors a run event (§16) and returns the result object.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from typing import TYPE_CHECKING, Any

from continuity.adapters.compat.args import Args
from continuity.adapters.compat.common import (
    Failure,
    contexts_root,
    csv,
    first,
    iso_ms,
    iso_of_us,
    js_list,
    js_number,
    js_string,
    note_of,
    now_us,
    project_root,
    stored_note,
    truthy,
)
from continuity.adapters.compat.harness import mirror_run_event, run_id_of
from continuity.core.paths import LATEST_LINK
from continuity.worklog.plain import EXIT_CODE_MAX, EXIT_CODE_MIN

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from events.archive import GitFacts

WARM_PROMPT = "\n".join(
    ["---", "🟢 会话预热消息（请发送此消息以启动 5 小时计时窗口）", "---", "准备就绪，等候工作指令。"])
#: The catch-up's notice that it rebuilt the projections (a fresh clone has no `local/`): not a problem, so
#: not on stderr, which stays empty (§1) but for the warnings compat.md lists.
_REBUILT = re.compile(r": projections( \([^)]*\))? rebuilt from [0-9]+ events\Z")
NOTE_KEYS = ("goal", "current_goal", "done", "in_progress", "blocked", "next", "blockers", "pitfalls")


def _recordable(value: str | None, what: str) -> str | None:
    """An id read from the harness's files, or None (with a warning) when no event can hold it (a `/`, `[`, `..`,
    a control character, over 192 characters, a secret's shape): a file the harness wrote never fails the write
    it only fills in for. An id given as a flag is the caller's, and is refused as before."""
    if value is None:
        return None
    import msgspec

    from events.base import Ident
    from events.guard import find_secret

    try:
        msgspec.convert(value, Ident)
    except msgspec.ValidationError:
        why = "it is no id an event can hold"
    else:
        if find_secret(value) is None:
            return value
        why = "it looks like a secret"
    from continuity.adapters.compat.common import PROGRAM
    from continuity.cli.output import warn

    warn([f"{what} is left out of the event: {why}"], PROGRAM)
    return None


@contextlib.contextmanager
def taken_back_on_failure(root: str) -> Iterator[list[str]]:
    """A store this write makes (the first write of a project makes it: there is no init step, I11) is taken away
    again when the write fails (a refused field, a full disk): "nothing written" holds for the store too. Never a
    store that was there, nor one another writer put events into meanwhile. Folders the write made outside the
    store (the contexts folder's `C/P`, listed into what it yields, deepest first) go too while they are empty."""
    from continuity.core.fsio import missing_folders, remove_empty_folders
    from continuity.core.paths import STORE_REL

    store_path = os.path.join(root, STORE_REL)
    made = missing_folders(store_path)
    outside: list[str] = []
    try:
        yield outside
    except BaseException:
        from continuity.core.initialize import take_back

        take_back(made, os.path.join(store_path, "events"))
        remove_empty_folders(outside)
        raise


def store_for_write(root: str, project: str) -> Any:
    """The store at R, created on the first write with no init step and no project .gitignore (I11)."""
    from continuity.core.store import Store

    store = Store(root)
    if not os.path.exists(store.config_path):
        from continuity.core.errors import UsageError
        from continuity.core.initialize import init_store
        from continuity.core.store import check_project_name
        from events.errors import SecretRefused

        try:
            default: str | None = check_project_name(project)
        except (UsageError, SecretRefused):  # "my project" is a valid seed-004 name (I4), not a continuity config
            default = None  # name; a secret-like one is refused by the write that would carry it
        store, _ = init_store(root, project=default, language=None, ignore_in_project=False)
        skipped = [line for line in store.adopted if line.startswith("skipped ")]
    else:
        from continuity.core import seed004

        skipped = seed004.carry_left(store)  # the original's events an earlier first write could not carry
    if skipped:  # the original's files the log could not take: said once, on the write that met them
        from continuity.adapters.compat.common import PROGRAM
        from continuity.cli.output import warn

        warn([f"adopting the original store: {line}" for line in skipped], PROGRAM)
    return store


def _text(value: Any) -> str | None:
    """A note value used as text ("as given"; continuity's fields hold text)."""
    if not truthy(value):
        return None
    return value if isinstance(value, str) else js_string(value)


def warm(args: Args, project: str | None) -> dict[str, Any]:
    """The warm-up prompt; with --auto and --project, a `session_started` run event."""
    result: dict[str, Any] = {
        "ok": True, "action": "warm", "prompt_for_host_paste": WARM_PROMPT,
        "session_continuity_skill_hint": contexts_root() + "/", "duration_hours": 5, "checkpoint_reminder_hours": 4,
    }
    if args.has("auto") and project is not None:
        at = iso_of_us(now_us())
        result["auto_init"] = mirror_run_event(project_root(), at, {
            "type": "session_started", "via": "warm_auto_init", "project": project})
    return result


def work(args: Args, project: str | None, *, checkpoint: bool) -> dict[str, Any]:
    """`log` / `checkpoint`: one work-log event in seed 004's fields."""
    from continuity.adapters.compat.listings import session_of
    from continuity.core.identity import resolve_identity
    from continuity.core.paths import event_relpath
    from continuity.worklog.decide import WorkRequest, decide_checkpoint, decide_log
    from events.errors import EventInvalid, SecretRefused

    assert project is not None
    note, is_null = note_of(args.get("note-json"))
    if is_null:
        raise Failure("invalid_arguments", "--note-json must not be null")
    root = project_root()
    command = args.get("command")
    exit_code: Any = None
    if command is not None and args.get("exit-code") is not None:
        exit_code = js_number(args.values["exit-code"] or "")
        if isinstance(exit_code, float) or not EXIT_CODE_MIN <= (exit_code or 0) <= EXIT_CODE_MAX:
            exit_code = None  # continuity records whole exit codes an OS can return, never an error (§8)
    flags = {"project": project, "host": args.get("host"), "agent_id": args.get("agent-id"),
             "run_id": args.get("run-id"), "session_id": args.get("session-id"),
             "task_id": args.get("task-id"), "mission_id": args.get("mission-id")}
    harness = {"run_id": _recordable(run_id_of(root), "the active run's id (.agent/runs/)"),
               "session_id": _recordable(session_of(root, project), f"the session id of {project} (.agent/sessions/)")}
    # §8: each from its flag (any value), never CONTINUITY_*
    identity = resolve_identity(project, flags, harness, environ={}, names_only=False)
    if identity.host is None:
        identity = type(identity)(**{**identity.fields(), "host": "unknown"})
    request = WorkRequest(
        message=args.get("message") or "",
        type=None if checkpoint else (args.get("type") or "work_log"),
        phase=args.get("phase"),
        done=tuple(js_list(first(args.get("done"), note.get("done")))),
        in_progress=args.get("in-progress") or _text(first(note.get("in_progress"), note.get("blocked"), None)),
        next=tuple(js_list(first(args.get("next"), note.get("next")))),
        blockers=tuple(js_list(first(args.get("blockers"), note.get("blockers"), note.get("pitfalls")))),
        files=tuple(csv(args.get("files"))), artifacts=tuple(csv(args.get("artifacts"))),
        handoffs=tuple(csv(args.get("handoffs"))),
        command=command, exit_code=exit_code,
        command_summary=(args.get("command-summary") or "") if command is not None else None,
        note=stored_note(note) or None,
    )
    def appended(request: WorkRequest) -> tuple[Any, Any]:
        drafts = (decide_checkpoint(identity, request, allow_empty=True) if checkpoint
                  else decide_log(identity, request, allow_empty=True))
        with taken_back_on_failure(root):
            store = store_for_write(root, project)
            return store, store.open_log().append_many(drafts)[0]

    try:
        store, stored = appended(request)
    except (EventInvalid, SecretRefused) as error:  # I12's copy of the note is continuity's own: it never costs a
        # write (§8); a secret-like value only the copy holds (a key the original ignores) is left out with it
        copy_only = (error.field == "note" or error.field.startswith(("note.", "note[")) if isinstance(
            error, SecretRefused) else str(error).startswith(("event too large", "invalid event: note nested")))
        if request.note is None or not copy_only:
            raise
        import msgspec

        from continuity.adapters.compat.common import PROGRAM
        from continuity.cli.output import warn

        store, stored = appended(msgspec.structs.replace(request, note=None))
        why = (f"{error.field} looks like a secret (rule {error.rule})" if isinstance(error, SecretRefused)
               else f"with it, {error}")
        warn([f"the event keeps no copy of --note-json: {why}"], PROGRAM)
    relpath = event_relpath(stored.name)
    event = seed_event(stored.event)
    from continuity.adapters.compat.state import write_state

    write_state(store, stored.name, stored.event)
    mirror_run_event(root, event["created_at"], {
        "type": "runtime_checkpoint" if event["type"] == "checkpoint" else "runtime_log", "project": project,
        "runtime_event": relpath, "phase": event["phase"], "message": event["message"]})
    return {"ok": True, "action": "checkpoint" if checkpoint else "log", "project": project,
            "event_path": os.path.join(store.root, relpath), "event": event}


SEED_EVENT_KEYS = ("event_id", "project", "host", "agent_id", "run_id", "session_id", "task_id", "mission_id",
                   "type", "phase", "message", "summary", "refs", "created_at")


def seed_event(event: Any) -> dict[str, Any]:
    """An event in seed 004's key order (ms time), continuity's own keys after them (I12)."""
    import msgspec

    data = msgspec.to_builtins(event)
    refs = data["refs"]
    refs["commands"] = [{"command": item["command"], "exit_code": item.get("exit_code"),
                         "summary": item.get("summary") or ""} for item in refs["commands"]]
    ordered = {key: data.get(key) for key in SEED_EVENT_KEYS}
    ordered["created_at"] = iso_ms(data["created_at"])
    ordered |= {"kind": event.kind, "v": data["v"], "prev": data.get("prev"), "note": data.get("note"),
                "redacted": data.get("redacted", [])}
    return ordered


# -- archive, host-switch --------------------------------------------------------------------
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _printable(value: Any) -> Any:
    """Text with each control character but tab and line breaks as U+FFFD (an archive's fields hold none; the
    original took any, and an archive fails only for the system's reasons), lists item by item."""
    if isinstance(value, str):
        return _CONTROLS.sub("\ufffd", value)
    if isinstance(value, list):
        return [_printable(item) for item in value]
    return value


def _archive_state_note(note: dict[str, Any]) -> dict[str, Any] | None:
    """§9's state from a note, as a full note for the decision; None without a note key (I10)."""
    if not any(key in note for key in NOTE_KEYS):
        return None
    return {key: _printable(value) for key, value in {
        "goal": _text(first(note.get("goal"), note.get("current_goal"), None)),
        "done": js_list(note.get("done")),
        "in_progress": _text(first(note.get("in_progress"), note.get("blocked"), None)),
        "next": js_list(note.get("next")),
        "blockers": js_list(first(note.get("blockers"), note.get("pitfalls"))),
    }.items()}


def _fitted_git(root: str, branch: str, head: str, status: str, dirty: list[str]) -> tuple[GitFacts, list[str]]:
    """The archive's git facts within what its event holds, and a warning when git's lists were cut.

    The original lists every changed file; an event holds at most 256 KiB, so a tree with a few
    thousand changes made the archive fail whole (`archive_failed`, event too large). The status
    keeps its first lines and the dirty files their first paths (`git status` has them all).
    """
    from continuity.facts import first_lines, first_paths, path_text
    from events.archive import GitFacts

    fitted_status, fitted_dirty = first_lines(status), first_paths(dirty)
    kept = []
    if len(fitted_dirty) != len(dirty):
        kept.append(f"{len(fitted_dirty)} of {len(dirty)} changed files")
    if fitted_status != status:
        kept.append(f"{fitted_status.count(chr(10)) + 1} of {status.count(chr(10)) + 1} lines of its status")
    # the root as text an event holds (a folder named in bytes that are no UTF-8 failed every archive): Node's U+FFFD
    facts = GitFacts(root=path_text(root), branch=branch, head=head, status_short=fitted_status,
                     dirty_files=fitted_dirty)
    if not kept:
        return facts, []
    return facts, [f"git status too long for the archive: it keeps {' and '.join(kept)} (`git status` has them all)"]


def _archive_next_action(note: dict[str, Any]) -> str | None:
    """§9's next_action with a note: its first next, else its `blocked`, else the default; None without one (I10)."""
    from continuity.sessions.archives import SEED_NEXT_ACTION

    if not any(key in note for key in NOTE_KEYS):
        return None
    steps = js_list(note.get("next"))
    found: str = _printable(steps[0] if steps else (_text(note.get("blocked")) or SEED_NEXT_ACTION))
    return found


def take_archive(args: Args, project: str, *, source: str | None, target: str | None, reason: str | None,
                 switch: bool) -> tuple[Any, Any, dict[str, Any]]:
    """Archive through continuity's decision; the store, the stored events and §9's result fields."""
    import msgspec

    from continuity.adapters.compat import common as c
    from continuity.adapters.compat import listings as listing
    from continuity.core.identity import resolve_identity
    from continuity.sessions.decide import ArchiveFacts, ArchiveRequest
    from continuity.sessions.service import archive, own_archive
    from events.archive import CitedFiles

    root = project_root()
    branch, head, status, recent, dirty = c.git_all(root, c.GIT_BRANCH, c.GIT_HEAD, c.GIT_STATUS, c.GIT_RECENT,
                                                     c.GIT_DIRTY)
    git, cut = _fitted_git(root, branch, head, status, c.lines(dirty))
    note, _ = note_of(args.get("note-json"))
    cited = CitedFiles(
        latest_events=tuple(listing.event_listing(root, 12)),
        runs=tuple(listing.json_listing(root, os.path.join(root, ".agent", "runs"), 5)),
        sessions=tuple(listing.json_listing(root, os.path.join(root, ".agent", "sessions"), 5)),
        handoffs=tuple(listing.handoff_listing(root, 8)), artifacts=tuple(listing.artifact_listing(root, 8)),
        recent_commits=recent, next_action=_archive_next_action(note),
    )
    identity = resolve_identity(project, {"project": project, "host": source}, environ={}, names_only=False)
    request = ArchiveRequest(gate=args.get("gate"), full=args.has("full"), reason=_printable(reason), from_host=source,
                             to_host=target, note=_archive_state_note(note), switch=switch)
    # I10 without a note: P's newest structured archive, when the original tool wrote it (no event of the log),
    # is where the state starts, not the log's own work state (which never saw that archive).
    newest = listing.archive_of(root, project) if request.note is None else None
    original: list[str] = []
    with taken_back_on_failure(root) as outside:
        store = store_for_write(root, project)
        outside.extend(_markdown_writable(store, project))
        work_from = original_work(store, project, newest[1], original) if newest is not None else None
        stored, warnings = archive(store, identity, request, facts=ArchiveFacts(git=git, cited=cited),
                                   work_from=work_from)
    warnings = original + [line for line in warnings if not _REBUILT.search(line)] + cut
    if warnings:
        from continuity.cli.output import warn

        warn(warnings, c.PROGRAM)
    record = own_archive(store, project, stored[0].event_id)
    if record is None:
        raise OSError("the archive event was written but its projection is missing")
    from continuity.core.paths import contexts_dir

    folder = os.path.join(contexts_dir(store), project)  # where the archive's Markdown is written
    stamp = record.archive_id.removeprefix("RC-")
    json_path = os.path.join(store.path, "archives", f"{record.archive_id}.json")
    fields = {
        "archivePath": os.path.join(folder, f"ctx_{stamp}.md"), "latestPath": os.path.join(folder, LATEST_LINK),
        "stamp": stamp, "archive": msgspec.to_builtins(record), "archiveJsonPath": json_path,
        "latestJsonPath": os.path.join(store.path, "archives", "latest.json"),
    }
    return store, stored, fields


def original_work(store: Any, project: str, document: Any, warnings: list[str]) -> Callable[[Any], Any] | None:
    """I10's work state when P's newest structured archive is the original tool's (a file of its `archives/`, no
    `event_id`: never an event, so the log's work state never saw it): that archive's state, then P's log and
    checkpoint events created after it, folded as the work log folds them. None for an archive of ours, or one
    whose state or time cannot be read (the log's own work state then).

    The archive's texts are what the original tool wrote, observed here: what looks like a secret is stored
    redacted, with a warning (a note's texts, the user's input, are refused as every write's are)."""
    from continuity.sessions.service import fit_fields
    from events import clock
    from events.archive import ArchivedState
    from events.base import TEXTS_MAX
    from events.guard import redact_tree
    from projections.worklog import MODEL as WORKLOG
    from projections.worklog import WorkState

    if not isinstance(document, dict) or "event_id" in document:
        return None
    state, created = document.get("state"), document.get("created_at")
    if not isinstance(state, dict) or not isinstance(created, str):
        return None
    log = store.open_reader()
    try:
        since = clock.parse_iso(created)
        after = clock.stamp(since) + "~"  # past every event of that microsecond
    except (ValueError, OverflowError):
        return None
    if after[:8] > log.now_limit(log.clock_us()):  # stamped ahead of this clock, as an early event: not trusted
        return None

    def carried_at(event: Any) -> str | None:
        """The time the original gave an event carried from its folder at adoption (core/seed004.py marks it
        with the original's file, id and time, which agree), else None."""
        carried = (event.note or {}).get("seed004")
        if not isinstance(carried, dict):
            return None
        file, event_id, when = carried.get("file"), carried.get("event_id"), carried.get("created_at")
        if not (isinstance(file, str) and isinstance(event_id, str) and isinstance(when, str)):
            return None
        stamp = event_id.removeprefix("RCE-")
        agree = (file == f"events/{stamp}-event.json" and when.startswith(f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T")
                 and event.created_at > when)  # carried later than the original wrote it
        return when if agree else None

    def written_after(event: Any) -> bool:
        """Whether the event came after the archive: by its own time, or for one carried from the original's
        folder, by the time the original gave it."""
        try:
            return clock.parse_iso(carried_at(event) or event.created_at) > since
        except (ValueError, OverflowError):
            return True

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    def texts(value: Any) -> list[str]:
        return [item for item in value if isinstance(item, str) and item] if isinstance(value, list) else []

    # The original's lists have no bound; an event's take 256 items: the newest done, the first next and blockers
    # (as the work log keeps them).
    most = TEXTS_MAX
    applied: list[str] = []
    found = fit_fields(redact_tree({
        "current_goal": text(state.get("current_goal")), "done": texts(state.get("done"))[-most:],
        "in_progress": text(state.get("in_progress")), "next": texts(state.get("next"))[:most],
        "blockers": texts(state.get("blockers"))[:most]}, "state", applied), ArchivedState)
    if applied:
        warnings.append("the original tool's newest archive of this project holds what looks like a secret in its "
                        "state: the new archive stores it as [REDACTED:<rule>]")

    def rebased(_logged: Any) -> Any:
        work = WorkState(current_goal=found["current_goal"], done=list(found["done"]),
                         in_progress=found["in_progress"], next=list(found["next"]),
                         blockers=list(found["blockers"]), updated_at=created)
        limit = log.now_limit(log.clock_us())  # events stamped early wait, as the read models leave them out
        # undecodable, forged and second files of one event are left out, as every read leaves them
        for stored in log.read(after, on_error=lambda name, error: None):
            event = stored.event
            if stored.name[:8] > limit:
                break
            if event.project != project or not written_after(event):
                continue
            fold, passes = WORKLOG.entry_for(type(event))
            if fold is not None and not (passes is not None and passes(event)):
                work = fold(work, stored.name, event)
        return work

    return rebased


def _markdown_writable(store: Any, project: str) -> list[str]:
    """§9: the archive fails (`archive_failed`, the system's error) when its Markdown cannot be written, before
    anything is recorded. The Markdown is written from the archive's event once it is recorded (into the contexts
    folder `continuity` uses: CONTINUITY_CONTEXTS_DIR, config.json's contexts_dir, ~/.agent/contexts): a folder
    that takes no file (not writable, a file in its place) is found here, by making one there and removing it. The
    folders are made as needed (§15, the original's `mkdirSync(recursive)`), a home folder that does not exist too:
    `continuity archive` leaves that one unmade with a warning, but this CLI answered `ok: true` with an archivePath
    where no file was. Returns the folders it made, deepest first (a refusal after it takes them back)."""
    from continuity.core.fsio import missing_folders, remove_empty_folders
    from continuity.core.paths import contexts_dir

    folder = os.path.join(contexts_dir(store), project)
    made = missing_folders(folder)
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".ctx-probe-{os.getpid()}-{os.urandom(4).hex()}")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        os.unlink(probe)
        latest = os.path.join(folder, LATEST_LINK)
        if os.path.isdir(latest) and not os.path.islink(latest):  # the link cannot replace a folder: §9 step 1 fails
            raise IsADirectoryError(errno.EISDIR, "a folder is where the latest.md link belongs", latest)
    except OSError:
        remove_empty_folders(made)
        raise
    return made


def archive_mode(args: Args, project: str | None) -> dict[str, Any]:
    """`archive`: JSON under archives/, the ctx_ Markdown and latest.md; a session_archived run event."""
    assert project is not None
    try:
        store, _, fields = take_archive(args, project, source=args.get("from-host") or args.get("host"),
                                             target=args.get("to-host"), reason=args.get("reason"), switch=False)
    except OSError as error:
        raise Failure("archive_failed", str(error)) from None
    mirror_run_event(store.root, fields["archive"]["created_at"], {
        "type": "session_archived", "project": project, "archive_path": fields["archivePath"],
        "archive_json_path": fields["archiveJsonPath"]})
    return {"ok": True, "action": "archive", "project": project, **fields}


#: §10's four steps for the new host, literally: the original prints `<P>` and `<id>` as they are.
NEXT_STEPS = (
        "1. Read archive body via: runtime-continuity restore --project <P> --load latest",
        "2. Pick up active run via: read .agent/runs/<id>.json events[] "
        "(latest host_switch_initiated tells you where to resume)",
        "3. If the new host uses the same ~/.agent/contexts/, no extra import is required — "
        "the latest.md symlink is already in place.",
        "4. host-only reattach: the archive does NOT carry hook secrets; re-establish Authorization: "
        "token ${secret://<ref>} via the secrets skill if needed.",
)


def host_switch(args: Args, project: str | None) -> dict[str, Any]:
    """`host-switch`: archive, update or create the session, run event, the steps for the new host."""
    from continuity.adapters.compat.harness import record_switch

    assert project is not None
    source = args.get("from-host") or "unknown"
    target = args.get("to-host") or "unknown"
    reason = args.get("reason") or ""
    try:
        store, stored, fields = take_archive(args, project, source=source, target=target, reason=reason or None,
                                             switch=True)
    except OSError as error:
        raise Failure("host_switch_archive_failed", str(error)) from None
    at = iso_ms(stored[-1].event.created_at)
    try:
        session_id = record_switch(store.root, project, target, at, fields["stamp"])
    except (OSError, ValueError) as error:  # the archive and the switch are recorded: not "archive failed"
        from continuity.adapters.compat.common import PROGRAM
        from continuity.cli.output import warn

        why = (error.strerror or str(error)) if isinstance(error, OSError) else str(error)
        warn([f"host switch recorded, but its session file was not written: {why}"], PROGRAM)
        session_id = None
    mirror_run_event(store.root, at, {
        "type": "host_switch_initiated", "project": project, "from_host": source, "to_host": target,
        "reason": reason, "archive_path": fields["archivePath"], "archive_json_path": fields["archiveJsonPath"]})
    result = {"ok": True, "action": "host-switch", "project": project, "from_host": source, "to_host": target,
              "reason": reason, "archive": fields, "session_id": session_id,
              "next_steps_for_new_host": list(NEXT_STEPS)}
    return result
