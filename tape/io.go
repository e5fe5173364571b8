package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// NewID returns a fresh random identifier (32 hex digits). It uses math/rand/v2, whose
// generator is ChaCha8 seeded from the OS: unpredictable enough for ids, and without
// crypto/rand, which would add half a megabyte to the sandbox-side executor.
func NewID() string {
	return fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
}

// Marshal returns the canonical encoding of t: compact JSON, fields in the order of this
// package's types, map keys sorted, no HTML escaping, one trailing newline. The same tape
// always gives the same bytes, and Load followed by Marshal reproduces a canonical file
// byte for byte.
func Marshal(t *Tape) ([]byte, error) {
	t.normalize()
	e := enc{b: make([]byte, 0, sizeHint(t)), ok: true}
	if e.tape(t); e.ok {
		return fixReplacement(append(e.b, '\n')), nil
	}
	var buf bytes.Buffer
	if err := encode(&buf, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encode writes v as canonical JSON followed by a newline.
func encode(buf *bytes.Buffer, v any) error {
	start := buf.Len()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode tape: %w", err)
	}
	if b := buf.Bytes()[start:]; bytes.Contains(b, escapedReplacement) {
		fixed := unescapeReplacement(b)
		buf.Truncate(start)
		buf.Write(fixed)
	}
	return nil
}

var escapedReplacement = []byte(`\ufffd`)

// fixReplacement is b with U+FFFD unescaped, as encode writes it.
func fixReplacement(b []byte) []byte {
	if bytes.Contains(b, escapedReplacement) {
		return unescapeReplacement(b)
	}
	return b
}

// sizeHint is a little more than the size of t's encoding, so that it is written without
// growing its buffer: the bulk of a tape is its raw bodies, the conversation again in the
// normalized requests and responses (about as large), and the stream chunks.
func sizeHint(t *Tape) int {
	n := 4 << 10
	for _, th := range t.Threads {
		if th == nil {
			continue
		}
		for _, s := range th.Steps {
			if s != nil {
				n += stepHint(s)
			}
		}
	}
	return n
}

func stepHint(s *Step) int {
	raw := len(s.Request.Raw) + len(s.Response.Raw)
	n := 2*raw + raw/8 + 2<<10
	for _, c := range s.Response.Chunks {
		n += len(c.Data) + len(c.Data)/2 + 32
	}
	return n
}

// unescapeReplacement writes U+FFFD as itself rather than as the escape \ufffd. encoding/json
// escapes it where a string held invalid UTF-8 but writes it raw where the string held the
// character, so without this a tape with invalid UTF-8 would not encode the same after a
// load. An escape is one whose backslash is not itself escaped.
func unescapeReplacement(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' {
			if bytes.HasPrefix(b[i:], escapedReplacement) {
				out = append(out, "\uFFFD"...)
				i += len(escapedReplacement) - 1
				continue
			}
			// Any other escape: copy it whole so its backslash cannot start a match.
			if i+1 < len(b) {
				out = append(out, b[i], b[i+1])
				i++
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

// marshalPiece is the canonical encoding of v without the trailing newline.
func marshalPiece(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Normalize does to t what Unmarshal does after decoding: it replaces nil slices and maps
// with empty ones and puts times in UTC, so that a tape built in code (or by another
// decoder) and the same tape loaded from disk encode identically.
func Normalize(t *Tape) { t.normalize() }

func (t *Tape) normalize() {
	if t.Threads == nil {
		t.Threads = []*Thread{}
	}
	t.Meta.normalize()
	for _, th := range t.Threads {
		if th.Steps == nil {
			th.Steps = []*Step{}
		}
		for _, s := range th.Steps {
			s.normalize()
		}
	}
}

func (m *Meta) normalize() {
	if m.Task == nil {
		m.Task = map[string]string{}
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.StartedAt = m.StartedAt.UTC()
	if m.Ended != nil {
		m.Ended.At = m.Ended.At.UTC()
	}
}

func (s *Step) normalize() {
	if s.Request.Messages == nil {
		s.Request.Messages = []Message{}
	}
	for i := range s.Request.Messages {
		if s.Request.Messages[i].Content == nil {
			s.Request.Messages[i].Content = []Block{}
		}
	}
	if s.Request.Tools == nil {
		s.Request.Tools = []Tool{}
	}
	if s.Request.Params == nil {
		s.Request.Params = map[string]json.RawMessage{}
	}
	if s.Request.Headers == nil {
		s.Request.Headers = Headers{}
	}
	if s.Request.Raw == nil {
		s.Request.Raw = json.RawMessage("null")
	}
	if s.Response.Headers == nil {
		s.Response.Headers = Headers{}
	}
	if s.Response.Content == nil {
		s.Response.Content = []Block{}
	}
	if s.Response.Raw == nil {
		s.Response.Raw = json.RawMessage("null")
	}
	if s.Response.Chunks == nil {
		s.Response.Chunks = []Chunk{}
	}
	if s.ToolCalls == nil {
		s.ToolCalls = []ToolCall{}
	}
	for i := range s.ToolCalls {
		if s.ToolCalls[i].Input == nil {
			s.ToolCalls[i].Input = json.RawMessage("{}")
		}
	}
	if s.ToolResults == nil {
		s.ToolResults = []ToolResult{}
	}
	for i := range s.ToolResults {
		if s.ToolResults[i].Content == nil {
			s.ToolResults[i].Content = []Block{}
		}
	}
}

// Unmarshal decodes a tape. It returns an error wrapping ErrUnsupportedVersion when the tape's
// version is not Version, and an error naming the offending field (its JSON pointer) or line
// and column when the JSON does not fit the format. It is strict: a key repeated in any
// object, raw bodies included, is refused (jsonlex.DuplicateKeyError), since readers that
// let one copy win would see another tape than the one verified; and fields this version
// does not know are an error, so that nothing is silently dropped on a load and save.
//
// The field table's decoder reads it (decode.go); input it finds unusual, such as a null
// where the format has a string, takes encoding/json, which decides as it always has.
func Unmarshal(data []byte) (*Tape, error) { return unmarshal(data, decodeOptions{}) }

// unmarshal is Unmarshal with the decoder's options.
func unmarshal(data []byte, opts decodeOptions) (*Tape, error) {
	t, _, _, err := decodeTape(data, opts)
	if err == nil {
		return t, nil
	}
	var fe *fieldError
	if errors.As(err, &fe) && !fe.unknown {
		return nil, fmt.Errorf("tape: %w", err) // a repeated key: every reader refuses it
	}
	return unmarshalReference(data, err)
}

// unmarshalReference decodes a tape with encoding/json, checking it as Unmarshal does, for
// input the decoder found unusual (fast, its error). Where both refuse an unknown field,
// the decoder's error, which names the field's pointer and line, is returned.
func unmarshalReference(data []byte, fast error) (*Tape, error) {
	if err := checkUnique(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var t Tape
	err := dec.Decode(&t)
	if err != nil || t.Version != Version {
		// Report a version this build does not read before any layout error it causes.
		var probe struct {
			Version *json.RawMessage `json:"version"`
		}
		if perr := json.Unmarshal(data, &probe); perr == nil {
			if probe.Version == nil {
				return nil, fmt.Errorf("tape: missing field \"version\"")
			}
			if v := string(*probe.Version); v != "1" {
				return nil, fmt.Errorf("tape: version %s: %w (this build reads version %d)", v, ErrUnsupportedVersion, Version)
			}
		}
		if err == nil {
			err = fmt.Errorf("version is not %d", Version)
		}
		if fe := unknownField(fast, err); fe != nil {
			return nil, fmt.Errorf("tape: %w", fe)
		}
		return nil, describeJSONError(data, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("tape: unexpected data after the tape object at byte %d", dec.InputOffset())
	}
	for i, th := range t.Threads {
		if th == nil {
			return nil, fmt.Errorf("tape: /threads/%d is null", i)
		}
		for j, s := range th.Steps {
			if s == nil {
				return nil, fmt.Errorf("tape: /threads/%d/steps/%d is null", i, j)
			}
		}
	}
	t.normalize()
	return &t, nil
}

// unknownField returns the decoder's error fast when it refused the unknown field that
// encoding/json refuses with err, else nil.
func unknownField(fast, err error) *fieldError {
	var fe *fieldError
	if errors.As(fast, &fe) && fe.unknown && err.Error() == "json: unknown field "+strconv.Quote(fe.key) {
		return fe
	}
	return nil
}

// checkUnique refuses a tape in which an object repeats a key (jsonlex.DuplicateKeyError):
// encoding/json would let the last copy win and merge two objects given for one field, so
// the tape would say one thing to one reader and another to the next. Syntax errors are
// left to encoding/json, which words them.
func checkUnique(data []byte) error {
	var de *jsonlex.DuplicateKeyError
	if err := jsonlex.CheckUnique(data); errors.As(err, &de) {
		line, col := lineCol(data, int64(de.Off))
		return fmt.Errorf("tape: %w (line %d, column %d)", err, line, col)
	}
	return nil
}

// describeJSONError turns encoding/json's errors into messages that name the field or the
// line and column.
func describeJSONError(data []byte, err error) error {
	switch e := err.(type) {
	case *json.SyntaxError:
		line, col := lineCol(data, e.Offset)
		return fmt.Errorf("tape: not valid JSON at line %d, column %d: %w", line, col, err)
	case *json.UnmarshalTypeError:
		return fmt.Errorf("tape: field %q: cannot use JSON %s as %s", e.Field, e.Value, e.Type)
	}
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return fmt.Errorf("tape: truncated: the JSON ends after %d bytes: %w", len(data), io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("tape: %w", err)
}

func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}

// Load reads and decodes a tape from r.
func Load(r io.Reader) (*Tape, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read tape: %w", err)
	}
	return Unmarshal(data)
}

// LoadFile reads the tape at path.
func LoadFile(path string) (*Tape, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tape: %w", err)
	}
	t, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("load tape %s: %w", path, err)
	}
	return t, nil
}

// Save writes t to path atomically in its canonical encoding: it writes a temporary file in
// the same directory, syncs it, renames it over path and syncs the directory, so a reader
// sees the old tape or the new one, never a torn file. Parent directories are created.
func Save(path string, t *Tape) error {
	data, err := Marshal(t)
	if err != nil {
		return fmt.Errorf("save tape %s: %w", path, err)
	}
	if err := WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("save tape %s: %w", path, err)
	}
	return nil
}

// ErrNotRegular: an output path holds something other than a regular file (a device, a FIFO,
// a directory, a symbolic link), which TapeBox never replaces.
var ErrNotRegular = errors.New("not a regular file")

// CheckOutput says whether path may be written over: it holds nothing, or a regular file.
// Every TapeBox output goes through it before its rename, so that --output /dev/null, a FIFO
// or a link can never be turned into a regular file.
func CheckOutput(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		return nil
	}
	kind := "a " + fi.Mode().Type().String() + " entry"
	switch {
	case fi.IsDir():
		kind = "a directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		kind = "a symbolic link"
	case fi.Mode()&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case fi.Mode()&fs.ModeDevice != 0:
		kind = "a device"
	case fi.Mode()&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return fmt.Errorf("refusing to replace %s: it is %s, and only a regular file or nothing is replaced (%w)", path, kind, ErrNotRegular)
}
