"""Tasks, agent runs and synthesized memories (seed 003): decisions and the service the CLI and MCP call."""
