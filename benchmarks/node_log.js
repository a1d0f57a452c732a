// A Node CLI of the same shape as seed 004's `log`: read the arguments, build one JSON
// event, write it with fs.writeFileSync. The floor the hook path is measured against.
"use strict";
const fs = require("fs");
const path = require("path");

const args = process.argv.slice(2);
const flags = {};
for (let i = 0; i < args.length; i += 2) flags[args[i].replace(/^--/, "")] = args[i + 1];
const now = new Date();
const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "_").replace(/\..*/, "");
const event = {
  event_id: `RCE-${stamp}-${process.pid}`,
  project: flags.project || "bench",
  host: flags.host || null,
  agent_id: flags["agent-id"] || null,
  type: flags.type || "log",
  created_at: now.toISOString(),
  phase: flags.phase || null,
  message: flags.message || "",
  summary: { done: [], in_progress: null, next: flags.next ? [flags.next] : [], blockers: [] },
  refs: { files: [], commands: [], artifacts: [], handoffs: [] },
};
const dir = path.join(flags.root || ".", ".agent", "runtime-continuity", "node-events", stamp.slice(0, 8));
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir, `${event.event_id}.json`);
fs.writeFileSync(file, JSON.stringify(event, null, 2) + "\n");
process.stdout.write(JSON.stringify({ ok: true, action: "log", event_path: file }, null, 2) + "\n");
