package fidelity

import "testing"

// OpenCode's classes take what they were written for and leave the rest unclassified.
func TestOpenCodeClasses(t *testing.T) {
	const v = OpenCodeVersion
	for _, tc := range []struct {
		d    Divergence
		want string
	}{
		{Divergence{Field: "tool_result", Tool: "bash", Input: "stderr", Recorded: "b\na\n", Replayed: "a\nb\n"}, "stdout/stderr interleaving"},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "stderr", Recorded: "b\na\n", Replayed: "a\nc\n"}, ""},
		{Divergence{Field: "tool_result", Tool: "grep", Input: "pattern", Recorded: "Found 100 matches (more matches available)\n/w/a:\n", Replayed: "Found 100 matches (more matches available)\n/w/b:\n"}, "ripgrep's order under the match limit"},
		{Divergence{Field: "tool_result", Tool: "grep", Input: "pattern", Recorded: "Found 2 matches\n/w/a:\n", Replayed: "Found 1 matches\n/w/a:\n"}, ""},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "over-51200-bytes", Recorded: "...output truncated...\n\nFull output saved to: /h/tool_1\n\nabc\nabc", Replayed: "...output truncated...\n\nFull output saved to: /s/tool_2\n\nabc\nabc\n"}, "opencode's window of a long output"},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "over-51200-bytes", Recorded: "...output truncated...\n\nFull output saved to: /h/tool_1\n\nabc\nabd", Replayed: "...output truncated...\n\nFull output saved to: /s/tool_2\n\nabc\nabc\n"}, ""},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "cat", Recorded: "...output truncated...\n\nFull output saved to: /h/tool_1\n\nhhh\nhh", Replayed: "...output truncated...\n\nFull output saved to: /s/tool_2\n\nhhh\nhhh\n"}, "opencode's window of a long output"},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "cat", Recorded: "hhh\n", Replayed: "hh\n"}, ""},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "over-51200-bytes", Recorded: "...output truncated...\n\nFull output saved to: /h/tool_1\n\nopqrstuvwxyz\nabcdefghijklmnopqrstuvwxyz\nabc", Replayed: "...output truncated...\n\nFull output saved to: /s/tool_2\n\nxyz\nabcdefghijklmnopqrstuvwxyz\nabcdefghijklmnopqrstuvwxyz\n"}, "opencode's window of a long output"},
		{Divergence{Field: "tool_result", Tool: "bash", Input: "over-51200-bytes", Recorded: "...output truncated...\n\nFull output saved to: /h/tool_1\n\nopqrstuvwxyz\nabcdefghijklmnopqrstuvwxyz\nabc", Replayed: "...output truncated...\n\nFull output saved to: /s/tool_2\n\nxyz\nabcdefghijklmnopqrstuvwxyZ\n"}, ""},
		{Divergence{Field: "tool_result", Tool: "glob", Input: "pattern", Recorded: "/w/bg-1.txt\n/w/a", Replayed: "/w/a"}, "background job against the harness's pace"},
		{Divergence{Field: "tool_result", Tool: "grep", Input: "pattern", Recorded: "regex parse error", Replayed: "grep: error"}, ""},
	} {
		if got := Classify(openCodeClasses, v, tc.d); got != tc.want {
			t.Errorf("%s: class %q, want %q", tc.d, got, tc.want)
		}
	}
}
