package interop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// LineError is a session file line that cannot be read.
type LineError struct {
	Path string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// readLines decodes every line of a JSONL file with f; blank lines are skipped. The first
// bad line is an error naming the file and the line.
func readLines(path string, f func(line int, b []byte) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 1<<20)
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			if !json.Valid(b) {
				var v any
				jerr := json.Unmarshal(b, &v)
				if jerr == nil {
					jerr = errors.New("invalid JSON")
				}
				return &LineError{Path: path, Line: n, Err: fmt.Errorf("not a JSON object: %w", jerr)}
			}
			if ferr := f(n, b); ferr != nil {
				return &LineError{Path: path, Line: n, Err: ferr}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// Import reads session files of format f (a file, or a directory searched for them) and
// returns one tape per session; f Auto tells each file's format by its first line (see
// Detect). Nothing is returned when any file is bad: the error names the file and the line.
func Import(f Format, path string) ([]*tape.Tape, error) {
	if f == Auto {
		return ImportAuto(path)
	}
	if _, ok := importers[f]; !ok {
		return nil, fmt.Errorf("import: unknown format %q (want one of %v)", f, ImportFormats)
	}
	return importPath(f, path)
}

// importers holds, per format Import reads, which files under a folder are its session
// files (by their slash-separated path below it) and how a list of them becomes tapes.
var importers = map[Format]struct {
	match func(rel string) bool
	read  func(files []string) ([]*tape.Tape, error)
}{
	ClaudeCode: {isJSONL, importClaudeFiles},
	Codex:      {func(rel string) bool { return isJSONL(rel) && strings.HasPrefix(path.Base(rel), "rollout-") }, importCodexFiles},
	STS:        {isJSONL, importSTSFiles},
	Pi:         {isJSONL, importPiFiles},
	GeminiCLI:  {isJSONL, importGeminiFiles},
	OpenCode:   {func(rel string) bool { return strings.HasSuffix(rel, ".json") }, importOpenCodeFiles},
}

func isJSONL(rel string) bool { return strings.HasSuffix(rel, ".jsonl") }

// importPath reads the session files of format f at path (a file, or a folder searched for
// them).
func importPath(f Format, path string) ([]*tape.Tape, error) {
	im := importers[f]
	files, err := sessionFiles(path, im.match)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", f, err)
	}
	return im.read(files)
}

// newImported is an empty imported tape.
func newImported(format Format, harness, source string) *tape.Tape {
	tp := tape.New(tape.ProviderUnknown, time.Unix(0, 0))
	tp.Meta.Harness = harness
	tp.Meta.Labels = map[string]string{LabelImportedFrom: string(format), LabelForm: FormNormalized, LabelSource: filepath.Base(source)}
	return tp
}

// newStep is a step of an imported tape of provider p (its request path is p's model-call
// path, "" for an unknown provider): normalized request and response, no raw bodies, no
// timing.
func newStep(p tape.Provider, model string, history []tape.Message) *tape.Step {
	path := provider.Path(p)
	params := map[string]json.RawMessage{}
	if model != "" {
		b, _ := json.Marshal(model)
		params["model"] = b
	}
	return &tape.Step{
		Request:     tape.Request{Path: path, Messages: append([]tape.Message(nil), history...), Tools: []tape.Tool{}, Params: params, Stream: true, Headers: tape.Headers{}, Raw: json.RawMessage("null")},
		Response:    tape.Response{Status: 200, Headers: tape.Headers{}, Content: []tape.Block{}, Raw: json.RawMessage("null"), Chunks: []tape.Chunk{}},
		ToolCalls:   []tape.ToolCall{},
		ToolResults: []tape.ToolResult{},
	}
}

// appendMessage adds blocks to a history, merging into the last message of the same role
// (the API's rule for consecutive turns).
func appendMessage(h []tape.Message, role string, blocks []tape.Block) []tape.Message {
	if len(blocks) == 0 {
		return h
	}
	if n := len(h); n > 0 && h[n-1].Role == role {
		h[n-1].Content = append(append([]tape.Block(nil), h[n-1].Content...), blocks...)
		return h
	}
	return append(h, tape.Message{Role: role, Content: blocks})
}

// sessionFiles lists the session files under path (path itself when it is a file), sorted:
// the regular files match takes (by their slash-separated path below it), outside any
// subagents folder.
func sessionFiles(path string, match func(rel string) bool) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		if d.IsDir() && d.Name() == "subagents" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && match(filepath.ToSlash(rel)) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no session files (%s) under %s", filesWanted(match), path)
	}
	return out, err
}

