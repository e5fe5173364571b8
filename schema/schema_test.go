package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

var update = flag.Bool("update", false, "rewrite the fixture tapes in testdata/")

// fixtures are the tapes of schema/testdata, built with package tape.
func fixtures() map[string]*tape.Tape {
	responses := agentTape(tape.ProviderOpenAIResponses, 2, 150, true)
	responses.Meta.Harness, responses.Meta.Model = "codex", "gpt-5-codex"
	s := responses.Threads[0].Steps[0]
	s.ToolCalls = append(s.ToolCalls, tape.ToolCall{ID: "call_patch", Name: "apply_patch", Kind: "custom", Input: json.RawMessage(`{"input":"*** Begin Patch\n*** End Patch"}`)})
	s.ToolResults = append(s.ToolResults, tape.ToolResult{ToolCallID: "call_patch", Content: []tape.Block{{Type: tape.BlockText, Text: "Done!"}}})

	running := newTape(tape.ProviderAnthropic, "00000000000000000000000000000002")
	running.Threads = []*tape.Thread{{ID: "main"}}

	empty := newTape(tape.ProviderOpenAIChat, "00000000000000000000000000000003")
	empty.Meta.Ended = &tape.Ended{Reason: tape.EndCut, At: t0, Detail: "SIGTERM"}

	return map[string]*tape.Tape{
		"anthropic-stream.json":        agentTape(tape.ProviderAnthropic, 3, 200, true),
		"openai-chat-json.json":        agentTape(tape.ProviderOpenAIChat, 3, 200, false),
		"openai-responses-stream.json": responses,
		"every-field.json":             everyField(),
		"running.json":                 running,
		"empty.json":                   empty,
	}
}

// TestFixtures keeps schema/testdata in step with the code that builds it; run with
// -update to rewrite it.
func TestFixtures(t *testing.T) {
	for name, tp := range fixtures() {
		t.Run(name, func(t *testing.T) {
			want := mustMarshal(tp)
			path := filepath.Join("testdata", name)
			if *update {
				require.NoError(t, tape.WriteFileAtomic(path, want))
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./schema -run TestFixtures -update")
			assert.Equal(t, string(want), string(got), "stale fixture: run go test ./schema -run TestFixtures -update")
		})
	}
}

// goldenTapes lists the tapes the schema and the Go types must agree on: this package's
// fixtures and the project's golden tapes.
func goldenTapes(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"testdata/*.json", "../testdata/*.json", "../testdata/*/*.json"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		paths = append(paths, m...)
	}
	require.NotEmpty(t, paths)
	return paths
}

// TestGoldenTapesAgree: every golden tape validates, tape.Unmarshal accepts it, and
// tape.Marshal of what it loaded gives back the same bytes.
func TestGoldenTapesAgree(t *testing.T) {
	for _, path := range goldenTapes(t) {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, Validate(data))
			loaded, err := tape.Unmarshal(data)
			require.NoError(t, err)
			again, err := tape.Marshal(loaded)
			require.NoError(t, err)
			assert.Equal(t, string(data), string(again), "Marshal(Unmarshal(file)) differs from the file")
			assertSameAsReference(t, data)
		})
	}
}

// TestEveryFieldValidates marshals a tape with every optional field set: a Go field the
// schema does not know fails here (additionalProperties is false everywhere).
func TestEveryFieldValidates(t *testing.T) {
	data := mustMarshal(everyField())
	require.NoError(t, Validate(data))
	// Every field is present in the encoding.
	for _, name := range []string{`"cwd":"/work/app"`, `"forked_from":{"tape_id":`, `"served_from_tape":true`, `"workspace":{"snapshot":`, `"exclude":["node_modules"]`, `"sha256":"0f0f`, `"link":"a.txt"`, `"replay_of":"`, `"detail":`, `"duration_ms":12.5`, `"next_request_at":4`, `"kind":"custom"`, `"namespace":"multi_agent_v1"`, `"input_schema":`, `"description":`, `"is_error":true`, `"tool_call_id":`, `"raw":{"type":"image"`, `"reasoning_tokens":50`, `"limits":{"max_cost_usd":2.5`, `"limit":"max_repeat"`, `"digest":"sha256:`, `"signature":"`} {
		assert.Contains(t, string(data), name)
	}
}

