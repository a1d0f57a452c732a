"""Tracked workstreams (seed 002): the checkpoint document, decisions, views."""
