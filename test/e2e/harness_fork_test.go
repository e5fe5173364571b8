package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// forkCase is a repo case recorded for real, and "another model" that continues it
// differently from step 2 on.
type forkCase struct {
	realCase
	// other is the second provider's script: its turns before 2 must never be asked for.
	other func() fakeprovider.Script
	// check looks at the fork's end state (the files under cwd).
	check func(t *testing.T, state map[string]string)
}

// never is a turn the fork must not ask the live provider for: the recording serves it.
var never = fakeprovider.Turn{Text: "this turn is the recording's: a fork must not ask the upstream for it"}

func claudeForkCase() forkCase {
	c := claudeRepoCase()
	call := fakeprovider.Call
	return forkCase{realCase: c,
		other: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-claude-repo]", Turns: []fakeprovider.Turn{
				never, never,
				{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": "./greet.sh $(tail -1 src/names.txt) | tee out.txt", "description": "greet the last name"})}},
				{Text: "Done another way: greeted lin."},
			}}}}
		},
		check: func(t *testing.T, state map[string]string) {
			assert.Equal(t, "Hello, lin\n", state["out.txt"], "the other continuation ran, on the served prefix's edit of greet.sh")
			assert.Equal(t, "# Greeter\n\nRun ./greet.sh NAME.\n", state["README.md"], "the recording's step 2 (README edit) did not happen")
		},
	}
}

func codexForkCase() forkCase {
	c := codexRepoCase()
	exec := func(cmd string) tape.ToolCall { return fakeprovider.Call("exec_command", map[string]any{"cmd": cmd}) }
	return forkCase{realCase: c,
		other: func() fakeprovider.Script {
			return fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Marker: "[rh-codex-repo]", Turns: []fakeprovider.Turn{
				never, never,
				{Calls: []tape.ToolCall{exec("./greet.sh $(tail -1 src/names.txt) | tee out.txt")}},
				{Text: "Done another way: greeted lin."},
			}}}}
		},
		check: func(t *testing.T, state map[string]string) {
			assert.Equal(t, "Hello, lin\n", state["out.txt"], "the other continuation ran, on the served prefix's patch of greet.sh")
			assert.Equal(t, "# Greeter\n\nRun ./greet.sh NAME: it prints Hello, NAME.\n", state["README.md"], "the served patch (step 1) is in the workspace")
		},
	}
}

// modelCalls are the model requests a fake provider received.
func modelCalls(srv *fakeprovider.Server) []fakeprovider.Request {
	var out []fakeprovider.Request
	for _, q := range srv.Requests() {
		if q.Endpoint == fakeprovider.EndpointMessages || q.Endpoint == fakeprovider.EndpointResponses {
			out = append(out, q)
		}
	}
	return out
}

// conversation is the part of a request body that holds the messages.
func conversation(t *testing.T, p tape.Provider, body []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m))
	if p == tape.ProviderOpenAIResponses {
		return string(m["input"])
	}
	return string(m["messages"])
}

// testHome matches a HOME directory the tests make (t.TempDir()).
var testHome = regexp.MustCompile(`/tmp/TestRealHarness[^/"]*/[0-9]{3}/`)

func maskHome(s string) string { return testHome.ReplaceAllString(s, "<home>/") }

// resultsInOrder re-encodes Anthropic messages with the tool_result blocks of each message
// sorted by tool_use_id (the encoding is the same for both sides compared).
func resultsInOrder(t *testing.T, messages string) string {
	t.Helper()
	var ms []map[string]any
	require.NoError(t, json.Unmarshal([]byte(messages), &ms))
	for _, m := range ms {
		blocks, ok := m["content"].([]any)
		if !ok {
			continue
		}
		sort.SliceStable(blocks, func(i, j int) bool {
			a, _ := blocks[i].(map[string]any)
			b, _ := blocks[j].(map[string]any)
			if a["type"] != "tool_result" || b["type"] != "tool_result" {
				return false
			}
			return fmt.Sprint(a["tool_use_id"]) < fmt.Sprint(b["tool_use_id"])
		})
	}
	out, err := json.Marshal(ms)
	require.NoError(t, err)
	return string(out)
}

// codexItemID matches the ids Codex gives the input items it makes (a prefix and a UUID).
var codexItemID = regexp.MustCompile(`"id":"[a-z]+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"`)

// codexMask masks Codex's per-run item ids and the volatile fields of its tool output
// (match.Mask: chunk ids, wall times).
func codexMask(s string) string {
	return match.Mask("codex", codexItemID.ReplaceAllString(s, `"id":"<id>"`))
}

