"""Handoffs: work passed between agents and hosts, with a lifecycle (create, accept, reject, close)."""
