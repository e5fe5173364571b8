package interop

import (
	"encoding/json"
	"fmt"

	"github.com/tapebox/tapebox/internal/jsonlex"
	"github.com/tapebox/tapebox/tape"
)

// ATIFVersion is the ATIF schema version ExportATIF writes.
const ATIFVersion = "ATIF-v1.7"

// The ATIF v1.7 objects (harbor-framework/harbor rfcs/0001-trajectory-format.md), only
// the fields a tape fills.
type atifTrajectory struct {
	SchemaVersion        string           `json:"schema_version"`
	SessionID            string           `json:"session_id,omitempty"`
	TrajectoryID         string           `json:"trajectory_id"`
	Agent                atifAgent        `json:"agent"`
	Steps                []atifStep       `json:"steps"`
	Notes                string           `json:"notes,omitempty"`
	FinalMetrics         atifFinalMetrics `json:"final_metrics"`
	Extra                map[string]any   `json:"extra,omitempty"`
	SubagentTrajectories []atifTrajectory `json:"subagent_trajectories,omitempty"`
}

type atifAgent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID          string         `json:"source_call_id,omitempty"`
	Content               string         `json:"content"`
	SubagentTrajectoryRef []atifRef      `json:"subagent_trajectory_ref,omitempty"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

type atifRef struct {
	TrajectoryID string `json:"trajectory_id"`
	SessionID    string `json:"session_id,omitempty"`
}

type atifMetrics struct {
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	CachedTokens     int64    `json:"cached_tokens"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
	Extra            any      `json:"extra,omitempty"`
}

type atifFinalMetrics struct {
	TotalPromptTokens     int64          `json:"total_prompt_tokens"`
	TotalCompletionTokens int64          `json:"total_completion_tokens"`
	TotalCachedTokens     int64          `json:"total_cached_tokens"`
	TotalCostUSD          *float64       `json:"total_cost_usd,omitempty"`
	TotalSteps            int            `json:"total_steps"`
	Extra                 map[string]any `json:"extra,omitempty"`
}

// ExportATIF writes a tape as one ATIF v1.7 trajectory: the main thread's steps (its
// system prompt, the user's prompt, then one agent step per model call with its tool
// calls and their results as the observation), each subagent thread as an embedded
// trajectory in subagent_trajectories, referenced from the result of the call that
// spawned it. Tokens: prompt_tokens counts cached tokens too (ATIF's rule), cached_tokens
// those read from the cache, and metrics.extra.cache_creation_input_tokens those written to
// it (ATIF has no field of its own for them). A trajectory's final_metrics sum its own steps
// and those of the subagent trajectories it embeds (final_metrics.extra.includes_subagents),
// so the root's are the run's; total_steps counts its own steps only. A cost is given only
// when opts.Cost knows it.
func ExportATIF(tp *tape.Tape, opts Options) ([]byte, error) {
	main := tp.Main()
	if main == nil {
		return nil, fmt.Errorf("export atif: tape %s has no main thread", tp.Meta.TapeID)
	}
	t := atifThread(tp, main, opts)
	t.SessionID = tp.Meta.TapeID
	t.Notes = "Exported by TapeBox from tape " + tp.Meta.TapeID + "; the tape holds the raw wire bodies and timing."
	b, err := jsonlex.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("export atif: %w", err)
	}
	return b, nil
}

func atifTrajectoryID(tp *tape.Tape, th *tape.Thread) string { return tp.Meta.TapeID + "-" + th.ID }

