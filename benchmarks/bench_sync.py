"""Issue 4's and issue 11's figures for `continuity sync` and `clone-store`.

    .venv/bin/python benchmarks/bench_sync.py [--events 10000] [--rounds 3]
    .venv/bin/python benchmarks/bench_sync.py --scale [--clones 50] [--small 10000] [--large 1000000]
        [--clone-rounds 1] [--crowd-only]

Issue 11 (`--scale`, ratios in one run): 50 clones syncing at once against `git daemon` on
127.0.0.1 vs the same 50 syncs one after another; a sync of 10 new events on top of a large
history vs on top of a small one; `clone-store` of the large history vs `git clone` of the
same events as one commit's tree (which writes the same files: the branch's own commits each
hold what they add), with the peak memory of clone-store at the small and the large size.

Issue 4 (default):

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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import creation_probe, time_command  # noqa: E402

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


# -- issue 11: team scale ------------------------------------------------------------------
def make_remote(folder: Path, env: dict[str, str], name: str = "remote.git") -> tuple[Path, Path]:
    """A bare remote under `folder/srv` with a first commit of code; (bare path, seed clone)."""
    srv = folder / "srv"
    srv.mkdir(exist_ok=True)
    bare = srv / name
    git(folder, env, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, env, "config", "receive.autogc", "false")
    seed = folder / f"seed-{name}"
    git(folder, env, "clone", "-q", str(bare), str(seed))
    (seed / "README.md").write_text("code\n")
    git(seed, env, "add", "README.md")
    git(seed, env, "commit", "-q", "-m", "code")
    git(seed, env, "push", "-q", "origin", "main")
    return bare, seed


def team(folder: Path, env: dict[str, str], url: str, label: str, clones: int, events: int) -> list[Path]:
    """`clones` clones of `url`, each with a store of `events` events (same days, other nodes)."""
    roots = []
    for index in range(clones):
        root = folder / f"{label}{index:02d}"
        git(folder, env, "clone", "-q", url, str(root))
        time_command([EXE, "init", "--project", "bench", "--root", str(root)], env=env)
        generate(root, events, index * 1_000 + 1)  # the default sync_retry_seconds (60)
        roots.append(root)
    os.sync()
    return roots


def crowd(folder: Path, env: dict[str, str], clones: int) -> dict[str, float]:
    """Wall time of `clones` syncs at once vs one after another, against git daemon on 127.0.0.1."""
    sys.path.insert(0, str(ROOT))
    from tests.gitserver import serving

    with serving(folder / "srv") as daemon:
        for name in ("together.git", "apart.git"):
            make_remote(folder, env, name)
        together = team(folder, env, daemon.url("together.git"), "t", clones, 100)
        apart = team(folder, env, daemon.url("apart.git"), "s", clones, 100)
        start = time.perf_counter()
        processes = [subprocess.Popen([EXE, "sync", "--root", str(root)], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE) for root in together]
        failures = [process.communicate()[1] for process in processes if process.wait() != 0]
        concurrent = time.perf_counter() - start
        if failures:
            raise SystemExit(f"{len(failures)} concurrent syncs failed: {failures[0][-300:]!r}")
        sequential = sum(time_command([EXE, "sync", "--root", str(root)], env=env) for root in apart)
    return {"concurrent": concurrent, "sequential": sequential}


TEN_ROUNDS = 5
#: Runs the CLI in this process and writes its own peak RSS and its children's (kB) to argv[1].
OWN_PEAK = """
import resource, sys
from continuity.cli import main
try:
    code = main(sys.argv[2:])
