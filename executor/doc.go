// Package executor is the sandbox side of replay: the session behind "tapebox-exec
// serve" (Serve) and the one-shot runner behind "tapebox-exec call" (Call). It speaks the
// executor protocol of package executor/protocol and hands each tool call to the harness
// module named in hello (Harnesses: claude-code, codex).
//
// Layout: executor/protocol (the wire messages), executor/action (what a tool call can
// do: Shell, background Tasks, ReadFile, WriteFile, EditFile, Glob, Grep, ApplyPatch),
// executor/harness (the Harness interface, Env, Registry) with one module per harness
// (executor/harness/claudecode, executor/harness/codex), executor/cli (the command line)
// and cmd/tapebox-exec (main).
//
// The executor and its modules import the standard library and packages tape and
// executor/protocol only, so that cmd/tapebox-exec builds as a small static binary
// (TestDependencies enforces it).
package executor