// forkSummary is what tapebox fork --json prints.
type forkSummary struct {
	Tape           string         `json:"tape"`
	Ended          string         `json:"ended"`
	Detail         string         `json:"detail"`
	ExitCode       int            `json:"exit_code"`
	Reached        bool           `json:"reached"`
	Served         map[string]int `json:"served"`
	ServedSteps    int            `json:"served_steps"`
	LiveSteps      int            `json:"live_steps"`
	ToForkMS       float64        `json:"to_fork_ms"`
	RecordedToFork float64        `json:"recorded_to_fork_ms"`
	FirstToFork    float64        `json:"first_call_to_fork_ms"`
	RecordedFirst  float64        `json:"recorded_first_call_to_fork_ms"`
	WallMS         float64        `json:"wall_ms"`
}

// TestRealHarnessFork records the real Claude Code and the real Codex on a repository (three
// or more steps with file edits), then forks each tape at step 2 with tapebox fork onto a
// second fake provider that scripts another continuation (issue 15): the first provider
// gets no request, the second exactly the live steps, its first request's conversation is
// the recording's at step 2 byte for byte (the model field overridden), the fork ends in the
// other continuation's files, and compare names the fork point. Then --models with a verify
// command that passes for one model and fails for the other.
func TestRealHarnessFork(t *testing.T) {
	r := newRig(t)
	for _, c := range []forkCase{claudeForkCase(), codexForkCase()} {
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			recPath, _, first := recordRealServer(t, r, c.realCase, t.TempDir())
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			recorded := len(first.Requests())

			second := fakeprovider.New(c.other())
			require.NoError(t, second.Start())
			t.Cleanup(func() { second.Close() })
			c.fresh(t)
			require.NoError(t, os.Remove(c.cwd)) // --in-place: fork restores into meta.cwd, missing or empty
			forkPath := filepath.Join(t.TempDir(), "fork.json")
			argv, env := c.command(t, t.TempDir())
			args := append([]string{"fork", "--in-place", "--tape", recPath, "--at", "2", "--upstream", second.URL(), "--model", "other-model",
				"--output", forkPath, "--json", "--"}, argv...)
			code, out, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
			if code != 0 {
				dumpRequests(t, second)
				t.Fatalf("tapebox fork: exit %d\nstdout:\n%s\nstderr:\n%s", code, clipText(out, 4000), clipText(errOut, 8000))
			}
			keep(t, forkPath, c.name+".fork.json")
			var sum forkSummary
			require.NoError(t, json.Unmarshal([]byte(out), &sum), out)

			assert.Equal(t, recorded, len(first.Requests()), "the recording's provider receives no request during the fork")
			live := modelCalls(second)
			require.NotEmpty(t, live)
			assert.NoError(t, second.Err())
			ft, err := tape.LoadFile(forkPath)
			require.NoError(t, err)
			liveSteps := ft.Totals().Steps - sum.ServedSteps
			assert.Equal(t, len(live), liveSteps, "the second provider receives exactly the live steps")
			assert.Equal(t, 2, live[0].Step, "the first live request is step 2")
			assert.Equal(t, map[string]int{"main": 2}, sum.Served)
			wantConv, gotConv := conversation(t, rec.Meta.Provider, rec.Main().Steps[2].Request.Raw), conversation(t, rec.Meta.Provider, live[0].Body)
			// The recording and the fork run the harness with different HOME directories (each
			// a test's temporary directory), which Codex names in its skills instructions; and
			// Codex gives every input item it makes a fresh time-based id and reports a fresh
			// chunk id in tool output on every run. Those aside, the conversation is byte for
			// byte the recording's.
			if c.harness == claudeForkCase().harness {
				// Claude Code sends the results of parallel tool calls (step 0's two Reads) in the
				// order they completed, which varies from run to run: bytes equal, or equal once
				// those results are in call order.
				if wantConv != gotConv {
					t.Logf("the parallel Reads' results came back in another order than in the recording")
					assert.Equal(t, resultsInOrder(t, wantConv), resultsInOrder(t, gotConv), "the first live request's messages are the recording's at step 2, but for the order of parallel results")
				}
			} else {
				assert.Equal(t, codexMask(maskHome(wantConv)), codexMask(maskHome(gotConv)),
					"the first live request's input is the recording's at step 2, byte for byte but for HOME and Codex's per-run ids")
			}
			var body map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(live[0].Body, &body))
			assert.Equal(t, `"other-model"`, string(body["model"]), "--model rewrote the model field")
			for _, q := range live {
				assert.Contains(t, string(q.Body), `"model":"other-model"`, "every live request has the model overridden")
			}

			assert.Equal(t, "complete", sum.Ended, sum.Detail)
			require.NotNil(t, ft.Meta.ForkedFrom)
			assert.Equal(t, rec.Meta.TapeID, ft.Meta.ForkedFrom.TapeID)
			assert.Equal(t, map[string]string{"model": "other-model"}, ft.Meta.ForkedFrom.Overrides)
			state := localState(t, c.cwd)
			c.check(t, state)
			assert.Equal(t, "Done another way: greeted lin.", ft.Main().Steps[len(ft.Main().Steps)-1].Response.Text())

			vcode, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", forkPath)
			assert.Equal(t, 0, vcode, "the fork tape validates\n%s%s", vout, verr)

			ccode, cout, cerr := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, forkPath, "--json")
			require.Equal(t, 0, ccode, "%s%s", cout, cerr)
			var cmp fork.Comparison
			require.NoError(t, json.Unmarshal([]byte(cout), &cmp), cout)
			assert.Equal(t, 2, cmp.At)
			assert.Equal(t, 2, cmp.CommonPrefix, "compare: two common steps")
			require.NotNil(t, cmp.PartsAt)
			assert.Equal(t, "main", cmp.PartsAt.Thread)
			assert.Equal(t, 2, cmp.PartsAt.Step, "compare: the timelines part at the fork point")
			assert.Equal(t, len(rec.Main().Steps), cmp.Sides[0].Steps)
			assert.Equal(t, ft.Totals().Steps, cmp.Sides[1].Steps)
			assert.Contains(t, cmp.Sides[1].Models, "other-model")
			assert.False(t, cmp.EndState.Identical, "the end states differ")
			_, text, _ := r.run(t, t.TempDir(), cleanEnv(), "compare", recPath, forkPath)
			assert.Contains(t, text, "FORK at thread main step 2")
			assert.Contains(t, text, "timelines part at thread main step 2")
			t.Logf("fork of %s at step 2: reached after %.0f ms (the recording: %.0f ms, %.1f%%), %d upstream requests saved of %d, %d live, wall %.0f ms\n%s",
				c.name, sum.ToForkMS, sum.RecordedToFork, 100*sum.ToForkMS/sum.RecordedToFork, sum.ServedSteps, ft.Totals().Steps, sum.LiveSteps, sum.WallMS, text)
			if c.harness == claudeForkCase().harness {
				t.Run("models", func(t *testing.T) { forkModels(t, r, c, recPath) })
			}
			t.Run("diverges-before-N", func(t *testing.T) { forkDiverges(t, r, c, recPath) })
		})
	}
}

