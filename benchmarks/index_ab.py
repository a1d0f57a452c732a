"""Two trees side by side on one store: building the recall index from the whole log, and `continuity timeline`.

    .venv/bin/python benchmarks/index_ab.py OLD_TREE NEW_TREE [--events 20000] [--rounds 7]

Each tree runs in its own environment (`<tree>/.venv/bin/python`, byte-compiled): the index is built in a child
process of that tree into a scratch file (`index.catch_up` with a rebuild, timed around the call only, so the
interpreter's start is not in it), and the timeline as a new process writing its page to a scratch file.
Rounds alternate the trees (the first named runs first in each round); medians, and new over old. The store is
bench_recall's (Zipf-like text, generated once and reused).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_projections import BENCH_HOME, env_for  # noqa: E402
from benchmarks.bench_recall import generate  # noqa: E402

BUILD = """
import sys, time
from continuity.core.store import find_store
from continuity.recall import index
store = find_store(root=sys.argv[1])
connection = index.connect(sys.argv[2])
start = time.perf_counter()
outcome = index.catch_up(connection, store.open_reader(), rebuild=True)
print(time.perf_counter() - start, outcome.indexed)
"""


def build_seconds(tree: Path, store: Path, scratch: Path, env: dict[str, str]) -> float:
    target = scratch / f"index-{tree.name}-{time.monotonic_ns()}.sqlite3"
    done = subprocess.run([str(tree / ".venv/bin/python"), "-c", BUILD, str(store), str(target)], cwd=tree,
                          env={**env, "PYTHONPATH": str(tree)}, check=True, capture_output=True, text=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    return float(done.stdout.split()[0])


def timeline_seconds(tree: Path, store: Path, scratch: Path, env: dict[str, str]) -> float:
    out = scratch / f"page-{tree.name}.html"
    start = time.perf_counter()
    subprocess.run([str(tree / ".venv/bin/continuity"), "timeline", "--root", str(store), "--out", str(out)],
                   env={**env, "PYTHONPATH": str(tree)}, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    store = generate(args.events)
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        for name, measure in (("recall index build", build_seconds), ("timeline", timeline_seconds)):
            times: dict[str, list[float]] = {"old": [], "new": []}
            for _ in range(args.rounds):
                for key, tree in trees.items():
                    times[key].append(measure(tree, store, scratch, env))
            old, new = statistics.median(times["old"]), statistics.median(times["new"])
            print(f"{name}, {args.events:,} events: old {old * 1000:.1f} ms, new {new * 1000:.1f} ms -> "
                  f"{new / old:.2f}x new/old")


if __name__ == "__main__":
    main()
