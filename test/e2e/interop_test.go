package e2e

// Interop with the real harnesses as readers (issue 17): the claude-code and codex exports
// of a recorded tape agree with the session files the harness itself wrote during that
// recording, the harness resumes from an export, and importing the harness's own files gives
// a tape that replays to the recording's end state.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/realharness"
	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// volatile names every field of a harness's session file that an export does not reproduce,
// and why; the comparison leaves exactly these out, and compares everything else an entry
// says about the conversation.
var volatile = map[string][]struct{ field, why string }{
	realharness.Claude: {
		{"uuid, parentUuid", "fresh per entry; the export chains its own (the chain's order is compared, as entry order)"},
		{"timestamp, promptId, requestId", "wall times and ids of the recording; the export takes them from the tape's clock (message.id, the provider's response id, is compared)"},
		{"message.usage details, message.model", "usage beyond the four token counts (service tier, geo, iterations); the model alias the harness resolved"},
		{"toolUseResult, sourceToolAssistantUUID, permissionDecision, sandboxed", "the harness's own structured view of a result, never sent to the model"},
		{"non-message entries (attachment, queue-operation, api-request*, tools-used, last-prompt, cost-state, atis-latch)", "the harness's bookkeeping and the prompt context it rebuilds on resume; not model calls"},
		{"tool_result content as a string or one text block, is_error false or absent", "two spellings of the same result"},
		{"tool_use input keys the harness fills with their defaults (Edit replace_all: false)", "the harness writes the input after validation; the tape has what the model sent"},
	},
	realharness.Codex: {
		{"timestamp, ordinal", "wall times and line numbers of the recording"},
		{"the time in a rollout's file name", "when the harness made the thread, which no request says: the export takes the thread's first request (a sub-agent's: its spawn), so files are matched by thread id"},
		{"item ids (msg_, fc_, fco_, ctc_ ...), status, internal_chat_message_metadata_passthrough, annotations, logprobs", "the harness's ids and bookkeeping of each item"},
		{"event_msg, turn_context, world_state, token_usage_record lines", "the harness's events and state; the export writes its own task_started, token_count and task_complete"},
		{"session_meta beyond id, cwd, cli_version, parent_thread_id, model_provider", "how the harness was started (originator, source details, window ids)"},
		{"tool_search_output items", "the normalized tape keeps no tool call for the tool_search_call they answer, nor the tools they load (the import says so in meta.labels tapebox.lost)"},
	},
}

// entry is what a comparison looks at in one session-file entry.
type entry struct {
	Kind string // user, assistant; or the Codex item type
	Role string
	// ID is a Claude Code assistant entry's message.id: the provider's id of the response.
	ID     string
	Side   bool
	Blocks []string
}

func (e entry) String() string {
	return fmt.Sprintf("%s/%s id=%s sidechain=%v %s", e.Kind, e.Role, e.ID, e.Side, strings.Join(e.Blocks, " | "))
}

// inputDefaults are the tool_use input keys Claude Code writes with their default value.
var inputDefaults = map[string]map[string]any{"Edit": {"replace_all": false}}