func atifThread(tp *tape.Tape, th *tape.Thread, opts Options) atifTrajectory {
	t := atifTrajectory{SchemaVersion: ATIFVersion, TrajectoryID: atifTrajectoryID(tp, th),
		Agent: atifAgent{Name: tp.Meta.Harness, Version: tp.Meta.HarnessVersion, ModelName: tp.Meta.Model},
		Extra: map[string]any{"tapebox": map[string]any{"tape_id": tp.Meta.TapeID, "thread_id": th.ID}}}
	if t.Agent.Name == "" {
		t.Agent.Name = "unknown"
	}
	if t.Agent.Version == "" {
		t.Agent.Version = "unknown"
	}
	spawned := children(tp)
	add := func(s atifStep) {
		s.StepID = len(t.Steps) + 1
		t.Steps = append(t.Steps, s)
	}
	if len(th.Steps) > 0 {
		first := th.Steps[0]
		if first.Request.System != "" {
			add(atifStep{Timestamp: at(tp, first.Timing.RequestAt), Source: "system", Message: first.Request.System})
		}
		if p := prompt(th); p != "" {
			add(atifStep{Timestamp: at(tp, first.Timing.RequestAt), Source: "user", Message: p})
		}
	}
	var total float64
	var written int64 // cache writes
	costKnown := opts.Cost != nil
	for i, s := range th.Steps {
		if text := followUp(th, i); text != "" {
			add(atifStep{Timestamp: at(tp, s.Timing.RequestAt), Source: "user", Message: text})
		}
		st := atifStep{Timestamp: at(tp, s.Timing.LastByteAt), Source: "agent", ModelName: tape.StepModel(&tp.Meta, s)}
		st.Message, st.ReasoningContent = answerText(s.Response.Content)
		for _, c := range s.ToolCalls {
			st.ToolCalls = append(st.ToolCalls, atifToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: input(c.Input)})
		}
		if len(s.ToolResults) > 0 {
			st.Observation = &atifObservation{}
			for _, r := range s.ToolResults {
				res := atifResult{SourceCallID: r.ToolCallID, Content: resultText(r)}
				if r.IsError {
					res.Extra = map[string]any{"is_error": true}
				}
				if child, ok := spawned[r.ToolCallID]; ok {
					res.SubagentTrajectoryRef = []atifRef{{TrajectoryID: atifTrajectoryID(tp, child)}}
				}
				st.Observation.Results = append(st.Observation.Results, res)
			}
		}
		u := s.Response.Usage
		st.Metrics = &atifMetrics{PromptTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadInputTokens}
		if u.CacheCreationInputTokens > 0 {
			st.Metrics.Extra = map[string]any{"cache_creation_input_tokens": u.CacheCreationInputTokens}
		}
		written += u.CacheCreationInputTokens
		if opts.Cost != nil {
			if c := opts.Cost(&tp.Meta, s); c != nil {
				st.Metrics.CostUSD = c
				total += *c
			} else {
				costKnown = false
			}
		}
		add(st)
		t.FinalMetrics.TotalPromptTokens += st.Metrics.PromptTokens
		t.FinalMetrics.TotalCompletionTokens += st.Metrics.CompletionTokens
		t.FinalMetrics.TotalCachedTokens += st.Metrics.CachedTokens
	}
	t.FinalMetrics.TotalSteps = len(t.Steps)
	for _, c := range tp.Threads {
		if c.Parent != nil && c.Parent.ThreadID == th.ID {
			sub := atifThread(tp, c, opts)
			t.SubagentTrajectories = append(t.SubagentTrajectories, sub)
			fm := sub.FinalMetrics
			t.FinalMetrics.TotalPromptTokens += fm.TotalPromptTokens
			t.FinalMetrics.TotalCompletionTokens += fm.TotalCompletionTokens
			t.FinalMetrics.TotalCachedTokens += fm.TotalCachedTokens
			if n, ok := fm.Extra["total_cache_creation_input_tokens"].(int64); ok {
				written += n
			}
			if fm.TotalCostUSD != nil {
				total += *fm.TotalCostUSD
			} else {
				costKnown = false
			}
		}
	}
	if costKnown {
		t.FinalMetrics.TotalCostUSD = &total
	}
	t.FinalMetrics.Extra = map[string]any{"total_cache_creation_input_tokens": written}
	if len(t.SubagentTrajectories) > 0 {
		t.FinalMetrics.Extra["includes_subagents"] = true
	}
	if opts.PricesDate != "" {
		t.FinalMetrics.Extra["prices_date"] = opts.PricesDate
	}
	return t
}
