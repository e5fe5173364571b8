// Package interop converts tapes to and from the formats other tools read: the session
// files Claude Code and Codex write themselves (which they resume from, and which the
// Hugging Face Hub's trace viewer opens), the Hub's Session Trace Simple format, ATIF v1.7
// trajectories (Harbor, terminal-bench) and OpenTelemetry GenAI spans as OTLP/JSON. The
// pi coding agent's session files, which the Hub opens too, are read but not written.
//
// Exports are views: a session file holds a tape's conversation, tool calls and results,
// never its raw wire bodies or credentials. Imports give tapes with normalized steps only
// (no raw bodies, no timing), which meta.labels says (LabelForm); Synthesize adds raw
// stream bodies made from the normalized form (by tape/provider's StepAnswer and Stream) so
// that such a tape can also be served in simulator mode. Import reads Claude Code, Codex, Gemini CLI, OpenCode, Pi and STS files,
// or, with Auto, tells each file's format (Detect: by its first line, or as a whole for an
// OpenCode export), so that a Hub Traces dataset or a folder of exports imports whole; what a file held that the normalized form has no place for is counted in
// LabelLost. A file that only looks like a format (a Qwen Code session, whose lines are
// shaped like Claude Code's) is an error naming its file, line and field, never an empty
// tape: Detect checks a Claude Code file whole, and each importer refuses a message it
// cannot read or a session in which it recognized no model answer.
package interop
