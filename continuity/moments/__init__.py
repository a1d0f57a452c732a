"""The checkpoint channel (seed 000): moments, the shadows of saved snapshots, and their delivery."""
