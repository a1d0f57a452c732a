"""Less than `continuity work status` does, as little as a Python process can: a floor for issue 14's figure.

    python benchmarks/least_status.py ROOT

Starts `git status --porcelain=v2 -z --untracked-files=all` in ROOT with `os.posix_spawn` (no
`subprocess`), reads the last 20 bytes of `.git/index` (standing in for the ids of unchanged files,
which the real fingerprint takes from `git ls-files -s`) and `.ai-bridge/context-runtime.json` while
git runs, hashes the changed and untracked files git names, and prints one JSON line. It reads no
log, no model and no registry, and checks nothing: whatever `work status` does, it does at least
this, so the ratio of this script to `git status` is the least any Python `work status` can reach.
Standard library only, no third-party imports.
"""

import os
import sys


def main(root: str) -> None:
    read_end, write_end = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, write_end, 1), (os.POSIX_SPAWN_CLOSE, read_end)]
    argv = ["git", "-C", root, "status", "--porcelain=v2", "-z", "--untracked-files=all"]
    git = next(os.path.join(folder, "git") for folder in os.environ.get("PATH", "/usr/bin").split(os.pathsep)
               if os.access(os.path.join(folder, "git"), os.X_OK))
    pid = os.posix_spawn(git, argv, {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}, file_actions=actions)
    os.close(write_end)
    import hashlib
    import json

    with open(os.path.join(root, ".git", "index"), "rb") as index:
        index.seek(-20, os.SEEK_END)
        digest = hashlib.sha256(index.read())
    try:
        with open(os.path.join(root, ".ai-bridge", "context-runtime.json"), "rb") as runtime:
            document = json.loads(runtime.read())
    except OSError:
        document = {}
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    for record in b"".join(chunks).split(b"\0"):
        if record[:2] in (b"1 ", b"? "):  # a changed tracked file (its path is the last field) or an untracked one
            path = record[2:] if record[:1] == b"?" else record.rsplit(b" ", 1)[-1]
            try:
                with open(os.path.join(root.encode(), path), "rb") as changed:
                    digest.update(changed.read())
            except OSError:
                digest.update(b"-")
    print(json.dumps({"fingerprint": digest.hexdigest(), "workstream": document.get("activeWorkstream")}))


if __name__ == "__main__":
    main(sys.argv[1])