// TestTruncatedBodiesValidate: a step whose request and answer were over the recording
// limit (tape.Truncation markers in raw, no chunks, empty normalized fields) is valid.
func TestTruncatedBodiesValidate(t *testing.T) {
	tp := newTape(tape.ProviderAnthropic, "00000000000000000000000000000002")
	marker := tape.Truncation{Bytes: 100 << 20, Limit: 32 << 20}.Raw()
	tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{
		{Request: tape.Request{Path: "/v1/messages", Raw: marker}, Response: tape.Response{Status: 200, Raw: marker}},
		{Request: tape.Request{Path: "/v1/messages", Stream: true, Raw: json.RawMessage(`{"model":"m","stream":true}`)},
			Response: tape.Response{Status: 200, Headers: tape.Headers{"content-type": "text/event-stream"}, Raw: marker}},
	}}}
	data := mustMarshal(tp)
	require.NoError(t, Validate(data))
	assert.Contains(t, string(data), `"raw":{"tapebox_truncated":{"bytes":104857600,"limit":33554432}}`)
}

// TestSchemaMatchesGoTypes walks the Go types from tape.Tape and the schema side by side:
// every JSON field of a struct is a property of the matching schema object, required
// exactly when it has no omitempty, and the schema has no property the type lacks.
func TestSchemaMatchesGoTypes(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	defs := doc["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		return s
	}
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type, s map[string]any)
	walk = func(path string, typ reflect.Type, s map[string]any) {
		s = resolve(s)
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		switch typ {
		case reflect.TypeFor[tape.Parent](), reflect.TypeFor[json.RawMessage]():
			return // encoded by hand / any JSON: checked by the fixtures
		}
		switch typ.Kind() {
		case reflect.Slice:
			items, ok := s["items"].(map[string]any)
			require.True(t, ok, "%s: array schema without items", path)
			walk(path+"[]", typ.Elem(), items)
			return
		case reflect.Struct:
		default:
			return
		}
		if typ.PkgPath() != reflect.TypeFor[tape.Tape]().PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		props, _ := s["properties"].(map[string]any)
		assert.Equal(t, false, s["additionalProperties"], "%s (%s): additionalProperties", path, typ)
		var required []string
		for _, r := range s["required"].([]any) {
			required = append(required, r.(string))
		}
		fields := map[string]bool{}
		for f := range typ.Fields() {
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			fields[name] = true
			ps, ok := props[name].(map[string]any)
			if !assert.True(t, ok, "%s: Go field %s.%s (json %q) is not in the schema", path, typ.Name(), f.Name, name) {
				continue
			}
			// omitzero leaves the field out too (only when nil, for a slice).
			omitempty := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
			assert.Equal(t, !omitempty, slices.Contains(required, name), "%s.%s: required in the schema iff the Go field has no omitempty or omitzero", path, name)
			walk(path+"."+name, f.Type, ps)
		}
		for name := range props {
			assert.True(t, fields[name], "%s: schema property %q has no Go field in %s", path, name, typ)
		}
	}
	walk("tape", reflect.TypeFor[tape.Tape](), doc)
	assert.True(t, seen[reflect.TypeFor[tape.Usage]()] && seen[reflect.TypeFor[tape.Ended]()] && seen[reflect.TypeFor[tape.Chunk]()], "walk reached the leaves")
}

// TestSchemaEnums: the schema's enums are the Go constants.
func TestSchemaEnums(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum       []string `json:"enum"`
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(Schema(), &doc))
	var reasons []string
	for _, r := range tape.EndReasons {
		reasons = append(reasons, string(r))
	}
	tests := []struct {
		name string
		got  []string
		want []string
	}{
		{"provider", doc.Defs["meta"].Properties["provider"].Enum, []string{string(tape.ProviderUnknown), string(tape.ProviderAnthropic), string(tape.ProviderOpenAIChat), string(tape.ProviderOpenAIResponses), string(tape.ProviderGemini)}},
		{"ended.reason", doc.Defs["meta"].Properties["ended"].Properties["reason"].Enum, reasons},
		{"block type", doc.Defs["block"].Properties["type"].Enum, []string{tape.BlockText, tape.BlockThinking, tape.BlockToolUse, tape.BlockToolResult, tape.BlockImage, tape.BlockOther}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ElementsMatch(t, tt.want, tt.got)
		})
	}
}

