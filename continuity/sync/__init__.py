"""Git as the distributed engine: the continuity branch, `sync` and `clone-store`.

The history travels on its own branch (default `continuity`, `sync_branch` in config.json)
whose commits hold `events/<YYYYMMDD>/<event file>` byte for byte, laid out as the store's
events folder: each commit the events it adds (`sync_layout`, tree.py).
It is written only with plumbing (hash-object or fast-import, mktree, commit-tree,
update-ref with the expected old value), so the user's HEAD, index, working branch, work
tree and stash are never touched. Modules: `git` (running git), `objects` (many objects
through one process), `tree` (the branch's trees and their union), `files` (the store's
side), `engine` (the sync algorithm), `clone` (clone-store), `credentials` (remote URLs
that embed credentials: refused, warned about, masked), `auto` (the background sync),
`health` (what waits to be pushed, the last success and failure: `sync --status`).

The package imports none of them: `status` and the SessionStart brief ask `health` whether
events wait to be pushed, and must not load the sync engine to do so.
"""
