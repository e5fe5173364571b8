// Package opencode is the executor's module for OpenCode (the opencode CLI, npm
// opencode-ai): its tools bash, read, write, edit, glob, grep and todowrite performed in
// the sandbox and their results worded as opencode 1.18 words them (derived from the
// TypeScript in its binary and checked against the real binary by executor/conformance).
//
// task starts a subagent: the controller plays its thread. webfetch, websearch, skill,
// apply_patch and every other tool replay their recorded results (copied, not run).
package opencode