func canonJSON(t *testing.T, raw json.RawMessage, drop map[string]any) string {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), "JSON %s", clipText(string(raw), 200))
	if m, ok := v.(map[string]any); ok {
		for k, def := range drop {
			if reflect.DeepEqual(m[k], def) {
				delete(m, k)
			}
		}
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// transcriptBlock is a content block of a Claude Code transcript entry, read here by the
// test itself (not by package interop, whose export it checks).
type transcriptBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeEntries reads the user and assistant entries of a Claude Code session file.
func claudeEntries(t *testing.T, path string) (out []entry, session, cwd string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Type        string `json:"type"`
			IsSidechain bool   `json:"isSidechain"`
			IsMeta      bool   `json:"isMeta"`
			SessionID   string `json:"sessionId"`
			Cwd         string `json:"cwd"`
			Message     struct {
				ID      string          `json:"id"`
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), "%s", path)
		if (e.Type != "user" && e.Type != "assistant") || e.IsMeta {
			continue
		}
		session, cwd = e.SessionID, e.Cwd
		var blocks []transcriptBlock
		var s string
		if json.Unmarshal(e.Message.Content, &s) == nil {
			blocks = append(blocks, transcriptBlock{Type: "text", Text: s})
		} else {
			require.NoError(t, json.Unmarshal(e.Message.Content, &blocks), "%s: content", path)
		}
		en := entry{Kind: e.Type, Role: e.Message.Role, ID: e.Message.ID, Side: e.IsSidechain}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				en.Blocks = append(en.Blocks, "text:"+b.Text)
			case "thinking":
				en.Blocks = append(en.Blocks, "thinking:"+b.Thinking)
			case "tool_use":
				en.Blocks = append(en.Blocks, fmt.Sprintf("tool_use:%s:%s:%s", b.ID, b.Name, canonJSON(t, b.Input, inputDefaults[b.Name])))
			case "tool_result":
				text := ""
				var cs string
				if json.Unmarshal(b.Content, &cs) == nil {
					text = cs
				} else {
					var parts []struct{ Text string }
					require.NoError(t, json.Unmarshal(b.Content, &parts))
					for _, p := range parts {
						text += p.Text
					}
				}
				en.Blocks = append(en.Blocks, fmt.Sprintf("tool_result:%s:error=%v:%s", b.ToolUseID, b.IsError, text))
			default:
				en.Blocks = append(en.Blocks, b.Type)
			}
		}
		out = append(out, en)
	}
	return out, session, cwd
}

// codexEntries reads the response items of a Codex rollout file.
func codexEntries(t *testing.T, path string) (out []entry, id, cwd string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l), "%s", path)
		var p struct {
			Type, Role, ID, Cwd, Name string
			ModelProvider             string          `json:"model_provider"`
			Input                     any             `json:"input"`
			Arguments                 json.RawMessage `json:"arguments"`
			CallIDSnake               string          `json:"call_id"`
			Output                    json.RawMessage `json:"output"`
			Content                   []struct {
				Type, Text string
			} `json:"content"`
		}
		require.NoError(t, json.Unmarshal(l.Payload, &p), "%s", path)
		switch l.Type {
		case "session_meta":
			id, cwd = p.ID, p.Cwd
			// The provider the run used, which no request names: record takes it from the
			// harness's own rollout, and the export writes it.
			out = append(out, entry{Kind: "session_meta", Blocks: []string{"model_provider:" + p.ModelProvider}})
			continue
		case "response_item":
		default:
			continue
		}
		en := entry{Kind: p.Type, Role: p.Role}
		switch {
		case p.Type == "message":
			for _, c := range p.Content {
				en.Blocks = append(en.Blocks, c.Type+":"+c.Text)
			}
		case p.Type == "function_call":
			var args string
			require.NoError(t, json.Unmarshal(p.Arguments, &args), "%s: function_call arguments", path)
			en.Blocks = append(en.Blocks, p.CallIDSnake+":"+p.Name+":"+canonJSON(t, json.RawMessage(args), nil))
		case p.Type == "custom_tool_call":
			en.Blocks = append(en.Blocks, fmt.Sprintf("%s:%s:%v", p.CallIDSnake, p.Name, p.Input))
		case strings.HasSuffix(p.Type, "_call"):
			en.Blocks = append(en.Blocks, p.CallIDSnake+":"+canonJSON(t, p.Arguments, nil))
		case p.Type == "tool_search_output":
			continue
		case strings.HasSuffix(p.Type, "_output"):
			var s string
			if json.Unmarshal(p.Output, &s) != nil {
				s = string(p.Output)
			}
			en.Blocks = append(en.Blocks, p.CallIDSnake+":"+s)
		}
		out = append(out, en)
	}
	return out, id, cwd
}

