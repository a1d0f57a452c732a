"""`continuity mcp`: the commands as MCP tools over stdio, built on the official `mcp` SDK (v2).

`registry` holds the tools (name -> input Struct, handler, description), `tools` registers
the six that mirror the CLI, `server` serves them. Only `server` imports the SDK, and only
when it runs, so no other command pays for it. Run it as `continuity mcp` or
`python -m continuity.adapters.mcp [--root DIR]`.
"""
