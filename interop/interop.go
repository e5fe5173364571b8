package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// Format names an export or import format.
type Format string

// The formats.
const (
	ClaudeCode Format = "claude-code"
	Codex      Format = "codex"
	STS        Format = "sts"
	// Pi is the pi coding agent's session file (~/.pi/agent/sessions); import only.
	Pi Format = "pi"
	// GeminiCLI is Gemini CLI's session file (~/.gemini/tmp/<project>/chats).
	GeminiCLI Format = "gemini-cli"
	// OpenCode is what `opencode export SESSION` prints, and `opencode import FILE` reads
	// (OpenCode keeps its sessions in SQLite).
	OpenCode Format = "opencode"
	ATIF     Format = "atif"
	OTLP     Format = "otlp"
	// Auto is not a format: an import with it tells each file's format (Detect).
	Auto Format = "auto"
)

// ExportFormats lists what Export writes; ImportFormats what Import reads.
var (
	ExportFormats = []Format{ClaudeCode, Codex, GeminiCLI, OpenCode, STS, ATIF, OTLP}
	ImportFormats = []Format{Auto, ClaudeCode, Codex, GeminiCLI, OpenCode, Pi, STS}
)

// The labels an imported tape carries in meta.labels.
const (
	// LabelImportedFrom names the format a tape was imported from ("claude-code", "codex").
	LabelImportedFrom = "tapebox.imported_from"
	// LabelForm says what the steps hold: FormNormalized (normalized fields only: no raw
	// bodies, no timing) or FormSynthesized (raw stream bodies made from the normalized
	// form by Synthesize, still no timing). A tape without the label is a recording.
	LabelForm = "tapebox.form"
	// LabelTiming says where an imported tape's step timing comes from: TimingEntries, the
	// timestamps of the session file's entries; absent when the file had none (every step
	// at 0).
	LabelTiming = "tapebox.timing"
	// TimingEntries is LabelTiming of a tape timed by its session file's entries.
	TimingEntries = "session file entries"
	// LabelSource is the session file (or directory) an imported tape was read from.
	LabelSource = "tapebox.source"
	// LabelLost lists, with counts, what the session files held that the tape's normalized
	// form has no place for ("thinking signatures (3), reasoning encrypted_content (2)");
	// absent when nothing was lost.
	LabelLost = "tapebox.lost"
	// LabelHarnessAPI lists, with counts, the wire APIs a session's model calls used, by
	// the harness's own names ("google-generative-ai (3)"), when the tape's provider cannot
	// say it: none TapeBox has an adapter for, or more than one. The tape's provider is then
	// unknown. Pi imports set it.
	LabelHarnessAPI = "tapebox.harness_api"
)

// What an import can lose, as LabelLost names it.
const (
	// LostThinkingSignature: an Anthropic thinking block's signature (a tape's thinking
	// block is its text only). A synthesized stream has an empty signature, which the
	// simulator never checks; the real API would refuse the block.
	LostThinkingSignature = "thinking signatures"
	// LostEncryptedReasoning: a Responses reasoning item's encrypted_content (the tape keeps
	// the summary text).
	LostEncryptedReasoning = "reasoning encrypted_content"
	// LostToolSearchTools: the tools a Codex tool_search_output item loaded (the tape keeps
	// the tool_search_call whole, as a block the model sent, and the output as an empty
	// tool result; Codex runs the search itself when it is served the call).
	LostToolSearchTools = "tool_search_output tools"
	// LostOtherBranches: the entries of a Pi session's branches other than the one the
	// import follows (the one ending at the file's last entry, where Pi resumes).
	LostOtherBranches = "entries of other branches"
	// LostErrorMessages: the error text a Pi assistant message carries for a model call
	// that failed (errorMessage); the step keeps what arrived, with no stop reason.
	LostErrorMessages = "model call error messages"
	// LostPiUnknown: Pi session entries, or messages, of a type the import does not know.
	LostPiUnknown = "entries of unknown types"
)

// losses counts what an import dropped, by LabelLost name.
type losses map[string]int

// add records n of what.
func (l losses) add(what string, n int) {
	if n > 0 {
		l[what] += n
	}
}

// label writes the LabelLost label of tp, when anything was lost.
func (l losses) label(tp *tape.Tape) {
	if len(l) == 0 {
		return
	}
	names := make([]string, 0, len(l))
	for what := range l {
		names = append(names, what)
	}
	sort.Strings(names)
	for i, what := range names {
		names[i] = fmt.Sprintf("%s (%d)", what, l[what])
	}
	tp.Meta.Labels[LabelLost] = strings.Join(names, ", ")
}

// The values of LabelForm.
const (
	FormNormalized  = "normalized"
	FormSynthesized = "synthesized"
)

// File is one file of an export, its path relative to the export's folder (slash-separated).
type File struct {
	Path string
	Data []byte
	// Thread is the id of the tape thread whose conversation the file holds; empty for a
	// file that holds none (a subagent's .meta.json) or every thread (ATIF, OTLP).
	Thread string
}

// Options tune an export.
type Options struct {
	// PricesDate and Cost, when Cost is set, price the tape for the formats that carry a
	// cost (ATIF's cost_usd): Cost returns the cost of one step, nil when unknown.
	PricesDate string
	Cost       func(meta *tape.Meta, s *tape.Step) *float64
	// CodexModelProvider is the model_provider a Codex rollout names: the id of the
	// provider in Codex's config, which no request carries; Codex resumes a session only
	// with the provider it names. Empty: the tape's (LabelCodexModelProvider, which tapebox
	// record and a Codex import set), else "openai".
	CodexModelProvider string
}

