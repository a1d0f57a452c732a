"""`runtime-continuity <mode> ...`: seed 004's CLI over continuity's log (shared/contracts/runtime-continuity-cli.md).

Every result is one pretty JSON object on stdout, exit 0 (also `ok: false` of restore
and list-contexts). Error envelopes `{ok: false, error, message}` exit 2 (§14); a crash
exits 1 with one line on stderr and nothing on stdout.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from continuity.adapters.compat.args import Args, ArgumentError, parse
from continuity.adapters.compat.common import Failure

EXIT_FAILURE = 2
EXIT_CRASH = 1
BOTH_GATES = ("user", "agent")
USER_GATE = ("user",)
USAGE = ("Usage: runtime-continuity {assess|log|checkpoint|archive|restore|status|warm|host-switch|resume-bundle|"
         "list-contexts} [--project P] [--gate user|agent] ...")
MISSING_PROJECT = "--project is required for archive / restore / status / host-switch."
#: The code a refused write answers with (a secret, an invalid field, a full disk).
WRITE_FAILURES = {"archive": "archive_failed", "host-switch": "host_switch_archive_failed"}

Handler = Callable[[Args, str | None], dict[str, Any]]


def _handler(mode: str) -> Handler:
    """The mode's function, imported only when it runs (the log path stays small)."""
    if mode in ("log", "checkpoint"):
        from continuity.adapters.compat.writes import work

        return lambda args, project: work(args, project, checkpoint=mode == "checkpoint")
    if mode in ("archive", "host-switch", "warm"):
        from continuity.adapters.compat import writes

        return {"archive": writes.archive_mode, "host-switch": writes.host_switch, "warm": writes.warm}[mode]
    if mode in ("status", "restore", "resume-bundle"):
        from continuity.adapters.compat import reads

        return {"status": reads.status, "restore": reads.restore, "resume-bundle": reads.resume_bundle}[mode]
    if mode == "assess":
        from continuity.adapters.compat.assess import assess

        return assess
    from continuity.adapters.compat.contexts import list_contexts

    return list_contexts


def _gate(args: Args, allowed: tuple[str, ...]) -> None:
    if args.get("gate") not in allowed:
        raise Failure("workflow_gate_required", f"--gate must be one of: {', '.join(allowed)}")


def _gates(mode: str, args: Args) -> tuple[str, ...] | None:
    """The gates a project mode accepts (None: no gate); unknown modes fail (§3)."""
    if mode in ("log", "checkpoint"):
        return BOTH_GATES
    if mode in ("archive", "host-switch"):
        return USER_GATE
    if mode == "restore":
        return None if args.has("list") or args.has("auto") else BOTH_GATES
    if mode in ("resume-bundle", "status"):
        return None
    raise Failure("unknown_command", USAGE)


def check_project(project: str) -> None:
    """I4: a project name is a folder name under C; no separators, no `..`, not `.`."""
    if "/" in project or "\\" in project or ".." in project or project == ".":
        raise Failure("invalid_arguments", "invalid --project: must not contain '/', '\\' or '..'")
    refuse_secret_project(project)


def refuse_secret_project(project: str | None) -> None:
    """A project that looks like a secret is `invalid_arguments` in every mode (docs/compat.md): each echoes the
    project, and the writing ones put it into events, folder names and the harness's run file."""
    if not project:
        return
    from events.guard import find_secret

    rule = find_secret(project)
    if rule is not None:
        raise Failure("invalid_arguments", f"invalid --project: it looks like a secret (rule {rule}); not shown")


def dispatch(args: Args) -> tuple[str, str | None]:
    """Apply §3's order of checks; the mode to run and the project."""
    mode = args.mode
    if mode == "assess":
        _gate(args, BOTH_GATES)
        refuse_secret_project(args.get("project"))
        return mode, args.get("project")
    if mode in ("warm", "list-contexts"):
        refuse_secret_project(args.get("project"))
        return mode, args.get("project")
    project = args.get("project")
    if project is None:
        raise Failure("missing_project", MISSING_PROJECT)
    check_project(project)
    gates = _gates(mode, args)
    if gates is not None:
        _gate(args, gates)
    return mode, project


def emit(data: dict[str, Any]) -> None:
    """One JSON object, 2-space indent, non-ASCII raw, newline-terminated; integral floats as integers. What looks
    like a secret is redacted, as continuity's own `--json` shows it: a listing of the project's files (a harness
    run file named like a token) or git's status is shown as the archive stores it."""
    from continuity.adapters.compat.common import dump_json
    from continuity.cli.output import redacted

    sys.stdout.buffer.write(dump_json(redacted(data)) + b"\n")
    sys.stdout.flush()


def _envelope(code: str, message: str) -> int:
    """Print an error envelope; exit 2. A reader gone (`| head -c1`) leaves the outcome an error (it was exit 0);
    a stdout that takes nothing (a full disk, /dev/full) is a crash's one line with the envelope's code and message,
    exit 1 (it was a traceback)."""
    try:
        emit({"ok": False, "error": code, "message": message})
    except BrokenPipeError:
        return EXIT_FAILURE
    except OSError as error:
        from continuity.core.text import one_line

        with contextlib.suppress(OSError):
            sys.stderr.write(f"runtime-continuity: {code}: {one_line(message)} (output not written: "
                             f"{error.strerror or error})\n")
        return EXIT_CRASH
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one mode; the exit code (0 result, 2 error envelope, 1 crash)."""
    from events.errors import ContinuityError, SecretRefused

    # Node reads undecodable argument bytes as U+FFFD; so does this drop-in.
    argv_list = [arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                 for arg in (sys.argv[1:] if argv is None else argv)]
    mode = ""
    try:
        args = parse(argv_list)
        mode, project = dispatch(args)
        result = _handler(mode)(args, project)
        after = result.pop("__after__", None)
        try:
            emit(result)
        except BrokenPipeError:
            raise
        except OSError as error:  # stdout itself failed (a full disk, /dev/full): the mode's writes are done, and a
            # caller that retries would write them twice
            if error.filename is not None:
                raise
            sys.stderr.write(f"runtime-continuity: output not written ({error.strerror or error}); what the "
                             f"command wrote stays written\n")
            return EXIT_CRASH
        if after is not None:
            after()
        return 0
    except ArgumentError as error:
        return _envelope("invalid_arguments", str(error))
    except Failure as failure:
        return _envelope(failure.code, failure.message)
    except ContinuityError as error:
        if isinstance(error, SecretRefused):  # this CLI has no --redact (the original's contract): never point at one
            error = SecretRefused(error.field, error.rule, redactable=error.redactable, redact_with=None)
        if mode in WRITE_FAILURES:
            return _envelope(WRITE_FAILURES[mode], str(error))
        return _envelope("write_failed", str(error))
    except BrokenPipeError:
        return 0
    except Exception as error:  # a crash: exit 1, one line on stderr, nothing on stdout
        from continuity.core.guard import broken_install

        sys.stderr.write(f"runtime-continuity: {broken_install(error) or f'{type(error).__name__}: {error}'}\n")
        return EXIT_CRASH


def run() -> None:
    """Console-script entry point."""
    from continuity.core.guard import exit_with

    exit_with(main)


if __name__ == "__main__":
    run()