// mutate decodes a tape, applies f to the value that holds the JSON pointer's last token
// (a map or a slice), and encodes it again.
func mutate(t testing.TB, data []byte, ptr string, f func(parent any, key string)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	require.NoError(t, dec.Decode(&doc))
	toks := strings.Split(ptr, "/")[1:]
	for i, tok := range toks {
		toks[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
	}
	parent := doc
	for _, tok := range toks[:len(toks)-1] {
		switch p := parent.(type) {
		case map[string]any:
			parent = p[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			require.NoError(t, err)
			parent = p[i]
		default:
			t.Fatalf("mutate %s: %s is not in the tape", ptr, tok)
		}
	}
	f(parent, toks[len(toks)-1])
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return out
}

func set(v any) func(any, string) {
	return func(parent any, key string) {
		switch p := parent.(type) {
		case map[string]any:
			p[key] = v
		case []any:
			i, _ := strconv.Atoi(key)
			p[i] = v
		}
	}
}

func del(parent any, key string) { delete(parent.(map[string]any), key) }

// TestValidateReportsProblems: each class of bad tape gets a problem with the right
// pointer and a clear message.
func TestValidateReportsProblems(t *testing.T) {
	good := mustMarshal(agentTape(tape.ProviderAnthropic, 3, 100, true))
	require.NoError(t, Validate(good))
	// Each case edits good at the pointer at and wants the problems at pointers below it
	// ("" is at itself), so that a pointer is written once.
	tests := []struct {
		name string
		at   string
		edit func(parent any, key string)
		want []Problem
	}{
		{"missing field", "/threads/0/steps/2/response/stop_reason", del, []Problem{{"", "required field is missing"}}},
		{"missing fields of the root", "/meta", del, []Problem{{"", "required field is missing"}}},
		{"wrong type", "/threads/0/steps/1/response/usage/input_tokens", set("12"), []Problem{{"", "wrong type: got string, want integer"}}},
		{"not an integer", "/threads/0/steps/1/response/status", set(json.Number("200.5")), []Problem{{"", "wrong type: got number, want integer"}}},
		{"negative count", "/threads/0/steps/0/response/usage/output_tokens", set(json.Number("-1")), []Problem{{"", "minimum: got -1, want 0"}}},
		{"wrong enum", "/meta/provider", set("bedrock"), []Problem{{"", `got "bedrock", want one of "", "anthropic", "openai-chat", "openai-responses", "gemini"`}}},
		{
			"workspace digest not sha256", "/meta/workspace",
			set(map[string]any{"digest": "md5:00"}),
			[]Problem{{"/digest", "'md5:00' does not match pattern '^sha256:[0-9a-f]{64}$'"}},
		},
		{
			"end manifest entry of an unknown type", "/meta/workspace",
			set(map[string]any{"end": []any{map[string]any{"path": "p", "type": "fifo", "mode": "0644", "size": 0}}}),
			[]Problem{{"/end/0/type", `got "fifo", want one of "file", "dir", "symlink"`}},
		},
		{
			"fork point before step 0", "/meta/forked_from",
			set(map[string]any{"tape_id": "r", "thread": "main", "step": -1, "served": map[string]any{"main": 0}, "overrides": map[string]any{}}),
			[]Problem{{"/step", "minimum: got -1, want 0"}},
		},
		{
			"fork without its served counts", "/meta/forked_from",
			set(map[string]any{"tape_id": "r", "thread": "main", "step": 1, "overrides": map[string]any{}}),
			[]Problem{{"/served", "required field is missing"}},
		},
		{"cwd not a string", "/meta/cwd", set(json.Number("7")), []Problem{{"", "wrong type: got number, want string"}}},
		{
			"wrong enum in a message", "/threads/0/steps/2/request/messages/1/content/0/type",
			set("video"),
			[]Problem{{"", `got "video", want one of "text", "thinking", "tool_use", "tool_result", "image", "other"`}},
		},
		{
			"wrong role", "/threads/0/steps/1/request/messages/0/role",
			set("developer"),
			[]Problem{{"", `got "developer", want one of "user", "assistant", "system", "tool"`}},
		},
		{
			"unknown field", "/threads/0/steps/0/timing/queued_at",
			set(json.Number("1")),
			[]Problem{{"", "unknown field: version 1 of the tape format has no such field here"}},
		},
		{"null thread", "/threads/1", set(nil), []Problem{{"", "wrong type: got null, want object"}}},
		{"parent of one element", "/threads/1/parent", set([]any{"main"}), []Problem{{"", "minItems: got 1, want 2"}}},
		{
			"ended reason and time", "/meta/ended",
			set(map[string]any{"reason": "done", "at": "yesterday"}),
			[]Problem{{"/at", `"yesterday" is not a valid date-time: less than 20 characters long`}, {"/reason", `got "done", want one of "complete", "cut", "upstream_error", "diverged", "error", "budget"`}},
		},
		{"tool call input not an object", "/threads/0/steps/0/tool_calls/1/input", set("ls"), []Problem{{"", "wrong type: got string, want object"}}},
		{
			"header value not a string", "/threads/0/steps/0/request/headers/x~1y",
			set(json.Number("1")),
			[]Problem{{"", "wrong type: got number, want string"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []Problem
			for _, p := range tt.want {
				want = append(want, Problem{tt.at + p.Pointer, p.Message})
			}
			assertProblems(t, mutate(t, good, tt.at, tt.edit), want)
		})
	}
	t.Run("not an object", func(t *testing.T) {
		assertProblems(t, []byte(`[1, 2]`), []Problem{{"", "wrong type: got array, want object"}})
	})
}

// assertProblems checks that Validate reports exactly want for data, and agrees with the
// reference.
func assertProblems(t *testing.T, data []byte, want []Problem) {
	t.Helper()
	err := Validate(data)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, want, ve.Problems)
	assert.False(t, errors.Is(err, tape.ErrUnsupportedVersion))
	assertSameAsReference(t, data)
}

func asJSONSchemaError(t testing.TB, err error) *jsonschema.ValidationError {
	t.Helper()
	var ve *jsonschema.ValidationError
	require.ErrorAs(t, err, &ve)
	return ve
}

// TestValidateRepeatedProblem: a bad block that the tape repeats (every request carries
// the conversation so far) is reported at each place.
func TestValidateRepeatedProblem(t *testing.T) {
	tp := agentTape(tape.ProviderAnthropic, 4, 50, false)
	tp.Threads[0].Steps[0].Response.Content[1].Type = "video" // also in steps 1-3's history
	for _, s := range tp.Threads[0].Steps[1:] {
		s.Request.Messages[1].Content[1].Type = "video"
	}
	data := mustMarshal(tp)
	err := Validate(data)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var ptrs []string
	for _, p := range ve.Problems {
		ptrs = append(ptrs, p.Pointer)
	}
	assert.Equal(t, []string{
		"/threads/0/steps/0/response/content/1/type",
		"/threads/0/steps/1/request/messages/1/content/1/type",
		"/threads/0/steps/2/request/messages/1/content/1/type",
		"/threads/0/steps/3/request/messages/1/content/1/type",
	}, ptrs)
	assertSameAsReference(t, data)
}

func TestValidateManyProblemsInOrder(t *testing.T) {
	good := mustMarshal(agentTape(tape.ProviderAnthropic, 12, 10, false))
	data := good
	for _, i := range []int{11, 2, 10, 9} {
		data = mutate(t, data, "/threads/0/steps/"+strconv.Itoa(i)+"/timing/request_at", set("x"))
	}
	err := Validate(data)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	want := "/threads/0/steps/2/timing/request_at: wrong type: got string, want number\n" +
		"/threads/0/steps/9/timing/request_at: wrong type: got string, want number\n" +
		"/threads/0/steps/10/timing/request_at: wrong type: got string, want number\n" +
		"/threads/0/steps/11/timing/request_at: wrong type: got string, want number"
	assert.Equal(t, want, err.Error())
}

func TestValidateVersion(t *testing.T) {
	good := mustMarshal(everyField())
	tests := []struct {
		name    string
		version any
		want    string
	}{
		{"two", json.Number("2"), "/version: unsupported tape version 2: this build reads version 1"},
		{"zero", json.Number("0"), "/version: unsupported tape version 0: this build reads version 1"},
		{"string", "1", `/version: unsupported tape version "1": this build reads version 1`},
		{"null", nil, "/version: unsupported tape version null: this build reads version 1"}, // tape.Unmarshal: missing
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := mutate(t, good, "/version", set(tt.version))
			// A future version may change anything else too.
			data = mutate(t, data, "/meta/provider", set("bedrock"))
			err := Validate(data)
			require.ErrorIs(t, err, tape.ErrUnsupportedVersion)
			assert.Equal(t, tt.want, err.Error())
			_, loadErr := tape.Unmarshal(data)
			require.Error(t, loadErr, "tape.Unmarshal agrees")
			if tt.version != nil {
				assert.ErrorIs(t, loadErr, tape.ErrUnsupportedVersion, "tape.Unmarshal agrees")
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		err := Validate(mutate(t, good, "/version", del))
		assert.EqualError(t, err, "/version: required field is missing")
		assert.NotErrorIs(t, err, tape.ErrUnsupportedVersion)
	})
}

func TestValidateSyntax(t *testing.T) {
	good := mustMarshal(agentTape(tape.ProviderAnthropic, 2, 100, true))
	tests := []struct {
		name      string
		data      []byte
		truncated bool
		line, col int
		msg       string
	}{
		{"empty", nil, true, 1, 1, "unexpected end of input looking for a value"},
		{"truncated", good[:len(good)/2], true, 1, len(good)/2 + 1, ""},
		{"truncated after the last brace", good[:len(good)-3], true, 1, len(good) - 2, ""},
		{"truncated in a literal", []byte(`{"version":1,"meta":nu`), true, 1, 23, "unexpected end of input in literal null"},
		{"text", []byte("hello"), false, 1, 1, "invalid character 'h' looking for the beginning of a value"},
		{"trailing comma", []byte("{\n  \"version\": 1,\n}"), false, 3, 1, "invalid character '}' looking for the beginning of an object key"},
		{"two values", []byte(`{} {}`), false, 1, 4, "invalid character '{' after the top-level value"},
		{"control character", []byte("{\"a\":\"x\ty\"}"), false, 1, 8, `invalid control character '\t' in a string`},
		{"bad escape", []byte(`["\x"]`), false, 1, 4, "invalid escape character 'x' in a string"},
		{"bad number", []byte(`[01]`), false, 1, 3, "invalid character '1' after an array element (want ',' or ']')"},
		{"key not a string", []byte(`{1:2}`), false, 1, 2, "invalid character '1' looking for the beginning of an object key"},
		{"no colon", []byte(`{"version" 1}`), false, 1, 12, "invalid character '1' after an object key (want ':')"},
		{"no comma between members", []byte(`{"version":1 "meta":{}}`), false, 1, 14, `invalid character '"' after an object value (want ',' or '}')`},
		{"truncated before a key", []byte(`{"version":1,`), true, 1, 14, "unexpected end of input looking for an object key"},
		{"truncated after a key", []byte(`{"version"`), true, 1, 11, "unexpected end of input after an object key"},
		{"truncated after a member", []byte(`{"version":1`), true, 1, 13, "unexpected end of input after an object value"},
		{"truncated after an element", []byte(`[1`), true, 1, 3, "unexpected end of input after an array element"},
		{"binary", []byte{0xff, 0xfe}, false, 1, 1, "invalid character byte 0xff looking for the beginning of a value"},
		{"deep", []byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)), false, 1, maxDepth + 1, "exceeded max depth of 10000"},
		{"deep inside raw", []byte(`{"threads":[{"steps":[{"request":{"raw":` + strings.Repeat("[", maxDepth)), false, 1, 0, "exceeded max depth of 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.data)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.truncated, se.Truncated)
			assert.Equal(t, tt.truncated, errors.Is(err, io.ErrUnexpectedEOF))
			assert.Equal(t, tt.line, se.Line)
			if tt.col > 0 {
				assert.Equal(t, tt.col, se.Column)
			}
			if tt.msg != "" {
				assert.Equal(t, tt.msg, se.Msg)
			}
			assert.False(t, json.Valid(tt.data), "encoding/json agrees that this is not JSON")
			assert.Contains(t, err.Error(), "line "+strconv.Itoa(se.Line)+", column "+strconv.Itoa(se.Column))
		})
	}
}

