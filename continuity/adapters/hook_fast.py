"""`continuity hook <harness>` as harnesses run it: the plain append path first, the typed handlers otherwise.

The record-only hooks (PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop,
SubagentStop, PostCompact) append one work-log entry, and SessionEnd one `session.ended`
when it has nothing else to do (no agent whose roles to park, no archive or sync to start
after it). `record_plain` does that without
loading msgspec (events/plain.py), for a payload it can vouch for; anything else (another
hook, a payload msgspec would read otherwise, a broken config, a secret to redact, a
field over its limit) goes to `continuity.adapters.hooks.run_typed`, which then gives
the answer of record. Nothing is written before that choice is made.
"""

from __future__ import annotations

import sys

from continuity.adapters.hook_dialects import ack, normalize, store_start
from continuity.adapters.hook_entries import MAX_STDIN, input_problem, simple_entry, text_of, tool_entry
from continuity.core import store as stores
from continuity.core.idfields import clean_name, resolve_fields
from continuity.core.store import Store, find_store
from events import plain
from events.errors import ContinuityError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Hook -> what the plain path records for it (a tool entry, or the `simple_entry` kind).
PLAIN_HOOKS = {
    "PostToolUse": "tool", "PostToolUseFailure": "tool_failed", "PostCompact": "compaction", "Stop": "turn_end",
    "SubagentStop": "subagent_end", "UserPromptSubmit": "turn_start", "SessionEnd": "session_end",
}


def handle(harness: str, root: str | None) -> int:
    """Read the hook's stdin, handle it, print what the harness should see; always 0.

    Whatever fails on the way, even the report of a problem (no file descriptor left to import the module that
    reports, no memory for the payload), ends in exit 0 and, if stderr takes it, one line naming the failure: a
    hook never blocks the agent (such a failure ended in the CLI's "internal error", exit 70)."""
    try:
        return _handle(harness, root)
    except Exception as error:
        try:
            from continuity.core.guard import broken_install

            why = getattr(error, "strerror", None)  # never the error's text: it may quote a path or a payload
            said = broken_install(error) or f"{type(error).__name__}{': ' + why if why else ''}"
            sys.stderr.write(f"continuity hook: not handled ({said}); nothing recorded\n")
            sys.stderr.flush()
        except Exception:  # no stderr either: the exit code is all the harness can be told
            pass
        return 0


def _handle(harness: str, root: str | None) -> int:
    raw, tail = _payload()
    if raw is None:  # a payload is written and closed at once: recording it later could outlive the harness
        from continuity.adapters.hooks import _store_for_logging, report

        report(_store_for_logging(root), harness, "?", f"hook input not closed within {INPUT_SECONDS:g} s; nothing "
               "recorded")
        return 0
    served: str | None = None
    if record_plain(harness, raw, root) is None:
        from continuity.adapters.hooks import run_typed

        result = run_typed(harness, raw, root=root)
        stdout, served = result.stdout, result.served
    else:
        stdout = ""
    stdout = stdout or ack(harness, raw, tail[-TAIL_BYTES:], whole=len(tail) <= TAIL_BYTES) or ""
    if stdout:
        from continuity.core.guard import STARTED_CLOSED

        undelivered = "stdout was closed when the hook started" if "stdout" in STARTED_CLOSED else None
        try:  # UTF-8 whatever the locale: harnesses read a hook's output as UTF-8 (JSON's own encoding)
            sys.stdout.flush()
            sys.stdout.buffer.write((stdout + "\n").encode("utf-8", "backslashreplace"))
            sys.stdout.flush()
        except OSError as error:  # a full or broken stdout (or one past `ulimit -f`): the hook still exits 0
            undelivered = str(error.strerror or error)
        if undelivered is not None and served is not None:  # a brief recorded as served that did not reach the
            # harness whole: hooks.log says so
            from continuity.adapters.hooks import _store_for_logging, report

            report(_store_for_logging(root), harness, "SessionStart", f"output not delivered whole ({undelivered}): "
                   f"the harness got none or part of the brief {served} records")
    return 0


#: How long a hook's append waits for the store's append lock before it records nothing and says so (a sync installs
#: its events under that lock: seconds for a big one). The install gives a hook 10 s; a holder stopped mid-append
#: (Ctrl-Z, a hung mount) must not hold the agent up that long on every tool call.
HOOK_LOCK_S = 5.0


#: The most of an oversized payload a hook reads and drops (a stdin that never ends is not waited on past it).
DRAIN_BYTES = 64 * 1024 * 1024


#: How long a hook waits for its input to end (the install gives a hook 10 s; a harness writes its payload and
#: closes it at once). Past it the hook records nothing: the harness may have given up on it.
INPUT_SECONDS = 10.0


