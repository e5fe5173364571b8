// Package tapegen generates corpora of realistic tapes (Claude Code and Codex runs with
// growing conversations, streams, subagents and workspace snapshots), deterministically
// from a seed, for tests and benchmarks. No user needs it, so it is internal; the command
// dataset/bench/gencorpus writes one to disk.
package tapegen
