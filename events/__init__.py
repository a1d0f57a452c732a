"""The event log: event types, canonical codec, durable append, read and verify.

Importing this package loads nothing heavy; import the submodule you need.
"""

from events import loading as _loading

_loading.install()  # before anything loads msgspec (events/loading.py)
