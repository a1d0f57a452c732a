"""msgspec loaded the way it loads where `typing_extensions` is not installed.

`typing_extensions` is not one of msgspec's dependencies: msgspec imports it only when it
happens to be installed (other packages bring it), and otherwise takes `get_type_hints`,
`Required` and `NotRequired` from `typing` (Python 3.11's standard library has all three).
Importing it costs every process that loads msgspec a few milliseconds (with `inspect`,
`ast`, `dis` and `tokenize` behind it), which the hook path feels. No Struct here uses a
`typing_extensions` type, so while msgspec's own helper module is being imported, and only
then, the finder below answers that `typing_extensions` is not there. Any other importer
gets it as usual, before and after.

The same for `platform`, which `uuid` (imported by msgspec) loads on Linux only to ask for the
system's name: `uuid` is given a module of that one function (`_PlatformForUuid`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import FrameType, ModuleType

#: The module of msgspec that imports typing_extensions when it can.
MSGSPEC_HELPERS = "msgspec._utils"


class _WithoutTypingExtensions:
    """A meta-path finder that refuses `typing_extensions` to msgspec's helper module while it loads."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name == "typing_extensions" and _asked_by_helpers():
            raise ModuleNotFoundError("continuity loads msgspec without typing_extensions", name=name)
        return None


def _asked_by_helpers() -> bool:
    """Whether msgspec's helper module is the importer (it imports typing_extensions only while it loads;
    another thread importing meanwhile gets it as usual)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == MSGSPEC_HELPERS:
            return True
        frame = frame.f_back
    return False


class _PlatformForUuid:
    """A meta-path finder that gives `uuid` (which msgspec imports) a `platform` of one function while it loads.

    On Linux `uuid` imports `platform` only to ask `platform.system()` once, at import: loading `platform`
    costs a process about 3 ms (it compiles nine regular expressions), a few percent of the SessionStart hook.
    The module given answers `system()` as `platform` does on POSIX (`os.uname().sysname`), and anything else
    asked of it loads the real `platform` in its place (a later `import platform` gets the real one too).
    """

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "platform" or not _asked_by("uuid"):
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec("platform", _PlatformLoader())  # type: ignore[arg-type]  # the loader protocol


class _PlatformLoader:
    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        import os

        def system() -> str:
            return os.uname().sysname

        def whole(name: str) -> object:
            if sys.modules.get("platform") is module:
                del sys.modules["platform"]
            import platform

            return getattr(platform, name)

        module.system = system  # type: ignore[attr-defined]
        setattr(module, "__getattr__", whole)  # noqa: B010  (a module's own __getattr__, PEP 562)


def _asked_by(importer: str) -> bool:
    """Whether the module importing is `importer` itself, loading."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__") == importer:
            return True
        if not frame.f_code.co_filename.startswith("<frozen"):
            return False
        frame = frame.f_back
    return False


def install() -> None:
    """Put the finders first on the meta path (once), unless msgspec is already loaded."""
    if MSGSPEC_HELPERS in sys.modules:
        return
    if not any(isinstance(finder, _WithoutTypingExtensions) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WithoutTypingExtensions())
    if ("uuid" not in sys.modules and "platform" not in sys.modules and sys.platform.startswith("linux")
            and not any(isinstance(finder, _PlatformForUuid) for finder in sys.meta_path)):
        sys.meta_path.insert(0, _PlatformForUuid())
