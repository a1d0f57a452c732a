"""What a push costs the server under two layouts of the continuity branch, with plain git (issue 11).

    python3 benchmarks/layout_push.py [--events 1000000]

Under `sync_layout: full` every sync commit's tree holds the whole events folder; under
`delta` (the default) it holds only the events the commit adds (the history being the union
along the commits). This script measures the two with plain git, apart from continuity.
Both histories are built with `git fast-import` in a temp folder and pushed to a bare
repository; then three pushes of 10 new events each are timed. A push's cost on the server
is mostly `receive-pack`'s connectivity check, which walks the tree of the pushed commit's
parent: the whole history under "full", the last delta under "delta". Run it at 10k and at
1M events to see which layout keeps a 10-event sync flat.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time

DAYS = 350
DELTA = 10_000  # events per commit when the delta history is built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    size = parser.parse_args().events
    with tempfile.TemporaryDirectory(prefix="continuity-layout-") as base:
        env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid",
               "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@invalid", "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": base}

        def git(cwd: str, *args: str, data: bytes | None = None) -> None:
            subprocess.run(["git", "-C", cwd, *args], input=data, capture_output=True, check=True, env=env)

        def events(start: int, count: int) -> dict[str, bytes]:
            return {f"events/{20250101 + (i * DAYS // size) % DAYS}/e{i:08d}.json": b'{"i":%d}' % i
                    for i in range(start, start + count)}

        def commit(repo: str, batches: list[tuple[dict[str, bytes], bool]], *, child: bool) -> None:
            stream = []
            for number, (files, only_these) in enumerate(batches):
                stream.append(b"commit refs/heads/continuity\ncommitter bench <bench@invalid> %d +0000\ndata 1\nc\n"
                              % (1_700_000_000 + number))
                if child and number == 0:
                    stream.append(b"from refs/heads/continuity^0\n")
                if only_these:
                    stream.append(b"deleteall\n")
                stream += [b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(raw), raw)
                           for path, raw in files.items()]
            git(repo, "fast-import", "--quiet", data=b"".join(stream))

        for layout in ("full", "delta"):
            server, client = os.path.join(base, f"{layout}.git"), os.path.join(base, layout)
            git(base, "init", "-q", "--bare", server)
            git(base, "init", "-q", client)
            if layout == "full":
                commit(client, [(events(0, size), False)], child=False)
            else:
                commit(client, [(events(start, min(DELTA, size - start)), True) for start in range(0, size, DELTA)],
                       child=False)
            git(client, "push", "-q", server, "continuity")
            times = []
            for round_number in range(3):
                commit(client, [(events(size + 10 * round_number, 10), layout == "delta")], child=True)
                start = time.perf_counter()
                git(client, "push", "-q", server, "continuity")
                times.append(time.perf_counter() - start)
            print(f"{layout} layout, {size:,} events: pushes of 10 new events took "
                  + ", ".join(f"{seconds * 1000:.0f} ms" for seconds in times))


if __name__ == "__main__":
    main()