// diffEntries lists where two entry sequences differ.
func diffEntries(want, got []entry) []string {
	var d []string
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			d = append(d, fmt.Sprintf("entry %d missing: %s", i, clipText(want[i].String(), 300)))
		case i >= len(want):
			d = append(d, fmt.Sprintf("entry %d extra: %s", i, clipText(got[i].String(), 300)))
		case !reflect.DeepEqual(want[i], got[i]):
			d = append(d, fmt.Sprintf("entry %d:\n\t\tharness: %s\n\t\texport:  %s", i, clipText(want[i].String(), 300), clipText(got[i].String(), 300)))
		}
	}
	return d
}

// jsonlFiles lists the .jsonl files under dir, relative, sorted.
func jsonlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return err
	}))
	sort.Strings(out)
	return out
}

// compareSessions compares every session file of an export with the harness's file at the
// same relative path and returns the differences.
func compareSessions(t *testing.T, harness, harnessDir, exportDir string) []string {
	t.Helper()
	read := claudeEntries
	if harness == realharness.Codex {
		read = codexEntries
	}
	exported := jsonlFiles(t, exportDir)
	require.NotEmpty(t, exported, "the export wrote no session file")
	var diffs []string
	for _, rel := range exported {
		theirs := filepath.Join(harnessDir, rel)
		if harness == realharness.Codex {
			// Rollouts are matched by thread id: the time in the name is when the harness
			// made the thread, which no request says (see volatile).
			id := rel[len(rel)-len("01a231b4-c70a-7613-8c9f-b3da3f863dc0.jsonl"):]
			if m, _ := filepath.Glob(filepath.Join(harnessDir, filepath.Dir(rel), "*"+id)); len(m) == 1 {
				theirs = m[0]
			}
		}
		if _, err := os.Stat(theirs); err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: the harness wrote no such file (it has %v)", rel, jsonlFiles(t, harnessDir)))
			continue
		}
		want, wantID, wantCwd := read(t, theirs)
		got, gotID, gotCwd := read(t, filepath.Join(exportDir, rel))
		if wantID != gotID || wantCwd != gotCwd {
			diffs = append(diffs, fmt.Sprintf("%s: session %q cwd %q, the harness's: %q %q", rel, gotID, gotCwd, wantID, wantCwd))
		}
		for _, d := range diffEntries(want, got) {
			diffs = append(diffs, rel+": "+d)
		}
	}
	return diffs
}

// plant changes tool inputs and tool results in an exported session file, for checking
// that the comparison sees such differences; it says whether it found any to change.
func plant(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	for _, p := range [][2]string{{`"BETA"`, `"GAMMA"`}, {`Exit code 1\nabout to fail`, `Exit code 2\nabout to fail`},
		{`exit 3`, `exit 4`}, {`Output:\nmade\n`, `Output:\nmade it\n`},
		{`echo wrote`, `echo wrote!`}, {`Output:\nwrote\n`, `Output:\nwrote more\n`}, {`"id":"msg_`, `"id":"msg_planted`}} {
		s = strings.Replace(s, p[0], p[1], 1)
	}
	if s == string(b) {
		return false
	}
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return true
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	}))
}

