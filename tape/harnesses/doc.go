// Package harnesses is the one table of the agent harnesses TapeBox knows (Claude Code,
// Codex CLI, Pi, OpenCode): per harness, the tools that spawn a subagent, whether it runs tool calls in
// parallel, the parts of its tool results that change on every run (volatile fields), the
// places where it makes up identifiers, and how its requests name the working directory.
//
// The gateway (thread tree), the controller (compare, identifier learning), tape/provider
// (meta.cwd) and the executor's harness modules (their hello policy) all read it, so that
// adding a harness is one entry here plus its executor module (executor/harness/...).
//
// It uses the standard library only: the executor links it. Patterns are kept as strings
// and compiled by the packages that match them, so the executor pays nothing for them.
package harnesses
