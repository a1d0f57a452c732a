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
system's name: `uuid` is given a module of that one function while it loads (`_UuidWithoutPlatform`).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import FrameType, ModuleType
    from typing import Any

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


class _UuidWithoutPlatform:
    """A meta-path finder that loads `uuid` (which msgspec imports) with a `platform` of one function in place.

    On Linux `uuid` imports `platform` only to ask `platform.system()` once, at import: loading `platform`
    costs a process about 3 ms (it compiles nine regular expressions), a few percent of the SessionStart hook.
    While `uuid` runs, `platform` is a module whose `system()` answers as `platform`'s does on POSIX
    (`os.uname().sysname`); once it has run, the stand-in is gone from `sys.modules`, so any later
    `import platform` (or `mock.patch("platform....")`) gets the real module.
    """

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name != "uuid" or "platform" in sys.modules:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _WithPlatformStandIn(spec.loader)  # type: ignore[assignment]
        return spec


class _WithPlatformStandIn:
    """A loader that runs another's module with the one-function `platform` in `sys.modules`, then takes it out."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename...: the real loader's
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        made: ModuleType | None = self.loader.create_module(spec)
        return made

    def exec_module(self, module: ModuleType) -> None:
        import os
        import types

        stand_in = types.ModuleType("platform", "what uuid asks of platform while it loads (events/loading.py)")

        def system() -> str:
            return os.uname().sysname

        stand_in.system = system  # type: ignore[attr-defined]
        sys.modules["platform"] = stand_in
        try:
            self.loader.exec_module(module)
        finally:
            if sys.modules.get("platform") is stand_in:
                del sys.modules["platform"]


def install() -> None:
    """Put the finders first on the meta path (once), unless msgspec is already loaded."""
    if MSGSPEC_HELPERS in sys.modules:
        return
    if not any(isinstance(finder, _WithoutTypingExtensions) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WithoutTypingExtensions())
    if ("uuid" not in sys.modules and "platform" not in sys.modules and sys.platform.startswith("linux")
            and not any(isinstance(finder, _UuidWithoutPlatform) for finder in sys.meta_path)):
        sys.meta_path.insert(0, _UuidWithoutPlatform())
