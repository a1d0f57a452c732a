"""clone-store's peak memory when one history is spread over many commits (issue 11, the `delta` layout).

    .venv/bin/python benchmarks/bench_clone_commits.py [--events 100000] [--per-commit 1 10 100000]

`bench_sync.py --scale` records its history in one sync (100 commits at 1M events); a team's
branch has a commit or three per sync. This builds one store of N events, then, for each
`--per-commit` size, a bare remote whose `continuity` branch holds those events in commits of
that many events each (the `delta` layout, written with `git fast-import`), and runs
`clone-store` of it as a new process: its wall time and its own peak memory.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_sync import EXE, OWN_PEAK, bench_env, generate, git
from benchmarks.common import time_command
from continuity.sync.tree import DELTA_MARK


def branch_of(store_events: Path, bare: Path, env: dict[str, str], per_commit: int) -> int:
    """Write the events as a chain of `delta` commits of `per_commit` events; how many commits."""
    files = sorted(store_events.glob("*/*.json"))
    stream: list[bytes] = []
    message = f"continuity: record events\n\n{DELTA_MARK}\n".encode()
    commits = 0
    for start in range(0, len(files), per_commit):
        stream.append(b"commit refs/heads/continuity\ncommitter bench <bench@invalid> %d +0000\ndata %d\n%s"
                      % (1_700_000_000 + commits, len(message), message))
        stream.append(b"deleteall\n")
        for path in files[start:start + per_commit]:
            raw = path.read_bytes()
            stream.append(b"M 100644 inline events/%s/%s\ndata %d\n%s\n"
                          % (path.parent.name.encode(), path.name.encode(), len(raw), raw))
        commits += 1
    subprocess.run(["git", "-C", str(bare), "fast-import", "--quiet"], input=b"".join(stream), env=env, check=True,
                   capture_output=True)
    return commits


def prepare(folder: Path, events: int, sizes: list[int]) -> None:
    """The store and one bare remote per size (run as its own process: what it holds in memory must not be
    counted in clone-store's peak, which a child forked from a big process can inherit)."""
    env = bench_env(folder / "home")
    source = folder / "source"
    source.mkdir()
    git(folder, env, "init", "-q", str(source))
    time_command([EXE, "init", "--project", "bench", "--root", str(source)], env=env)
    generate(source, events, 0)
    for per_commit in sizes:
        bare = folder / f"remote-{per_commit}.git"
        git(folder, env, "init", "-q", "--bare", str(bare))
        commits = branch_of(source / ".agent" / "runtime-continuity" / "events", bare, env, per_commit)
        (folder / f"commits-{per_commit}").write_text(str(commits))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--per-commit", type=int, nargs="+", default=[100_000, 10, 1])
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        prepare(Path(args.prepare), args.events, args.per_commit)
        return
    with tempfile.TemporaryDirectory(prefix="continuity-bench-commits-") as name:
        folder = Path(name)
        home = folder / "home"
        home.mkdir()
        env = bench_env(home)
        subprocess.run([sys.executable, __file__, "--prepare", str(folder), "--events", str(args.events),
                        "--per-commit", *map(str, args.per_commit)], check=True)
        for per_commit in args.per_commit:
            commits = int((folder / f"commits-{per_commit}").read_text())
            fresh = folder / f"fresh-{per_commit}"
            git(folder, env, "clone", "-q", str(folder / f"remote-{per_commit}.git"), str(fresh))
            memory = folder / f"rss-{per_commit}"
            os.sync()
            seconds = time_command([sys.executable, "-c", OWN_PEAK, str(memory), "clone-store", "origin", "--root",
                                    str(fresh)], env=env)
            own_kb = int(memory.read_text().split()[0])
            print(f"clone-store of {args.events:,} events in {commits:,} commits of {per_commit:,}: "
                  f"{seconds:.1f} s, peak memory {own_kb / 1024:.0f} MB")


if __name__ == "__main__":
    main()
