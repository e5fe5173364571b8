package compare

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// NotRun is a tool call of the replay that the executor did not run: it copied the
// recorded result (tape.ToolResult.CopiedFromTape), as it does for a tool with no effect in
// the sandbox (an MCP tool, a web fetch) or one it cannot perform there. Such a result
// compares equal by construction and proves nothing about the replay.
type NotRun struct {
	Thread     string `json:"thread"`
	Step       int    `json:"step"`
	ToolCallID string `json:"tool_call_id"`
	Tool       string `json:"tool"`
}

// notRun lists the replay's results copied from the recording, in thread and step order,
// and counts every result of the replay.
func notRun(rep *tape.Tape) (out []NotRun, results int) {
	out = []NotRun{}
	for _, th := range rep.Threads {
		for si, st := range th.Steps {
			results += len(st.ToolResults)
			for _, res := range st.ToolResults {
				if !res.CopiedFromTape {
					continue
				}
				n := NotRun{Thread: th.ID, Step: si, ToolCallID: res.ToolCallID}
				for _, c := range st.ToolCalls {
					if c.ID == res.ToolCallID {
						n.Tool = c.Name
						break
					}
				}
				out = append(out, n)
			}
		}
	}
	return out, results
}

// writeNotRun prints how many results were copied rather than run, by tool.
func (r *Report) writeNotRun(w io.Writer) {
	if len(r.NotRun) == 0 {
		return
	}
	byTool := map[string]int{}
	for _, n := range r.NotRun {
		byTool[n.Tool]++
	}
	var tools []string
	for _, t := range slices.Sorted(maps.Keys(byTool)) {
		tools = append(tools, fmt.Sprintf("%s x%d", t, byTool[t]))
	}
	fmt.Fprintf(w, "  not run: %d of %d tool results were copied from the recording (tools with no effect in the sandbox), so they prove nothing: %s\n",
		len(r.NotRun), r.ResultsReplayed, strings.Join(tools, ", "))
}