// filesWanted names the files match takes, for an error ("*.jsonl or *.json").
func filesWanted(match func(rel string) bool) string {
	var names []string
	for _, ext := range []string{".jsonl", ".json"} {
		if match("rollout-x" + ext) {
			names = append(names, "*"+ext)
		}
	}
	return strings.Join(names, " or ")
}

func parseTime(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}

// errFirstLine stops readLines after the first line.
var errFirstLine = errors.New("first line read")

// autoFormats names what Detect tries, for its errors.
const autoFormats = "Claude Code, Codex, Gemini CLI, Pi and STS by the first line, OpenCode by the whole file"

// Detect tells the format of a session file. By its first line: an STS session header
// ({"type":"session","harness":…}), a Pi session header ({"type":"session","id","cwd"},
// no harness), a Codex rollout line ({"timestamp","type","payload"}), Gemini CLI's session
// metadata ({"sessionId","projectHash",…}) or a Claude Code entry (one naming a sessionId,
// uuid or leafUuid, or a summary or file-history-snapshot entry; the whole file is then
// checked by checkClaudeCode, so that Qwen Code's lookalike entries are not taken for
// Claude Code's). Else by the whole file:
// what `opencode export SESSION` prints (checkOpenCodeExport). Anything else is an error
// naming the file, the line its first line is on, the formats tried and why each did not
// fit.
func Detect(path string) (Format, error) {
	f, line, lineErr := detectLine(path)
	what := "its first line"
	if lineErr == nil && f == ClaudeCode {
		if lineErr = checkClaudeCode(path); lineErr != nil {
			var le *LineError
			if errors.As(lineErr, &le) {
				line = le.Line
			}
			what = fmt.Sprintf("its first line looks like a Claude Code entry, but its line %d is not one", line)
		}
	}
	if lineErr == nil {
		return f, nil
	}
	var le *LineError
	if !errors.As(lineErr, &le) && line == 0 {
		return "", lineErr // the file cannot be read
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	ocErr := checkOpenCodeExport(b)
	if ocErr == nil {
		return OpenCode, nil
	}
	why := lineErr.Error()
	if le != nil {
		why = le.Err.Error()
	}
	if line == 0 {
		line = 1
	}
	return "", fmt.Errorf("%s:%d: not a session file of a format auto knows (tried %s): %s: %s; as an OpenCode export: %v", path, line, autoFormats, what, why, ocErr)
}

// detectLine tells the format of a JSONL session file by its first line (see Detect), and
// returns that line's number; the error says why it fits none.
func detectLine(path string) (Format, int, error) {
	var f Format
	var line int
	err := readLines(path, func(n int, b []byte) error {
		line = n
		var h struct {
			Type      string          `json:"type"`
			Harness   *string         `json:"harness"`
			ID        *string         `json:"id"`
			Cwd       *string         `json:"cwd"`
			Payload   json.RawMessage `json:"payload"`
			Timestamp *string         `json:"timestamp"`
			SessionID *string         `json:"sessionId"`
			UUID      *string         `json:"uuid"`
			LeafUUID  *string         `json:"leafUuid"`
			Project   *string         `json:"projectHash"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			return fmt.Errorf("not a session file line: %w", err)
		}
		switch {
		case h.Type == "session" && h.Harness != nil:
			f = STS
		case h.Type == "session" && h.ID != nil && h.Cwd != nil:
			f = Pi
		case h.Type == "session_meta" || h.Payload != nil && h.Timestamp != nil:
			f = Codex
		case h.SessionID != nil && h.Project != nil:
			f = GeminiCLI
		case h.SessionID != nil || h.UUID != nil || h.LeafUUID != nil || h.Type == "summary" || h.Type == "file-history-snapshot":
			f = ClaudeCode
		default:
			return errors.New("none of Claude Code's, Codex's, Gemini CLI's, Pi's or STS's")
		}
		return errFirstLine
	})
	var le *LineError
	if errors.As(err, &le) {
		line = le.Line
	}
	switch {
	case errors.Is(err, errFirstLine):
		return f, line, nil
	case err != nil:
		return "", line, err
	}
	return "", line, &LineError{Path: path, Line: 1, Err: errors.New("empty")}
}

// autoMatch is which files under a folder ImportAuto reads: *.jsonl files (each must be a
// session file of a format Detect knows), and *.json files that begin as an OpenCode
// export (claimsOpenCode; other JSON files are left alone: a folder of sessions holds
// such, Gemini CLI's logs.json for one).
func autoMatch(rel string) bool { return isJSONL(rel) || strings.HasSuffix(rel, ".json") }

// ImportAuto reads the session files under path (a file, or a folder such as a Hub Traces
// dataset, ~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, ~/.pi/agent/sessions or
// one of `opencode export` files) whatever their formats: each file's is told by Detect,
// and the files of each format are imported together (Codex sub-agents with their parents,
// an OpenCode subagent's session with its parent's, the STS files of one tape as one). A
// Claude Code sidechain, under <session>/subagents/ or beside its session file, is read
// with its session. Under a folder, a *.json file that does not begin as an OpenCode
// export is left alone; a file named by path is detected whatever its name.
func ImportAuto(path string) ([]*tape.Tape, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	files, err := sessionFiles(path, autoMatch)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	by := map[Format][]string{}
	var skipped []string
	for _, f := range files {
		if fi.IsDir() && !isJSONL(f) && !claimsOpenCode(f) {
			skipped = append(skipped, f)
			continue
		}
		format, err := Detect(f)
		if err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
		by[format] = append(by[format], f)
	}
	if len(skipped) == len(files) {
		return nil, fmt.Errorf("import: no session files (*.jsonl, or OpenCode exports *.json) under %s: %d .json file(s) there are not OpenCode exports (%s)", path, len(skipped), strings.Join(skipped[:min(len(skipped), 3)], ", "))
	}
	var out []*tape.Tape
	for _, f := range ImportFormats {
		im, ok := importers[f]
		if !ok || len(by[f]) == 0 {
			continue
		}
		tapes, err := im.read(by[f]) // its errors name the format already
		if err != nil {
			return nil, err
		}
		out = append(out, tapes...)
	}
	return out, nil
}

// stepClock is when an imported step happened, from its session file's timestamps: the
// request (the entry before the answer), and the answer's first and last entries.
type stepClock struct{ req, first, last time.Time }

// applyClock sets the timing of th's steps from clock, in milliseconds since
// tp.Meta.StartedAt, and says whether every step of th had a time.
// The file's timestamps are when the harness wrote each entry, so request_at is when it
// wrote what preceded the call, and first_byte_at when it wrote the first part of the answer
// (a session file has no time to first byte: a streamed answer is written when whole).
func applyClock(tp *tape.Tape, th *tape.Thread, clock map[*tape.Step]*stepClock) bool {
	ms := func(t time.Time) float64 { return tape.RoundMS(t.Sub(tp.Meta.StartedAt)) }
	all := len(th.Steps) > 0
	for _, s := range th.Steps {
		c := clock[s]
		if c == nil {
			all = false
			continue
		}
		last := c.last
		if last.IsZero() {
			last = c.first
		}
		s.Timing.RequestAt = max(0, ms(c.req))
		s.Timing.FirstByteAt = max(s.Timing.RequestAt, ms(c.first))
		s.Timing.LastByteAt = max(s.Timing.FirstByteAt, ms(last))
	}
	return all
}
