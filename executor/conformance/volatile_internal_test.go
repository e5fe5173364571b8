package conformance

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	table "github.com/tapebox/tapebox/tape/harnesses"
)

func result(text string, isError bool) tape.ToolResult {
	return tape.ToolResult{ToolCallID: "x", Content: []tape.Block{{Type: tape.BlockText, Text: text}}, IsError: isError}
}

// The comparison ignores exactly the volatile fields and catches everything else.
func TestDiffResults(t *testing.T) {
	execOut := "Chunk ID: 95fad4\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 6\nOutput:\nline 1\n"
	bg := "Command running in background with ID: bajdswjfd. Output is being written to: /tmp/claude-0/-tmp-x/02a44c8d-31e2-49da-962b-5d17bb927c11/tasks/bajdswjfd.output. You will be notified when it completes."
	cases := []struct {
		name      string
		harness   string
		tool      string
		want, got tape.ToolResult
		same      bool
	}{
		{"identical", realharness.Claude, "Bash", result("a\nb", false), result("a\nb", false), true},
		{"one byte", realharness.Claude, "Bash", result("a\nb", false), result("a\nc", false), false},
		{"trailing newline", realharness.Claude, "Read", result("1\ta", false), result("1\ta\n", false), false},
		{"is_error on the Anthropic wire", realharness.Claude, "Bash", result("x", true), result("x", false), false},
		{"is_error not on the Responses wire", realharness.Codex, "exec_command", result(execOut, false), result(execOut, true), true},
		{"chunk id and wall time", realharness.Codex, "exec_command", result(execOut, false),
			result(strings.NewReplacer("95fad4", "0a1b2c", "0.0000", "1.2500").Replace(execOut), false), true},
		{"exit code is not volatile", realharness.Codex, "exec_command", result(execOut, false),
			result(strings.Replace(execOut, "code 0", "code 1", 1), false), false},
		{"a chunk id is Codex's volatile field only", realharness.Claude, "Bash", result("Chunk ID: 95fad4", false), result("Chunk ID: 000000", false), false},
		{"background id and path", realharness.Claude, "Bash", result(bg, false),
			result("Command running in background with ID: t1. Output is being written to: /tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/t1/output. You will be notified when it completes.", false), true},
		{"background tail is compared", realharness.Claude, "Bash", result(bg, false),
			result("Command running in background with ID: t1. Output is being written to: /tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/t1/output. You will be told.", false), false},
		{"command moved to the background at its timeout", realharness.Claude, "Bash",
			result("before\nCommand did not complete within its 1s timeout and was moved to the background (ID: b770dudwh). Output is being written to: /tmp/claude-0/x/s/tasks/b770dudwh.output. You will be notified.", false),
			result("before\nCommand did not complete within its 1s timeout and was moved to the background (ID: 7). Output is being written to: /tmp/tapebox-exec-state-0-9f3c1e0a7b2d4c68/tasks/7/output. You will be notified.", false), true},
		{"block count", realharness.Claude, "Bash", result("a", false), tape.ToolResult{Content: []tape.Block{{Type: "text", Text: "a"}, {Type: "text"}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			diff := diffResults(tc.harness, tape.ToolCall{Name: tc.tool}, tc.want, tc.got)
			if tc.same {
				assert.Empty(t, diff)
			} else {
				assert.NotEmpty(t, diff)
			}
		})
	}
}

// unexercised names the fields of the harness table that no conformance case makes the
// harness write, and why.
var unexercised = map[string]string{
	"claude-code task id":          "TaskOutput results: no case runs TaskOutput on the real harness",
	"codex shell duration_seconds": "the legacy shell tool: Codex 0.171.0 runs exec_command",
	"codex spawn_agent nickname":   "spawning tools are played by the controller, not captured",
	"codex agent id":               "spawning tools are played by the controller, not captured",
}

// Every volatile and identifier field of the harness table still matches something the
// harness really produced, or is named in unexercised: a pattern gone stale after a harness
// upgrade would otherwise hide nothing and mislead.
func TestTableFieldsMatchFixtures(t *testing.T) {
	for _, h := range harnesses {
		entry, ok := table.Lookup(h.name)
		require.True(t, ok, h.name)
		fields := map[string]*regexp.Regexp{}
		for _, v := range entry.Volatile {
			fields[h.name+" "+v.Name] = regexp.MustCompile(v.Expr)
		}
		for _, id := range entry.Identifiers {
			fields[h.name+" "+id.Name] = regexp.MustCompile(id.Expr)
		}
		hits := map[string]int{}
		for _, c := range loadFixture(t, h.name).Cases {
			for _, s := range c.Steps {
				for name, re := range fields {
					if re.MatchString(text(s.Result)) {
						hits[name]++
					}
				}
			}
		}
		for name := range fields {
			why, listed := unexercised[name]
			switch {
			case hits[name] == 0 && !listed:
				t.Errorf("%s matches no fixture result: a stale pattern, or name it in unexercised", name)
			case hits[name] > 0 && listed:
				t.Errorf("%s matches %d fixture results but is listed as unexercised (%s)", name, hits[name], why)
			}
		}
	}
}

func TestSubstitute(t *testing.T) {
	ids := map[string]string{"exec session id:0": "4217", "background output file:1": `/tmp/a "b"/x.output`}
	cases := []struct {
		in, want, err string
	}{
		{`{"session_id":"<<exec session id:0>>","chars":""}`, `{"session_id":4217,"chars":""}`, ""},
		{`{"file_path":"<<background output file:1>>"}`, `{"file_path":"/tmp/a \"b\"/x.output"}`, ""},
		{`{"cmd":"cat <<background output file:1>> | wc"}`, `{"cmd":"cat /tmp/a \"b\"/x.output | wc"}`, ""},
		{`{"session_id":"<<exec session id:3>>"}`, "", "exec session id:3"},
		{`{"plain":1}`, `{"plain":1}`, ""},
	}
	for _, tc := range cases {
		got, err := substitute(json.RawMessage(tc.in), ids)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err)
			continue
		}
		if assert.NoError(t, err) {
			assert.JSONEq(t, tc.want, string(got))
		}
	}
	got := harvest(realharness.Codex, []tape.ToolResult{result("x", false), result("Process running with session ID 77\n", false)})
	assert.Equal(t, map[string]string{"exec session id:1": "77"}, got)
}