def _payload() -> tuple[bytes | None, bytes]:
    """stdin's bytes (up to MAX_STDIN + 1: never more than the limit in memory), b"" when there is no stdin, None
    when it has not ended within INPUT_SECONDS; and, past the limit, the end of what was read and dropped (its last
    TAIL_BYTES + 1 bytes: all of it, read right after the kept ones, when it is no longer than TAIL_BYTES), for
    `ack`."""
    import time

    deadline = time.monotonic() + INPUT_SECONDS
    if sys.stdin is None:  # closed
        return b"", b""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # a stream with no file under it (an embedding program's): read as it is
        try:
            return sys.stdin.buffer.read(MAX_STDIN + 1), b""
        except (OSError, ValueError, AttributeError):
            return b"", b""
    try:
        found = _read(fd, MAX_STDIN + 1, deadline)
        if found is not None and len(found) > MAX_STDIN:
            return found, _read(fd, DRAIN_BYTES, deadline, keep=False) or b""
        return found, b""
    except (OSError, ValueError):
        return b"", b""


#: How much of an oversized payload's dropped end is kept for `ack`.
TAIL_BYTES = 64 * 1024


def _read(fd: int, limit: int, deadline: float, *, keep: bool = True) -> bytes | None:
    """Up to `limit` bytes of `fd` until its end; None when it has not ended by `deadline` (`time.monotonic()`).

    `keep=False` drops what it reads but its last TAIL_BYTES + 1 (returned): the rest of an oversized payload (a hook
    that exits with its stdin unread makes the harness's write of it fail with EPIPE, which a harness may not
    expect from a hook it ran)."""
    import os
    import select
    import time

    chunks: list[bytes] = []
    size = 0
    while size < limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, min(limit - size, 1 << 20))
        if not chunk:
            break
        size += len(chunk)
        if keep:
            chunks.append(chunk)
        else:
            chunks = [(chunks[0] if chunks else b"")[-TAIL_BYTES - 1:] + chunk[-TAIL_BYTES - 1:]]
    return b"".join(chunks) if keep else (chunks[0][-TAIL_BYTES - 1:] if chunks else b"")


def record_plain(harness: str, raw: bytes, root: str | None = None) -> list[str] | None:
    """The event ids recorded for a record-only hook by the plain path; None when the typed handlers must run.

    None is returned before anything is written. Once the append has begun, a failure is
    reported as the typed handlers report it (local/hooks.log and one stderr line) and
    the call counts as handled: it must not be retried.
    """
    try:
        decided = _decide(harness, raw, root)
    except Exception:  # plain.Unsure, or anything unforeseen: the typed path decides (nothing was written)
        return None
    if decided is None:
        return []
    store, hook, tree = decided
    try:
        sealed = plain.append(store.open_folder(), store.node(), stores.now_us, [tree])
    except ContinuityError as error:
        _report(store, harness, hook, str(error))
        return []
    except Exception as error:  # a hook must never break the agent
        from continuity.core.guard import broken_install

        _report(store, harness, hook, broken_install(error) or f"internal error: {type(error).__name__}: {error}")
        return []
    return [item.tree["event_id"] for item in sealed]


def _decide(harness: str, raw: bytes, root: str | None) -> tuple[Store, str, dict[str, Any]] | None:
    """(store, hook, prepared draft), or None for a tool call nothing is recorded for; Unsure otherwise."""
    if input_problem(raw) is not None:
        raise plain.Unsure("input problem")
    payload = plain.loads(raw)
    if not isinstance(payload, dict):
        raise plain.Unsure("not an object")
    payload = normalize(harness, payload)
    hook = str(payload.get("hook_event_name") or "?")
    what = PLAIN_HOOKS.get(hook)
    if what is None:
        raise plain.Unsure(f"hook {hook}")
    store = find_store(start=store_start(harness, payload), root=root)
    store.lock_wait = HOOK_LOCK_S
    project = store.project  # StoreUnsafe, ConfigBroken: the typed path reports them
    given = {"host": harness, "session_id": payload.get("session_id"), "agent_id": payload.get("agent_id")}
    changed: list[tuple[str, str, str]] = []
    who = resolve_fields(project, harness=given, clean=clean_name, changed=changed)
    if changed:
        raise plain.Unsure("an id replaced by a hashed one")  # the typed path notes it in hooks.log
    from continuity.tasks.current import current_run_changes

    who.update(current_run_changes(who["run_id"], who["session_id"], who["task_id"], store.local_dir))
    if what == "session_end":
        return store, hook, plain.prepare(plain.complete("session.ended", {**who, **_session_end(payload, store, who)}))
    if what in ("tool", "tool_failed"):
        entry = tool_entry(payload, failed=what == "tool_failed", root=store.root)
        if entry is None:
            return None
    else:
        entry = simple_entry(what, payload, record_prompts=store.flag("record_prompts"))
    return store, hook, plain.prepare(plain.complete("work.logged", {**who, **entry}))


def _session_end(payload: dict[str, Any], store: Store, who: dict[str, Any]) -> dict[str, Any]:
    """The fields of `session.ended`; Unsure when the typed handler has more to do (park, archive, sync)."""
    from continuity.sync.auto import wanted

    if who.get("agent_id") or store.flag("archive_on_session_end") or wanted(store, "session_end"):
        raise plain.Unsure("session end with roles to park, an archive or a sync to start")
    return {"reason": text_of(payload.get("reason"), 200), "message": "session ended"}


def _report(store: Store, harness: str, hook: str, message: str) -> None:
    from continuity.adapters.hooks import report

    report(store, harness, hook, message)
