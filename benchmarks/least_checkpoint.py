"""Less than `continuity work checkpoint` does, as little as a Python process can: a floor for issue 14's figure.

    python benchmarks/least_checkpoint.py DOCUMENT STORE

Reads the seed-002 checkpoint document with msgspec into Structs (the work item's fields typed,
unknown keys refused: the least validation the issue asks for), appends one event file holding the
items to STORE/events (written to a temporary name, fsynced, linked into place, the folder fsynced:
one durable append), and writes the runtime document with a temporary file and a rename. It reads
no log, no model, no membership and no worktree, decides nothing and checks no invariant: whatever
`work checkpoint` does, it does at least this, so its ratio to `continuity log` is the least any
Python `work checkpoint` can reach. msgspec and the standard library only.
"""

import os
import sys
import time

import msgspec


class Item(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    id: str
    title: str
    status: str
    priority: str
    scope: list[str]
    acceptance_criteria: list[str]
    depends_on: list[str]
    blocked_by: list[str]
    validation_requirements: list[str]
    notes: list[str]


class Workstream(msgspec.Struct, rename="camel"):
    id: str
    title: str
    status: str
    items: list[Item]


class Continuity(msgspec.Struct, rename="camel"):
    mode: str
    workstream: Workstream


class Document(msgspec.Struct, rename="camel"):
    schema_version: int
    repository: str
    continuity: Continuity


def durable_write(folder: str, name: str, data: bytes) -> None:
    temp = os.path.join(folder, f".{name}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.link(temp, os.path.join(folder, name))
    os.unlink(temp)
    folder_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(folder_fd)
    finally:
        os.close(folder_fd)


def main(document_path: str, store: str) -> None:
    with open(document_path, "rb") as file:
        document = msgspec.json.decode(file.read(), type=Document)
    items = document.continuity.workstream.items
    events = os.path.join(store, "events")
    os.makedirs(events, exist_ok=True)
    name = f"{time.time_ns()}-{os.getpid()}.json"
    durable_write(events, name, msgspec.json.encode({"kind": "workstream.items_changed", "items": items}))
    runtime = {"activeWorkstream": document.continuity.workstream.id,
               "unresolvedItems": [item.id for item in items if item.status != "DONE"]}
    temp = os.path.join(store, ".context-runtime.json.tmp")
    with open(temp, "wb") as file:
        file.write(msgspec.json.format(msgspec.json.encode(runtime), indent=2))
    os.replace(temp, os.path.join(store, "context-runtime.json"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
