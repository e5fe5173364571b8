// Package harness defines what a harness module is (the Harness interface, and Module, which
// builds one on the harness's entry in tape/harnesses), the session it runs tool calls in
// (Env), a Registry of modules, and helpers the modules share.
//
// A harness module maps each tool call of its harness to an action of package
// executor/action and formats the action's result exactly as that harness formats it.
// Tools with no effect in the sandbox replay the recorded result verbatim (Noop).
// Modules: executor/harness/claudecode ("claude-code"), executor/harness/codex ("codex")
// and executor/harness/pi ("pi").
package harness
