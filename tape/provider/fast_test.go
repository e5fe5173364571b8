package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tapebox/tapebox/tape"
)

// fastSeeds are request bodies: the testdata requests and every request of the golden
// tapes.
func fastSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, name := range []string{"anthropic/claude_code_request.json", "chat/request.json", "responses/codex_request.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var tp struct {
			Threads []struct {
				Steps []struct {
					Request struct {
						Raw json.RawMessage `json:"raw"`
					} `json:"request"`
				} `json:"steps"`
			} `json:"threads"`
		}
		if json.Unmarshal(b, &tp) != nil {
			continue
		}
		for _, th := range tp.Threads {
			for _, s := range th.Steps {
				out = append(out, s.Request.Raw)
			}
		}
	}
	extra := []string{
		`{"messages":[null,{"role":"user","content":[null,{"type":"tool_result","content":[{"type":"text","text":"a\u00e9\ud83d\ude00\ud800x"}],"is_error":true}]}],"system":[null,{"type":"text","text":"s"}],"tools":[null,{"type":"custom","name":"x","input_schema":null}]}`,
		`{"messages":[{"content":[{"content":"x","type":"tool_result"},{"type":"tool_use","input":{ "a" : [1, 2.5e3, true] }}]}],"stream":true}`,
		`{"input":[null,{"type":"reasoning","summary":[],"content":[]},{"type":"x_output","id":"i","output":{"a":1}},{"type":"local_shell_call","id":"i","action":{"b": 2}}],"instructions":5,"tools":[null,{"type":"function","parameters":{}}]}`,
		`{"input":"hi","stream":null}`,
		`{"Messages":[],"TYPE":1,"messages":[{"Role":"user"}]}`,
	}
	for _, e := range extra {
		out = append(out, []byte(e))
	}
	return out
}

// FuzzRequestFast checks that the fast paths, when they succeed, make the request the
// slow paths make.
func FuzzRequestFast(f *testing.F) {
	for _, b := range fastSeeds(f) {
		for i := range 2 {
			f.Add(uint8(i), b)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		if which%2 == 0 {
			checkFast(t, body, anthropicRequestFast, anthropicRequestSlow)
		} else {
			checkFast(t, body, responsesRequestFast, responsesRequestSlow)
		}
	})
}

// checkFast fails when fast reads in but slow rejects it, or reads it otherwise (fast
// may give up on anything).
func checkFast[In string | []byte, T any](t *testing.T, in In, fast, slow func(In) (T, error)) {
	t.Helper()
	got, err := fast(in)
	if err != nil {
		return
	}
	want, err := slow(in)
	if err != nil {
		t.Fatalf("the fast path accepts what the slow path rejects (%v): %q", err, in)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast and slow paths differ on %q:\n%#v\n%#v", in, got, want)
	}
}

// errOf is f with its result dropped.
func errOf[T any](f func([]byte) (T, error)) func([]byte) error {
	return func(b []byte) error {
		_, err := f(b)
		return err
	}
}

// recordedStream reads a stream recorded as one chunk.
func recordedStream(read func([]event) (reply, error)) func([]byte) (reply, error) {
	return func(b []byte) (reply, error) { return read(splitChunks([]tape.Chunk{{Data: string(b)}})) }
}

// TestFastPathTaken checks that realistic requests, answers and streams do not fall back
// to the slow path.
func TestFastPathTaken(t *testing.T) {
	for _, tc := range []struct {
		file string
		fast func([]byte) error
	}{
		{"anthropic/claude_code_request.json", errOf(anthropicRequestFast)},
		{"responses/codex_request.json", errOf(responsesRequestFast)},
		{"anthropic/stream_parallel.sse", errOf(recordedStream(anthropicStreamFast))},
		{"anthropic/response_thinking_tools.json", errOf(anthropicBodyFast)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.fast(b); err != nil {
				t.Error(err)
			}
		})
	}
}

