"""The MCP server's memory when a client writes requests and reads no answer for a while.

    .venv/bin/python benchmarks/mcp_backlog.py [--requests 1500] [--wait 25] [--continuity PATH]

A scratch store gets 60 log entries of about 1.5 kB, so each `events` call (limit 60) answers
some 100 kB of JSON, twice over (text and structured content). `continuity mcp` is given
every request at once by a writer thread; the client reads nothing for `--wait` seconds, then
prints the server's peak and current RSS (/proc), reads every answer and checks that each request
was answered. Run it on two checkouts to compare (each with its own environment).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _memory(pid: int) -> dict[str, int]:
    found = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(("VmHWM", "VmRSS")):
                found[line.split(":")[0]] = int(line.split()[1])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    parser.add_argument("--wait", type=float, default=25.0, help="seconds the client reads nothing")
    parser.add_argument("--continuity", default=str(Path(sys.executable).with_name("continuity")),
                        help="the continuity program to serve (default: this environment's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "project"
        root.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CONTINUITY_")}
        env["HOME"] = scratch
        subprocess.run([args.continuity, "init", "--project", "backlog"], cwd=root, env=env, check=True,
                       capture_output=True)
        for number in range(60):
            subprocess.run([args.continuity, "log", "-m", f"{'x' * 1500} {number}"], cwd=root, env=env, check=True,
                           capture_output=True)
        server = subprocess.Popen([args.continuity, "mcp"], cwd=root, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert server.stdin is not None and server.stdout is not None
        lines = [{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "backlog", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        lines += [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
                   "params": {"name": "events", "arguments": {"limit": 60}}} for n in range(args.requests)]
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        stdin = server.stdin

        def write() -> None:
            stdin.write(data)
            stdin.close()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        time.sleep(args.wait)
        held = _memory(server.pid)
        still_writing = writer.is_alive()
        started = time.monotonic()
        answered = {json.loads(line).get("id") for line in server.stdout}
        code = server.wait()
        print(f"{args.requests} requests, nothing read for {args.wait:g} s: server peak {held['VmHWM'] / 1024:.1f} "
              f"MiB, current {held['VmRSS'] / 1024:.1f} MiB; the client still writing then: {still_writing}")
        print(f"then read in {time.monotonic() - started:.1f} s: {len(answered) - 1} of {args.requests} answered, "
              f"exit {code}")
        return 0 if code == 0 and len(answered) == args.requests + 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
