"""worklog."""
