package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/internal/testutil/dockertest"
	"github.com/tapebox/tapebox/tape"
)

// planted is what a hostile tape carries in every field a verb may print: an OSC 52
// clipboard write, a title change (both ESC ... BEL), and the same in C1 form (CSI, OSC,
// ST as U+009B, U+009D, U+009C).
const planted = "\x1b]52;c;cHduZWQ=\a\x1b]0;owned\x07\u009b2J\u009d0;c1\u009c"

// escapedPlanted are the forms planted's start takes once escaped (term.Writer, Printable).
var escapedPlanted = []string{`\u001b]52;c;`, `\x1b]52;c;`}

// hostileTapes writes the finding's tape: testdata's claude-code recording with planted in
// meta (model, harness_version, cwd, task, labels, ended.detail), the main thread's id, the
// first tool call's name and the last step's model, and a secret under a planted task key
// (for scan). It also writes an invalid one whose schema problem's JSON pointer holds
// planted (a label of the wrong type under a planted key). It returns both paths.
func hostileTapes(t *testing.T, dir string) (valid, invalid string) {
	t.Helper()
	rec, err := tape.LoadFile(filepath.Join("..", "testdata", "replay", "claude-code.json"))
	require.NoError(t, err)
	m := &rec.Meta
	m.Model += planted
	m.HarnessVersion += planted
	m.Cwd = "/work/x" + planted
	m.Task = map[string]string{"id" + planted: "task" + planted, "key" + planted: "AKIAZ7VRSQ2XK3PLMN4B"}
	m.Labels = map[string]string{"label" + planted: "value" + planted}
	m.Ended = &tape.Ended{Reason: tape.EndError, Detail: "detail" + planted, At: m.StartedAt}
	main := rec.Main()
	main.ID += planted
	for _, th := range rec.Threads {
		if th.Parent != nil && th.Parent.ThreadID+planted == main.ID {
			th.Parent.ThreadID = main.ID
		}
	}
	for _, s := range main.Steps {
		if len(s.ToolCalls) > 0 {
			s.ToolCalls[0].Name += planted
			break
		}
	}
	last := main.Steps[len(main.Steps)-1] // its model is what cost prints
	model, err := json.Marshal("fake-model" + planted)
	require.NoError(t, err)
	last.Request.Params["model"] = model
	valid = filepath.Join(dir, "hostile.json")
	require.NoError(t, tape.Save(valid, rec))

	data, err := os.ReadFile(valid)
	require.NoError(t, err)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(data, &raw))
	raw["meta"].(map[string]any)["labels"] = map[string]any{"bad" + planted: 7}
	data, err = json.Marshal(raw)
	require.NoError(t, err)
	invalid = filepath.Join(dir, "invalid.json")
	require.NoError(t, os.WriteFile(invalid, data, 0o644))
	return valid, invalid
}

// run is one invocation of a verb; echo says its output must show planted (escaped), which
// proves the hostile text reached that path.
type run struct {
	args []string
	echo bool
}

// hostileRuns lists, for every verb of the command table, the invocations that print what
// a tape holds. {T} is the hostile tape, {BAD} the invalid one, {R} a replay of {T}, {D} a
// fresh directory. A verb missing here fails TestEveryVerbEscapes: a new verb must say how
// it prints a tape. Every verb is also run with --help, with {T} and with --tape {T}
// (unless noGeneric).
var hostileRuns = map[string][]run{
	"inspect":  {{[]string{"inspect", "{T}"}, true}, {[]string{"inspect", "--json", "{T}"}, true}, {[]string{"inspect", "{BAD}"}, false}},
	"validate": {{[]string{"validate", "{T}", "{BAD}"}, true}, {[]string{"validate", "--json", "{BAD}"}, true}},
	"scan":     {{[]string{"scan", "{T}"}, true}, {[]string{"scan", "--json", "{T}"}, true}},
	"verify":   {{[]string{"verify", "{T}", "{BAD}"}, false}, {[]string{"verify", "--json", "{T}"}, false}},
	"replay": {
		{[]string{"replay", "--tape", "{T}", "--sandbox", "local:{D}", "--speed", "0", "--check"}, true},
		{[]string{"replay", "--tape", "{T}", "--sandbox", "local:{D}", "--speed", "0", "--json", "--check"}, true},
		{[]string{"replay", "--tape", "{T}", "--sandbox", "local:{D}", "--speed", "0", "--output", "-"}, true},
		{[]string{"replay", "--tape", "{BAD}", "--sandbox", "local:{D}"}, true},
	},
	"compare": {{[]string{"compare", "{T}", "{R}"}, true}, {[]string{"compare", "--json", "{T}", "{R}"}, true}, {[]string{"compare", "{R}", "{T}"}, true}},
	"fork":    {{[]string{"fork", "--tape", "{T}", "--at", "1", "--workdir", "{D}", "--output", "{D}/../fork.json", "--", "true"}, true}},
	"dataset": {
		{[]string{"dataset", "export", "--out", "{D}/ds", "--allow-secrets", "{T}"}, false},
		{[]string{"dataset", "export", "--out", "{D}/ds2", "{T}"}, true},
		{[]string{"dataset", "export", "--out", "{D}/ds3", "--skip-invalid", "--allow-secrets", "{T}", "{BAD}"}, true},
		{[]string{"dataset", "validate", "{D}/ds"}, false},
		{[]string{"dataset", "import", "{D}/ds", "--out", "{D}/back"}, false},
	},
	"export": {
		{[]string{"export", "--to", "claude-code", "--allow-secrets", "--out", "{D}/cc", "{T}"}, false},
		{[]string{"export", "--to", "sts", "--out", "{D}/sts", "{T}"}, false},
	},
	"import":      {{[]string{"import", "--from", "sts", "--allow-secrets", "--out", "{D}/imp", "{D}/../sts"}, false}},
	"view":        {{[]string{"view", "-o", "{D}/v.html", "{T}", "{R}"}, false}, {[]string{"view", "-o", "{D}/b.html", "{BAD}"}, true}},
	"bench":       {{[]string{"bench", "--tape", "{T}", "--sandbox", "local:{D}/a", "--vs", "local:{D}/b", "-n", "1"}, false}},
	"record":      {{[]string{"record", "--output", "{D}/rec.json", "--", "false"}, false}},
	"gateway":     nil, // records from an upstream: prints no tape (and serves until stopped)
	"demo":        nil, // prints its own recording only
	"completion":  {{[]string{"completion", "bash"}, false}},
	"cost":        {{[]string{"cost", "{T}", "{R}"}, true}, {[]string{"cost", "--json", "{T}"}, true}, {[]string{"cost", "{BAD}"}, false}},
	"redact":      {{[]string{"redact", "{T}", "-o", "{D}/redacted.json"}, false}, {[]string{"redact", "--pattern", "owned", "{T}", "-o", "{D}/pattern.json"}, false}, {[]string{"redact", "{BAD}", "-o", "{D}/bad.json"}, false}},
	"exec-binary": nil,
	"version":     nil,
}

