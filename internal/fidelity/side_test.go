package fidelity

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// geminiCheck is a Gemini API request as Gemini CLI's BaseLlmClient.generateJson sends it:
// contents whose history holds turns model turns, and the schema of the answer it wants.
func geminiCheck(t *testing.T, turns int, schema map[string]any) []byte {
	t.Helper()
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Recent conversation history:"}}}}
	for i := range turns {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "read_file", "args": map[string]any{"file_path": "a.txt"}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "read_file", "response": map[string]any{"output": strings.Repeat("x", i)}}}}})
	}
	contents = append(contents, map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Please analyze the conversation history."}}})
	body := map[string]any{"contents": contents}
	if schema != nil {
		body["generationConfig"] = map[string]any{"responseMimeType": "application/json", "responseJsonSchema": schema}
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	loopSchema = map[string]any{"type": "object", "properties": map[string]any{
		"unproductive_state_analysis":   map[string]any{"type": "string"},
		"unproductive_state_confidence": map[string]any{"type": "number"}}}
	speakerSchema = map[string]any{"type": "object", "properties": map[string]any{
		"reasoning":    map[string]any{"type": "string"},
		"next_speaker": map[string]any{"type": "string", "enum": []string{"user", "model"}}}}
	correctorSchema = map[string]any{"type": "object", "properties": map[string]any{
		"search": map[string]any{"type": "string"}, "replace": map[string]any{"type": "string"}}}
)

// TestSideAnswers: the scripted model answers Gemini CLI's loop check with no loop and its
// next-speaker check with the user, in the JSON their schemas ask for, at any step of the
// conversation they carry (seeds 40033, 40057, 40090, 60001, 60007 and 60016 did not record:
// the CLI's loop check, 9 model turns deep, found the side thread's 4 turns unscripted).
// Every other side request gets "none", as before.
func TestSideAnswers(t *testing.T) {
	srv := fakeprovider.New(script([]fakeprovider.Turn{{Text: "Done."}}))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ask := func(body []byte) string {
		t.Helper()
		resp, err := http.Post(srv.URL()+"/v1beta/models/gemini-2.5-flash:generateContent", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out struct {
			Candidates []struct {
				Content struct {
					Parts []struct{ Text string }
				}
			}
		}
		if err := json.Unmarshal(b, &out); err != nil || len(out.Candidates) == 0 || len(out.Candidates[0].Content.Parts) == 0 {
			t.Fatalf("answer %s: %v", b, err)
		}
		return out.Candidates[0].Content.Parts[0].Text
	}
	for _, turns := range []int{0, 4, 9, 10, 57} {
		var loop struct {
			Analysis   *string  `json:"unproductive_state_analysis"`
			Confidence *float64 `json:"unproductive_state_confidence"`
		}
		text := ask(geminiCheck(t, turns, loopSchema))
		if err := json.Unmarshal([]byte(text), &loop); err != nil || loop.Confidence == nil || *loop.Confidence != 0 || loop.Analysis == nil {
			t.Errorf("loop check at %d turns: %q", turns, text)
		}
		var speaker struct {
			Next string `json:"next_speaker"`
		}
		text = ask(geminiCheck(t, turns, speakerSchema))
		if err := json.Unmarshal([]byte(text), &speaker); err != nil || speaker.Next != "user" {
			t.Errorf("next speaker at %d turns: %q", turns, text)
		}
		for _, schema := range []map[string]any{correctorSchema, nil} {
			if text := ask(geminiCheck(t, turns, schema)); text != "none" {
				t.Errorf("another side request at %d turns (%v): %q, want none", turns, schema, text)
			}
		}
	}
	if err := srv.Err(); err != nil {
		t.Fatalf("a side request went unscripted: %v", err)
	}
	if got := geminiSideJSON([]byte("not json")); got != "" {
		t.Errorf("a body that is not JSON: %q", got)
	}
}
