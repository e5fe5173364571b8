package unsupported_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/codexcapture"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
)

// prefix is the capture whose input items fill a capture's elided ones.
func prefix(name string) string {
	if strings.HasPrefix(name, "v2-") {
		return "v2-1-root-request-initial.txt"
	}
	return "v1-1-root-request-initial.txt"
}

// TestRequestCaptures: every v2 request of the captures is found, at the item that shows
// it; no v1 request is.
func TestRequestCaptures(t *testing.T) {
	want := map[string]string{
		"v2-1-root-request-initial.txt":          "/tools/5",
		"v2-2-root-request-after-spawn.txt":      "/tools/5",
		"v2-3-child-request.txt":                 "/input/11", // the child has no collaboration tools
		"v2-4-root-request-after-wait_agent.txt": "/tools/5",
		"v2-child-request-fork_turns-none.txt":   "/input/5",
		"v2-root-request-overlap-exec.txt":       "/tools/5",
	}
	entries, err := os.ReadDir(codexcapture.Dir())
	require.NoError(t, err)
	seen := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".txt") || !strings.Contains(name, "request") {
			continue
		}
		seen++
		t.Run(name, func(t *testing.T) {
			_, body, err := codexcapture.Load(name, prefix(name))
			require.NoError(t, err)
			f := unsupported.Request(body)
			if strings.HasPrefix(name, "v1-") {
				assert.Nil(t, f, "a v1 request is supported")
				return
			}
			require.NotNil(t, f, "a v2 request")
			assert.Equal(t, unsupported.CodexMultiAgentV2, f.Feature)
			assert.Equal(t, want[name], f.Pointer)
		})
	}
	assert.Equal(t, 14, seen, "the request captures")
}

// TestRequestPlanted: the detector says "differs" on both sides: a v1 request with an
// agent_message item planted is found, and a v2 request whose namespace is renamed and
// whose agent_message items are retyped is not.
func TestRequestPlanted(t *testing.T) {
	_, v1, err := codexcapture.Load("v1-3-root-request-after-spawn.txt", prefix("v1-"))
	require.NoError(t, err)
	require.Nil(t, unsupported.Request(v1))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(v1, &doc))
	doc["input"] = append(doc["input"].([]any), map[string]any{"type": "agent_message", "author": "/root/helper"})
	planted, err := json.Marshal(doc)
	require.NoError(t, err)
	f := unsupported.Request(planted)
	require.NotNil(t, f)
	assert.Equal(t, "/input/"+itoa(len(doc["input"].([]any))-1), f.Pointer)

	for _, name := range []string{"v2-4-root-request-after-wait_agent.txt", "v2-3-child-request.txt"} {
		_, v2, err := codexcapture.Load(name, prefix(name))
		require.NoError(t, err)
		require.NotNil(t, unsupported.Request(v2))
		cleaned := bytes.ReplaceAll(v2, []byte(`"name":"collaboration"`), []byte(`"name":"multi_agent_v1"`))
		require.NotNil(t, unsupported.Request(cleaned), "%s: its agent_message items still show it", name)
		cleaned = bytes.ReplaceAll(cleaned, []byte(`"type":"agent_message"`), []byte(`"type":"message"`))
		assert.Nil(t, unsupported.Request(cleaned), name)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestRequestShapes: bodies of every shape: nothing found, no panic, where the words stand
// anywhere but in a tool's or an input item's type.
func TestRequestShapes(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `"collaboration agent_message"`, `{"tools":null,"input":null}`,
		`{"input":"agent_message"}`, `{"input":["agent_message"]}`, `{"tools":["collaboration"]}`,
		`{"tools":[{"type":"function","name":"collaboration"}]}`,
		`{"tools":[{"type":"namespace","name":"other","tools":[{"name":"collaboration"}]}]}`,
		`{"input":[{"type":"message","content":[{"type":"agent_message"}]}]}`,
		`{"tools":[{"type":"namespace","name":"collaboration"`, // cut short
		`{"messages":[{"role":"user","content":"agent_message collaboration"}]}`,
	} {
		assert.Nil(t, unsupported.Request([]byte(body)), body)
	}
	assert.NotNil(t, unsupported.Request([]byte(`{"input":[1,{"type":"agent_message"}]}`)))
}

// TestCheck: Check names the first step that shows it, or the label alone.
func TestCheck(t *testing.T) {
	_, v1, err := codexcapture.Load("v1-1-root-request-initial.txt", "")
	require.NoError(t, err)
	_, v2, err := codexcapture.Load("v2-3-child-request.txt", prefix("v2-"))
	require.NoError(t, err)
	tp := &tape.Tape{Meta: tape.Meta{Labels: map[string]string{}}, Threads: []*tape.Thread{
		{ID: "main", Steps: []*tape.Step{{Request: tape.Request{Raw: v1}}, {Request: tape.Request{Raw: v1}}}},
		{ID: "t1", Steps: []*tape.Step{{Request: tape.Request{Raw: v1}}, {Request: tape.Request{Raw: v2}}}},
	}}
	err = unsupported.Check(tp)
	var ue *unsupported.Error
	require.True(t, errors.As(err, &ue), "%v", err)
	assert.Equal(t, "t1", ue.Thread)
	assert.Equal(t, 1, ue.Step)
	assert.Contains(t, err.Error(), "thread \"t1\" step 1: Codex multi_agent_v2 sub-agents: request /input/11 is an input item of type \"agent_message\"")
	assert.Contains(t, err.Error(), "attributed to the parent's thread")
	assert.Contains(t, err.Error(), unsupported.Docs)

	tp.Threads[1].Steps[1].Request.Raw = v1
	assert.NoError(t, unsupported.Check(tp))
	tp.Meta.Labels[unsupported.Label] = "Codex multi_agent_v2 sub-agents: thread t1: request /input/11"
	err = unsupported.Check(tp)
	require.True(t, errors.As(err, &ue))
	assert.Equal(t, -1, ue.Step)
	assert.Contains(t, err.Error(), "meta.labels "+unsupported.Label)
}

func FuzzRequest(f *testing.F) {
	f.Add([]byte(`{"tools":[{"type":"namespace","name":"collaboration"}],"input":[{"type":"agent_message"}]}`))
	f.Add([]byte(`{"input":"agent_message collaboration"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		found := unsupported.Request(body)
		if found != nil && !bytes.Contains(body, []byte(`"collaboration"`)) && !bytes.Contains(body, []byte(`"agent_message"`)) {
			t.Fatalf("found %v in a body without either word", found)
		}
	})
}

// BenchmarkRequest: what the gateway pays per recorded request, for a v1 body (the words
// absent: two scans) and a v2 one (decoded).
func BenchmarkRequest(b *testing.B) {
	for _, name := range []string{"v1-5-root-request-after-wait_agent.txt", "v2-4-root-request-after-wait_agent.txt"} {
		_, body, err := codexcapture.Load(name, prefix(name))
		require.NoError(b, err)
		b.Run(name[:2], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				unsupported.Request(body)
			}
		})
	}
}
