package tapegen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// Options shapes a generated corpus. The zero value of a field means its default.
type Options struct {
	// Tapes is how many tapes to write.
	Tapes int
	// Seed makes the corpus: the same options give the same bytes.
	Seed uint64
	// MeanSteps is the mean number of model calls per tape (default 25).
	MeanSteps int
	// MeanToolOutput is the mean size in bytes of a tool result (default 2500; results are
	// capped at 30 000 bytes, as Claude Code caps them).
	MeanToolOutput int
	// Lean shortens system prompts and tool descriptions to a few lines, for corpora of
	// many small tapes in unit tests.
	Lean bool
	// Jobs is how many tapes are generated at once (default 2).
	Jobs int
	// Workspaces, when positive, gives every tape a meta.workspace: tape i starts from
	// snapshot i mod Workspaces (Snapshot: a real tar compressed with zstd), so
	// that tapes share start snapshots as runs of one task do, and has an end manifest.
	// Generate writes each tape's snapshot beside it (SnapshotName).
	Workspaces int
	// SnapshotBytes is the size of the random data file in each snapshot (default 16 KiB).
	SnapshotBytes int
	// Digests gives every tape its digest chain and root (tape.Seal), as a recording has.
	Digests bool
}

func (o Options) withDefaults() Options {
	if o.MeanSteps <= 0 {
		o.MeanSteps = 25
	}
	if o.MeanToolOutput <= 0 {
		o.MeanToolOutput = 2500
	}
	if o.Jobs <= 0 {
		o.Jobs = 2
	}
	if o.SnapshotBytes <= 0 {
		o.SnapshotBytes = defaultSnapshotBytes
	}
	return o
}

// Stats sums a generated corpus.
type Stats struct {
	Tapes int
	Steps int
	Bytes int64
}

// Generate writes opts.Tapes realistic tapes into dir (created if needed) as
// tape-00000.json, tape-00001.json ...: Claude Code tapes (Anthropic Messages, streamed)
// and Codex tapes (OpenAI Responses, streamed) whose every request carries the whole
// conversation in its raw body and in its normalized messages, with long tool outputs,
// subagent threads, replays and runs that ended in each way. Every file is the canonical
// encoding of its tape. With opts.Workspaces, each tape's start snapshot is written beside
// it. The corpus depends only on opts (not on Jobs).
func Generate(ctx context.Context, dir string, opts Options) (Stats, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, fmt.Errorf("generate corpus: %w", err)
	}
	type one struct {
		steps int
		bytes int64
	}
	res := make([]one, opts.Tapes)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Jobs)
	for i := range opts.Tapes {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			t := Tape(opts, i)
			if opts.Digests {
				if err := seal.Tape(t, nil); err != nil {
					return err
				}
			}
			data, err := tape.Marshal(t)
			if err != nil {
				return fmt.Errorf("generate tape %d: %w", i, err)
			}
			path := filepath.Join(dir, fmt.Sprintf("tape-%05d.json", i))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return fmt.Errorf("generate corpus: %w", err)
			}
			if opts.Workspaces > 0 {
				snap := Snapshot(opts, i%opts.Workspaces)
				if err := os.WriteFile(filepath.Join(dir, SnapshotName(i)), snap, 0o644); err != nil {
					return fmt.Errorf("generate corpus: %w", err)
				}
			}
			res[i] = one{steps: t.Totals().Steps, bytes: int64(len(data))}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Stats{}, err
	}
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	st := Stats{Tapes: opts.Tapes}
	for _, r := range res {
		st.Steps += r.steps
		st.Bytes += r.bytes
	}
	return st, nil
}

// Tape returns tape number i of the corpus that opts describes.
func Tape(opts Options, i int) *tape.Tape {
	opts = opts.withDefaults()
	g := &gen{
		rng:  rand.New(rand.NewPCG(opts.Seed, uint64(i)*0x9e3779b97f4a7c15+1)),
		opts: opts,
	}
	var t *tape.Tape
	if g.rng.IntN(10) < 6 {
		t = g.claudeTape(i)
	} else {
		t = g.codexTape(i)
	}
	if opts.Workspaces > 0 {
		t.Meta.Workspace = corpusWorkspace(opts, i) // its own random stream: the rest is unchanged
	}
	return t
}

// gen builds one tape from its own random stream.
type gen struct {
	rng    *rand.Rand
	opts   Options
	nextID int
}

// Epoch is when the first generated tape starts; later ones follow it.
var Epoch = time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)

