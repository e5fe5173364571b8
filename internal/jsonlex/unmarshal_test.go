package jsonlex_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// The target types cover every kind Unmarshal handles, shaped like what the executor decodes:
// the protocol's messages and the harness modules' tool inputs.
type (
	mode  string
	block struct {
		Type    string          `json:"type"`
		Text    string          `json:"text,omitempty"`
		Input   json.RawMessage `json:"input,omitempty"`
		Content []block         `json:"content,omitempty"`
		IsError bool            `json:"is_error,omitempty"`
	}
	edit struct {
		Path string `json:"file_path"`
		Old  string `json:"old_string"`
		New  string `json:"new_string"`
		All  *bool  `json:"replace_all"`
	}
	target struct {
		Command   string            `json:"command"`
		Timeout   *float64          `json:"timeout"`
		Limit     *int              `json:"limit"`
		Offset    int64             `json:"offset"`
		Small     int8              `json:"small"`
		Count     uint16            `json:"count"`
		Ratio     float32           `json:"ratio"`
		Mode      mode              `json:"mode"`
		Flag      bool              `json:"flag"`
		Path      *string           `json:"path"`
		Argv      []string          `json:"argv"`
		Edits     []edit            `json:"edits"`
		Env       map[string]string `json:"env"`
		IDs       map[int]bool      `json:"ids"`
		Raw       json.RawMessage   `json:"raw"`
		RawPtr    *json.RawMessage  `json:"raw_ptr"`
		Any       any               `json:"any"`
		Blocks    []block           `json:"blocks"`
		Pair      [2]int            `json:"pair"`
		Nested    *target           `json:"nested"`
		When      time.Time         `json:"when"`
		Addr      netip.Addr        `json:"addr"`
		Bytes     []byte            `json:"bytes"`
		Num       json.Number       `json:"num"`
		Untagged  string
		Skipped   string `json:"-"`
		Dash      string `json:"-,"`
		BadTag    string `json:"a\"b"`
		unexposed string //nolint:unused // Unmarshal must leave it alone
	}
)

