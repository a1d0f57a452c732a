"""Catch-up after 10 new events, two source trees side by side, each run on its own fresh copy of one store.

    .venv/bin/python benchmarks/catchup_pairs.py <before tree> <after tree> <store root> [pairs] [rounds]

`catchup_ab.py` times one tree on a store; run one after the other on the same store, the
second run found the first one's events in the newest day and the first one's writes still
being flushed, and was slower whichever tree it was (10-20% here). This driver copies the
store afresh (and flushes the copy) before every run, alternates which tree goes first, and
prints each pair's medians (ms) and their ratio, then the median of the ratios. The store is
built by bench_projections.py ($TMPDIR/continuity-bench/<size>); both trees need only this
repository's virtual environment (`git worktree add --detach <dir> <commit>` for the older).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(tree: str, store: str, rounds: int, scratch: Path) -> float:
    copy = scratch / "store"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy, symlinks=True)
    os.sync()
    env = {**os.environ, "HOME": str(scratch / "home"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, str(HERE / "catchup_ab.py"), tree, str(copy), str(rounds)],
                          env=env, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def main() -> None:
    before, after, store = sys.argv[1], sys.argv[2], sys.argv[3]
    pairs = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 15
    ratios = []
    with tempfile.TemporaryDirectory(prefix="catchup-pairs-") as folder:
        scratch = Path(folder)
        (scratch / "home").mkdir()
        for pair in range(pairs):
            if pair % 2 == 0:
                old = run(before, store, rounds, scratch)
                new = run(after, store, rounds, scratch)
            else:
                new = run(after, store, rounds, scratch)
                old = run(before, store, rounds, scratch)
            ratios.append(new / old)
            print(f"pair {pair + 1}: before {old:.2f} ms, after {new:.2f} ms -> {new / old:.2f}x", flush=True)
    print(f"median of {pairs} pair ratios: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