// TestInteropRealHarnesses records Claude Code and Codex (with a sub-agent each), then:
// exports the tape and compares it with the session files the harness wrote (and shows the
// comparison catches planted differences); resumes the harness from the export against a
// fake provider and checks that its next request carries the exported history; imports the
// harness's own files and replays the imported tape in executor mode to the recording's end
// state.
func TestInteropRealHarnesses(t *testing.T) {
	r := newRig(t)
	for _, c := range []realCase{claudeCase(), codexSubagentCase(), codexCase()} {
		if c.name == "" {
			c.name = c.harness
		}
		t.Run(c.name, func(t *testing.T) {
			needHarness(t, c.harness)
			home := t.TempDir()
			recPath, state := recordRealHome(t, r, c, home)
			rec, err := tape.LoadFile(recPath)
			require.NoError(t, err)
			format, harnessDir := "claude-code", filepath.Join(home, ".claude", "projects")
			if c.harness == realharness.Codex {
				format, harnessDir = "codex", filepath.Join(home, ".codex", "sessions")
			}
			for _, v := range volatile[c.harness] {
				t.Logf("left out of the comparison: %s (%s)", v.field, v.why)
			}
			export := t.TempDir()
			// No --codex-model-provider: the tape says which provider the run used (realharness's
			// config names "fake"), and the resume below runs with that config.
			args := []string{"export", "--to", format, "--out", export, recPath}
			if c.harness == realharness.Codex {
				require.Equal(t, "fake", rec.Meta.Labels[interop.LabelCodexModelProvider], "record took the provider from the harness's rollout")
			}
			code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), args...)
			require.Equal(t, 0, code, "tapebox export --to %s\n%s%s", format, out, errOut)

			t.Run("agrees-with-harness", func(t *testing.T) {
				diffs := compareSessions(t, c.harness, harnessDir, export)
				require.Empty(t, diffs, "the %s export differs from the harness's own session files:\n\t%s", format, strings.Join(diffs, "\n\t"))
				n := len(jsonlFiles(t, export))
				require.Equal(t, len(rec.Threads), n, "one session file per thread")
				// The comparison must see differences.
				planted := t.TempDir()
				copyTree(t, export, planted)
				changed := 0
				for _, rel := range jsonlFiles(t, planted) {
					if plant(t, filepath.Join(planted, rel)) {
						changed++
					}
				}
				require.NotZero(t, changed, "nothing to plant a difference in")
				d := compareSessions(t, c.harness, harnessDir, planted)
				if c.harness == realharness.Claude {
					require.Contains(t, strings.Join(d, "\n"), "id=msg_planted", "a planted message.id is a difference")
				}
				if len(d) < 2 {
					t.Fatalf("planted differences in a tool input and a tool result, the comparison found %d: %v", len(d), d)
				}
			})
			t.Run("resume", func(t *testing.T) { resumeFromExport(t, c, rec, export) })
			t.Run("import-replay", func(t *testing.T) {
				imported := t.TempDir()
				code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", format, "--out", imported, harnessDir)
				require.Equal(t, 0, code, "tapebox import\n%s%s", out, errOut)
				tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
				require.NoError(t, err)
				require.Len(t, tapes, 1, "one session, one tape")
				code, vout, verr := r.run(t, t.TempDir(), cleanEnv(), "validate", tapes[0])
				require.Equal(t, 0, code, "%s%s", vout, verr)
				imp, err := tape.LoadFile(tapes[0])
				require.NoError(t, err)
				require.Equal(t, interop.FormNormalized, imp.Meta.Labels[interop.LabelForm])
				require.Equal(t, callsOf(rec), callsOf(imp), "the imported tape makes the recorded tool calls")
				require.Equal(t, namespacesOf(rec), namespacesOf(imp), "the imported calls name the recorded namespaces")
				if c.name == "codex-subagent" {
					require.Contains(t, namespacesOf(imp), "main/1 spawn_agent multi_agent_v1")
					// The tool_search_output's tools have no place in the normalized tape.
					require.Equal(t, interop.LostToolSearchTools+" (1)", imp.Meta.Labels[interop.LabelLost])
				}
				c.fresh(t)
				repPath := filepath.Join(t.TempDir(), "replay.json")
				code, _, errOut = r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", tapes[0], "--sandbox", "local:"+c.cwd, "--output", repPath, "--speed", "0")
				require.Equal(t, 0, code, "tapebox replay of the imported tape\n%s", errOut)
				checkSameState(t, state, localState(t, c.cwd), "replay of the imported tape")
			})
			// The Codex sub-agent case too: its spawn_agent and wait_agent calls live in the
			// deferred multi_agent_v1 namespace, which the tape's tool calls keep
			// (tape.ToolCall.Namespace) and the synthesized function_call items name.
			t.Run("import-simulator", func(t *testing.T) { importSimulator(t, r, c, format, harnessDir, state) })
			// Through the Hub's STS format and back: the tape replays, in executor mode and
			// (synthesized) against the real harness in simulator mode.
			sts := t.TempDir()
			code, out, errOut = r.run(t, t.TempDir(), cleanEnv(), "export", "--to", "sts", "--out", sts, recPath)
			require.Equal(t, 0, code, "tapebox export --to sts\n%s%s", out, errOut)
			t.Run("sts-replay", func(t *testing.T) {
				imported := t.TempDir()
				code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", "sts", "--out", imported, sts)
				require.Equal(t, 0, code, "tapebox import --from sts\n%s%s", out, errOut)
				tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
				require.NoError(t, err)
				require.Len(t, tapes, 1, "the STS files of one tape, one tape")
				imp, err := tape.LoadFile(tapes[0])
				require.NoError(t, err)
				require.Equal(t, callsOf(rec), callsOf(imp))
				require.Equal(t, namespacesOf(rec), namespacesOf(imp))
				c.fresh(t)
				code, _, errOut = r.run(t, t.TempDir(), cleanEnv(), "replay", "--tape", tapes[0], "--sandbox", "local:"+c.cwd, "--output", filepath.Join(t.TempDir(), "replay.json"), "--speed", "0")
				require.Equal(t, 0, code, "tapebox replay of the STS import\n%s", errOut)
				checkSameState(t, state, localState(t, c.cwd), "replay of the STS import")
			})
			// Not the Codex sub-agent case: STS has no field for its tool_search_call, the
			// answer that loads the multi_agent_v1 namespace, so the synthesized first answer
			// is empty (see stsLost in package interop).
			if c.name != "codex-subagent" {
				t.Run("sts-simulator", func(t *testing.T) { importSimulator(t, r, c, "sts", sts, state) })
			}
		})
	}
}

