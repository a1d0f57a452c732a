"""`snapshot` over plain data: the decision of decide.py and the documents of files.py for the plain path.

Same request, same event (as `msgspec.to_builtins` would give it), same document bytes as
the team read model's writer (`pretty_json`). Where decide.py raises a UsageError this raises
`Unsure`, so the msgspec path runs and says it. Properties in tests/integration/test_plain_snapshot.py
hold the two paths to the same event files, output and documents.
"""

from __future__ import annotations

import json
import os

from events import clock, lazyre, osfs
from events.names import ISO_TIME
from events.plain import Unsure, complete

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NOT_SEGMENT = lazyre.pattern(r"[^A-Za-z0-9._-]+")
_DOTS = lazyre.pattern(r"\.{2,}")
SCHEMA = "coord.teams.continuity.v1"
POINTER_SCHEMA = "coord.continuity-latest.v1"
POINTER_NAME = "LATEST.json"


def task_slug(task: str) -> str:
    """The task as one path segment: runs of other characters become `-`, runs of dots one dot, at most 128
    characters, no `-`, `.` or `_` at the start (an id starts with a letter or digit), no `-` or `.` at the end.
    A slug is its own slug, so `resume` finds a task by either name.
    A name with other than ASCII characters gets its letters without their accents and a digest of the name (NFC:
    typed on a Mac or elsewhere, one name): its other letters (`fix 登录`, `fix 注册`) became one `fix`, two
    tasks in one snapshot, and a name of such letters alone was refused.
    The pointer's own name is refused: that task's folder would stand where the agent's `LATEST.json` belongs."""
    digest, letters = "", task
    if not task.isascii():
        import hashlib
        import unicodedata

        named = unicodedata.normalize("NFC", task).encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(named).hexdigest()[:8]
        # `é` as `e`, whichever form it was typed in (its accent apart, then left out)
        letters = "".join(char for char in unicodedata.normalize("NFKD", task) if not unicodedata.combining(char))
    slug = _segment(letters, 119 if digest else 128)
    slug = f"{slug}-{digest}" if slug and digest else slug or digest
    if not slug or names_pointer(slug):
        from continuity.core.errors import UsageError

        why = "is the name of the agent's LATEST.json pointer" if slug else "has no characters usable in a name"
        raise UsageError(f"snapshot: task {task!r} {why}")
    return slug


def slug_before_digests(task: str) -> str:
    """The slug an earlier release saved a task of other than ASCII characters under (those characters as `-`, no
    digest: `café` as `caf`), so `resume` still finds such a snapshot by the name it was given."""
    return _segment(task, 128)


def _segment(task: str, limit: int) -> str:
    """Runs of other characters as `-`, runs of dots as one, at most `limit` characters, trimmed at both ends."""
    from events.guard import cut  # a cut that splits a token keeps its first characters, which match no rule

    return cut(_DOTS().sub(".", _NOT_SEGMENT().sub("-", task)), limit).lstrip("-._").rstrip("-.")


def names_pointer(task: str) -> bool:
    """Whether a task's folder would be the agent's pointer file (in any case: some file systems ignore it)."""
    return task.lower() == POINTER_NAME.lower()


def snapshot_relpath(team: str, agent: str, task: str) -> str:
    """Where a task's snapshot document lives, relative to the store."""
    return f"team/{team}/member/{agent}/continuity/{task}/latest.json"


def pointer_relpath(team: str, agent: str) -> str:
    """Where an agent's newest-snapshot pointer lives, relative to the store."""
    return f"team/{team}/member/{agent}/continuity/{POINTER_NAME}"


