"""Decisions: functions that take a request (and state) and return events to append."""
