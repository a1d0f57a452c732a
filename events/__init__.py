"""The event log: event types, canonical codec, durable append, read and verify.

Importing this package loads nothing heavy; import the submodule you need.
"""