// clashes is a struct whose fields share JSON names: encoding/json keeps the one tagged
// with a name (Tagged over Plain), and none when two are (X and Y). Built at run time, since
// vet refuses two fields tagged alike.
var clashes = reflect.StructOf([]reflect.StructField{
	{Name: "X", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	{Name: "Y", Type: reflect.TypeFor[string](), Tag: `json:"x"`},
	{Name: "Plain", Type: reflect.TypeFor[string]()},
	{Name: "Tagged", Type: reflect.TypeFor[string](), Tag: `json:"Plain"`},
})

var unmarshalSeeds = []string{
	`{"command":"ls -la","timeout":120000,"limit":5,"flag":true,"path":"/tmp/x","argv":["a","b"]}`,
	`{"COMMAND":"fold","Timeout":1.5,"LIMIT":null,"untagged":"u","UNTAGGED":"v","-":"dash","Skipped":"no"}`,
	`{"edits":[{"old_string":"a","new_string":"b","replace_all":true},{"old_string":"c"}],"edits":[{"new_string":"again"}]}`,
	`{"env":{"A":"1","B":"2"},"env":{"C":"3"},"ids":{"1":true,"-2":false,"x":true,"99999999999999999999":true}}`,
	`{"raw":{"a": [1, 2]},"raw_ptr":null,"any":{"k":[1,"s",true,null,{"n":-1.5e3}]}}`,
	`{"raw":null,"raw_ptr":[1],"any":null,"nested":{"command":"inner","nested":{"limit":"bad"}}}`,
	`{"blocks":[{"type":"text","text":"hi"},{"type":"tool_result","content":[{"type":"text","text":"x"}],"is_error":true}]}`,
	`{"limit":1.5,"offset":9223372036854775808,"small":200,"count":-1,"ratio":1e40,"mode":"plan","flag":"yes"}`,
	`{"pair":[1,2,3],"argv":[],"edits":null,"env":null,"path":null,"timeout":null}`,
	`{"pair":[7],"argv":"not a list","edits":{"old_string":"x"},"env":[1],"command":5,"flag":null}`,
	`{"when":"2026-12-01T22:00:00Z","addr":"127.0.0.1","bytes":"aGVsbG8=","num":"12.5"}`,
	`{"when":"yesterday"}`, `{"addr":"not an ip"}`, `{"addr":5}`, `{"bytes":"!!!"}`, `{"num":"abc"}`, `{"num":7}`,
	`{"any":1e999}`, `{"any":[1e999,2]}`, `{"timeout":1e999,"command":"after"}`,
	`{"\u0063ommand":"escaped key","a\"b":"bad tag","BadTag":"by name","unexposed":"x"}`,
	`{"command":"\ud83d\ude00 \u00e9 \ud800","argv":["\n\t\\\"","\u0000"]}`,
	`  {"command" : "spaced" , "argv" : [ "a" , "b" ] }  `,
	`[1,2]`, `"string"`, `5`, `true`, `null`, `{}`, `{"nested":{"nested":{"nested":{"edits":[{"old_string":7}]}}}}`,
	`{"x":"both tagged","Plain":"to the tagged field","plain":"folded"}`,
	`{"command":"x"} trailing`, `{"command":`, `{"command":"x",}`, ``, `{"a":1}{"b":2}`,
}

// TestUnmarshalAsStdlib decodes each seed into fresh and into pre-filled values with both
// decoders and requires the same values and the same error.
func TestUnmarshalAsStdlib(t *testing.T) {
	for _, s := range unmarshalSeeds {
		checkUnmarshal(t, []byte(s))
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range unmarshalSeeds {
		f.Add([]byte(s))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkUnmarshal(t, b)
	})
}

func checkUnmarshal(t *testing.T, b []byte) {
	t.Helper()
	prefilled := func() target {
		one, limit := true, 3
		return target{Command: "old", Limit: &limit, Argv: []string{"x", "y", "z"}, Edits: []edit{{Old: "keep", All: &one}},
			Env: map[string]string{"OLD": "1"}, Any: map[string]any{"old": 1.0}, Pair: [2]int{8, 9}, Nested: &target{Command: "n"}}
	}
	checkInto(t, b, func() any { return new(target) })
	checkInto(t, b, func() any { v := prefilled(); return &v })
	checkInto(t, b, func() any { return new(any) })
	checkInto(t, b, func() any { return new([]edit) })
	checkInto(t, b, func() any { return new(map[string]json.RawMessage) })
	checkInto(t, b, func() any { return new(string) })
	checkInto(t, b, func() any { return reflect.New(clashes).Interface() })
	checkInto(t, b, func() any { p := new(int); return &p })
}

func checkInto(t *testing.T, b []byte, fresh func() any) {
	t.Helper()
	want, got := fresh(), fresh()
	werr := json.Unmarshal(b, want)
	gerr := jsonlex.Unmarshal(b, got)
	require.Equal(t, want, got, "Unmarshal(%q) into %T: values differ (encoding/json: %v; jsonlex: %v)", b, want, werr, gerr)
	var wsyn *json.SyntaxError
	var wtype *json.UnmarshalTypeError
	switch {
	case werr == nil:
		require.NoError(t, gerr, "Unmarshal(%q) into %T", b, want)
	case errors.As(werr, &wsyn):
		var lerr *jsonlex.Error
		require.ErrorAs(t, gerr, &lerr, "Unmarshal(%q) into %T: encoding/json: %v", b, want, werr)
	case errors.As(werr, &wtype):
		var terr *jsonlex.TypeError
		require.ErrorAs(t, gerr, &terr, "Unmarshal(%q) into %T: encoding/json: %v", b, want, werr)
		require.Equal(t, werr.Error(), gerr.Error(), "Unmarshal(%q) into %T", b, want)
		require.Equal(t, []any{wtype.Value, wtype.Type, wtype.Struct, wtype.Field}, []any{terr.Value, terr.Type, terr.Struct, terr.Field})
	default: // an error of UnmarshalJSON, UnmarshalText or base64
		require.Error(t, gerr, "Unmarshal(%q) into %T: encoding/json: %v", b, want, werr)
	}
}

// TestUnmarshalDiffers plants differences a weaker decoder would let through, so that the
// check above is shown to fail on them.
func TestUnmarshalDiffers(t *testing.T) {
	var v target
	require.NoError(t, jsonlex.Unmarshal([]byte(`{"COMMAND":"x","raw":null,"argv":[]}`), &v))
	assert.Equal(t, "x", v.Command, "keys match without regard to case")
	assert.Equal(t, json.RawMessage("null"), v.Raw, "a RawMessage keeps null")
	assert.NotNil(t, v.Argv, "[] is an empty slice, not nil")

	err := jsonlex.Unmarshal([]byte(`{"nested":{"edits":[{"old_string":7}]},"command":"still decoded"}`), &v)
	var te *jsonlex.TypeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "nested.edits.old_string", te.Field)
	assert.Equal(t, "edit", te.Struct)
	assert.Equal(t, "number", te.Value)
	assert.Equal(t, "still decoded", v.Command, "decoding goes on past a type error")

	err = jsonlex.Unmarshal([]byte(`{"command":"x"`), &v)
	var se *jsonlex.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 14, se.Off)

	type embedded struct{ target }
	var e embedded
	var ue *jsonlex.UnsupportedError
	require.ErrorAs(t, jsonlex.Unmarshal([]byte(`{"command":"x"}`), &e), &ue)
	assert.Equal(t, reflect.TypeFor[embedded](), ue.Type)
	require.ErrorAs(t, jsonlex.Unmarshal([]byte(`{}`), target{}), &ue, "a non-pointer")
}
