"""The one top-level error guard, shared by `continuity` and `runtime-continuity`.

Whatever happens below it, the user sees one line (or one JSON object) and a documented
exit code, never a traceback (unless `--debug` asked for one).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Sequence

from events.errors import ContinuityError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXIT_INTERRUPTED = 130


def _in_utf8_mode() -> None:
    """Under a locale whose encoding is not UTF-8 (`LC_ALL=C PYTHONUTF8=0`: ASCII; glibc's `en_US`: ISO-8859-1)
    Python decodes arguments and file names with that encoding: `café` came as escapes read as "not valid UTF-8",
    or as `cafÃ©` recorded as such, and a path given back to the system as text named other bytes. The command
    starts again in Python's UTF-8 mode (`-X utf8`), where arguments, paths and events all read bytes as UTF-8
    as under any UTF-8 locale; text for people keeps the terminal's encoding (PYTHONIOENCODING). Only there, and
    once (the new process is in UTF-8 mode)."""
    if sys.flags.utf8_mode or os.name != "posix" or os.environ.get("CONTINUITY_UTF8_STARTED"):
        return
    if sys.getfilesystemencoding().lower().replace("-", "").replace("_", "") == "utf8":
        return
    env = dict(os.environ, CONTINUITY_UTF8_STARTED="1")
    encoding = getattr(sys.stdout, "encoding", None)
    if encoding and "PYTHONIOENCODING" not in env:
        env["PYTHONIOENCODING"] = f"{encoding}:backslashreplace"
    with contextlib.suppress(OSError):  # no exec here: go on as before
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]], env)


def first_non_utf8(argv: Sequence[str]) -> int | None:
    """The 1-based position of the first argument that is not valid UTF-8, or None."""
    for index, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return index + 1
    return None


def guarded(
    body: Callable[[], int], *, on_error: Callable[[ContinuityError], int],
    on_internal: Callable[[Exception], int], debug: bool = False,
) -> int:
    """Run `body`; a domain error, an interrupt, a closed pipe or a bug each end in one exit code."""
    try:
        return body()
    except ContinuityError as error:
        return on_error(error)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except OSError as error:
        if error.filename is None and error.errno in _OUTPUT_FULL:  # stdout itself failed (a full disk, /dev/full)
            from events.errors import WriteFailed

            return on_error(WriteFailed(f"output not written ({error.strerror or error}); what the command "
                                        "wrote to the store stays written"))
        if error.errno in _EXHAUSTED and not debug:  # the machine's limit, not a bug: what ran out, and where
            from events.errors import WriteFailed

            where = f" at {error.filename}" if isinstance(error.filename, str) else ""
            return on_error(WriteFailed(f"stopped: {error.strerror or error}{where} (the process's limits: "
                                        "`ulimit -n`, memory); nothing is half-written"))
        if debug:
            raise
        return on_internal(error)
    except Exception as error:  # the last line of defence: one line, not a traceback
        if debug:
            raise
        if _out_of_memory(error):  # the machine's limit (`ulimit -v`, a container's memory), as ENOMEM is
            return _stopped_short_of_memory(on_error)
        return on_internal(error)


OUT_OF_MEMORY = ("stopped: out of memory (the process's limits: `ulimit -v`, a container's memory); nothing is "
                 "half-written")


def _stopped_short_of_memory(on_error: Callable[[ContinuityError], int]) -> int:
    """Exit 5 and one line for a process out of memory; the line written as it is when saying it the usual way needs
    memory that is not there either (importing the error's module failed so, and its traceback reached the user)."""
    try:
        from events.errors import WriteFailed

        return on_error(WriteFailed(OUT_OF_MEMORY))
    except MemoryError:
        with contextlib.suppress(Exception):
            sys.stderr.write(f"continuity: error: {OUT_OF_MEMORY}\n")
        return 5  # continuity.core.errors.EXIT_WRITE_FAILED, as exit_with says a stdout that took no more


def broken_install(error: BaseException) -> str | None:
    """The line for a module that cannot be imported (a dependency uninstalled, an environment mixing two versions of
    continuity): what is missing and the way back, not "a bug; report it". None for any other error. Never the
    error's whole text when it is not an ImportError's: that may quote a payload."""
    if not isinstance(error, ImportError) or _out_of_memory(error):
        return None
    said = " ".join(str(error).split())
    if error.name and error.name.partition(".")[0] in sys.stdlib_module_names:  # `sqlite3` of a Python built without
        return (f"continuity cannot import the module {error.name!r} ({said}): this Python was built without it; run "
                "continuity on a Python that has it")
    what = f"the module {error.name!r}" if error.name else "a module"
    return (f"continuity cannot import {what} ({said}): its installation is incomplete or mixes versions; reinstall "
            "it (`pipx reinstall continuity`, or `pip install --force-reinstall continuity` in its environment)")


def _out_of_memory(error: Exception) -> bool:
    """Python's MemoryError, or a module whose shared library the loader could not map for want of memory (glibc's
    "failed to map segment from shared object", "cannot allocate memory"), or the interpreter's own failure to say
    why (an import or a compile whose allocation failed returned no error: "error return without exception set",
    "compile returned NULL", "<function _find_and_load ...> returned NULL without setting an exception") in a
    process near a limit of its memory."""
    if isinstance(error, MemoryError) or (isinstance(error, SystemError)
                                          and isinstance(error.__cause__ or error.__context__, MemoryError)):
        return True  # (CPython's "returned a result with an exception set" holds the MemoryError it hid)
    said = str(error).lower()
    # (a Python function, the import machinery's `_find_and_load` say, cannot return NULL but for the interpreter
    # failing under it; a built-in one that does is a bug of its own)
    silent = "without exception set" in said or "compile returned null" in said or (
        said.startswith("<function ") and "returned null without setting an exception" in said)
    if isinstance(error, SystemError) and silent:
        return _memory_limited()
    return isinstance(error, ImportError) and ("failed to map segment" in said or "cannot allocate memory" in said)


def _memory_limited() -> bool:
    """Whether this process runs under a limit of its address space or data (`ulimit -v`, `ulimit -d`) and uses half
    of it or more (a limit far above what it uses leaves such an error a bug's, as it is without one)."""
    try:
        import resource
    except ImportError as error:  # Windows; or its library not mapped for want of memory
        return _out_of_memory(error)
    except (MemoryError, SystemError):  # importing it failed as the import that raised did
        return True
    try:
        limits = {field: limit for field, kind in ((0, resource.RLIMIT_AS), (5, resource.RLIMIT_DATA))
                  if (limit := resource.getrlimit(kind)[0]) != resource.RLIM_INFINITY}
    except (OSError, ValueError, MemoryError, AttributeError):
        return False
    if not limits:
        return False
    try:  # the address space's size against `ulimit -v`, the data's against `ulimit -d` (statm: pages)
        with open("/proc/self/statm", "rb") as statm:
            fields = statm.read().split()
        used = {field: int(fields[field]) * resource.getpagesize() for field in limits}
    except OSError as error:  # no /proc, or no memory to read it: the limit is there; out of descriptors: not known
        return error.errno in (errno.ENOENT, errno.ENOMEM)
    except (ValueError, IndexError, MemoryError):
        return True
    return any(used[field] * 2 >= limit for field, limit in limits.items())


#: Errors of a stream that cannot take more output (no space, over quota or size, an I/O error).
_OUTPUT_FULL = frozenset(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name))

#: Errors of a machine short of what a process runs on: open files (its own or the system's), memory.
_EXHAUSTED = frozenset(getattr(errno, name) for name in ("EMFILE", "ENFILE", "ENOMEM") if hasattr(errno, name))

#: The cyclic garbage collector's thresholds for a command that runs and exits.
GC_THRESHOLDS = (50_000, 20, 20)
#: Python's own, for the commands that keep running (`mcp`, `watch`): a server lives on what it
#: allocates after its imports, and raised thresholds would let cycles pile up between collections.
SERVING_GC_THRESHOLDS = (700, 10, 10)


def serving() -> None:
    """Give a long-running command the collector's usual thresholds back (see exit_with), and SIGINT Python's own
    handler: asyncio (the MCP server) turns Ctrl-C into a cancel of its main task only under that handler."""
    import gc
    import signal

    import continuity

    gc.set_threshold(*SERVING_GC_THRESHOLDS)
    if signal.getsignal(signal.SIGINT) is continuity._interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def exit_with(main: Callable[[], int]) -> None:
    """Console-script entry point: run, flush stdout (a closed pipe is not an error), exit."""
    # A command loads some 200 modules and then frees most of what it makes by reference
    # counting; with the default thresholds the collector also scans everything those
    # imports made, again and again (about 5 ms of a hook). Collections stay on, rarer.
    import gc

    _in_utf8_mode()
    gc.set_threshold(*GC_THRESHOLDS)
    _no_missing_streams()
    _whole_writes()
    _text_any_terminal_takes()
    code = 0
    with contextlib.suppress(BrokenPipeError):
        try:
            from continuity import interrupts_as_usual

            interrupts_as_usual()  # from here, Ctrl-C is a KeyboardInterrupt this function or the guard turns into 130
            code = main()
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # the reader left (`--help | head -1`): as for every command, not an error
            raise
        except OSError as error:  # the last of the output did not go out: say so, unless already failing
            if code == 0:
                code = 5
                with contextlib.suppress(OSError):
                    sys.stderr.write(f"continuity: error: output not written ({error.strerror or error})\n")
    if type(code) is int and _nothing_left_at_exit():
        os._exit(code)
    sys.exit(code)


def _nothing_left_at_exit() -> bool:
    """True when the interpreter's shutdown has nothing to do that anyone could see: nothing below the command
    that could catch its SystemExit (only the console script, or `python -m continuity`: not a profiler, a
    debugger or a program running it with runpy), no exit handlers (`atexit`'s, and threading's own, which
    joins a thread pool's workers), no thread but daemons, stdout and stderr flushed. Then the command leaves
    without it: taking down the 200 modules a typed command loads, one by one, costs about 8 ms (an eighth of
    a SessionStart hook), for nothing. Every file the commands write is closed (and synced) before they
    return; a child process is not waited on either way. Anything that fails here (no memory left to look)
    leaves it to the shutdown."""
    try:
        if atexit._ncallbacks() or sys.flags.inspect:  # -i: the interpreter's prompt comes after the command
            return False
        threading = sys.modules.get("threading")
        if threading is not None and (getattr(threading, "_threading_atexits", None) or any(
                not thread.daemon for thread in threading.enumerate() if thread is not threading.main_thread())):
            return False
        if not _nothing_below(sys._getframe(2)):
            return False
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # as the shutdown would meet it (an interrupt, no memory): leave that to it
        return False
    return True


#: The frames a command may have below it, outside continuity's own: the script's (a console script, `-c`), or
#: the interpreter's own `-m` (runpy's `_run_module_as_main` and `_run_code`, over `continuity/__main__.py`).
_OUTERMOST = (["<module>"], ["_run_code", "_run_module_as_main"])


def _nothing_below(frame: Any) -> bool:
    """Whether the frames from `frame` outwards are continuity's own and one of `_OUTERMOST`."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    outside: list[str] = []
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(package):
            outside.append(frame.f_code.co_name)
        frame = frame.f_back
    return outside in _OUTERMOST


def _text_any_terminal_takes() -> None:
    """Under a locale whose encoding cannot show every character (`LANG=en_US` is ISO-8859-1 on glibc,
    `LC_ALL=C` with `PYTHONUTF8=0` is ASCII), text for people shows the others as `\\u2713`-style escapes
    instead of ending the command in an encoding error: a teammate's check mark must not stop a brief.
    JSON goes out as UTF-8 bytes whatever the locale (Output.emit, the hooks), so it stays JSON."""
    stream = sys.stdout
    encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8") and hasattr(stream, "reconfigure"):
        with contextlib.suppress(Exception):  # a stream of another kind stays as it is
            stream.reconfigure(errors="backslashreplace")


class WholeWrites(io.FileIO):
    """stdout's file, its writes whole or failed. A write past a file size limit (`ulimit -f`) is short, and
    Python's buffered stream let the rest go without a word (a brief cut at 1 KiB, exit 0): written on, the next
    write says why (EFBIG), and the command fails as it does on a full disk (exit 5). After a failure the rest is
    dropped: the command has said its output was not written, and the flush at exit must not fail again."""

    failed = False

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        total = len(view)
        if self.failed:
            return total
        try:
            while view:
                done = super().write(view)
                if done is None:  # a stdout made non-blocking by whoever reads it: wait until it takes more
                    import select

                    select.select([], [self.fileno()], [])
                    continue
                if done == 0:
                    raise OSError(errno.EIO, "stdout took nothing")
                view = view[done:]
        except OSError:
            self.failed = True
            raise
        return total


def _whole_writes() -> None:
    """Put stdout's file under WholeWrites (same encoding, errors, newlines and line buffering); a stream that is
    not the process's own text file (an embedding program's) stays as it is."""
    stream = sys.stdout
    if os.name == "nt" or stream is not sys.__stdout__ or type(stream) is not io.TextIOWrapper:
        return  # Windows: a console's own raw stream writes text a plain file would garble (sys.__stdout__ keeps
        # the stream replaced here open)
    try:
        fd = stream.fileno()
        stream.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(WholeWrites(fd, "w", closefd=False)), encoding=stream.encoding,
                                  errors=stream.errors, newline="\n", line_buffering=stream.line_buffering,
                                  write_through=stream.write_through)


#: The standard streams that started closed and were given the null device (`_no_missing_streams`): what is written
#: to them reaches no one, which a hook that serves a brief says.
STARTED_CLOSED: set[str] = set()


def _no_missing_streams() -> None:
    """A standard stream started closed (`>&-`, `<&-`) is None in Python: give it the null device instead, so a
    command reads nothing or writes into nothing rather than failing on the attribute (a hook must exit 0)."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115 (lives as long as the process)
            STARTED_CLOSED.add(name)
