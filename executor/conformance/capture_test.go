package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/tape"
	table "github.com/tapebox/tapebox/tape/harnesses"
	"github.com/tapebox/tapebox/tape/provider"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// harnesses pairs each harness with its cases and how to run it.
var harnesses = []struct {
	name  string
	cases []Case
	run   func(context.Context, realharness.Options) (realharness.Result, error)
}{
	{realharness.Claude, claudeCases, realharness.RunClaude},
	{realharness.Codex, codexCases, realharness.RunCodex},
	{realharness.Pi, piCases, runPi},
	{realharness.OpenCode, openCodeCases, runOpenCode},
}

// TestCapture runs every case through the real harness. With -update it rewrites the
// fixture; without, it checks that the installed harness still produces the fixture's
// results (volatile fields aside), so a harness upgrade that changes a format shows up here
// before the executor is compared against stale fixtures.
func TestCapture(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.name, func(t *testing.T) {
			realharness.Need(t, h.name)
			version, err := realharness.Version(t.Context(), h.name)
			if err != nil {
				t.Fatal(err)
			}
			fx := &Fixture{Harness: h.name, Version: version, Root: caseRoot(h.name)}
			var want *Fixture
			if !*update {
				want = loadFixture(t, h.name)
				if want.Version != version {
					t.Skipf("fixture is for %s %s, installed is %s: rerun with -update", h.name, want.Version, version)
				}
			}
			for i := range h.cases {
				c := &h.cases[i]
				t.Run(c.Name, func(t *testing.T) {
					got := capture(t, h.name, h.run, c)
					fx.Cases = append(fx.Cases, got)
					if want != nil {
						checkDrift(t, h.name, want, got)
					}
				})
			}
			if *update && !t.Failed() {
				saveFixture(t, fx)
				t.Logf("wrote %s: %d cases", fixturePath(h.name), len(fx.Cases))
			}
		})
	}
}

// capture runs one case and returns what the harness did.
func capture(t *testing.T, harness string, run func(context.Context, realharness.Options) (realharness.Result, error), c *Case) FixtureCase {
	cwd := caseRoot(harness) + "/" + c.Name
	layout(t, cwd, c.Before)
	calls := c.Calls(cwd)
	marker := "[conformance:" + c.Name + "]"
	main := fakeprovider.Thread{Name: "main", Marker: marker}
	entry, ok := table.Lookup(harness)
	if !ok {
		t.Fatalf("%s: not in the harness table", harness)
	}
	for i, call := range calls {
		if harness == realharness.Gemini {
			// The Gemini API sends no call ids; given one, the CLI answers under it.
			call.ID = callID(harness, i)
		}
		if !hasPlaceholder(call.Input) {
			main.Turns = append(main.Turns, fakeprovider.Turn{Calls: []tape.ToolCall{call}})
			continue
		}
		// The model uses an id the harness made up: fill it in from the results so far.
		main.Turns = append(main.Turns, fakeprovider.Turn{Dynamic: func(r *fakeprovider.Request) fakeprovider.Turn {
			var results []tape.ToolResult
			for j := range i {
				res, _, err := harnessResult(harness, r.Body, callID(harness, j))
				if err != nil {
					return fakeprovider.Turn{Text: "conformance: " + err.Error()}
				}
				results = append(results, res)
			}
			input, err := substitute(call.Input, harvest(harness, results))
			if err != nil {
				return fakeprovider.Turn{Text: "conformance: " + err.Error()}
			}
			filled := call
			filled.Input = input
			return fakeprovider.Turn{Calls: []tape.ToolCall{filled}}
		}})
	}
	main.Turns = append(main.Turns, fakeprovider.Turn{Text: "Done."})
	script := fakeprovider.Script{Threads: []fakeprovider.Thread{main}}
	if c.Sub != nil {
		script.Threads = append(script.Threads, *c.Sub)
	}
	srv := fakeprovider.New(script)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// The home directory is at a fixed path too: a command in a terminal whose workdir is
	// missing starts there, and the replay gives the executor the same HOME.
	home := caseHome(harness, c.Name)
	if err := os.RemoveAll(home); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	res, err := run(t.Context(), realharness.Options{
		BaseURL: srv.URL(),
		Dir:     cwd,
		Home:    home,
		Prompt:  marker + " Run the tool calls you are given, then stop.",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Errorf("%s exited %d\nstdout: %s\nstderr: %s", harness, res.ExitCode, realharness.Excerpt(string(res.Stdout), 4000), realharness.Excerpt(string(res.Stderr), 4000))
	}
	if err := srv.Err(); err != nil {
		t.Logf("note: %v", err)
	}

	out := FixtureCase{Name: c.Name, Cwd: cwd, Home: home, Before: c.Before, After: snapshot(t, cwd)}
	if out.Before == nil {
		out.Before = []File{}
	}
	reqs := srv.ThreadRequests("main")
	if len(reqs) > 0 {
		tools, err := offeredTools(harness, reqs[0].Body)
		if err != nil {
			t.Fatalf("tools of the first request: %v", err)
		}
		out.Tools = tools
	}
	var results []tape.ToolResult
	for i, call := range calls {
		call.ID = callID(harness, i)
		step := Step{Call: call, Spawn: slices.Contains(entry.SpawningTools, call.Name)}
		if hasPlaceholder(call.Input) {
			input, err := substitute(call.Input, harvest(harness, results))
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, call.Name, err)
			}
			step.Template, step.Call.Input = call.Input, input
		}
		found := false
		for _, r := range reqs {
			if r.Step != i+1 || r.Attempt != 0 {
				continue
			}
			result, raw, err := harnessResult(harness, r.Body, call.ID)
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, call.Name, err)
			}
			step.Result, step.Raw, found = result, raw, true
			break
		}
		if !found {
			t.Fatalf("step %d (%s): the harness sent no request with its result (%d requests in thread main)\nstdout: %s\nstderr: %s",
				i, call.Name, len(reqs), realharness.Excerpt(string(res.Stdout), 4000), realharness.Excerpt(string(res.Stderr), 2000))
		}
		out.Steps = append(out.Steps, step)
		results = append(results, step.Result)
	}
	return out
}

