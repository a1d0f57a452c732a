"""`python -m continuity`."""

from continuity.cli import run

run()