// FuzzAnthropicStreamFast checks that the fast stream path, when it succeeds, makes the
// reply the slow path makes.
func FuzzAnthropicStreamFast(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "anthropic", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{ \"a\" : 1 }}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"a\\u00e9\",\"signature\":\"\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"y\"}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[1\"}}\n\n" +
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n"))
	f.Add([]byte("data: {\"type\":\"content_block_start\",\"index\":null,\"content_block\":{\"type\":\"text\",\"text\":\"a\"}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":null}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"b\\u00e9\",\"x\":[1,{}]}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"Index\":1.0,\"index\":0,\"delta\":{}}\n\n" +
		"event: message_delta\ndata: {\"delta\":{\"stop_reason\":null},\"usage\":null,\"type\":null}\n\n"))
	f.Fuzz(checkStreamFast)
}

// checkStreamFast fails when the fast path reads a stream the slow path rejects, or reads
// it otherwise.
func checkStreamFast(t *testing.T, stream []byte) {
	t.Helper()
	checkFast(t, stream, recordedStream(anthropicStreamFast), recordedStream(anthropicStreamSlow))
}

// FuzzAnthropicStreamBlocks is FuzzAnthropicStreamFast on streams of the API's shape with
// fuzzed block starts and deltas.
func FuzzAnthropicStreamBlocks(f *testing.F) {
	f.Add(`"text","text":""`, `"text_delta","text":"hi"`, `"input_json_delta","partial_json":"{}"`)
	f.Add(`"tool_use","id":"t","name":"Bash","input":{}`, `"input_json_delta","partial_json":"{\"a\": "`, `"input_json_delta","partial_json":"1}"`)
	f.Add(`"tool_use","id":"t","name":"Bash","input":{ "a" : [1, 2] }`, `"text_delta","text":"x"`, `"signature_delta","signature":"s"`)
	f.Add(`"thinking","thinking":"a","signature":""`, `"thinking_delta","thinking":"b"`, `"signature_delta","signature":"s"`)
	f.Add(`"text","TEXT":"a","text":"b"`, `"text_delta","Text":"c"`, `"text_delta","text":null`)
	f.Fuzz(func(t *testing.T, start, delta1, delta2 string) {
		stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":" + start + "}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":" + delta1 + "}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":" + delta2 + "}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
		checkStreamFast(t, []byte(stream))
	})
}

// FuzzJSONString checks jsonString against json.Unmarshal into a string.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"a"`, `"`, `""`, ` "x" `, `"a\"b"`, "\"\xff\"", `"é"`, `"a"b"`, `5`, "\"\t\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := jsonString(raw)
		var want string
		t2 := trimJSON(raw)
		err := json.Unmarshal(t2, &want)
		wantOK := len(t2) > 0 && t2[0] == '"' && err == nil
		if ok != wantOK || got != want && ok {
			t.Fatalf("jsonString(%q) = %q, %v; json: %q, %v", raw, got, ok, want, err)
		}
	})
}

// FuzzResponsesEventScan checks that a Responses event the scanner reads decodes as
// encoding/json decodes it.
func FuzzResponsesEventScan(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"hi"}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}`,
		`{"type":null,"output_index":null,"Delta":"x","delta":"y"}`,
		`{"output_index":1.5}`, `{"output_index":"1"}`, `{"type":"a","type":"b"}`, `null`, `{"summary_index":-3,"response":{"output":[]}} `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		checkFast(t, data, scanResponsesEvent, func(data string) (e responsesEvent, err error) {
			return e, json.Unmarshal([]byte(data), &e)
		})
	})
}

// FuzzAnthropicBodyFast checks that the fast response body path, when it succeeds, makes
// the reply the slow path makes.
func FuzzAnthropicBodyFast(f *testing.F) {
	for _, name := range []string{"response_thinking_tools.json", "error_body.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "anthropic", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Running it."},{"type":"tool_use","id":"t","name":"Bash","input":{ "command" : "true" }}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`,
		`{"content":null,"stop_reason":null,"usage":null}`,
		`{"content":[null,{"type":"image","source":{}},{"type":"redacted_thinking","data":"x"},{"type":"tool_use","input":[1, 2]}],"Usage":{}}`,
		`{"content":[],"stop_reason":5}`, `{"content":[{"type":"text","text":"a","text":"b"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFast(t, body, anthropicBodyFast, anthropicBodySlow)
	})
}