// callID is the id the fake provider gives the i-th call of thread main (one call a turn).
func callID(harness string, i int) string {
	if anthropicWire(harness) {
		return fmt.Sprintf("toolu_fake_main_%d_0", i)
	}
	return fmt.Sprintf("call_fake_main_%d_0", i)
}

// harnessResult finds the result of call id in a request body the harness sent, as the
// wire has it (realharness.SentResults): an Anthropic tool_result block, or a Responses
// function_call_output / custom_tool_call_output item.
func harnessResult(harness string, body []byte, id string) (tape.ToolResult, json.RawMessage, error) {
	sent, err := realharness.SentResults(wire(harness), body)
	if err != nil {
		return tape.ToolResult{}, nil, err
	}
	s, ok := sent[id]
	if !ok {
		return tape.ToolResult{}, nil, fmt.Errorf("no result for %s in the request", id)
	}
	return s.Result, s.Raw, nil
}

// offeredTools returns the names of the tools a request body offers, as the tape
// normalizes them.
func offeredTools(harness string, body []byte) ([]string, error) {
	p := wire(harness)
	step := tape.Step{Request: tape.Request{Raw: body}}
	if err := provider.Normalize(p, &step); err != nil && step.Request.Tools == nil {
		return nil, err
	}
	names := []string{}
	for _, tl := range step.Request.Tools {
		names = append(names, tl.Name)
	}
	return names, nil
}

// anthropicWire says whether the harness talks to the fake provider on Anthropic Messages
// (Claude Code; Pi and OpenCode, whose provider the capture configures on that API) rather than Responses.
func anthropicWire(harness string) bool {
	return harness == realharness.Claude || harness == realharness.Pi || harness == realharness.OpenCode
}

// wire is the wire format the harness talks to the fake provider on.
func wire(harness string) tape.Provider {
	switch {
	case anthropicWire(harness):
		return tape.ProviderAnthropic
	case harness == realharness.Gemini:
		return tape.ProviderGemini
	}
	return tape.ProviderOpenAIResponses
}

// checkDrift compares a fresh capture with the fixture's case of the same name.
func checkDrift(t *testing.T, harness string, want *Fixture, got FixtureCase) {
	t.Helper()
	for _, w := range want.Cases {
		if w.Name != got.Name {
			continue
		}
		if len(w.Steps) != len(got.Steps) {
			t.Errorf("%d steps, fixture has %d", len(got.Steps), len(w.Steps))
			return
		}
		for i := range w.Steps {
			if diff := diffResults(harness, w.Steps[i].Call, w.Steps[i].Result, got.Steps[i].Result); diff != "" {
				t.Errorf("step %d (%s): the harness's result drifted from the fixture (rerun with -update):\n%s", i, w.Steps[i].Call.Name, diff)
			}
		}
		if diff := diffFiles(w.After, got.After); diff != "" {
			t.Errorf("end state drifted from the fixture:\n%s", diff)
		}
		return
	}
	t.Errorf("case %s is not in the fixture (rerun with -update)", got.Name)
}