// namespacesOf lists the tool calls of a tape that name a namespace.
func namespacesOf(tp *tape.Tape) []string {
	var out []string
	for _, th := range tp.Threads {
		for i, st := range th.Steps {
			for _, c := range st.ToolCalls {
				if c.Namespace != "" {
					out = append(out, fmt.Sprintf("%s/%d %s %s", th.ID, i, c.Name, c.Namespace))
				}
			}
		}
	}
	return out
}

// importSynthesized imports the session files of format under dir with --synthesize into
// one tape, and returns its path and the tape.
func importSynthesized(t *testing.T, r *rig, format, dir string) (string, *tape.Tape) {
	t.Helper()
	imported := t.TempDir()
	code, out, errOut := r.run(t, t.TempDir(), cleanEnv(), "import", "--from", format, "--synthesize", "--out", imported, dir)
	require.Equal(t, 0, code, "tapebox import --from %s --synthesize\n%s%s", format, out, errOut)
	tapes, err := filepath.Glob(filepath.Join(imported, "*.json"))
	require.NoError(t, err)
	require.Len(t, tapes, 1)
	imp, err := tape.LoadFile(tapes[0])
	require.NoError(t, err)
	require.Equal(t, interop.FormSynthesized, imp.Meta.Labels[interop.LabelForm])
	return tapes[0], imp
}

// importSimulator imports the harness's own files with --synthesize and serves the tape in
// simulator mode to the same harness: it must make the recorded calls and end in the
// recording's files.
func importSimulator(t *testing.T, r *rig, c realCase, format, harnessDir string, state map[string]string) {
	t.Helper()
	tapePath, imp := importSynthesized(t, r, format, harnessDir)
	c.fresh(t)
	repPath := filepath.Join(t.TempDir(), "replay-sim.json")
	sim, root := r.simulator(t, tapePath, repPath)
	argv, env := c.command(t, t.TempDir())
	h := startProc(t, c.cwd, cleanEnv(append(env, c.baseURL(root))...), argv[0], argv[1:]...)
	code := h.wait(t, 3*time.Minute)
	simCode := sim.wait(t, time.Minute)
	if code != 0 || simCode != 0 {
		t.Fatalf("%s against the simulator serving the imported tape: exit %d; simulator: exit %d\nsimulator log:\n%s\n%s output (end):\n%s",
			c.harness, code, simCode, clipText(sim.stderr(), 6000), c.harness, tail(h.stdout()+h.stderr(), 1500))
	}
	checkSameState(t, state, localState(t, c.cwd), "simulator serving the imported tape")
	rep, err := tape.LoadFile(repPath)
	require.NoError(t, err)
	require.Equal(t, callsOf(imp), callsOf(rep), "the harness made the imported tape's tool calls")
}