// TestValidateHugeString: a 100 MB string is validated in one pass, valid where the schema
// only asks for a string, invalid (with a short message) where it asks for an enum or a
// date-time. Under the race detector it is 8 MB.
func TestValidateHugeString(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 100 MB")
	}
	size := 100 << 20
	if raceEnabled {
		size = 8 << 20
	}
	line := []byte(strings.Repeat("lorem ipsum ", 7) + `\"quoted\"\n`)
	huge := bytes.Repeat(line, size/len(line))
	build := func(provider, text, startedAt []byte) []byte {
		var b bytes.Buffer
		b.Grow(len(provider) + len(text) + len(startedAt) + 1024)
		b.WriteString(`{"version":1,"meta":{"tape_id":"x","harness":"h","harness_version":"1","provider":"`)
		b.Write(provider)
		b.WriteString(`","model":"m","started_at":"`)
		b.Write(startedAt)
		b.WriteString(`","task":{},"replay_of":null,"labels":{},"ended":null},"threads":[{"id":"main","parent":null,"steps":[{"request":{"path":"/v1/messages","system":"","messages":[{"role":"user","content":[{"type":"text","text":"`)
		b.Write(text)
		b.WriteString(`"}]}],"tools":[],"params":{},"stream":false,"headers":{},"raw":null},"response":{"status":200,"headers":{},"content":[],"stop_reason":"","usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"reasoning_tokens":0},"raw":null,"chunks":[]},"tool_calls":[],"tool_results":[],"timing":{"request_at":0,"first_byte_at":0,"last_byte_at":0,"next_request_at":null}}]}]}`)
		return b.Bytes()
	}
	tests := []struct {
		name string
		data func() []byte
		ptr  string
	}{
		{"text", func() []byte { return build([]byte("anthropic"), huge, []byte("2026-01-01T00:00:00Z")) }, ""},
		{"provider", func() []byte { return build(huge, nil, []byte("2026-01-01T00:00:00Z")) }, "/meta/provider"},
		{"started_at", func() []byte { return build([]byte("anthropic"), nil, huge) }, "/meta/started_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.data())
			if tt.ptr == "" {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, tt.ptr, ve.Problems[0].Pointer)
			assert.Less(t, len(ve.Problems[0].Message), 400)
		})
	}
}