// forkModels: --models with two fake "models" behind one provider (its threads chosen by the
// request's model field) and a verify command that passes for one and fails for the other.
func forkModels(t *testing.T, r *rig, c forkCase, recPath string) {
	call := fakeprovider.Call
	turns := func(cmd string) []fakeprovider.Turn {
		return []fakeprovider.Turn{never, never,
			{Calls: []tape.ToolCall{call("Bash", map[string]any{"command": cmd, "description": "greet"})}},
			{Text: "Done."}}
	}
	srv := fakeprovider.New(fakeprovider.Script{
		Threads: []fakeprovider.Thread{{Name: "good", Turns: turns("./greet.sh ada > out.txt")}, {Name: "bad", Turns: turns("echo nope > out.txt")}},
		Match:   fakeprovider.ByModel(map[string]string{"good-model": "good", "bad-model": "bad"}),
	})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	c.fresh(t)
	require.NoError(t, os.Remove(c.cwd))
	for _, m := range []string{"good-model", "bad-model"} {
		d := c.cwd + ".fork-" + m
		t.Cleanup(func() { os.RemoveAll(d) })
	}
	out := filepath.Join(t.TempDir(), "fork.json")
	argv, env := c.command(t, t.TempDir())
	args := append([]string{"fork", "--in-place", "--tape", recPath, "--at", "2", "--upstream", srv.URL(), "--models", "good-model,bad-model",
		"--verify", "grep -q 'Hello, ada' out.txt", "--output", out, "--quiet", "--"}, argv...)
	start := time.Now()
	code, table, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
	require.Equal(t, 0, code, "tapebox fork --models\n%s\n%s", table, clipText(errOut, 6000))
	t.Logf("--models, 2 forks in %v:\n%s", time.Since(start).Round(time.Millisecond), table)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	require.Len(t, lines, 3, table)
	assert.Regexp(t, `^MODEL\s+VERIFY\s+STEPS\s+TOKENS IN\s+TOKENS OUT\s+COST\s+WALL\s+FORK TAPE$`, lines[0])
	assert.Regexp(t, `^good-model\s+pass\s+4\s+\d+\s+\d+\s+unknown\s+\S+\s+`+filepath.Join(filepath.Dir(out), "fork.good-model.json")+`$`, lines[1])
	assert.Regexp(t, `^bad-model\s+fail\s+4\s+`, lines[2])
	b, err := os.ReadFile(filepath.Join(c.cwd+".fork-good-model", "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "Hello, ada\n", string(b), "the good model's final workspace")
	for _, m := range []string{"good-model", "bad-model"} {
		rec, err := tape.LoadFile(filepath.Join(filepath.Dir(out), "fork."+m+".json"))
		require.NoError(t, err)
		assert.Equal(t, m, rec.Meta.ForkedFrom.Overrides["model"])
	}
}

// forkDiverges forks a copy of the tape whose step-0 tool result says what the restored
// workspace will not: the harness's request for step 1 carries the real result, so the fork
// must stop there, naming the step and what differed, with no upstream call.
func forkDiverges(t *testing.T, r *rig, c forkCase, recPath string) {
	rec, err := tape.LoadFile(recPath)
	require.NoError(t, err)
	rec.Main().Steps[0].ToolResults[0].Content = []tape.Block{{Type: tape.BlockText, Text: "not what the README says"}}
	spoiled := filepath.Join(filepath.Dir(recPath), "spoiled.json")
	require.NoError(t, tape.Save(spoiled, rec))
	srv := fakeprovider.New(c.other())
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	c.fresh(t)
	require.NoError(t, os.Remove(c.cwd))
	out := filepath.Join(t.TempDir(), "fork.json")
	argv, env := c.command(t, t.TempDir())
	args := append([]string{"fork", "--in-place", "--allow-tampered", "--tape", spoiled, "--at", "2", "--upstream", srv.URL(), "--output", out, "--"}, argv...)
	start := time.Now()
	code, _, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
	assert.Equal(t, 1, code, clipText(errOut, 4000))
	assert.Contains(t, errOut, "diverged from the recording before the fork point")
	assert.Contains(t, errOut, "thread main step 1: tool result of call")
	assert.Contains(t, errOut, "not what the README says")
	assert.Empty(t, srv.Requests(), "no upstream call")
	ft, err := tape.LoadFile(out)
	require.NoError(t, err)
	require.NotNil(t, ft.Meta.Ended)
	assert.Equal(t, tape.EndDiverged, ft.Meta.Ended.Reason)
	assert.Equal(t, map[string]int{"main": 2}, ft.Meta.ForkedFrom.Served, "the served step and the diverging request")
	vcode, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", out)
	assert.Equal(t, 0, vcode, "%s%s", vout, verr)
	t.Logf("diverged in %v", time.Since(start).Round(time.Millisecond))
}

// TestRealHarnessForkReach measures (and logs; it asserts no time) how long a fork of a real
// harness's tape at --speed 0 takes to reach step 2 against the recording's time to step 2,
// when the recording's model took modelLatency per answer, as a real model does, and how
// many upstream requests the fork saved. The benchmark of the same thing with the mini agent
// is fork's BenchmarkForkReachStepN.
func TestRealHarnessForkReach(t *testing.T) {
	const modelLatency = 800 * time.Millisecond
	r := newRig(t)
	for _, c := range []forkCase{claudeForkCase(), codexForkCase()} {
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			script := c.script
			c.script = func() fakeprovider.Script {
				s := script()
				for i := range s.Threads {
					for j := range s.Threads[i].Turns {
						s.Threads[i].Turns[j].Fault = &fakeprovider.Fault{Times: -1, FirstByte: modelLatency}
					}
				}
				return s
			}
			recPath, _, _ := recordRealServer(t, r, c.realCase, t.TempDir())
			second := fakeprovider.New(c.other())
			require.NoError(t, second.Start())
			t.Cleanup(func() { second.Close() })
			c.fresh(t)
			require.NoError(t, os.Remove(c.cwd))
			argv, env := c.command(t, t.TempDir())
			args := append([]string{"fork", "--in-place", "--tape", recPath, "--at", "2", "--upstream", second.URL(), "--speed", "0",
				"--output", filepath.Join(t.TempDir(), "fork.json"), "--json", "--quiet", "--"}, argv...)
			code, out, errOut := r.run(t, t.TempDir(), cleanEnv(env...), args...)
			require.Equal(t, 0, code, clipText(errOut, 4000))
			var sum forkSummary
			require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
			require.True(t, sum.Reached)
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			t.Logf("%s, model latency %v: from the harness's start, the fork reached step 2 after %.0f ms, the recording after %.0f ms (%.1f%%); from its first model call, %.0f ms against %.0f ms (%.1f%%); %d of %d upstream requests saved",
				c.name, modelLatency, sum.ToForkMS, sum.RecordedToFork, 100*sum.ToForkMS/sum.RecordedToFork,
				sum.FirstToFork, sum.RecordedFirst, 100*sum.FirstToFork/sum.RecordedFirst, sum.ServedSteps, rec.Totals().Steps)
		})
	}
}
