package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// atifSchema compiles testdata/atif-v1.7.schema.json, the v1.7 definitions transcribed.
func atifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/atif-v1.7.schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	const url = "https://tapebox.dev/test/atif-v1.7.schema.json"
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err)
	return s
}

var isoRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)

// checkATIF checks a trajectory against the v1.7 schema and the RFC's rules across fields:
// step ids sequential from 1; model_name, reasoning_content, tool_calls and metrics only on
// agent steps; every observation result's source_call_id names a tool call of its step; an
// embedded subagent has a trajectory_id unique among its siblings, and every
// subagent_trajectory_ref resolves to one. It returns every problem.
func checkATIF(t *testing.T, s *jsonschema.Schema, b []byte) []string {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	var problems []string
	if err := s.Validate(inst); err != nil {
		problems = append(problems, "schema: "+err.Error())
	}
	var tr map[string]any
	require.NoError(t, json.Unmarshal(b, &tr))
	var walk func(path string, tr map[string]any)
	walk = func(path string, tr map[string]any) {
		embedded := map[string]bool{}
		subs, _ := tr["subagent_trajectories"].([]any)
		for i, x := range subs {
			sub, _ := x.(map[string]any)
			id, _ := sub["trajectory_id"].(string)
			if id == "" || embedded[id] {
				problems = append(problems, fmt.Sprintf("%s.subagent_trajectories[%d]: trajectory_id missing or not unique (%q)", path, i, id))
			}
			embedded[id] = true
			walk(fmt.Sprintf("%s.subagent_trajectories[%d]", path, i), sub)
		}
		steps, _ := tr["steps"].([]any)
		for i, x := range steps {
			st, _ := x.(map[string]any)
			at := fmt.Sprintf("%s.steps[%d]", path, i)
			if id, _ := st["step_id"].(float64); int(id) != i+1 {
				problems = append(problems, fmt.Sprintf("%s: step_id %v, want %d", at, st["step_id"], i+1))
			}
			if ts, ok := st["timestamp"].(string); ok && !isoRE.MatchString(ts) {
				problems = append(problems, at+": timestamp not ISO 8601: "+ts)
			}
			if st["source"] != "agent" {
				for _, f := range []string{"model_name", "reasoning_content", "tool_calls", "metrics", "reasoning_effort"} {
					if _, ok := st[f]; ok {
						problems = append(problems, fmt.Sprintf("%s: %s on a %v step", at, f, st["source"]))
					}
				}
			}
			calls := map[string]bool{}
			tcs, _ := st["tool_calls"].([]any)
			for _, c := range tcs {
				cm, _ := c.(map[string]any)
				id, _ := cm["tool_call_id"].(string)
				calls[id] = true
			}
			obs, _ := st["observation"].(map[string]any)
			results, _ := obs["results"].([]any)
			for j, r := range results {
				rm, _ := r.(map[string]any)
				if id, ok := rm["source_call_id"].(string); ok && !calls[id] {
					problems = append(problems, fmt.Sprintf("%s.observation.results[%d]: source_call_id %q is no tool call of the step", at, j, id))
				}
				refs, _ := rm["subagent_trajectory_ref"].([]any)
				for _, ref := range refs {
					id, _ := ref.(map[string]any)["trajectory_id"].(string)
					if !embedded[id] {
						problems = append(problems, fmt.Sprintf("%s.observation.results[%d]: subagent_trajectory_ref %q resolves to no embedded trajectory", at, j, id))
					}
				}
			}
		}
	}
	walk("$", tr)
	return problems
}

func loadTestTape(t testing.TB, name string) *tape.Tape {
	t.Helper()
	tp, err := tape.LoadFile("../testdata/replay/" + name)
	require.NoError(t, err)
	return tp
}