func TestSchema(t *testing.T) {
	s := Schema()
	assert.True(t, json.Valid(s))
	s[0] = 'x'
	assert.Equal(t, byte('{'), Schema()[0], "Schema returns a copy")
}

// TestShape: the decoder's view of the schema takes every shortcut it is meant to.
func TestShape(t *testing.T) {
	c, err := load()
	require.NoError(t, err)
	step := c.shape.child("threads").items.child("steps").items
	req := step.child("request")
	tests := []struct {
		name string
		sh   *shape
		want string
	}{
		{"version", c.shape.child("version"), "full"},
		{"request.raw", req.child("raw"), "open"},
		{"request.params values", req.child("params").other, "open"},
		{"request.system", req.child("system"), "type"},
		{"request.messages items", req.child("messages").items, "unit(message)"},
		{"response.raw", step.child("response").child("raw"), "open"},
		{"provider", c.shape.child("meta").child("provider"), "enum(16)"},
		{"started_at", c.shape.child("meta").child("started_at"), "full"},
		{"unknown meta field", c.shape.child("meta").child("nope"), "open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.sh.String())
		})
	}
	assert.True(t, req.child("messages").unitItems)
	assert.Len(t, c.units, len(unitDefs))
}

func TestBuildShapeRefusesUnsafeUnits(t *testing.T) {
	doc := map[string]any{
		"properties": map[string]any{"a": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/u"}}}},
		"$defs":      map[string]any{"u": map[string]any{"type": "object"}},
	}
	_, _, err := buildShape(doc, []string{"u"})
	assert.ErrorContains(t, err, `unit definition "u" is referred to from a part of the schema the decoder does not understand`)
	_, _, err = buildShape(doc, []string{"missing"})
	assert.ErrorContains(t, err, "not in $defs")
}

func TestComparePointers(t *testing.T) {
	ptrs := []string{"/threads/0/steps/10", "/meta", "/threads/0/steps/9/request", "", "/threads/0/steps/9", "/threads/0/id"}
	slices.SortFunc(ptrs, comparePointers)
	assert.Equal(t, []string{"", "/meta", "/threads/0/id", "/threads/0/steps/9", "/threads/0/steps/9/request", "/threads/0/steps/10"}, ptrs)
}

// reference validates the straightforward way: encoding/json into any, then the whole
// schema.
func reference(t testing.TB, data []byte) ([]Problem, bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	c, err := load()
	require.NoError(t, err)
	err = c.full.Validate(v)
	if err == nil {
		return nil, true
	}
	return sortProblems(problems(asJSONSchemaError(t, err))), true
}

// assertSameAsReference checks that Validate's shortcuts (shaped decoding, units) find
// exactly the problems that the straightforward way finds.
func assertSameAsReference(t testing.TB, data []byte) {
	t.Helper()
	want, ok := reference(t, data)
	require.True(t, ok, "reference decoding failed")
	var got []Problem
	var ve *ValidationError
	if err := Validate(data); errors.As(err, &ve) {
		got = ve.Problems
	} else {
		require.NoError(t, err)
	}
	assert.Equal(t, want, got, "Validate and the reference disagree")
}
