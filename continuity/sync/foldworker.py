"""clone-store's read-model folds in a process of their own, beside the restore.

`clone-store` restores a long history a batch at a time (sync's restore). Folding a batch
into the read models costs about as much CPU as staging the next one, and both are Python:
on a thread they take turns on the interpreter's lock, so the folds run here, in a second
process, while the parent stages. The parent sends each batch once its events are in the
store and waits for the answer before it moves the next batch in, so a fold never sees a
day half moved in.

    python -m continuity.sync.foldworker STORE_ROOT

Frames both ways: 8 bytes big-endian length, then msgpack. Asked `{"rebuild": bool, "held":
{day: {name: bytes}}}`, it folds with `refresh` (rebuilding first when asked) and answers
`{"folded": int, "rebuilt": bool, "skipped": int, "first_skipped": str | None, "warnings":
[str]}` (skipped: the unreadable events this fold met first; those an earlier batch met are counted
there), or `{"failed": str}` when the fold raised. It ends at the end of its input. Nothing
is printed: the parent reports. Started with `-P`, so nothing in the folder it runs in (the
user's project) is imported in place of continuity's own modules.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

import msgspec

HEADER = 8
#: The most one frame may hold: a batch's kept bytes (clone.HELD_BYTES) with room for its names.
FRAME_LIMIT = 64 << 20


def write_frame(stream: IO[bytes], value: Any) -> None:
    """One frame: the length, then `value` as msgpack (ValueError, nothing written, past FRAME_LIMIT)."""
    data = msgspec.msgpack.encode(value)
    if len(data) > FRAME_LIMIT:
        raise ValueError(f"a frame of {len(data)} bytes is past the limit ({FRAME_LIMIT})")
    stream.write(len(data).to_bytes(HEADER, "big"))
    stream.write(data)  # not joined to the header: a batch's frame is not copied once more
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value; None at the end of the input (or a frame cut short or too big)."""
    header = stream.read(HEADER)
    if len(header) != HEADER:
        return None
    size = int.from_bytes(header, "big")
    if size > FRAME_LIMIT:
        return None
    data = stream.read(size)
    if len(data) != size:
        return None
    try:
        return msgspec.msgpack.decode(data)
    except msgspec.DecodeError:
        return None


def serve(root: str, source: IO[bytes], answers: IO[bytes]) -> None:
    """Fold each batch asked for, answering each, until the input ends."""
    from continuity.core.store import Store
    from continuity.readside.writers import refresh
    from projections.registry import REGISTRY

    store = Store(root)
    while True:
        asked = read_frame(source)
        if not isinstance(asked, dict):
            return
        try:
            if not os.path.isfile(store.config_path):  # the parent made it: a folder without one is no store
                raise FileNotFoundError(f"no store at {store.path}")
            store.check_safe()
            outcome = refresh(store, tuple(REGISTRY), rebuild=bool(asked.get("rebuild")), held=asked.get("held") or {})
        except Exception as error:  # the parent rebuilds from the files after the restore, and reports that
            write_frame(answers, {"failed": f"{type(error).__name__}: {error}"})
            return
        write_frame(answers, {"folded": outcome.folded, "rebuilt": outcome.rebuilt, "skipped": outcome.met,
                              "first_skipped": outcome.first_met, "warnings": outcome.warnings})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        return 2
    try:
        serve(argv[0], sys.stdin.buffer, sys.stdout.buffer)
    except (OSError, KeyboardInterrupt):  # the parent went away: it rebuilds, or its store is where it was
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
