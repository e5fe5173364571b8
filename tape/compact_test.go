package tape

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMarshalRawBodies checks that a request and a response with large raw bodies (with
// whitespace and \ufffd escapes) encode exactly as encoding/json encodes them.
func TestMarshalRawBodies(t *testing.T) {
	raw := json.RawMessage("{ \"model\" : \"m\",\n \"messages\": [{\"content\": \"" + strings.Repeat("lorem \\ufffd ipsum ", 200) + "\"}],\n \"x\": [1, 2.5e3, null, true] }\n")
	s := fuzzSeedStep("toolu_1")
	s.Request.Raw = raw
	s.Response.Raw = raw
	s.normalize()
	for name, pair := range map[string][2]func() ([]byte, error){
		"request":  {func() ([]byte, error) { return marshalRequest(&s.Request) }, func() ([]byte, error) { return marshalPiece(&s.Request) }},
		"response": {func() ([]byte, error) { return marshalResponse(&s.Response) }, func() ([]byte, error) { return marshalPiece(&s.Response) }},
	} {
		got, err := pair[0]()
		if err != nil {
			t.Fatal(err)
		}
		want, err := pair[1]()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
		}
	}
	if _, ok := compactJSON(nil, raw); !ok {
		t.Error("compactJSON rejects a valid body")
	}
}