// MissingError says that a tape lacks what a format needs (raw bodies, timing).
type MissingError struct {
	Format Format
	TapeID string
	// Missing names what is missing; Why says what the format needs it for.
	Missing, Why string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("export %s: tape %s has no %s; %s", e.Format, e.TapeID, e.Missing, e.Why)
}

// Export converts a tape to format f.
func Export(tp *tape.Tape, f Format, opts Options) ([]File, error) {
	switch f {
	case ClaudeCode:
		return ExportClaudeCode(tp)
	case Codex:
		return ExportCodex(tp, opts.CodexModelProvider)
	case GeminiCLI:
		return ExportGeminiCLI(tp)
	case OpenCode:
		return ExportOpenCode(tp)
	case STS:
		return ExportSTS(tp)
	case ATIF:
		b, err := ExportATIF(tp, opts)
		if err != nil {
			return nil, err
		}
		return []File{{Path: safeName(tp.Meta.TapeID) + ".atif.json", Data: b}}, nil
	case OTLP:
		b, err := ExportOTLP(tp)
		if err != nil {
			return nil, err
		}
		return []File{{Path: safeName(tp.Meta.TapeID) + ".otlp.json", Data: b}}, nil
	}
	return nil, fmt.Errorf("export: unknown format %q (want one of %v)", f, ExportFormats)
}

// ParseFormat checks a format name against the list it must be in.
func ParseFormat(s string, of []Format) (Format, error) {
	for _, f := range of {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want one of %v)", s, of)
}

// Imported says whether a tape was imported (has no raw bodies or timing of its own).
func Imported(tp *tape.Tape) bool { return tp.Meta.Labels[LabelForm] != "" }

// uuidFrom is a UUID-shaped identifier derived from parts: the same parts, the same id,
// so that exports are reproducible.
func uuidFrom(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// hexFrom is n hex digits derived from parts.
func hexFrom(n int, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:n]
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// at is the wall time of a point of the tape's clock, in the millisecond form both
// harnesses write (2026-12-01T13:04:12.809Z).
func at(tp *tape.Tape, ms float64) string {
	return tp.Meta.StartedAt.Add(time.Duration(ms * float64(time.Millisecond))).UTC().Format("2006-01-02T15:04:05.000Z")
}

// isReminder says whether a text block is harness boilerplate rather than what the user
// typed: Claude Code's <system-reminder> blocks, Codex's environment and instruction blocks,
// Gemini CLI's session and hook context.
func isReminder(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<system-reminder>", "<environment_context>", "<user_instructions>", "<permissions instructions>", "# AGENTS.md instructions", "<skills_instructions>", "<session_context>", "<hook_context>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// prompt is the text the user gave a thread: the text of the last user message of its
// first request without the harness's reminders.
func prompt(th *tape.Thread) string {
	if len(th.Steps) == 0 {
		return ""
	}
	msgs := th.Steps[0].Request.Messages
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		var parts []string
		for _, b := range msgs[i].Content {
			if b.Type == tape.BlockText && !isReminder(b.Text) {
				parts = append(parts, b.Text)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, "\n")
		}
	}
	return ""
}

// followUp is the text of a user message that starts a new turn at step i (one whose
// previous step asked for no tool), or "".
func followUp(th *tape.Thread, i int) string {
	if i == 0 || len(th.Steps[i-1].ToolCalls) > 0 {
		return ""
	}
	msgs := th.Steps[i].Request.Messages
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "user" {
		return ""
	}
	var parts []string
	for _, b := range msgs[len(msgs)-1].Content {
		if b.Type == tape.BlockText && !isReminder(b.Text) {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// children maps a spawning tool call id to the thread it spawned.
func children(tp *tape.Tape) map[string]*tape.Thread {
	out := map[string]*tape.Thread{}
	for _, th := range tp.Threads {
		if th.Parent != nil {
			out[th.Parent.ToolCallID] = th
		}
	}
	return out
}

// resultText is a tool result's content as one string.
func resultText(r tape.ToolResult) string {
	var b strings.Builder
	for _, bl := range r.Content {
		switch bl.Type {
		case tape.BlockText:
			b.WriteString(bl.Text)
		case tape.BlockImage:
			b.WriteString("[image]")
		}
	}
	return b.String()
}

// safeName makes an identifier from a tape (untrusted) usable as a file name: anything but
// letters, digits, '.', '-' and '_' becomes '_', and "." or ".." cannot come out.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || strings.Trim(out, ".") == "" {
		return "_" + out
	}
	return out
}

// slug is Claude Code's project folder name for a working directory: every character but
// ASCII letters and digits becomes "-".
func slug(cwd string) string {
	var b strings.Builder
	for _, r := range cwd {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// jsonl encodes values one per line, without HTML escaping.
func jsonl(values []any) ([]byte, error) {
	var out []byte
	for _, v := range values {
		b, err := jsonlex.Marshal(v)
		if err != nil {
			return nil, err
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}

// input is a tool call's input as a JSON object (an empty object when missing).
func input(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// LoadFor reads the tape at path with what format f needs of it: OTLP and claude-code read
// the raw responses (the provider's response ids, which Claude Code keeps as message.id and
// OTLP as gen_ai.response.id, so that the two join; and the models, in bodies and stream
// events); the other formats only the normalized fields (tape.LoadSummaryFile), which is
// much faster on tapes whose every request repeats the conversation.
func LoadFor(path string, f Format) (*tape.Tape, error) {
	if f == OTLP || f == ClaudeCode {
		return tape.LoadFile(path)
	}
	return tape.LoadSummaryFile(path)
}