// resumeFromExport puts the export where the harness keeps its sessions in a fresh home,
// resumes the session with a new prompt against a fake provider, and checks that the
// request the harness sends carries the recorded main thread: every tool call with its
// input and every result.
func resumeFromExport(t *testing.T, c realCase, rec *tape.Tape, export string) {
	t.Helper()
	const next = "[rh-resume] and now, one more thing"
	turns := make([]fakeprovider.Turn, 64)
	for i := range turns {
		turns[i] = fakeprovider.Turn{Text: "resumed fine"}
	}
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: turns}}})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	home := t.TempDir()
	var argv, env []string
	main := rec.Main()
	switch c.harness {
	case realharness.Claude:
		copyTree(t, export, filepath.Join(home, ".claude", "projects"))
		bin, err := realharness.ClaudePath()
		require.NoError(t, err)
		argv = []string{bin, "--dangerously-skip-permissions", "-p", "--resume", interop.ClaudeSessionID(rec), next}
		env = []string{"HOME=" + home, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + srv.URL(), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1"}
	case realharness.Codex:
		codexHome := filepath.Join(home, ".codex")
		copyTree(t, export, filepath.Join(codexHome, "sessions"))
		require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(realharness.CodexConfigTOML(srv.URL()+"/v1", "")), 0o644))
		bin, err := realharness.CodexPath()
		require.NoError(t, err)
		argv = []string{bin, "exec", "--skip-git-repo-check", "resume", interop.CodexThreadID(rec, main), next}
		env = []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "FAKE_OPENAI_KEY=sk-test", "CODEX_MANAGED_BY_NPM=1"}
		if i := strings.Index(bin, "/node_modules/"); i >= 0 {
			env = append(env, "CODEX_MANAGED_PACKAGE_ROOT="+bin[:i]+"/node_modules/@openai/codex")
		}
	}
	c.fresh(t)
	h := startProc(t, c.cwd, cleanEnv(env...), argv[0], argv[1:]...)
	code := h.wait(t, 3*time.Minute)
	var resumed *fakeprovider.Request
	for _, q := range srv.Requests() {
		if (q.Endpoint == fakeprovider.EndpointMessages || q.Endpoint == fakeprovider.EndpointResponses) && strings.Contains(string(q.Body), "[rh-resume]") {
			resumed = &q
			break
		}
	}
	if code != 0 || resumed == nil {
		dumpRequests(t, srv)
		t.Fatalf("%s resumed from the export: exit %d, a request with the new prompt: %v\n%s", c.harness, code, resumed != nil, tail(h.stdout()+h.stderr(), 3000))
	}
	sent := sentResults(t, rec.Meta.Provider, resumed.Body)
	body := string(resumed.Body)
	n := 0
	for _, st := range main.Steps {
		for _, call := range st.ToolCalls {
			require.Contains(t, body, `"`+call.ID+`"`, "the resumed request lacks the recorded call %s %s", call.Name, call.ID)
			n++
		}
		for _, res := range st.ToolResults {
			got, ok := sent[res.ToolCallID]
			require.True(t, ok, "the resumed request lacks the result of %s", res.ToolCallID)
			require.Equal(t, res.Text(), got.Result.Text(), "result of %s in the resumed request", res.ToolCallID)
		}
	}
	require.Contains(t, body, prompt(main), "the resumed request carries the original prompt")
	t.Logf("%s resumed from the export: its request carried the %d recorded tool calls and their results, then %q", c.harness, n, next)
}

// prompt is the user's text of a thread's first request, without reminders.
func prompt(th *tape.Thread) string {
	msgs := th.Steps[0].Request.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, b := range msgs[i].Content {
			if msgs[i].Role == "user" && b.Type == tape.BlockText && strings.HasPrefix(b.Text, "[rh-") {
				return b.Text
			}
		}
	}
	return "(no prompt)"
}
