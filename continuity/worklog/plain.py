"""`log` and `checkpoint` over plain data: the decisions of decide.py for the plain append path.

Same inputs (a work request as a dict of `WorkRequest`'s fields, the identity fields),
same event (as `msgspec.to_builtins` would give it). Where decide.py raises a UsageError
this raises `Unsure`, so the msgspec path runs and says it. A Hypothesis property in
tests/unit/test_plain.py holds the two to the same event for any request.
"""

from __future__ import annotations

from events.plain import Unsure, complete

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Exit codes a command ref records: negative signal numbers (Python's -9) up to Windows'
#: unsigned 32-bit codes (0xC0000005 is 3221225477).
EXIT_CODE_MIN, EXIT_CODE_MAX = -(2**31), 2**32 - 1

#: `WorkRequest`'s fields and defaults (a test checks them against the Struct).
REQUEST_DEFAULTS: dict[str, Any] = {
    "message": "", "type": None, "phase": None, "done": (), "in_progress": None, "next": (), "blockers": (),
    "files": (), "artifacts": (), "handoffs": (), "command": None, "exit_code": None, "command_summary": None,
    "note": None,
}


def states_anything(request: dict[str, Any]) -> bool:
    """Whether a work request records anything at all (an empty `log` is refused)."""
    return any((
        request["message"].strip(), request["done"], request["in_progress"], request["next"], request["blockers"],
        request["files"], request["artifacts"], request["handoffs"], request["command"], request["note"],
    ))


#: The items of a work request, by the flag that gives them (`blank_item`).
ITEM_FLAGS = (("done", "--done"), ("next", "--next"), ("blockers", "--blocker"))


def blank_item(request: dict[str, Any]) -> str | None:
    """The flag of the first item that says nothing (empty, or spaces only): a `--next ""` made the brief's next
    action a blank line and cleared the real one. None when every item says something."""
    for key, flag in ITEM_FLAGS:
        if any(not item.strip() for item in request[key]):
            return flag
    in_progress = request["in_progress"]
    return "--in-progress" if in_progress is not None and not in_progress.strip() else None


def work_event(request: dict[str, Any], identity: dict[str, Any], *, checkpoint: bool) -> dict[str, Any]:
    """The draft of `decide_log` (or `decide_checkpoint`) as plain data; Unsure where they refuse."""
    if not checkpoint and not states_anything(request):
        raise Unsure("nothing to record")
    if blank_item(request) is not None:
        raise Unsure("an item that says nothing")
    if request["command"] is None and (request["exit_code"] is not None or request["command_summary"]):
        raise Unsure("--exit-code and --command-summary need --command")
    commands = []
    if request["command"] is not None:
        commands.append({"command": request["command"], "exit_code": request["exit_code"],
                         "summary": request["command_summary"]})
    fields: dict[str, Any] = {
        **identity,
        "phase": request["phase"],
        "message": request["message"],
        "summary": {"done": request["done"], "in_progress": request["in_progress"], "next": request["next"],
                    "blockers": request["blockers"]},
        "refs": {"files": request["files"], "commands": commands, "artifacts": request["artifacts"],
                 "handoffs": request["handoffs"]},
        "note": request["note"],
    }
    if request["type"] is not None:
        fields["type"] = request["type"]
    return complete("checkpoint.recorded" if checkpoint else "work.logged", fields)