func (g *gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

func (g *gen) pick(words []string) string { return words[g.rng.IntN(len(words))] }

// steps returns a step count with mean opts.MeanSteps.
func (g *gen) steps() int {
	m := g.opts.MeanSteps
	if m <= 1 {
		return 1
	}
	return 1 + g.rng.IntN(2*m-1)
}

// outputSize returns a tool output size: exponential with mean opts.MeanToolOutput,
// capped at 30 000.
func (g *gen) outputSize() int {
	n := int(g.rng.ExpFloat64() * float64(g.opts.MeanToolOutput))
	return max(16, min(n, 30000))
}

func (g *gen) meta(i int, harness, version string, p tape.Provider, model string) tape.Meta {
	start := Epoch.Add(time.Duration(i)*17*time.Minute + time.Duration(g.rng.IntN(60_000))*time.Millisecond)
	m := tape.Meta{
		TapeID:         g.hex(32),
		Harness:        harness,
		HarnessVersion: version,
		Provider:       p,
		Model:          model,
		StartedAt:      start,
		Task:           map[string]string{"bench": "tb4", "id": fmt.Sprintf("%s-%03d", g.pick(taskNames), g.rng.IntN(400))},
		Labels:         map[string]string{"corpus": "generated"},
	}
	if g.rng.IntN(10) == 0 {
		id := g.hex(32)
		m.ReplayOf = &id
		m.Labels["mode"] = "replay"
	}
	if g.rng.IntN(4) == 0 {
		m.Labels["team"] = g.pick([]string{"infra", "runtime", "eval", "agents"})
	}
	return m
}

// end sets how the run ended, given the time of its last byte.
func (g *gen) end(t *tape.Tape, lastMS float64) {
	at := t.Meta.StartedAt.Add(time.Duration((lastMS + 40) * float64(time.Millisecond))).Truncate(time.Microsecond)
	switch r := g.rng.IntN(100); {
	case r < 84:
		t.Meta.Ended = &tape.Ended{Reason: tape.EndComplete, At: at}
	case r < 92:
		t.Meta.Ended = &tape.Ended{Reason: tape.EndCut, At: at, Detail: "signal: interrupt"}
	case r < 97:
		t.Meta.Ended = &tape.Ended{Reason: tape.EndUpstreamError, At: at, Detail: "upstream: 529 overloaded_error"}
	default:
		t.Meta.Ended = nil // the recorder was killed
	}
}

// clock advances a thread's time.
type clock struct{ ms float64 }

func (c *clock) step(g *gen, outTokens int64) tape.Timing {
	req := round3(c.ms)
	first := round3(req + 250 + g.rng.Float64()*1500)
	last := round3(first + float64(outTokens)*(8+g.rng.Float64()*20))
	c.ms = last + 20 + g.rng.ExpFloat64()*900 // the harness runs the tools
	return tape.Timing{RequestAt: req, FirstByteAt: first, LastByteAt: last}
}

func round3(ms float64) float64 { return float64(int64(ms*1000)) / 1000 }

func ptr[T any](v T) *T { return &v }

// link sets each step's next_request_at from the thread's next step.
func link(th *tape.Thread) {
	for i := 0; i+1 < len(th.Steps); i++ {
		th.Steps[i].Timing.NextRequestAt = ptr(th.Steps[i+1].Timing.RequestAt)
	}
}

// ---- text -------------------------------------------------------------------------------

var (
	taskNames = []string{"fix-flaky-test", "add-cli-flag", "port-to-go", "refactor-parser", "write-docs",
		"bump-deps", "sqlite-migration", "http-retry", "cache-layer", "log-rotation", "csv-export", "rate-limit"}
	codeWords = []string{"func", "return", "if", "err", "!=", "nil", "for", "range", "ctx", "context.Context",
		"string", "int64", "struct", "map", "[]byte", "fmt.Errorf", "defer", "Close()", "go", "select", "case",
		"chan", "var", "const", "type", "interface", "package", "import", "len", "append", "make", "os.Open",
		"io.Reader", "bufio.NewScanner", "strings.TrimSpace", "json.Unmarshal", "http.Get", "t.Fatalf", "want", "got"}
	proseWords = []string{"the", "test", "fails", "because", "the", "parser", "does", "not", "handle", "an", "empty",
		"line", "I", "will", "update", "function", "so", "that", "it", "returns", "early", "and", "then", "run",
		"whole", "suite", "again", "to", "check", "nothing", "else", "broke", "file", "now", "looks", "right",
		"let", "me", "read", "config", "first", "this", "change", "keeps", "behaviour", "same", "for", "callers"}
	paths = []string{"cmd/server/main.go", "internal/parse/parse.go", "internal/parse/parse_test.go", "README.md",
		"pkg/cache/lru.go", "pkg/cache/lru_test.go", "scripts/build.sh", "go.mod", "internal/http/retry.go",
		"docs/usage.md", "Makefile", "internal/store/sqlite.go", "internal/store/migrations/0003_add_index.sql"}
)

func (g *gen) words(vocab []string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.pick(vocab))
	}
	return b.String()
}

