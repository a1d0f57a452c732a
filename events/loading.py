"""msgspec loaded the way it loads where `typing_extensions` is not installed.

`typing_extensions` is not one of msgspec's dependencies: msgspec imports it only when it
happens to be installed (other packages bring it), and otherwise takes `get_type_hints`,
`Required` and `NotRequired` from `typing` (Python 3.11's standard library has all three).
Importing it costs every process that loads msgspec a few milliseconds (with `inspect`,
`ast`, `dis` and `tokenize` behind it), which the hook path feels. No Struct here uses a
`typing_extensions` type, so while msgspec's own helper module is being imported, and only
then, the finder below answers that `typing_extensions` is not there. Any other importer
gets it as usual, before and after.
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


def install() -> None:
    """Put the finder first on the meta path (once), unless msgspec is already loaded."""
    if MSGSPEC_HELPERS in sys.modules:
        return
    if not any(isinstance(finder, _WithoutTypingExtensions) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WithoutTypingExtensions())
