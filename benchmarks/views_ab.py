"""Views of the log of two installs side by side (new processes): what redacting a view's output costs.

    .venv/bin/python benchmarks/views_ab.py <before>/.venv/bin/continuity <after>/.venv/bin/continuity [rounds] [events]

One store of `events` work-log events (default 5,000; one in fifty names a URL, so the guard's URL rule has a word
to look at), made by the "after" install; both installs read it, alternating: `events list` (text and --json),
`events tail`, `task list --json` and `status`. Medians and their ratios are printed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_projections import BENCH_HOME, env_for
from benchmarks.common import interleaved, time_command

VIEWS = {
    "events list": ["events", "list", "--limit", "100000"],
    "events list --json": ["--json", "events", "list", "--limit", "100000"],
    "events tail": ["events", "tail", "-n", "50"],
    "task list --json": ["--json", "task", "list"],
    "status": ["status"],
}


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 15
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 5000
    home = BENCH_HOME / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = env_for(home)
    with tempfile.TemporaryDirectory() as store:
        subprocess.run([after, "init", "--project", "bench"], cwd=store, env=env, check=True, capture_output=True)
        script = (
            "import sys\n"
            "from continuity.core.store import find_store\n"
            "from events.base import Refs\n"
            "from events.worklog import WorkLogged\n"
            "def draft(i):\n"
            "    message = f'edited src/module_{i}.py and ran the tests, {i} passed'\n"
            "    if i % 50 == 0:\n"
            "        message += f' (see https://example.com/builds/{i})'\n"
            "    return WorkLogged(project='bench', agent_id='a1', message=message,\n"
            "                      refs=Refs(files=(f'src/module_{i}.py',)))\n"
            "log = find_store(root=sys.argv[1]).open_log()\n"
            "for start in range(0, int(sys.argv[2]), 500):\n"
            "    log.append_many([draft(i) for i in range(start, min(start + 500, int(sys.argv[2])))])\n"
        )
        python = str(Path(after).with_name("python"))
        subprocess.run([python, "-c", script, store, str(count)], env=env, check=True)
        medians = interleaved({
            f"{name} {side}": (lambda exe=exe, args=args: time_command([exe, *args], cwd=store, env=env))
            for side, exe in (("before", before), ("after", after)) for name, args in VIEWS.items()
        }, rounds)
    for name in VIEWS:
        old, new = medians[f"{name} before"], medians[f"{name} after"]
        print(f"{name} ({count} events): before {old * 1000:.1f} ms, after {new * 1000:.1f} ms -> {new / old:.2f}x")


if __name__ == "__main__":
    main()
