package provider_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

var fuzzProviders = []tape.Provider{tape.ProviderAnthropic, tape.ProviderOpenAIChat, tape.ProviderOpenAIResponses, tape.ProviderGemini}

// FuzzNormalize checks that Normalize never panics, and that whatever it accepts makes a
// tape that encodes, loads back, and re-normalizes from its raw bodies to the same bytes.
func FuzzNormalize(f *testing.F) {
	requests := map[tape.Provider]string{
		tape.ProviderAnthropic:       "anthropic/claude_code_request.json",
		tape.ProviderOpenAIChat:      "chat/request.json",
		tape.ProviderOpenAIResponses: "responses/codex_request.json",
		tape.ProviderGemini:          "gemini/cli_request.json",
	}
	for i, p := range fuzzProviders {
		dir := filepath.Dir(requests[p])
		req := readFile(f, requests[p])
		entries, err := os.ReadDir(filepath.Join("testdata", dir))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range entries {
			body := readFile(f, filepath.Join(dir, e.Name()))
			f.Add(uint8(i), req, body, strings.HasSuffix(e.Name(), ".sse"))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, request, response []byte, stream bool) {
		p := fuzzProviders[int(which)%len(fuzzProviders)]
		s := &tape.Step{Request: tape.Request{Raw: request}}
		if stream {
			s.Response.Chunks = chunksOf(response)
		} else {
			s.Response.Raw = response
		}
		if err := provider.Normalize(p, s); err != nil {
			return
		}
		if dir := provider.Cwd(&s.Request); strings.ContainsAny(dir, "\r\n") || dir != strings.TrimSpace(dir) {
			t.Fatalf("Cwd %q: want one line without surrounding space", dir)
		}
		if len(bytes.TrimSpace(s.Response.Raw)) == 0 {
			s.Response.Raw = nil // no body: the tape holds null
		}
		tp := tape.New(p, time.Unix(0, 0))
		tp.Meta.TapeID = "fuzz"
		tp.Threads = []*tape.Thread{{ID: "main", Steps: []*tape.Step{s}}}
		encode := func(what string, tp *tape.Tape) []byte {
			b, err := tape.Marshal(tp)
			if err != nil {
				t.Fatalf("%s does not encode: %v", what, err)
			}
			return b
		}
		back, err := tape.Unmarshal(encode("accepted step", tp))
		if err != nil {
			t.Fatalf("accepted step does not load: %v", err)
		}
		// Compare from the loaded tape: saving turns bytes that are not UTF-8 in chunk
		// strings into U+FFFD, which is the tape encoding's business, not normalization's.
		first := encode("loaded step", back)
		if err := provider.Normalize(p, back.Threads[0].Steps[0]); err != nil {
			t.Fatalf("re-normalize from the encoded raw bodies: %v", err)
		}
		second := encode("re-normalized step", back)
		if !bytes.Equal(first, second) {
			i := 0
			for i < len(first) && i < len(second) && first[i] == second[i] {
				i++
			}
			lo := max(i-200, 0)
			t.Fatalf("re-normalizing changed the tape at byte %d:\n%q\n%q", i, first[lo:min(i+100, len(first))], second[lo:min(i+100, len(second))])
		}
	})
}

// FuzzEventSplitter checks that the splitter gives back every byte in order, that each
// event ends with a blank line, and that the events do not depend on how the stream was
// cut into writes.
func FuzzEventSplitter(f *testing.F) {
	for _, name := range []string{"anthropic/stream_parallel.sse", "anthropic/stream_unknown_crlf.sse", "chat/stream_truncated.sse", "responses/stream_custom_tool.sse"} {
		f.Add(readFile(f, name), uint8(7))
	}
	f.Add([]byte("\r\n\r\n\n\r\r\ndata: x\r\r\n\n"), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, size uint8) {
		var whole provider.EventSplitter
		all := whole.Write(stream)
		rest := whole.Flush()

		var pieces provider.EventSplitter
		var got []string
		n := int(size)%32 + 1
		for b := stream; len(b) > 0; {
			k := min(n, len(b))
			got = append(got, pieces.Write(b[:k])...)
			b = b[k:]
		}
		if r := pieces.Flush(); r != rest {
			t.Fatalf("rest differs: %q vs %q", r, rest)
		}
		if strings.Join(all, "")+rest != string(stream) {
			t.Fatalf("bytes lost or reordered")
		}
		if len(got) != len(all) {
			t.Fatalf("%d events in pieces of %d, %d at once", len(got), n, len(all))
		}
		for i, ev := range all {
			if ev != got[i] {
				t.Fatalf("event %d differs: %q vs %q", i, ev, got[i])
			}
			if !strings.HasSuffix(ev, "\n") || (ev != "\n" && ev != "\r\n" && !strings.HasSuffix(ev, "\n\n") && !strings.HasSuffix(ev, "\n\r\n")) {
				t.Fatalf("event %d does not end with a blank line: %q", i, ev)
			}
			provider.ParseEvent(ev)
		}
	})
}
