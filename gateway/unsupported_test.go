package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/internal/testutil/codexcapture"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/unsupported"
	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// lines collects a gateway's log.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, args...))
}

func (l *lines) containing(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, g := range l.got {
		if strings.Contains(g, s) {
			n++
		}
	}
	return n
}

// codexScript answers Codex's sub-agent captures in order: the root spawns (in namespace
// ns), waits, and ends; the child (x-openai-subagent) answers 42 at whichever turn.
func codexScript(ns string) fakeprovider.Script {
	spawn := tape.ToolCall{ID: "call_spawn_1", Name: "spawn_agent", Input: json.RawMessage(`{"task_name":"helper","message":"Compute 6*7 and reply with the number only."}`)}
	wait := tape.ToolCall{ID: "call_wait_1", Name: "wait_agent", Input: json.RawMessage(`{"timeout_ms":30000}`)}
	child := fakeprovider.Turn{Text: "42"}
	return fakeprovider.Script{
		Threads: []fakeprovider.Thread{
			{Name: "main", Turns: []fakeprovider.Turn{
				{Calls: []tape.ToolCall{spawn}, Namespaces: map[string]string{"spawn_agent": ns}},
				{Calls: []tape.ToolCall{wait}, Namespaces: map[string]string{"wait_agent": ns}},
				{Text: "done"}, {Text: "done"},
			}},
			{Name: "child", Turns: []fakeprovider.Turn{child, child, child}},
		},
		Match: func(r *fakeprovider.Request) string {
			if r.Header.Get("X-Openai-Subagent") != "" {
				return "child"
			}
			return "main"
		},
	}
}

// TestCodexMultiAgentV2Recorded: a recording of Codex's multi_agent_v2 requests (rebuilt from
// the captures) goes on as any other, and the first request that shows v2 labels the tape
// and logs one line; a v1 recording gets neither. It also shows what the label guards
// against: when the v2 child's first request (a warm fork that answers the root's
// spawn_agent call) arrives before the root's next one, which nothing orders, the thread
// matcher continues the root's thread with it.
func TestCodexMultiAgentV2Recorded(t *testing.T) {
	for _, tc := range []struct {
		version, ns, prefix string
		captures            []string
		want                string // the label's value; "" for none
		childIn             string // the thread the child's request is attributed to
	}{
		{"v2", "collaboration", "v2-1-root-request-initial.txt", []string{
			"v2-1-root-request-initial.txt", "v2-2-root-request-after-spawn.txt",
			"v2-3-child-request.txt", "v2-4-root-request-after-wait_agent.txt",
		}, unsupported.CodexMultiAgentV2 + `: request /tools/5 is the tool namespace "collaboration" (thread main)`, "t1"},
		{"v2-child-first", "collaboration", "v2-1-root-request-initial.txt", []string{
			"v2-1-root-request-initial.txt", "v2-3-child-request.txt",
			"v2-2-root-request-after-spawn.txt", "v2-4-root-request-after-wait_agent.txt",
		}, unsupported.CodexMultiAgentV2 + `: request /tools/5 is the tool namespace "collaboration" (thread main)`, "main"}, // the wrong thread: why replay refuses
		{"v1", "multi_agent_v1", "v1-1-root-request-initial.txt", []string{
			"v1-1-root-request-initial.txt", "v1-3-root-request-after-spawn.txt",
			"v1-4-child-request.txt", "v1-5-root-request-after-wait_agent.txt",
		}, "", "t1"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			var log lines
			rg := newRig(t, codexScript(tc.ns), func(c *gateway.Config) { c.Logf = log.logf; c.Harness = "codex" })
			for _, name := range tc.captures {
				h, body, err := codexcapture.Load(name, tc.prefix)
				require.NoError(t, err)
				rep := rg.do(t, call{path: "/v1/responses", header: h, body: body})
				require.Equal(t, http.StatusOK, rep.status, "%s: %s", name, rep.body)
			}
			tp := rg.load(t)
			for _, th := range tp.Threads {
				t.Logf("%s: thread %s (parent %v): %d steps", tc.version, th.ID, th.Parent, len(th.Steps))
			}
			assert.Equal(t, len(tc.captures), countSteps(tp), "every call is recorded")
			assert.Equal(t, []string{tc.childIn}, subagentThreads(tp), "the thread of the child's request (x-openai-subagent)")
			got, labelled := tp.Meta.Labels[unsupported.Label]
			if tc.want == "" {
				assert.False(t, labelled, "a v1 tape is not labelled: %q", got)
				assert.Zero(t, log.containing("replay and fork will refuse"))
				assert.NoError(t, unsupported.Check(tp))
				return
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, 1, log.containing("replay and fork will refuse this tape"), "one line, however many v2 requests: %q", log.got)
			assert.Error(t, unsupported.Check(tp))
		})
	}
}

func countSteps(tp *tape.Tape) int {
	n := 0
	for _, th := range tp.Threads {
		n += len(th.Steps)
	}
	return n
}

// subagentThreads are the threads of the steps whose request carries x-openai-subagent.
func subagentThreads(tp *tape.Tape) []string {
	var ids []string
	for _, th := range tp.Threads {
		for _, s := range th.Steps {
			if s.Request.Headers["x-openai-subagent"] != "" {
				ids = append(ids, th.ID)
			}
		}
	}
	return ids
}
