"""Compatibility entry points: other CLIs' contracts spoken over continuity's log and projections."""
