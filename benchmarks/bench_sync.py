"""Issue 4's figures: `continuity sync` of 10k events each way vs a hand-made `git add/commit/push`.

    .venv/bin/python benchmarks/bench_sync.py [--events 10000] [--rounds 3]

Each round builds a bare remote and two clones in a temp folder, writes N events into each
store (without fsync: fixtures, not the write path), then times, as new processes:
sync on side A (N new local events: record + push), sync on side B (N local + N remote:
union, merge, push, projections), sync on A again (N remote), and a no-op sync. The floor
is the same N files committed by hand in a scratch clone: `git add`, `git commit`,
`git push` to the same kind of remote, in the same round; and, for the receiving side,
`git fetch` + `git switch` of that commit in another clone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import time_command  # noqa: E402

EXE = str(Path(sys.executable).with_name("continuity"))
STEP_US = 30_000_000
START_US = 1_700_000_000_000_000
STORE = Path(".agent", "runtime-continuity")


def bench_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUITY_", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@invalid",
               # no background `gc --auto` racing the clean-up (the same for both sides)
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="gc.auto", GIT_CONFIG_VALUE_0="0")
    return env


def git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), *args], env=env, check=True, capture_output=True)


def generate(root: Path, count: int, offset_us: int) -> None:
    """`count` chained events in the store at `root`, written without fsync."""
    from continuity.core.store import Store
    from events.base import Refs, Summary
    from events.codec import default_codec
    from events.names import shard_of
    from events.sealing import seal, sha256_hex
    from events.worklog import CheckpointRecorded, WorkLogged

    store = Store(root)
    node, codec = store.node(), default_codec()
    prev = None
    for i in range(count):
        envelope = {"project": "bench", "host": "claude-code", "session_id": f"S{i // 200}"}
        if i % 20 == 0:
            draft = CheckpointRecorded(**envelope, message=f"checkpoint {i}",
                                       summary=Summary(done=(f"item {i}",), next=(f"next {i}",)))
        else:
            draft = WorkLogged(**envelope, message=f"edited file {i % 97}", refs=Refs(files=(f"src/m{i % 97}.py",)))
        stored = seal(draft, at_us=START_US + offset_us + i * STEP_US, node=node, prev=prev, codec=codec)
        prev = sha256_hex(stored.raw)
        folder = Path(store.events_dir, shard_of(stored.name))
        folder.mkdir(exist_ok=True)
        (folder / stored.name).write_bytes(stored.raw)


def one_round(folder: Path, count: int) -> dict[str, float]:
    """Times of one round, in seconds."""
    home = folder / "home"
    home.mkdir()
    env = bench_env(home)
    remote, hand_remote = folder / "remote.git", folder / "hand.git"
    for bare in (remote, hand_remote):
        git(folder, env, "init", "-q", "--bare", "-b", "main", str(bare))
    a, b, hand, hand_rx = folder / "a", folder / "b", folder / "hand", folder / "hand-rx"
    git(folder, env, "clone", "-q", str(remote), str(a))
    (a / "README.md").write_text("code\n")
    time_command([EXE, "init", "--project", "bench", "--root", str(a)], env=env)
    git(a, env, "add", "README.md", ".gitignore")
    git(a, env, "commit", "-q", "-m", "code")
    git(a, env, "push", "-q", "origin", "main")
    git(hand_remote, env, "fetch", "-q", str(remote), "main:main")
    git(folder, env, "clone", "-q", str(remote), str(b))
    git(folder, env, "clone", "-q", str(hand_remote), str(hand))
    git(folder, env, "clone", "-q", str(hand_remote), str(hand_rx))
    time_command([EXE, "init", "--project", "bench", "--root", str(b)], env=env)
    generate(a, count, 0)
    generate(b, count, 7_000_000)  # the same days, interleaved: the union merges day folders
    for side in (a, b):
        time_command([EXE, "rebuild", "--root", str(side)], env=env)
    shutil.copytree(a / STORE / "events", hand / "events")
    os.sync()  # fixtures written without fsync must not be flushed inside a timed step

    times = {"sync_a": time_command([EXE, "sync", "--root", str(a)], env=env)}
    times["hand"] = sum(time_command(["git", "-C", str(hand), *args], env=env) for args in (
        ["add", "events"], ["commit", "-q", "-m", "events by hand"], ["push", "-q", "origin", "HEAD:refs/heads/hand"]))
    times["hand_rx"] = sum(time_command(["git", "-C", str(hand_rx), *args], env=env) for args in (
        ["fetch", "-q", "origin", "hand"], ["switch", "-q", "-c", "hand", "origin/hand"]))
    times["sync_b"] = time_command([EXE, "sync", "--root", str(b)], env=env)
    times["sync_a_again"] = time_command([EXE, "sync", "--root", str(a)], env=env)
    times["noop"] = time_command([EXE, "sync", "--root", str(a)], env=env)
    names = [sorted(p.name for p in (side / STORE / "events").glob("*/*.json")) for side in (a, b)]
    states = [(side / STORE / "state.json").read_bytes() for side in (a, b)]
    assert names[0] == names[1] and len(names[0]) == 2 * count, "the two sides did not converge"
    assert states[0] == states[1], "the projections differ"
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="continuity-bench-sync-") as folder:
            for key, value in one_round(Path(folder), args.events).items():
                samples.setdefault(key, []).append(value)
    m = {key: statistics.median(values) for key, values in samples.items()}
    n = f"{args.events:,}"
    print(f"sync of {n} new local events (record + push): {m['sync_a']:.2f} s")
    print(f"git add + commit + push of the same {n} files by hand: {m['hand']:.2f} s")
    print(f"-> ratio {m['sync_a'] / m['hand']:.2f}x (goal <= 2x), median of {args.rounds} rounds")
    print(f"sync of the other side ({n} local + {n} remote: union, merge, push, projections): {m['sync_b']:.2f} s")
    print(f"sync of the first side again ({n} remote: union, fast-forward, projections): {m['sync_a_again']:.2f} s")
    print(f"git fetch + switch of the same {n} files by hand (the receiving side): {m['hand_rx']:.2f} s "
          f"-> ratio {m['sync_a_again'] / m['hand_rx']:.2f}x")
    print(f"no-op sync at {2 * args.events:,} events: {m['noop']:.2f} s")
    print(f"converged: {2 * args.events:,} events on both sides, state.json byte-identical")


if __name__ == "__main__":
    main()
