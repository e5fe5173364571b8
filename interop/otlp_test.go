package interop

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// spanAttrs decodes an OTLP/JSON export into each span's name and string attributes.
func spanAttrs(t *testing.T, b []byte) (names []string, attrs []map[string]string) {
	t.Helper()
	var req struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					Name       string `json:"name"`
					Attributes []struct {
						Key   string `json:"key"`
						Value struct {
							StringValue *string `json:"stringValue"`
						} `json:"value"`
					} `json:"attributes"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	require.NoError(t, json.Unmarshal(b, &req))
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				m := map[string]string{}
				for _, a := range sp.Attributes {
					if a.Value.StringValue != nil {
						m[a.Key] = *a.Value.StringValue
					}
				}
				names = append(names, sp.Name)
				attrs = append(attrs, m)
			}
		}
	}
	return names, attrs
}

// Every span of the real Claude Code tape carries the harness's session id as
// gen_ai.conversation.id (the id its own transcript is named by), chat spans name the
// server, and a failed call's chat span says error.type.
func TestOTLPConversationServerError(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "viewer", "testdata", "claude-code.json"))
	require.NoError(t, err)
	session := tp.Main().Steps[0].Request.Headers["x-claude-code-session-id"]
	require.NotEmpty(t, session)
	tp.Main().Steps[1].Response.Status = 529
	b, err := ExportOTLP(tp)
	require.NoError(t, err)
	names, attrs := spanAttrs(t, b)
	require.NotEmpty(t, names)
	chats, failed := 0, 0
	for i, a := range attrs {
		assert.Equal(t, session, a["gen_ai.conversation.id"], "span %s", names[i])
		if a["gen_ai.operation.name"] != "chat" {
			continue
		}
		chats++
		assert.Equal(t, "api.anthropic.com", a["server.address"], "span %s", names[i])
		if a["tapebox.thread"] == "main" && a["error.type"] != "" {
			failed++
			assert.Equal(t, "529", a["error.type"])
		}
	}
	assert.Equal(t, tp.Totals().Steps, chats)
	assert.Equal(t, 1, failed, "the failed call, and only it, has error.type")
}

// The codex export's token_count events carry total_token_usage, the thread's running sum
// (as Codex writes it), beside last_token_usage; the last total is the thread's.
func TestCodexExportTotalTokenUsage(t *testing.T) {
	tp, err := tape.LoadFile(filepath.Join("..", "testdata", "replay", "codex.json"))
	require.NoError(t, err)
	files, err := ExportCodex(tp, "")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var sum, last map[string]int64
	events := 0
	for _, line := range strings.Split(strings.TrimSpace(string(files[0].Data)), "\n") {
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type string `json:"type"`
				Info struct {
					Total map[string]int64 `json:"total_token_usage"`
					Last  map[string]int64 `json:"last_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if l.Type != "event_msg" || l.Payload.Type != "token_count" {
			continue
		}
		events++
		if sum == nil {
			sum = map[string]int64{}
		}
		for k, v := range l.Payload.Info.Last {
			sum[k] += v
		}
		require.NotNil(t, l.Payload.Info.Total, "event %d", events)
		assert.Equal(t, sum, l.Payload.Info.Total, "event %d: the running sum", events)
		last = l.Payload.Info.Total
	}
	main := tp.Main()
	require.Equal(t, len(main.Steps), events)
	var u tape.Usage
	for _, s := range main.Steps {
		u = u.Add(s.Response.Usage)
	}
	assert.Equal(t, u.OutputTokens, last["output_tokens"])
	assert.Equal(t, u.InputTokens+u.CacheReadInputTokens, last["input_tokens"])
}