// TestATIF exports a recorded Claude Code tape with a subagent and checks the trajectory
// against the v1.7 definitions, then field by field against the tape.
func TestATIF(t *testing.T) {
	s := atifSchema(t)
	tp := loadTestTape(t, "claude-code.json")
	// cache writes: 77 in main's first call, 5 in the subagent's
	tp.Main().Steps[0].Response.Usage.CacheCreationInputTokens = 77
	tp.Children(tp.Main())[0].Steps[0].Response.Usage.CacheCreationInputTokens = 5
	price := 1e-6
	b, err := ExportATIF(tp, Options{PricesDate: "2026-05-15", Cost: func(*tape.Meta, *tape.Step) *float64 { return &price }})
	require.NoError(t, err)
	require.Empty(t, checkATIF(t, s, b))

	var tr atifTrajectory
	require.NoError(t, json.Unmarshal(b, &tr))
	assert.Equal(t, "ATIF-v1.7", tr.SchemaVersion)
	assert.Equal(t, tp.Meta.TapeID, tr.SessionID)
	assert.Equal(t, tp.Meta.Harness, tr.Agent.Name)
	assert.Equal(t, tp.Meta.HarnessVersion, tr.Agent.Version)
	main := tp.Main()
	require.Len(t, tr.SubagentTrajectories, len(tp.Children(main)))
	// under is th and every thread below it: a trajectory's totals include its subagents'.
	var under func(th *tape.Thread) []*tape.Thread
	under = func(th *tape.Thread) []*tape.Thread {
		out := []*tape.Thread{th}
		for _, c := range tp.Children(th) {
			out = append(out, under(c)...)
		}
		return out
	}
	check := func(tr atifTrajectory, th *tape.Thread) {
		var agent []atifStep
		for _, st := range tr.Steps {
			if st.Source == "agent" {
				agent = append(agent, st)
			}
		}
		require.Len(t, agent, len(th.Steps), "one agent step per model call of %s", th.ID)
		var tokens int64
		for i, st := range agent {
			ts := th.Steps[i]
			require.Len(t, st.ToolCalls, len(ts.ToolCalls))
			for j, c := range ts.ToolCalls {
				assert.Equal(t, c.ID, st.ToolCalls[j].ToolCallID)
				assert.Equal(t, c.Name, st.ToolCalls[j].FunctionName)
				assert.JSONEq(t, string(c.Input), string(st.ToolCalls[j].Arguments))
			}
			var results []atifResult
			if st.Observation != nil {
				results = st.Observation.Results
			}
			require.Len(t, results, len(ts.ToolResults))
			for j, r := range ts.ToolResults {
				assert.Equal(t, r.ToolCallID, results[j].SourceCallID)
				assert.Equal(t, r.Text(), results[j].Content)
			}
			u := ts.Response.Usage
			assert.Equal(t, u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens, st.Metrics.PromptTokens, "prompt_tokens counts cached tokens")
			assert.Equal(t, u.OutputTokens, st.Metrics.CompletionTokens)
			assert.Equal(t, u.CacheReadInputTokens, st.Metrics.CachedTokens)
			require.NotNil(t, st.Metrics.CostUSD)
			if u.CacheCreationInputTokens > 0 {
				assert.Equal(t, map[string]any{"cache_creation_input_tokens": float64(u.CacheCreationInputTokens)}, st.Metrics.Extra, "cache writes in metrics.extra")
			} else {
				assert.Nil(t, st.Metrics.Extra)
			}
		}
		var written int64
		steps := 0
		for _, x := range under(th) {
			for _, s := range x.Steps {
				u := s.Response.Usage
				tokens += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
				written += u.CacheCreationInputTokens
				steps++
			}
		}
		assert.Equal(t, tokens, tr.FinalMetrics.TotalPromptTokens, "%s: its steps and its subagents'", th.ID)
		assert.Equal(t, len(tr.Steps), tr.FinalMetrics.TotalSteps)
		require.NotNil(t, tr.FinalMetrics.TotalCostUSD)
		assert.InDelta(t, float64(steps)*price, *tr.FinalMetrics.TotalCostUSD, 1e-12)
		assert.Equal(t, float64(written), tr.FinalMetrics.Extra["total_cache_creation_input_tokens"])
		assert.Equal(t, "2026-05-15", tr.FinalMetrics.Extra["prices_date"])
	}
	check(tr, main)
	sub := tp.Children(main)[0]
	check(tr.SubagentTrajectories[0], sub)
	assert.Equal(t, tp.Meta.TapeID+"-"+sub.ID, tr.SubagentTrajectories[0].TrajectoryID)

	// Unknown cost: no cost_usd, never 0.
	b, err = ExportATIF(tp, Options{Cost: func(*tape.Meta, *tape.Step) *float64 { return nil }})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "cost_usd")
}

// TestATIFCheckerCatches plants one violation of the v1.7 rules at a time: the checker must
// report each.
func TestATIFCheckerCatches(t *testing.T) {
	s := atifSchema(t)
	good, err := ExportATIF(loadTestTape(t, "claude-code.json"), Options{})
	require.NoError(t, err)
	for _, c := range []struct{ name, from, to string }{
		{"unknown field", `"schema_version":"ATIF-v1.7"`, `"schema_version":"ATIF-v1.7","colour":"red"`},
		{"bad version", `"ATIF-v1.7"`, `"ATIF-v2.0"`},
		{"step ids", `"step_id":2,`, `"step_id":7,`},
		{"metrics on a user step", `"source":"user",`, `"source":"user","metrics":{},`},
		{"result of no call", `"source_call_id":"`, `"source_call_id":"zz`},
		{"dangling subagent ref", `"subagent_trajectory_ref":[{"trajectory_id":"`, `"subagent_trajectory_ref":[{"trajectory_id":"x`},
		{"arguments not an object", `"arguments":{`, `"arguments":"{}","x":{`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(string(good), c.from, c.to, 1)
			require.NotEqual(t, string(good), bad, "nothing replaced")
			assert.NotEmpty(t, checkATIF(t, s, []byte(bad)), "the checker let a planted violation through")
		})
	}
}