// noGeneric are the verbs not run with {T} and --tape {T}: they would run at length (demo:
// the whole walk-through) or serve until stopped.
var noGeneric = []string{"demo", "gateway"}

// TestEveryVerbEscapes reproduces finding 5 of issue 30: escapes planted in every meta field,
// the thread id and a tool name reached the terminal raw through inspect, compare (the "not
// run" line, the thread id), the docker-image: replay's log, scan and validate (inside JSON
// pointers). Every verb of the command table runs on the hostile tapes, and no ESC, BEL or
// other control character, nor a C1 one, reaches its stdout or stderr.
func TestEveryVerbEscapes(t *testing.T) {
	dir := t.TempDir()
	valid, invalid := hostileTapes(t, dir)
	replayed := filepath.Join(dir, "replay.json")
	t.Chdir(t.TempDir()) // what a verb writes by default (fork.json, run.html, export/) lands there
	t.Setenv("TMPDIR", t.TempDir())
	// {R}: the replay that compare and view set beside the recording.
	code, _, stderr := runVerbForTest(t, "replay", "--tape", valid, "--sandbox", "local:"+filepath.Join(dir, "first"), "--speed", "0", "--output", replayed)
	require.Equal(t, ExitOK, code, stderr)

	var verbs []string
	for v := range commands {
		verbs = append(verbs, v)
	}
	slices.Sort(verbs)
	n := 0
	for _, v := range verbs {
		runs, ok := hostileRuns[v]
		if !assert.True(t, ok, "verb %s: add the invocations that print a tape to hostileRuns", v) {
			continue
		}
		runs = append(runs, run{args: []string{v, "--help"}})
		if !slices.Contains(noGeneric, v) {
			runs = append(runs, run{args: []string{v, "{T}"}}, run{args: []string{v, "--tape", "{T}"}})
		}
		for i, r := range runs {
			d := filepath.Join(dir, "d", v, string(rune('a'+i)))
			require.NoError(t, os.MkdirAll(filepath.Dir(d), 0o755))
			args := make([]string, len(r.args))
			for j, a := range r.args {
				a = strings.ReplaceAll(a, "{T}", valid)
				a = strings.ReplaceAll(a, "{BAD}", invalid)
				a = strings.ReplaceAll(a, "{R}", replayed)
				args[j] = strings.ReplaceAll(a, "{D}", d)
			}
			checkEscaped(t, args, r.echo)
			n++
		}
	}
	t.Logf("%d invocations of %d verbs", n, len(verbs))

	t.Run("docker-image replay", func(t *testing.T) {
		_, image := dockertest.Image(t, dockertest.SandboxImage)
		// The log's "working directory …" and "created …" lines name meta.cwd.
		checkEscaped(t, []string{"replay", "--tape", valid, "--sandbox", "docker-image:" + image, "--speed", "0"}, true)
	})
}

// checkEscaped runs the CLI with args and fails t when its stdout or stderr holds a control
// character raw, or, with echo, when neither shows planted escaped.
func checkEscaped(t *testing.T, args []string, echo bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr syncBuffer
	code := RunEnv(ctx, args, &Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
	out, errOut := stdout.String(), stderr.String()
	for name, s := range map[string]string{"stdout": out, "stderr": errOut} {
		if c := term.FirstControl([]byte(s)); c != "" {
			t.Errorf("tapebox %s (exit %d): %q reached %s raw:\n%s", strings.Join(args, " "), code, c, name, s)
		}
	}
	if echo && !slices.ContainsFunc(escapedPlanted, func(e string) bool { return strings.Contains(out+errOut, e) }) {
		t.Errorf("tapebox %s (exit %d): the planted text did not reach the output, escaped or not:\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
}
