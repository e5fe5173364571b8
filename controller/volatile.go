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
