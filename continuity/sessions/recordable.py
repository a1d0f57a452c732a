"""The live inputs of a brief as its `context.served` event can record them.

A brief is rendered from its inputs after they pass through here, so the text served,
the inputs recorded and an audit replay (`resume-bundle --as-of`) agree byte for byte,
and the record is never refused for what the live facts happened to hold.
"""

from __future__ import annotations

from typing import Any

import msgspec

from continuity.core.text import control_pictures
from events.context import ViewInputs


def recordable(inputs: ViewInputs) -> ViewInputs:
    """The inputs made printable, secret-like text redacted, cut to fit their event."""
    # fitted before the secret scan, so a huge status is scanned once it is cut (the scan is the dear part)
    return _fitted(_without_secrets(_fitted(_storable(inputs))))




def _storable(inputs: ViewInputs) -> ViewInputs:
    """The live inputs with text an event cannot hold made printable: a run file named in bytes that
    are not UTF-8, a run record whose status holds a control character.

    Left as they were, the first ended the command in an internal error and the second had
    the `context.served` event refused (the brief served unrecorded). Control characters
    become their control pictures, undecodable bytes U+FFFD, in the brief and the record alike.
    """
    try:
        msgspec.json.decode(msgspec.json.encode(inputs), type=ViewInputs)
        return inputs
    except (UnicodeEncodeError, msgspec.ValidationError):
        pass
    try:
        return msgspec.convert(_printable(msgspec.to_builtins(inputs)), ViewInputs)
    except msgspec.ValidationError:  # a limit cleaning cannot meet: the record is refused, and says so
        return inputs


def _printable(tree: Any) -> Any:
    """Plain data with every string valid UTF-8 and free of the controls event text refuses."""
    if isinstance(tree, str):
        return control_pictures(tree.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    if isinstance(tree, dict):
        return {_printable(key): _printable(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [_printable(value) for value in tree]
    return tree


def _without_secrets(inputs: ViewInputs) -> ViewInputs:
    """The live inputs with secret-like text (a file named like a key, say) as `[REDACTED:<rule>]`.

    The brief is rendered from these, so the text served, the inputs recorded and a replay
    agree; left as they were, the secret guard would refuse the `context.served` event and the
    brief would be served unrecorded. Inputs the marker does not fit are kept (and refused).
    """
    from events.guard import might_hold_secret, redact_tree

    if not might_hold_secret(msgspec.json.encode(inputs).decode()):
        return inputs
    applied: list[str] = []
    cleaned = redact_tree(msgspec.to_builtins(inputs), "inputs", applied)
    if not applied:
        return inputs
    try:
        return msgspec.convert(cleaned, ViewInputs)
    except msgspec.ValidationError:
        return inputs


#: The most the inputs of a brief may take in its `context.served` event (events are sealed at 256 KiB,
#: and `folded_nodes` takes up to ~70 KiB more).
INPUTS_BYTES = 128 * 1024
_GIT_LISTS = ("status_short", "dirty_files", "new_dirty_files", "changed_since_archive")


def _fitted(inputs: ViewInputs) -> ViewInputs:
    """The inputs cut to fit their event: git's status and file lists halved, biggest first, until they do.

    The brief is rendered from what can be recorded, so a replay shows what was served; left
    whole, a tree with a few thousand changed files made the event too large to record.
    """
    git = inputs.git
    if git is None or len(msgspec.json.encode(inputs)) <= INPUTS_BYTES:
        return inputs
    bare = msgspec.structs.replace(git, **{name: type(getattr(git, name))() for name in _GIT_LISTS})
    if len(msgspec.json.encode(msgspec.structs.replace(inputs, git=bare))) > INPUTS_BYTES:
        return inputs  # what is too big is not git's: cutting git's lists would lose them and not help
    while len(msgspec.json.encode(msgspec.structs.replace(inputs, git=git))) > INPUTS_BYTES:
        name = max(_GIT_LISTS, key=lambda field: len(msgspec.json.encode(getattr(git, field))))
        value = getattr(git, name)
        if not value:
            break  # what is left is not git's: the event is refused and the brief served unrecorded, as it says
        half = len(value) // 2
        if isinstance(value, str):  # whole lines of the status
            half = max(value.rfind("\n", 0, half), 0)
        git = msgspec.structs.replace(git, **{name: value[:half]})
    warning = (f"git status too long to record: the brief keeps {len(git.dirty_files)} changed files "
               "(`git status` has them all)")
    said = tuple(line for line in inputs.warnings if not line.startswith("git status too long to record: "))
    return msgspec.structs.replace(inputs, git=git, warnings=(*said, warning))