func (g *gen) sentence() string {
	s := g.words(proseWords, 6+g.rng.IntN(14))
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// output returns tool output of about n bytes: code with line numbers, test logs, listings.
func (g *gen) output(n int) string {
	var b strings.Builder
	b.Grow(n + 64)
	kind := g.rng.IntN(3)
	for line := 1; b.Len() < n; line++ {
		switch kind {
		case 0: // Read: "N\tline"
			fmt.Fprintf(&b, "%d\t%s%s\n", line, strings.Repeat("\t", g.rng.IntN(3)), g.words(codeWords, 2+g.rng.IntN(9)))
		case 1: // test log
			if g.rng.IntN(6) == 0 {
				fmt.Fprintf(&b, "--- FAIL: TestParse%d (0.%02ds)\n    %s:%d: %s\n", line, g.rng.IntN(100), g.pick(paths), 10+g.rng.IntN(400), g.sentence())
			} else {
				fmt.Fprintf(&b, "=== RUN   Test%s/%s_%d\n", strings.ToUpper(g.pick(proseWords)[:1]), g.pick(proseWords), line)
			}
		default: // listing or grep
			fmt.Fprintf(&b, "%s:%d:%s\n", g.pick(paths), g.rng.IntN(900)+1, g.words(codeWords, 3+g.rng.IntN(6)))
		}
	}
	return b.String()[:n]
}

// prompt returns a deterministic block of prose of about n bytes for a harness, the same for
// every tape of that harness (system prompts and tool descriptions do not change between runs).
func prompt(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	for b.Len() < n {
		k := 8 + r.IntN(16)
		for j := range k {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(proseWords[r.IntN(len(proseWords))])
		}
		b.WriteString(".\n")
	}
	return b.String()
}

func (g *gen) promptSize(full int) int {
	if g.opts.Lean {
		return min(full, 120)
	}
	return full
}

func mustJSON(v any) json.RawMessage {
	b, err := jsonlex.Marshal(v)
	if err != nil {
		panic(err) // only values built here, always encodable
	}
	return b
}

func sse(event string, data any) string {
	return "event: " + event + "\ndata: " + string(mustJSON(data)) + "\n\n"
}

// splitText cuts s into stream deltas of 20 to 80 bytes.
func (g *gen) splitText(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(len(s), 20+g.rng.IntN(60))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// ---- Claude Code (Anthropic Messages) -------------------------------------------------------

type toolSpec struct {
	name   string
	desc   int // description size
	schema json.RawMessage
}

var claudeTools = []toolSpec{
	{"Bash", 9000, json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"The command to execute"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"},"dangerouslyDisableSandbox":{"type":"boolean"}},"required":["command"],"additionalProperties":false}`)},
	{"Read", 2200, json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"},"pages":{"type":"string"}},"required":["file_path"],"additionalProperties":false}`)},
	{"Write", 900, json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"],"additionalProperties":false}`)},
	{"Edit", 1600, json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean","default":false}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`)},
	{"Agent", 4200, json.RawMessage(`{"type":"object","properties":{"description":{"type":"string"},"prompt":{"type":"string"},"subagent_type":{"type":"string"}},"required":["description","prompt"],"additionalProperties":false}`)},
	{"Glob", 700, json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"],"additionalProperties":false}`)},
	{"Grep", 1800, json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"glob":{"type":"string"},"output_mode":{"type":"string","enum":["content","files_with_matches","count"]}},"required":["pattern"],"additionalProperties":false}`)},
	{"TodoWrite", 3000, json.RawMessage(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"content":{"type":"string"},"status":{"type":"string"}},"required":["content","status"]}}},"required":["todos"],"additionalProperties":false}`)},
}

// Raw Anthropic request shapes, fields in the order Claude Code sends them.
type anthRequest struct {
	Model     string            `json:"model"`
	Messages  []anthMessage     `json:"messages"`
	System    []anthText        `json:"system"`
	Tools     []anthTool        `json:"tools"`
	Metadata  map[string]string `json:"metadata"`
	MaxTokens int               `json:"max_tokens"`
	Thinking  map[string]any    `json:"thinking"`
	Stream    bool              `json:"stream"`
}

type anthText struct {
	Type         string            `json:"type"`
	Text         string            `json:"text"`
	CacheControl map[string]string `json:"cache_control,omitempty"`
}

type anthTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"`
}

type anthToolResult struct {
	ToolUseID string `json:"tool_use_id"`
	Type      string `json:"type"`
	Content   string `json:"content"`
	IsError   bool   `json:"is_error"`
}

type anthToolUse struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthThinking struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

// claudeThread is the state of one conversation being generated.
type claudeThread struct {
	th       *tape.Thread
	raw      []anthMessage
	messages []tape.Message
	clock    clock
}

func (g *gen) claudeTape(i int) *tape.Tape {
	model := g.pick([]string{"claude-opus-5-5", "claude-sonnet-5", "claude-haiku-5"})
	t := &tape.Tape{Version: tape.Version, Meta: g.meta(i, "claude-code", "2.1.332", tape.ProviderAnthropic, model)}
	t.Meta.Cwd = "/work/" + t.Meta.Task["id"] // as the gateway learns it from the system prompt
	system := prompt(1, g.promptSize(12000)) + "\nPrimary working directory: " + t.Meta.Cwd + "\n"
	var tools []anthTool
	var ntools []tape.Tool
	for k, ts := range claudeTools {
		d := prompt(uint64(100+k), g.promptSize(ts.desc))
		tools = append(tools, anthTool{Name: ts.name, Description: d, InputSchema: ts.schema})
		ntools = append(ntools, tape.Tool{Name: ts.name, Description: d, Kind: "function", InputSchema: ts.schema})
	}
	total := g.steps()
	sub := 0
	if total >= 6 && g.rng.IntN(10) < 3 {
		sub = 2 + g.rng.IntN(total/3)
	}
	task := "Task: " + g.sentence() + " " + g.sentence()
	main := &claudeThread{th: &tape.Thread{ID: "main"}}
	main.addUser(task)
	t.Threads = append(t.Threads, main.th)
	var lastMS float64
	spawnAt := -1
	if sub > 0 {
		spawnAt = g.rng.IntN(total - sub - 1)
	}
	for s := 0; s < total-sub; s++ {
		final := s == total-sub-1
		calls := g.claudeStep(t, main, system, tools, ntools, model, final, s == spawnAt)
		if s == spawnAt {
			// The Agent call runs a subagent thread before its result comes back.
			call := calls[len(calls)-1]
			child := &claudeThread{th: &tape.Thread{ID: "agent-" + g.hex(8), Parent: &tape.Parent{ThreadID: "main", ToolCallID: call.ID}}, clock: clock{ms: main.clock.ms}}
			child.addUser("Subagent task: " + g.sentence())
			t.Threads = append(t.Threads, child.th)
			for k := range sub {
				g.claudeStep(t, child, system, tools, ntools, model, k == sub-1, false)
			}
			lastMS = max(lastMS, child.th.Steps[len(child.th.Steps)-1].Timing.LastByteAt)
			link(child.th)
			main.clock.ms = max(main.clock.ms, child.clock.ms)
			main.results(g, calls, child.th.Steps[len(child.th.Steps)-1].Response.Text())
		} else if !final {
			main.results(g, calls, "")
		}
	}
	link(main.th)
	lastMS = max(lastMS, main.th.Steps[len(main.th.Steps)-1].Timing.LastByteAt)
	g.end(t, lastMS)
	return t
}

func (c *claudeThread) addUser(text string) {
	c.raw = append(c.raw, anthMessage{Role: "user", Content: []any{anthText{Type: "text", Text: text}}})
	c.messages = append(c.messages, tape.Message{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: text}}})
}

// results appends the tool results of calls (the thread's next request) and records them on
// the thread's last step. agentText, when set, is the result of the last call (an Agent call).
func (c *claudeThread) results(g *gen, calls []tape.ToolCall, agentText string) {
	last := c.th.Steps[len(c.th.Steps)-1]
	var raw []any
	var blocks []tape.Block
	for k, call := range calls {
		text := g.output(g.outputSize())
		isErr := g.rng.IntN(12) == 0
		if isErr {
			text = "Exit code 1\n" + text
		}
		if k == len(calls)-1 && agentText != "" {
			text, isErr = agentText+"\nagentId: "+g.hex(16), false
		}
		raw = append(raw, anthToolResult{ToolUseID: call.ID, Type: "tool_result", Content: text, IsError: isErr})
		content := []tape.Block{{Type: tape.BlockText, Text: text}}
		blocks = append(blocks, tape.Block{Type: tape.BlockToolResult, ToolCallID: call.ID, Content: content, IsError: isErr})
		last.ToolResults = append(last.ToolResults, tape.ToolResult{ToolCallID: call.ID, Content: content, IsError: isErr})
	}
	c.raw = append(c.raw, anthMessage{Role: "user", Content: raw})
	c.messages = append(c.messages, tape.Message{Role: "user", Content: blocks})
}

// claudeStep appends one model call to c and returns its tool calls.
func (g *gen) claudeStep(t *tape.Tape, c *claudeThread, system string, tools []anthTool, ntools []tape.Tool, model string, final, spawn bool) []tape.ToolCall {
	body := anthRequest{
		Model:     model,
		Messages:  c.raw,
		System:    []anthText{{Type: "text", Text: "You are Claude Code.", CacheControl: map[string]string{"type": "ephemeral"}}, {Type: "text", Text: system}},
		Tools:     tools,
		Metadata:  map[string]string{"user_id": "user_" + t.Meta.TapeID[:16]},
		MaxTokens: 32000,
		Thinking:  map[string]any{"type": "enabled", "budget_tokens": 8000},
		Stream:    true,
	}
	raw := mustJSON(body)
	req := tape.Request{
		Path:     "/v1/messages?beta=true",
		System:   "You are Claude Code.\n" + system,
		Messages: append([]tape.Message(nil), c.messages...),
		Tools:    ntools,
		Params: map[string]json.RawMessage{
			"model": mustJSON(model), "metadata": mustJSON(body.Metadata), "max_tokens": mustJSON(32000),
			"thinking": mustJSON(body.Thinking),
		},
		Stream: true,
		Headers: tape.Headers{"anthropic-version": "2023-06-01", "content-type": "application/json",
			"user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "x-api-key": "[redacted]", "x-app": "cli"},
		Raw: raw,
	}

	// The answer: thinking, text, then tool calls unless this is the thread's last step.
	var content []tape.Block
	var rawContent []any
	var calls []tape.ToolCall
	if g.rng.IntN(3) > 0 {
		th := g.sentence() + " " + g.sentence()
		content = append(content, tape.Block{Type: tape.BlockThinking, Text: th})
		rawContent = append(rawContent, anthThinking{Type: "thinking", Thinking: th, Signature: base64.StdEncoding.EncodeToString([]byte(g.hex(96)))})
	}
	text := g.sentence()
	if final {
		text += " " + g.sentence() + " " + g.sentence()
	}
	content = append(content, tape.Block{Type: tape.BlockText, Text: text})
	rawContent = append(rawContent, anthText{Type: "text", Text: text})
	if !final {
		n := 1
		if g.rng.IntN(4) == 0 {
			n = 2 + g.rng.IntN(2)
		}
		for k := range n {
			g.nextID++
			id := fmt.Sprintf("toolu_%s%04d", g.hex(20), g.nextID)
			name, input := g.claudeCall()
			if spawn && k == n-1 {
				name, input = "Agent", mustJSON(map[string]any{"description": "explore the code", "prompt": g.sentence(), "subagent_type": "general-purpose"})
			}
			calls = append(calls, tape.ToolCall{ID: id, Name: name, Input: input, Kind: "function"})
			content = append(content, tape.Block{Type: tape.BlockToolUse, ID: id, Name: name, Input: input})
			rawContent = append(rawContent, anthToolUse{Type: "tool_use", ID: id, Name: name, Input: input})
		}
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	ctxTokens := int64(len(raw) / 4)
	usage := tape.Usage{InputTokens: 3 + int64(g.rng.IntN(400)), OutputTokens: int64(len(text)/4 + 40*len(calls) + 20)}
	usage.CacheReadInputTokens = ctxTokens * int64(70+g.rng.IntN(25)) / 100
	usage.CacheCreationInputTokens = ctxTokens - usage.CacheReadInputTokens - usage.InputTokens
	if usage.CacheCreationInputTokens < 0 {
		usage.CacheCreationInputTokens = 0
	}
	msgID := "msg_" + g.hex(24)
	chunks := []string{sse("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{}, "stop_reason": nil,
		"usage": map[string]any{"input_tokens": usage.InputTokens, "cache_creation_input_tokens": usage.CacheCreationInputTokens, "cache_read_input_tokens": usage.CacheReadInputTokens, "output_tokens": 1}}})}
	for k, b := range content {
		switch b.Type {
		case tape.BlockThinking:
			chunks = append(chunks, sse("content_block_start", map[string]any{"type": "content_block_start", "index": k, "content_block": map[string]any{"type": "thinking", "thinking": ""}}))
			for _, d := range g.splitText(b.Text) {
				chunks = append(chunks, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": k, "delta": map[string]any{"type": "thinking_delta", "thinking": d}}))
			}
			chunks = append(chunks, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": k, "delta": map[string]any{"type": "signature_delta", "signature": rawContent[k].(anthThinking).Signature}}))
		case tape.BlockText:
			chunks = append(chunks, sse("content_block_start", map[string]any{"type": "content_block_start", "index": k, "content_block": map[string]any{"type": "text", "text": ""}}))
			for _, d := range g.splitText(b.Text) {
				chunks = append(chunks, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": k, "delta": map[string]any{"type": "text_delta", "text": d}}))
			}
		case tape.BlockToolUse:
			chunks = append(chunks, sse("content_block_start", map[string]any{"type": "content_block_start", "index": k, "content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}}))
			for _, d := range g.splitText(string(b.Input)) {
				chunks = append(chunks, sse("content_block_delta", map[string]any{"type": "content_block_delta", "index": k, "delta": map[string]any{"type": "input_json_delta", "partial_json": d}}))
			}
		}
		chunks = append(chunks, sse("content_block_stop", map[string]any{"type": "content_block_stop", "index": k}))
	}
	chunks = append(chunks,
		sse("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": usage.OutputTokens}}),
		sse("message_stop", map[string]any{"type": "message_stop"}))

	timing := c.clock.step(g, usage.OutputTokens)
	step := &tape.Step{
		Request: req,
		Response: tape.Response{
			Status:     200,
			Headers:    tape.Headers{"content-type": "text/event-stream; charset=utf-8", "request-id": "req_" + g.hex(24)},
			Content:    content,
			StopReason: stop,
			Usage:      usage,
			Raw:        json.RawMessage("null"),
			Chunks:     g.chunks(chunks, timing),
		},
		ToolCalls: calls,
		Timing:    timing,
	}
	c.th.Steps = append(c.th.Steps, step)
	c.raw = append(c.raw, anthMessage{Role: "assistant", Content: rawContent})
	c.messages = append(c.messages, tape.Message{Role: "assistant", Content: content})
	return calls
}

// chunks spreads stream events over the step's response time.
func (g *gen) chunks(data []string, tm tape.Timing) []tape.Chunk {
	out := make([]tape.Chunk, len(data))
	first := tm.FirstByteAt - tm.RequestAt
	span := tm.LastByteAt - tm.FirstByteAt
	for k, d := range data {
		at := first
		if len(data) > 1 {
			at += span * float64(k) / float64(len(data)-1)
		}
		out[k] = tape.Chunk{AtMS: round3(at), Data: d}
	}
	return out
}

func (g *gen) claudeCall() (string, json.RawMessage) {
	p := g.pick(paths)
	switch g.rng.IntN(6) {
	case 0, 1:
		return "Bash", mustJSON(map[string]any{"command": g.pick([]string{"go test ./...", "go build ./...", "ls -la", "git status", "make lint", "grep -rn TODO ."}), "description": g.words(proseWords, 4)})
	case 2:
		return "Read", mustJSON(map[string]any{"file_path": "/work/" + p})
	case 3:
		return "Edit", mustJSON(map[string]any{"file_path": "/work/" + p, "old_string": g.words(codeWords, 8), "new_string": g.words(codeWords, 10)})
	case 4:
		return "Grep", mustJSON(map[string]any{"pattern": g.pick(codeWords), "output_mode": "content"})
	default:
		return "Write", mustJSON(map[string]any{"file_path": "/work/" + p, "content": g.output(200 + g.rng.IntN(1500))})
	}
}

// ---- Codex (OpenAI Responses) ---------------------------------------------------------------

var codexTools = []toolSpec{
	{"exec_command", 1800, json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"},"yield_time_ms":{"type":"number"},"max_output_tokens":{"type":"number"}},"required":["cmd"],"additionalProperties":false}`)},
	{"write_stdin", 600, json.RawMessage(`{"type":"object","properties":{"session_id":{"type":"number"},"chars":{"type":"string"}},"required":["session_id"],"additionalProperties":false}`)},
	{"view_image", 300, json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
}

type respItem = map[string]any

func (g *gen) codexTape(i int) *tape.Tape {
	model := g.pick([]string{"gpt-5.5", "gpt-5.5-codex", "gpt-5.4-mini"})
	t := &tape.Tape{Version: tape.Version, Meta: g.meta(i, "codex", "0.171.0", tape.ProviderOpenAIResponses, model)}
	instructions := prompt(2, g.promptSize(9000))
	var rawTools []any
	var ntools []tape.Tool
	for k, ts := range codexTools {
		d := prompt(uint64(200+k), g.promptSize(ts.desc))
		rawTools = append(rawTools, respItem{"type": "function", "name": ts.name, "description": d, "strict": false, "parameters": ts.schema})
		ntools = append(ntools, tape.Tool{Name: ts.name, Description: d, Kind: "function", InputSchema: ts.schema})
	}
	grammar := prompt(300, g.promptSize(2500))
	rawTools = append(rawTools, respItem{"type": "custom", "name": "apply_patch", "description": "Use the `apply_patch` tool to edit files.", "format": respItem{"type": "grammar", "syntax": "lark", "definition": grammar}})
	ntools = append(ntools, tape.Tool{Name: "apply_patch", Description: "Use the `apply_patch` tool to edit files.", Kind: "custom"})

	t.Meta.Cwd = "/work/" + t.Meta.Task["id"] // as the gateway learns it from the environment context
	env := "<environment_context>\n  <cwd>" + t.Meta.Cwd + "</cwd>\n  <shell>bash</shell>\n</environment_context>"
	task := g.sentence() + " " + g.sentence()
	input := []any{
		respItem{"type": "message", "role": "developer", "content": []any{respItem{"type": "input_text", "text": env}}},
		respItem{"type": "message", "role": "user", "content": []any{respItem{"type": "input_text", "text": task}}},
	}
	msgs := []tape.Message{
		{Role: "system", Content: []tape.Block{{Type: tape.BlockText, Text: env}}},
		{Role: "user", Content: []tape.Block{{Type: tape.BlockText, Text: task}}},
	}
	th := &tape.Thread{ID: "main"}
	t.Threads = append(t.Threads, th)
	var c clock
	total := g.steps()
	cacheKey := g.hex(32)
	for s := range total {
		final := s == total-1
		body := respItem{"model": model, "instructions": instructions, "input": input, "tools": rawTools,
			"tool_choice": "auto", "parallel_tool_calls": false, "reasoning": respItem{"effort": "medium", "summary": "auto"},
			"store": false, "stream": true, "include": []string{"reasoning.encrypted_content"}, "prompt_cache_key": cacheKey}
		raw := mustJSON(body)
		req := tape.Request{
			Path:     "/v1/responses",
			System:   instructions,
			Messages: append([]tape.Message(nil), msgs...),
			Tools:    ntools,
			Params: map[string]json.RawMessage{"model": mustJSON(model), "tool_choice": mustJSON("auto"),
				"parallel_tool_calls": mustJSON(false), "reasoning": mustJSON(body["reasoning"]), "store": mustJSON(false),
				"include": mustJSON(body["include"]), "prompt_cache_key": mustJSON(cacheKey)},
			Stream: true,
			Headers: tape.Headers{"accept": "text/event-stream", "authorization": "[redacted]", "content-type": "application/json",
				"originator": "codex_exec", "user-agent": "codex_exec/0.171.0 (Debian 12.0.0; x86_64)", "session-id": cacheKey},
			Raw: raw,
		}
		summary := g.sentence()
		text := g.sentence()
		if final {
			text += " " + g.sentence()
		}
		encrypted := base64.StdEncoding.EncodeToString([]byte(g.hex(600)))
		content := []tape.Block{{Type: tape.BlockThinking, Text: summary}, {Type: tape.BlockText, Text: text}}
		var calls []tape.ToolCall
		outItems := []any{
			respItem{"type": "reasoning", "id": "rs_" + g.hex(24), "summary": []any{respItem{"type": "summary_text", "text": summary}}, "encrypted_content": encrypted},
			respItem{"type": "message", "id": "msg_" + g.hex(24), "role": "assistant", "status": "completed", "content": []any{respItem{"type": "output_text", "text": text, "annotations": []any{}}}},
		}
		if !final {
			g.nextID++
			id := fmt.Sprintf("call_%s%03d", g.hex(21), g.nextID)
			if g.rng.IntN(4) == 0 {
				patch := "*** Begin Patch\n*** Update File: " + g.pick(paths) + "\n@@\n-" + g.words(codeWords, 6) + "\n+" + g.words(codeWords, 7) + "\n*** End Patch\n"
				in := mustJSON(map[string]string{"input": patch})
				calls = append(calls, tape.ToolCall{ID: id, Name: "apply_patch", Input: in, Kind: "custom"})
				content = append(content, tape.Block{Type: tape.BlockToolUse, ID: id, Name: "apply_patch", Input: in})
				outItems = append(outItems, respItem{"type": "custom_tool_call", "id": "ctc_" + g.hex(24), "status": "completed", "call_id": id, "name": "apply_patch", "input": patch})
			} else {
				args := mustJSON(map[string]any{"cmd": g.pick([]string{"go test ./...", "rg -n TODO", "sed -n 1,200p " + g.pick(paths), "ls -R", "git diff"}), "yield_time_ms": 10000})
				calls = append(calls, tape.ToolCall{ID: id, Name: "exec_command", Input: args, Kind: "function"})
				content = append(content, tape.Block{Type: tape.BlockToolUse, ID: id, Name: "exec_command", Input: args})
				outItems = append(outItems, respItem{"type": "function_call", "id": "fc_" + g.hex(24), "status": "completed", "call_id": id, "name": "exec_command", "arguments": string(args)})
			}
		}
		ctxTokens := int64(len(raw) / 4)
		usage := tape.Usage{InputTokens: ctxTokens, OutputTokens: int64(len(text)/4 + 60), ReasoningTokens: int64(64 + g.rng.IntN(900))}
		usage.CacheReadInputTokens = ctxTokens * int64(60+g.rng.IntN(35)) / 100
		respID := "resp_" + g.hex(32)
		chunks := []string{sse("response.created", respItem{"type": "response.created", "sequence_number": 0, "response": respItem{"id": respID, "object": "response", "status": "in_progress", "model": model}})}
		for k, it := range outItems {
			chunks = append(chunks, sse("response.output_item.added", respItem{"type": "response.output_item.added", "output_index": k, "item": it}))
			if k == 1 {
				for _, d := range g.splitText(text) {
					chunks = append(chunks, sse("response.output_text.delta", respItem{"type": "response.output_text.delta", "output_index": k, "content_index": 0, "delta": d}))
				}
			}
			chunks = append(chunks, sse("response.output_item.done", respItem{"type": "response.output_item.done", "output_index": k, "item": it}))
		}
		chunks = append(chunks, sse("response.completed", respItem{"type": "response.completed", "response": respItem{"id": respID, "status": "completed", "model": model,
			"usage": respItem{"input_tokens": usage.InputTokens, "input_tokens_details": respItem{"cached_tokens": usage.CacheReadInputTokens}, "output_tokens": usage.OutputTokens, "output_tokens_details": respItem{"reasoning_tokens": usage.ReasoningTokens}}}}))
		stop := "completed"
		timing := c.step(g, usage.OutputTokens)
		step := &tape.Step{
			Request: req,
			Response: tape.Response{
				Status: 200, Headers: tape.Headers{"content-type": "text/event-stream", "x-request-id": "req_" + g.hex(24)},
				Content: content, StopReason: stop, Usage: usage, Raw: json.RawMessage("null"), Chunks: g.chunks(chunks, timing),
			},
			ToolCalls: calls,
			Timing:    timing,
		}
		th.Steps = append(th.Steps, step)

		// The next request carries the answer and the tool outputs.
		input = append(input, outItems...)
		msgs = append(msgs, tape.Message{Role: "assistant", Content: content})
		for _, call := range calls {
			out := g.output(g.outputSize())
			if call.Name == "apply_patch" {
				out = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM " + g.pick(paths) + "\n"
				input = append(input, respItem{"type": "custom_tool_call_output", "call_id": call.ID, "output": out})
			} else {
				out = fmt.Sprintf("Chunk ID: %s\nWall time: 0.%04d seconds\nProcess exited with code 0\nOriginal token count: %d\nOutput:\n%s", g.hex(6), g.rng.IntN(10000), len(out)/4, out)
				input = append(input, respItem{"type": "function_call_output", "call_id": call.ID, "output": out})
			}
			blocks := []tape.Block{{Type: tape.BlockText, Text: out}}
			msgs = append(msgs, tape.Message{Role: "tool", Content: []tape.Block{{Type: tape.BlockToolResult, ToolCallID: call.ID, Content: blocks}}})
			step.ToolResults = append(step.ToolResults, tape.ToolResult{ToolCallID: call.ID, Content: blocks})
		}
	}
	link(th)
	g.end(t, th.Steps[len(th.Steps)-1].Timing.LastByteAt)
	return t
}
