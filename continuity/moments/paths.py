"""Where a team's checkpoint-channel documents live, relative to the store (plain: on the snapshot path)."""

from __future__ import annotations


def bus_relpath(team: str, name: str) -> str:
    """A bus-v3 document of a team, relative to the store."""
    return f"team/{team}/_coord/bus-v3/{name}"


def config_relpath(team: str) -> str:
    """The channel config, relative to the store."""
    return bus_relpath(team, "checkpoints.json")