finally:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    open(sys.argv[1], "w").write(f"{own} {max(own, children)}")
sys.exit(code)
"""


def history_cost(folder: Path, env: dict[str, str], size: int, clone_rounds: int = 1) -> dict[str, float]:
    """A store of `size` events recorded and pushed; then: a sync of 10 new events, and `clone_rounds` pairs of a
    clone-store and a git clone (alternating; medians, and the largest peak memory)."""
    bare, _ = make_remote(folder, env, f"h{size}.git")
    root = folder / f"h{size}"
    git(folder, env, "clone", "-q", str(bare), str(root))
    time_command([EXE, "init", "--project", "bench", "--root", str(root)], env=env)
    generate(root, size, 0)
    os.sync()
    started = time.perf_counter()
    time_command([EXE, "sync", "--root", str(root)], env=env)
    first = time.perf_counter() - started
    tens = []
    for _ in range(TEN_ROUNDS):  # one sync is too noisy a figure on a shared machine: the median of five
        generate_more(root, 10)
        tens.append(time_command([EXE, "sync", "--root", str(root)], env=env))
    ten = statistics.median(tens)
    clones, by_hand, own_kb, with_git_kb = [], [], 0, 0
    for number in range(clone_rounds):
        # Each round writes new folders, and nothing is deleted until the end: files made right after a
        # million were deleted cost many times more (benchmarks.common.creation_probe).
        fresh = folder / f"h{size}-fresh-{number}"
        copy = folder / f"h{size}-git-{number}"
        git(folder, env, "clone", "-q", str(bare), str(fresh))
        os.sync()
        print(f"  {size:,} events, round {number + 1}: file creation before clone-store "
              f"{creation_probe(folder):.0f} us/file", flush=True)
        memory = folder / f"h{size}-rss"
        # The peak of clone-store's own process (its git children, `git fetch`'s index-pack above
        # all, are git's and grow with the pack as they do under `git clone`), and with them.
        clones.append(time_command([sys.executable, "-c", OWN_PEAK, str(memory), "clone-store", "origin", "--root",
                                    str(fresh)], env=env))
        own, with_git = (int(value) for value in memory.read_text().split())
        own_kb, with_git_kb = max(own_kb, own), max(with_git_kb, with_git)
        os.sync()
        if number == 0:
            # The same events as one tree, for git to clone and write: the branch's commits each hold what they
            # add (sync's `delta` layout), so a clone of it writes one commit's files; the index clone-store kept
            # in `fresh` is one commit whose tree holds every event of the history.
            git(fresh, env, "push", "-q", str(bare), "refs/continuity-index/continuity:refs/heads/continuity-whole")
        print(f"  {size:,} events, round {number + 1}: clone-store {clones[-1]:.1f} s; file creation before git "
              f"clone {creation_probe(folder):.0f} us/file", flush=True)
        by_hand.append(time_command(["git", "clone", "-q", "--branch", "continuity-whole", "--single-branch",
                                     str(bare), str(copy)], env=env))
        print(f"  {size:,} events, round {number + 1}: git clone {by_hand[-1]:.1f} s", flush=True)
        os.sync()
    return {"first": first, "ten": ten, "clone": statistics.median(clones), "git_clone": statistics.median(by_hand),
            "clones": clones, "git_clones": by_hand, "peak_mb": own_kb / 1024, "peak_with_git_mb": with_git_kb / 1024}


def generate_more(root: Path, count: int) -> None:
    """`count` new events appended the ordinary way (durable), after the existing history."""
    from continuity.core.store import Store
    from events.worklog import WorkLogged

    Store(str(root)).open_log().append_many(WorkLogged(project="bench", message=f"new {i}") for i in range(count))


def scale(args: argparse.Namespace) -> None:
    """Issue 11's figures, in one run."""
    with tempfile.TemporaryDirectory(prefix="continuity-bench-scale-") as name:
        folder = Path(name)
        home = folder / "home"
        home.mkdir()
        env = bench_env(home)
        c = crowd(folder, env, args.clones)
        print(f"{args.clones} clones x 100 events syncing at once against git daemon on 127.0.0.1: "
              f"{c['concurrent']:.1f} s")
        print(f"the same {args.clones} syncs one after another: {c['sequential']:.1f} s "
              f"-> ratio {c['concurrent'] / c['sequential']:.2f}x (goal <= 1.5x)")
        if args.crowd_only:
            return
        small = history_cost(folder, env, args.small, args.clone_rounds)
        large = history_cost(folder, env, args.large, args.clone_rounds)
        print(f"sync of 10 new events on {args.small:,} events: {small['ten']:.2f} s; on {args.large:,}: "
              f"{large['ten']:.2f} s -> ratio {large['ten'] / small['ten']:.2f}x (goal <= 1.5x)")
        for size, figures in ((args.small, small), (args.large, large)):
            rounds = ", ".join(f"{mine:.1f}/{theirs:.1f}" for mine, theirs in zip(figures["clones"],
                                                                               figures["git_clones"], strict=True))
            print(f"clone-store of {size:,} events: {figures['clone']:.1f} s vs git clone of "
                  f"the same events as one tree (writes the same files) {figures['git_clone']:.1f} s "
                  f"(medians; each round {rounds}) -> ratio "
                  f"{figures['clone'] / figures['git_clone']:.2f}x (goal <= 2x); peak memory "
                  f"{figures['peak_mb']:.0f} MB (its git children: {figures['peak_with_git_mb']:.0f} MB); "
                  f"first sync (record + push) {figures['first']:.1f} s")
        print(f"clone-store peak memory {large['peak_mb'] / small['peak_mb']:.2f}x from {args.small:,} to "
              f"{args.large:,} events (goal: flat)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", action="store_true", help="issue 11's figures instead of issue 4's")
    parser.add_argument("--clones", type=int, default=50)
    parser.add_argument("--crowd-only", action="store_true", help="with --scale: the crowd figure alone")
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--clone-rounds", type=int, default=1, help="with --scale: clone-store / git clone pairs")
    args = parser.parse_args()
    if args.scale:
        scale(args)
        return
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
