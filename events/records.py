"""`NamedTuple` for the hook path: the classes read like `typing.NamedTuple`, without importing `typing`.

The write path (`continuity log`, the record-only hooks) starts a new interpreter each
time, and `typing` costs that start a few milliseconds. Type checkers see
`typing.NamedTuple`; at run time a class body's annotated names become the fields of a
`collections.namedtuple` (no defaults, which none of ours has), its methods and docstring kept.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    class _Maker(type):
        def __new__(mcs, name, bases, namespace):
            if not bases:  # the NamedTuple base itself
                return super().__new__(mcs, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            if not fields:  # e.g. a module without `from __future__ import annotations` on Python 3.14
                raise TypeError(f"{name}: no annotated fields found (the module needs `from __future__ import "
                                "annotations`)")
            made = namedtuple(name, fields, module=namespace.get("__module__"))
            extra = {key: value for key, value in namespace.items()
                     if key not in ("__annotations__", "__qualname__", "__module__", "__dict__", "__weakref__")}
            record = type(name, (made,), {"__slots__": (), "__module__": made.__module__,
                                          "__qualname__": namespace.get("__qualname__", name), **extra})
            record.__annotations__ = namespace.get("__annotations__", {})
            return record

    class NamedTuple(metaclass=_Maker):
        """Subclass with annotated fields, as with `typing.NamedTuple`."""
