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

And msgspec's package imports its JSON-schema modules (`msgspec.inspect`, `msgspec._json_schema`, and
`textwrap` behind them: about 2 ms) though only a schema (the MCP tools', `work schema`) uses them:
while the package loads, they are stand-ins that load the real module on first use (`_SchemaOnUse`).
"""

from __future__ import annotations

import _thread
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


#: msgspec's modules its package imports only for JSON schemas and type inspection, loaded on first use.
ON_USE = ("msgspec.inspect", "msgspec._json_schema")
#: The modules whose loading imports them: msgspec's package (`from . import inspect`) and `msgspec.json`.
_ON_USE_IMPORTERS = ("msgspec", "msgspec.json")


class _SchemaOnUse:
    """A meta-path finder that gives msgspec's package, while it loads, stand-ins for the ON_USE modules.

    A stand-in loads the real module the first time anything of it is used (an attribute read, or a call of
    `msgspec.json.schema` / `schema_components`, which `msgspec.json` takes from it by name) and from then on is
    the real module's: it is replaced in `sys.modules` and on the package, and its names are the real ones.
    """

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if name not in ON_USE or not _loaded_by(_ON_USE_IMPORTERS):
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(name, _StandInLoader())  # type: ignore[arg-type]


def _loaded_by(importers: tuple[str, ...]) -> bool:
    """Whether one of `importers` is running its module code further up this thread's stack (it is loading)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") in importers:
            return True
        frame = frame.f_back
    return False


class _StandInLoader:
    """Makes an ON_USE module's stand-in (see _SchemaOnUse)."""

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        name = module.__name__

        def __getattr__(attribute: str) -> Any:  # the module's own: called for names not (yet) copied to it
            real = None if attribute.startswith("__") and attribute not in ("__file__", "__all__") else _real(name)
            if real is None or real is module:  # the import system's probes; a stand-in reloaded into the real one
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
            return getattr(real, attribute)

        def __dir__() -> list[str]:
            real = _real(name)
            return sorted(vars(module)) if real is module else dir(real)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        module.__dir__ = __dir__  # type: ignore[method-assign]
        for function in _TAKEN_BY_NAME.get(name, ()):
            setattr(module, function, _delegate(name, function))


#: What another module of msgspec takes from a stand-in by name while it loads (`msgspec.json`'s
#: `from ._json_schema import schema, schema_components`): functions that call the real ones.
_TAKEN_BY_NAME = {"msgspec._json_schema": ("schema", "schema_components")}
#: Held while a stand-in's real module is loaded (see _real).
_REAL_LOCK = _thread.RLock()


def _delegate(module: str, function: str) -> Any:
    """A function of the stand-in for `module` calling the real module's `function` (named as that one, so pickle
    finds it where it looks: in `module`, which is the stand-in until the real one is loaded)."""

    def delegate(*args: Any, **kwargs: Any) -> Any:
        return getattr(_real(module), function)(*args, **kwargs)

    delegate.__module__, delegate.__name__, delegate.__qualname__ = module, function, function
    return delegate


def _is_stand_in(module: ModuleType) -> bool:
    """Whether `module` is a stand-in still (a reload runs the real code in it and gives it the real spec)."""
    return isinstance(getattr(getattr(module, "__spec__", None), "loader", None), _StandInLoader)


def _real(name: str) -> ModuleType:
    """The real module `name` stands in for: loaded now (once), put in `sys.modules` and on its package.

    One thread at a time: two first uses at once load it once, and a thread never gets a module another is
    still loading (`import_module` waits for it).
    """
    import importlib

    with _REAL_LOCK:
        stand_in = sys.modules.get(name)
        if stand_in is None or not _is_stand_in(stand_in):
            return importlib.import_module(name)
        del sys.modules[name]
        try:
            real = importlib.import_module(name)  # sets it on its package too
        except BaseException:
            sys.modules.setdefault(name, stand_in)
            raise
        delegates = {function: vars(stand_in).get(function) for function in _TAKEN_BY_NAME.get(name, ())}
        # whoever holds the stand-in (`_json_schema`'s `mi`) now reads the real names
        vars(stand_in).update({key: value for key, value in vars(real).items() if not key.startswith("__")})
        for holder in list(sys.modules.values()):  # a module that took a delegate by name gets the real function
            names = getattr(holder, "__dict__", {})  # (read as stored: no module's own __getattr__ is asked)
            for function, delegate in delegates.items():
                if delegate is not None and names.get(function) is delegate:
                    setattr(holder, function, getattr(real, function))
        return real


def install() -> None:
    """Put the finders first on the meta path (once), unless msgspec is already loaded."""
    if MSGSPEC_HELPERS in sys.modules:
        return
    if not any(isinstance(finder, _SchemaOnUse) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SchemaOnUse())
    if not any(isinstance(finder, _WithoutTypingExtensions) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WithoutTypingExtensions())
    if ("uuid" not in sys.modules and "platform" not in sys.modules and sys.platform.startswith("linux")
            and not any(isinstance(finder, _UuidWithoutPlatform) for finder in sys.meta_path)):
        sys.meta_path.insert(0, _UuidWithoutPlatform())
