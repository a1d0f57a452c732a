"""The checkpoint channel's two documents, read as facts: its config and the team's tag registry.

`team/<team>/_coord/bus-v3/checkpoints.json` drives emission; its four states are seed
000's: absent (emit nothing, say nothing), ok (emit), invalid (one loud line every time,
no emission), unreadable (one line). Neither document is ever written here: a human
fixes durable bytes. Tags come from `team/<team>/_coord/bus-v3/tags.json`.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import msgspec

from continuity.moments.paths import bus_relpath, config_relpath
from events import osfs

SCHEMA = "coord.checkpoints-channel.v1"
ABSENT, OK, INVALID, UNREADABLE = "absent", "ok", "invalid", "unreadable"
#: A config or registry bigger than this is not read (it is invalid).
MAX_DOCUMENT_BYTES = 65_536
DEFAULT_TIMEOUT_S = 5.0
MAX_TIMEOUT_S = 60.0
OUTBOX_NAME = "checkpoints.outbox.jsonl"
#: The tag dimensions, in the order a moment carries them (then the base tag).
TAG_DIMENSIONS = ("agent", "platform", "harness", "model")


class Channel(msgspec.Struct, frozen=True, kw_only=True):
    """A valid channel config: where moments go and how they are labelled."""

    data_type: str
    api_version: str | None = None
    outbox: str | None = None
    command: tuple[str, ...] | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_S

    def sinks(self) -> list[str]:
        """The sinks, by name: `outbox` (the default when none is named) and `command`."""
        named = [name for name, value in (("outbox", self.outbox), ("command", self.command)) if value is not None]
        return named or ["outbox"]


class Loaded(msgspec.Struct, frozen=True, kw_only=True):
    """A team's channel config: its state, the channel when ok, and the line to print (None: silent)."""

    state: str
    channel: Channel | None = None
    line: str | None = None


def outbox_relpath(team: str, channel: Channel) -> str:
    """The JSONL outbox, relative to the store: the config's `outbox`, else next to the config."""
    return channel.outbox or bus_relpath(team, OUTBOX_NAME)


def _read(store_path: str, relative: str) -> tuple[bytes | None, str | None]:
    """(bytes, None), (None, None) when absent, or (None, why) when it cannot be read.

    Neither the file nor a folder on the way to it may be a symlink: a config reached through a
    link planted in the store (`bus-v3 -> /elsewhere`) is not the store's, as writes refuse it too.
    """
    *folders, name = relative.split("/")
    path = store_path
    try:
        for depth, folder in enumerate(folders):
            path = os.path.join(path, folder)
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None, f"{'/'.join(folders[:depth + 1])} is a symlink"
        path = os.path.join(path, name)
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            return None, "not a regular file"
        fd = os.open(path, osfs.READ)
        try:
            data = os.read(fd, MAX_DOCUMENT_BYTES + 1)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None, None
    except NotADirectoryError:
        return None, None
    except OSError as error:
        return None, error.strerror or str(error)
    return data, None


def load_config(store_path: str, team: str) -> Loaded:
    """The team's channel config in one of its four states (never written, never cached)."""
    relative = config_relpath(team)
    data, error = _read(store_path, relative)
    if error is not None:
        return Loaded(state=UNREADABLE, line=f"checkpoint moment: {relative} is unreadable ({error}); "
                      "no moment emitted (the checkpoint is saved)")
    if data is None:
        return Loaded(state=ABSENT)
    problem, channel = _parse(data)
    if channel is None:
        return Loaded(state=INVALID, line=f"checkpoint moment: {relative} is INVALID ({problem}); no moment "
                      "emitted, the file is left as it is (the checkpoint is saved)")
    return Loaded(state=OK, channel=channel)


