"""continuity: keeps AI coding agents' working state alive across sessions, hosts and machines."""

__version__ = "0.1.0"
