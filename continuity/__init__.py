"""continuity: keeps AI coding agents' working state alive across sessions, hosts and machines."""

import os as _os
import sys as _sys


def _interrupted_starting(signum: int, frame: object) -> None:
    """Ctrl-C while a command's modules load (before its guard runs): exit 130, as an interrupted command does,
    without the traceback of whichever import it landed in. Nothing is written before the guard runs."""
    _os._exit(130)


#: Modules msgspec calls back into while it builds a type's decoder or encoder: an exception raised there by
#: Ctrl-C can crash the process (SIGSEGV, msgspec 0.23), so an interrupt landing in them ends it at once.
_TYPE_BUILDING = ("msgspec", "typing", "inspect", "dataclasses", "enum", "abc")


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C as Python's KeyboardInterrupt (the guard turns it into exit 130, its cleanup runs), unless it lands
    while msgspec builds a type: then exit 130 at once, as a kill would (every write survives a kill)."""
    while frame is not None:
        name = getattr(frame, "f_globals", {}).get("__name__", "")
        if name.split(".", 1)[0] in _TYPE_BUILDING:
            _os._exit(130)
        frame = getattr(frame, "f_back", None)
    raise KeyboardInterrupt


def interrupts_as_usual() -> None:
    """Give SIGINT to `_interrupted` (a KeyboardInterrupt the guard catches), if the start installed its own."""
    import _signal  # type: ignore[import-not-found]  # (the C module: `signal` costs 0.6 ms more on the hook path)

    if _signal.getsignal(_signal.SIGINT) is _interrupted_starting:
        _signal.signal(_signal.SIGINT, _interrupted)


def _as_command() -> bool:
    """Whether this process is one of the two commands (their console scripts, or `python -m` of their modules)
    rather than a program importing continuity (a test runner, an API caller, the MCP server's own entry)."""
    if _sys.argv and _os.path.basename(_sys.argv[0]).removesuffix(".exe") in ("continuity", "runtime-continuity"):
        return True
    return _run_as_module() in ("continuity", "continuity.adapters.compat.runtime_continuity")


def _run_as_module() -> str | None:
    """The module `python -m` runs in this process (None: not run so)."""
    options = iter(getattr(_sys, "orig_argv", [])[1:])
    for option in options:  # the interpreter's options only: they end at `-m`, `-c`, `-`, `--` or a script
        if option == "--check-hash-based-pycs":  # a long option taking the next argument
            next(options, None)
        elif option in ("-", "--") or not option.startswith("-") or option.startswith("--"):
            return None
        else:  # short options, one or more in a token (`-Im`): c, m, W and X take the rest or the next argument
            for index, letter in enumerate(option[1:], 2):
                if letter in "cmWX":
                    value = option[index:] or next(options, "")
                    if letter == "m":
                        return value
                    if letter == "c":
                        return None
                    break
    return None


def _working_folder_off_the_path() -> None:
    """`python -m continuity` in a project: Python puts the working folder first on the import path, so a project's
    own `events.py` or `projections/` stood in for continuity's (a traceback, or the project's code run). It comes
    off, unless continuity itself was found there (run from its own checkout)."""
    if _sys.flags.safe_path or _sys.argv[:1] != ["-m"] or not _sys.path:  # -P, -I, or not `python -m`
        return
    module = _run_as_module()
    if module is None or not (module == "continuity" or module.startswith("continuity.")):
        return
    home = _os.path.dirname(_os.path.dirname(_os.path.realpath(__file__)))
    if _os.path.realpath(_sys.path[0] or _os.curdir) != home:
        del _sys.path[0]


# Only as a command: a program importing continuity keeps its own SIGINT handling.
if _as_command():
    import _signal  # the C module: `signal` costs 0.6 ms more on the hook path

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:  # an ignored SIGINT stays ignored
        _signal.signal(_signal.SIGINT, _interrupted_starting)
_working_folder_off_the_path()  # `python -m` of any of continuity's modules (the MCP server's own entry too)

import events as _events  # noqa: E402, F401  (installs events/loading.py before anything loads msgspec)

__version__ = "0.1.0"


def package_version() -> str:
    """This continuity's version from the installed package's metadata (`__version__` when run from a source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("continuity")
    except PackageNotFoundError:
        return __version__