def _parse(data: bytes) -> tuple[str, Channel | None]:
    if len(data) > MAX_DOCUMENT_BYTES:
        return f"over {MAX_DOCUMENT_BYTES} bytes", None
    try:
        doc = _decode(data)
    except ValueError:
        return "not JSON", None
    if not isinstance(doc, dict):
        return "not a JSON object", None
    if doc.get("schema") != SCHEMA:
        return f"schema is not {SCHEMA}", None
    data_type = doc.get("data_type")
    if not isinstance(data_type, str) or not data_type.strip():
        return "data_type is missing or blank", None
    api_version = doc.get("api_version")
    if api_version is not None and not isinstance(api_version, str):
        return "api_version is not a string", None
    for name, text in (("data_type", data_type), ("api_version", api_version)):
        problem = _unclean(name, text)
        if problem:
            return problem, None
    outbox = doc.get("outbox")
    if outbox is not None and not _relative_path(outbox):
        return "outbox is not a relative path under team/ ending in .jsonl", None
    command = doc.get("command")
    if command is not None and (not isinstance(command, list) or not command or not all(
            isinstance(part, str) and part and "\x00" not in part and _encodable(part) for part in command)):
        return "command is not a non-empty list of arguments", None
    timeout = doc.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        return f"timeout_seconds is not a number of seconds in (0, {MAX_TIMEOUT_S:g}]", None
    return "", Channel(data_type=data_type, api_version=api_version, outbox=outbox,
                       command=None if command is None else tuple(command), timeout_seconds=float(timeout))


def _decode(data: bytes) -> Any:
    """A document's JSON value; ValueError when it is not JSON (invalid UTF-8 included), or nested too deeply."""
    import json

    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:  # the decoder recurses per level: `[` 5000 times fits in the size bound
        raise ValueError("nested too deeply") from None


def _encodable(text: str) -> bool:
    """Whether `text` can be an argument of a process (no lone surrogate, which JSON's `\\ud800` can spell)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: The longest text a channel's config or tag registry takes for a name, a version, a path or a tag.
MAX_NAME_CHARS = 1024


def _unclean(name: str, text: str | None) -> str:
    """Why the text `name` holds is refused ("" when it is not): too long, or a character that is not printable
    (a control, a line or paragraph separator: it would travel into every moment)."""
    if text is None:
        return ""
    if len(text) > MAX_NAME_CHARS:
        return f"{name} is over {MAX_NAME_CHARS} characters"
    if not text.isprintable():
        return f"{name} holds a character that is not printable"
    return ""


def _relative_path(value: Any) -> bool:
    if not isinstance(value, str) or not value or _unclean("", value) or value.startswith("/") or "\\" in value:
        return False
    parts = value.split("/")
    return all(part not in ("", ".", "..") for part in parts) and parts[0] == "team" and len(parts) > 1 and \
        value.endswith(".jsonl")


def tags_for(store_path: str, team: str, agent: str, done: str = "moment sent") -> tuple[list[str] | None,
                                                                                       str | None]:
    """The moment's tags from the team's `tags.json`: agent, platform, harness, model, then the base tag.

    An absent registry: no tags, silently. An agent missing from it: the base tag alone and a
    line. A registry that cannot be read or parsed: no tags and a line.
    """
    relative = bus_relpath(team, "tags.json")
    data, error = _read(store_path, relative)
    if error is not None:
        return None, f"checkpoint moment: {relative} is unreadable ({error}); {done} without tags"
    if data is None:
        return None, None
    try:
        doc = _decode(data) if len(data) <= MAX_DOCUMENT_BYTES else None
    except ValueError:
        doc = None
    agents = doc.get("agents") if isinstance(doc, dict) else None
    base = doc.get("base") if isinstance(doc, dict) else None
    if not isinstance(agents, dict) or (base is not None and not _tag(base)):
        return None, f"checkpoint moment: {relative} is INVALID (want {{\"base\": ..., \"agents\": {{...}}}}); " \
            f"{done} without tags"
    tail = [base] if base is not None else []
    entry = agents.get(agent)
    if not isinstance(entry, dict):
        return tail, f"checkpoint moment: no identity tag for {agent!r} in {relative}; {done} with the base tag"
    return [entry[key] for key in TAG_DIMENSIONS if _tag(entry.get(key))] + tail, None


def _tag(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and not _unclean("", value)
