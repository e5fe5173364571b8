package controller

import "regexp"

// Volatile is a part of a tool result that a harness makes different on every run (a wall
// time, a chunk id). Compare and identifier learning mask it before they look at a result.
type Volatile struct {
	Harness string // "" for every harness
	Name    string // what the field is, for reports
	re      *regexp.Regexp
	repl    string
}

// VolatileFields lists the volatile fields TapeBox knows, per harness. Compare names them in
// its report.
var VolatileFields = []Volatile{
	{Harness: "codex", Name: "exec_command chunk id", re: regexp.MustCompile(`Chunk ID: [0-9a-fA-F]+`), repl: "Chunk ID: <chunk>"},
	{Harness: "codex", Name: "wall time", re: regexp.MustCompile(`Wall time: [0-9.]+ seconds`), repl: "Wall time: <t> seconds"},
	{Harness: "codex", Name: "shell duration_seconds", re: regexp.MustCompile(`"duration_seconds":\s*[0-9.]+`), repl: `"duration_seconds":<t>`},
	// spawn_agent (multi_agent_v1) names each child with a nickname drawn at random
	// ("Noether", "Singer"); its agent_id is an identifier, learned like the others.
	{Harness: "codex", Name: "spawn_agent nickname", re: regexp.MustCompile(`"nickname":\s*"[^"\\]*"`), repl: `"nickname":"<name>"`},
	{Harness: "claude-code", Name: "subagent usage footer: agentId", re: regexp.MustCompile(`agentId: [A-Za-z0-9_\-]+`), repl: "agentId: <id>"},
	{Harness: "claude-code", Name: "subagent usage footer: durations and counts", re: regexp.MustCompile(`(duration_ms|total_tokens|tool_uses): ?[0-9]+`), repl: "$1: <n>"},
}

// Mask replaces the volatile fields of harness in s with placeholders.
func Mask(harness, s string) string {
	for _, v := range VolatileFields {
		if v.Harness == "" || v.Harness == harness || harness == "" {
			s = v.re.ReplaceAllString(s, v.repl)
		}
	}
	return s
}

// VolatileNames lists the volatile fields that apply to harness, for reports.
func VolatileNames(harness string) []string {
	var out []string
	for _, v := range VolatileFields {
		if v.Harness == "" || v.Harness == harness || harness == "" {
			out = append(out, v.Harness+": "+v.Name)
		}
	}
	return out
}

// IdentifierField is a place where a harness puts an identifier it makes up on every run (a
// background shell id, a session id, an agent id). A value standing there is learned as an
// identifier without further evidence; any other value needs the recording to use it again
// (see Identifiers).
type IdentifierField struct {
	Harness string
	Name    string
	// re finds the field in a tool result's text; its first group is the identifier.
	re *regexp.Regexp
	// Keys are the JSON fields of tool call inputs that carry the identifier back, where a
	// number is replaced (ApplyJSON); strings are replaced wherever an id token stands.
	Keys []string
}

// IdentifierFields lists the identifier fields TapeBox knows, per harness.
var IdentifierFields = []IdentifierField{
	{Harness: "claude-code", Name: "background shell id", re: regexp.MustCompile(`Command running in background with ID: ([A-Za-z0-9_\-]+)`), Keys: []string{"bash_id", "shell_id", "task_id"}},
	{Harness: "claude-code", Name: "background output file", re: regexp.MustCompile(`Output is being written to: (\S+?)\.?(?:\s|$)`)},
	{Harness: "claude-code", Name: "task id", re: regexp.MustCompile(`<task_id>([^<\s]+)</task_id>`), Keys: []string{"task_id"}},
	{Harness: "claude-code", Name: "persisted output file", re: regexp.MustCompile(`Full output saved to: (\S+)`)},
	{Harness: "claude-code", Name: "agent id", re: regexp.MustCompile(`agentId: ([A-Za-z0-9_\-]+)`), Keys: []string{"agentId", "agent_id"}},
	{Harness: "claude-code", Name: "agent id to continue with SendMessage", re: regexp.MustCompile(`use SendMessage with to: '([A-Za-z0-9_\-]+)'`)},
	{Harness: "codex", Name: "exec session id", re: regexp.MustCompile(`Process running with session ID (\d+)`), Keys: []string{"session_id"}},
	{Harness: "codex", Name: "agent id", re: regexp.MustCompile(`"agent_id":\s*"([^"\\]+)"`), Keys: []string{"agent_id"}},
}
