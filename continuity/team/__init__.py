"""Team continuity (seed 000): snapshots and the resume brief."""
