// Package opencode is the executor's module for OpenCode (the opencode CLI, npm
// opencode-ai): its tools bash, read, write, edit, glob, grep and todowrite performed in
// the sandbox and their results worded as opencode 1.18 words them (derived from the
// TypeScript in its binary and checked against the real binary by executor/conformance and
// internal/fidelity). apply_patch, which opencode offers a GPT model (an id with "gpt-",
// neither "gpt-4" nor "oss") in place of edit and write, is performed too: opencode's own
// lenient patch parser, the applier shared with the Codex module (action.ApplyChunksLF).
//
// task starts a subagent: the controller plays its thread. webfetch, websearch, skill and
// every other tool replay their recorded results (copied, not run), as does a call of a tool
// the recorded request did not offer (opencode's answer lists the tools it has).
package opencode
