package tape

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestMarshalRawSplice checks that a request and a response with large raw bodies take the
// splicing path and encode exactly as encoding/json encodes them.
func TestMarshalRawSplice(t *testing.T) {
	raw := json.RawMessage("{ \"model\" : \"m\",\n \"messages\": [{\"content\": \"" + strings.Repeat("lorem \\ufffd ipsum ", 200) + "\"}],\n \"x\": [1, 2.5e3, null, true] }\n")
	s := fuzzSeedStep("toolu_1")
	s.Request.Raw = raw
	s.Response.Raw = raw
	s.normalize()
	tmp := s.Request
	tmp.Raw = rawPlaceholder
	if _, ok, err := spliceRaw(&tmp, raw, `"raw":0}`, true, "", 0); !ok || err != nil {
		t.Fatalf("the request does not take the splicing path (%v)", err)
	}
	rtmp := s.Response
	rtmp.Raw = rawPlaceholder
	if _, ok, err := spliceRaw(&rtmp, raw, `"raw":0,"chunks":`, false, "", 0); !ok || err != nil {
		t.Fatalf("the response does not take the splicing path (%v)", err)
	}
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