def snapshot_event(request: dict[str, Any], identity: dict[str, Any], now_us: int) -> dict[str, Any]:
    """The draft of `decide_snapshot` as plain data; Unsure where it refuses."""
    if not request["objective"].strip():
        raise Unsure("empty objective")
    percent = request["context_used_percent"]
    if percent is not None and not 0 <= percent <= 100:
        raise Unsure("context percent out of range")
    try:
        task = task_slug(request["task"])
    except Exception as error:  # the UsageError: said by the msgspec path
        raise Unsure(str(error)) from None
    fields = {**identity, "agent_id": identity["agent_id"] or request["agent"]}
    return complete("snapshot.taken", {
        **fields, "team": request["team"], "agent": request["agent"], "task": task,
        "objective": request["objective"], "decisions": filled(request["decisions"]),
        "next_actions": filled(request["next_actions"]), "open_questions": filled(request["open_questions"]),
        "artifacts": filled(request["artifacts"]), "context_used_percent": percent,
        "transcript_path": request["transcript_path"], "taken_at": clock.iso(now_us),
        "message": f"snapshot {request['team']}/{request['agent']}/{task}"})


def filled(items: tuple[str, ...]) -> tuple[str, ...]:
    """The list items that say something: `--next ""` (an empty shell variable) adds no empty action."""
    return tuple(item for item in items if item.strip())


def checkpoint_id(event: dict[str, Any]) -> str:
    """`CHK-<created_at>-<task>`."""
    return f"CHK-{event['created_at']}-{event['task']}"


def document(event: dict[str, Any]) -> dict[str, Any]:
    """The snapshot document (`latest.json`) of a sealed snapshot event, keys in the seed's order."""
    return {
        "schema": SCHEMA, "checkpoint_id": checkpoint_id(event), "agent": event["agent"], "task": event["task"],
        "objective": event["objective"], "decisions": list(event["decisions"]),
        "next_actions": list(event["next_actions"]), "open_questions": list(event["open_questions"]),
        "artifacts": list(event["artifacts"]), "context_used_percent": event["context_used_percent"],
        "transcript_path": event["transcript_path"], "created_at": event["created_at"],
    }


def pretty(data: Any) -> bytes:
    """`core/fsio.pretty_json`'s bytes without msgspec: two-space indent, declared order, UTF-8, newline."""
    return json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"


def write_documents(store_path: str, event: dict[str, Any]) -> None:
    """The snapshot's `latest.json` and the agent's `LATEST.json`, each only if no newer snapshot is there.

    "Newer" as the team read model orders snapshots (created_at, task, checkpoint id), so a
    document never moves backwards; the model's own catch-up writes the same bytes later. The
    compare and the write are one step under the store folder's lock: two snapshots at once each
    found no newer document, and the older one, replacing the file last, moved it back.
    """
    from continuity.core.fsio import DOCUMENT_LOCK_SECONDS, folder_locked, write_if_changed

    key = (event["created_at"], event["task"], checkpoint_id(event))
    targets = ((snapshot_relpath(event["team"], event["agent"], event["task"]), document(event)),
               (pointer_relpath(event["team"], event["agent"]), {
                   "schema": POINTER_SCHEMA, "agent": event["agent"], "task": event["task"],
                   "checkpoint_id": checkpoint_id(event), "created_at": event["created_at"],
                   "path": snapshot_relpath(event["team"], event["agent"], event["task"])}))
    with folder_locked(store_path, DOCUMENT_LOCK_SECONDS):
        for relative, data in targets:
            path = os.path.join(store_path, *relative.split("/"))
            if not _newer_there(path, key):
                write_if_changed(path, pretty(data), within=store_path)


#: A snapshot's `created_at` as the log spells it: only such a time, in a document that agrees with itself, can
#: hold a document back (a hand-edited `"created_at": "9999"` would have held the pointer back for good).
_CREATED_AT = lazyre.pattern(rf"{ISO_TIME}\Z")


def _newer_there(path: str, key: tuple[str, str, str]) -> bool:
    """Whether the document at `path` is a newer snapshot's; a link there is never read (nor anything outside)."""
    try:
        there = json.loads(osfs.read_regular(path, follow=False))
        found = (there["created_at"], there["task"], there["checkpoint_id"])
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return False
    if not all(isinstance(part, str) for part in found) or not _CREATED_AT().match(found[0]) or \
            found[2] != f"CHK-{found[0]}-{found[1]}":
        return False
    return found > key
