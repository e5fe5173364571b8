package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

// TapeRow is one row of the tapes table: one tape. TapeJSON holds the tape's canonical
// encoding (tape.Marshal), so a tape is rebuilt from its row byte for byte; the other
// columns are derived from it for queries.
type TapeRow struct {
	TapeID string `parquet:"tape_id"`
	// SourceFile is the name of the file the tape was exported from (its base name: no
	// folder), which import gives the tape back where it can; null when unknown. Like
	// WorkspaceIncluded, the tape does not give it.
	SourceFile     *string `parquet:"source_file,optional"`
	Harness        string  `parquet:"harness,dict"`
	HarnessVersion string  `parquet:"harness_version,dict"`
	Provider       string  `parquet:"provider,dict"`
	Model          string  `parquet:"model,dict"`
	// Cwd is meta.cwd, null when the tape does not say.
	Cwd         *string    `parquet:"cwd,optional"`
	StartedAt   time.Time  `parquet:"started_at,timestamp(microsecond)"`
	EndedReason *string    `parquet:"ended_reason,optional,dict"`
	EndedAt     *time.Time `parquet:"ended_at,optional,timestamp(microsecond)"`
	EndedDetail *string    `parquet:"ended_detail,optional" dataset:"text"`
	// Task and Labels are JSON objects of strings.
	Task     []byte  `parquet:"task,string" json:"task" dataset:"text"`
	Labels   []byte  `parquet:"labels,string" json:"labels" dataset:"text"`
	ReplayOf *string `parquet:"replay_of,optional"`

	// The workspace columns come from meta.workspace. WorkspaceDigest, WorkspaceSize and
	// WorkspaceFiles describe the start snapshot (null when the tape has none);
	// WorkspaceEndFiles counts the entries of the end manifest (null when the tape has
	// none), which itself stays in tape_json. WorkspaceIncluded says whether the
	// workspaces table of the split holds the snapshot's bytes, under WorkspaceDigest: it is
	// the one column the tape does not give, false when the tape has no snapshot or the
	// export left snapshots out.
	WorkspaceDigest   *string `parquet:"workspace_digest,optional"`
	WorkspaceSize     *int64  `parquet:"workspace_size,optional"`
	WorkspaceFiles    *int64  `parquet:"workspace_files,optional"`
	WorkspaceEndFiles *int64  `parquet:"workspace_end_files,optional"`
	WorkspaceIncluded bool    `parquet:"workspace_included"`

	NumThreads   int64    `parquet:"num_threads"`
	NumSteps     int64    `parquet:"num_steps"`
	NumToolCalls int64    `parquet:"num_tool_calls"`
	ToolNames    []string `parquet:"tool_names,list"`

	InputTokens              int64   `parquet:"input_tokens"`
	OutputTokens             int64   `parquet:"output_tokens"`
	CacheReadInputTokens     int64   `parquet:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `parquet:"cache_creation_input_tokens"`
	ReasoningTokens          int64   `parquet:"reasoning_tokens"`
	DurationMS               float64 `parquet:"duration_ms"`
	// CostUSD is the tape's cost in US dollars at the price table of PricesDate; null when
	// a step's model has no price (unknown, never 0).
	CostUSD    *float64 `parquet:"cost_usd,optional"`
	PricesDate string   `parquet:"prices_date,dict"`

	// TapeBytes is the size of TapeJSON.
	TapeBytes int64  `parquet:"tape_bytes"`
	TapeJSON  []byte `parquet:"tape_json,string" json:"tape_json" dataset:"text"`
}

// StepRow is one row of the steps table: one model call. Nested values are JSON strings
// (the columns whose names end in _json). To keep the table linear in the length of a
// conversation, a step holds only what is new in it: the messages after the longest
// prefix its request shares with the thread's previous request (the request's messages
// are the previous request's first MessageOffset messages followed by NewMessages), and
// System and Tools only when they differ from the thread's previous request (null
// otherwise). Raw bodies and stream chunks stay in the tapes table's tape_json.
type StepRow struct {
	TapeID           string  `parquet:"tape_id"`
	ThreadID         string  `parquet:"thread_id,dict"`
	ThreadIndex      int64   `parquet:"thread_index"`
	ParentThreadID   *string `parquet:"parent_thread_id,optional"`
	ParentToolCallID *string `parquet:"parent_tool_call_id,optional"`
	StepIndex        int64   `parquet:"step_index"`

	Model      string `parquet:"model,dict"`
	Path       string `parquet:"path,dict"`
	Stream     bool   `parquet:"stream"`
	Status     int64  `parquet:"status"`
	StopReason string `parquet:"stop_reason,dict"`

	InputTokens              int64 `parquet:"input_tokens"`
	OutputTokens             int64 `parquet:"output_tokens"`
	CacheReadInputTokens     int64 `parquet:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `parquet:"cache_creation_input_tokens"`
	ReasoningTokens          int64 `parquet:"reasoning_tokens"`

	// Times are milliseconds since the tape's start; durations are milliseconds.
	RequestAtMS       float64  `parquet:"request_at_ms"`
	FirstByteAtMS     float64  `parquet:"first_byte_at_ms"`
	LastByteAtMS      float64  `parquet:"last_byte_at_ms"`
	NextRequestAtMS   *float64 `parquet:"next_request_at_ms,optional"`
	TimeToFirstByteMS float64  `parquet:"time_to_first_byte_ms"`
	ResponseMS        float64  `parquet:"response_ms"`
	NumChunks         int64    `parquet:"num_chunks"`

	System        *string `parquet:"system,optional" dataset:"text"`
	ToolsJSON     []byte  `parquet:"tools_json,optional,string" json:"tools_json" dataset:"text"`
	ParamsJSON    []byte  `parquet:"params_json,string" json:"params_json" dataset:"text"`
	MessageOffset int64   `parquet:"message_offset"`
	NumMessages   int64   `parquet:"num_messages"`
	NewMessages   []byte  `parquet:"new_messages_json,string" json:"new_messages_json" dataset:"text"`

	ResponseContent []byte `parquet:"response_content_json,string" json:"response_content_json" dataset:"text"`
	ResponseText    string `parquet:"response_text" dataset:"text"`
	ToolCalls       []byte `parquet:"tool_calls_json,string" json:"tool_calls_json" dataset:"text"`
	ToolResults     []byte `parquet:"tool_results_json,string" json:"tool_results_json" dataset:"text"`
	NumToolCalls    int64  `parquet:"num_tool_calls"`
}

// WorkspaceRow is one row of the workspaces table: the bytes of one start snapshot (a tar
// compressed with zstd, the file a tape's meta.workspace.snapshot names), under its digest.
// A snapshot that several tapes of a split start from is stored once. The column is not
// compressed again: the bytes are zstd already.
type WorkspaceRow struct {
	// Digest is "sha256:<hex>" of Snapshot, as the tapes' meta.workspace.digest and the
	// tapes table's workspace_digest give it.
	Digest string `parquet:"digest"`
	// Size is len(Snapshot).
	Size     int64  `parquet:"size"`
	Snapshot []byte `parquet:"snapshot,uncompressed"`
}

// Columns tagged dataset:"text" hold long text: the Parquet writer keeps no page
// statistics for them (min and max would copy whole values into page headers and the
// footer).

// jsonColumns names the columns that hold JSON text, for the dataset card.
var jsonColumns = map[string][]string{
	configTapes: {"task", "labels", "tape_json"},
	configSteps: {"tools_json", "params_json", "new_messages_json", "response_content_json", "tool_calls_json", "tool_results_json"},
}

// RowsOf derives the tapes-table row and the steps-table rows of a tape. canonical must be
// tape.Marshal(t); the rows keep a reference to it.
func RowsOf(t *tape.Tape, canonical []byte) (TapeRow, []StepRow, error) {
	return RowsPriced(t, canonical, prices.Default())
}

// RowsPriced is RowsOf with the cost columns priced by table instead of the built-in one.
func RowsPriced(t *tape.Tape, canonical []byte, table *prices.Table) (TapeRow, []StepRow, error) {
	var enc pieceEncoder
	cost := table.Tape(t)
	tot := t.Totals()
	row := TapeRow{
		TapeID:         t.Meta.TapeID,
		Harness:        t.Meta.Harness,
		HarnessVersion: t.Meta.HarnessVersion,
		Provider:       string(t.Meta.Provider),
		Model:          t.Meta.Model,
		StartedAt:      micros(t.Meta.StartedAt),
		ReplayOf:       t.Meta.ReplayOf,
		NumThreads:     int64(tot.Threads),
		NumSteps:       int64(tot.Steps),
		NumToolCalls:   int64(tot.ToolCalls),
		ToolNames:      tot.ToolNames,

		InputTokens:              tot.Usage.InputTokens,
		OutputTokens:             tot.Usage.OutputTokens,
		CacheReadInputTokens:     tot.Usage.CacheReadInputTokens,
		CacheCreationInputTokens: tot.Usage.CacheCreationInputTokens,
		ReasoningTokens:          tot.Usage.ReasoningTokens,
		DurationMS:               tot.DurationMS,
		CostUSD:                  cost.USD,
		PricesDate:               cost.PricesDate,
		TapeBytes:                int64(len(canonical)),
		TapeJSON:                 canonical,
	}
	if t.Meta.Cwd != "" {
		cwd := t.Meta.Cwd
		row.Cwd = &cwd
	}
	if w := t.Meta.Workspace; w != nil {
		if w.Digest != "" {
			row.WorkspaceDigest = ptr(w.Digest)
		}
		if w.Snapshot != "" || w.Digest != "" {
			row.WorkspaceSize, row.WorkspaceFiles = ptr(w.Size), ptr(int64(w.Files))
		}
		if w.End != nil { // an empty workspace: 0
			row.WorkspaceEndFiles = ptr(int64(len(w.End)))
		}
	}
	if row.ToolNames == nil {
		row.ToolNames = []string{}
	}
	if e := t.Meta.Ended; e != nil {
		reason := string(e.Reason)
		at := micros(e.At)
		row.EndedReason, row.EndedAt = &reason, &at
		if e.Detail != "" {
			detail := e.Detail
			row.EndedDetail = &detail
		}
	}
	var err error
	if row.Task, err = enc.encode(t.Meta.Task); err != nil {
		return TapeRow{}, nil, err
	}
	if row.Labels, err = enc.encode(t.Meta.Labels); err != nil {
		return TapeRow{}, nil, err
	}

	steps := make([]StepRow, 0, tot.Steps)
	for ti, th := range t.Threads {
		var prev *tape.Step
		for si, s := range th.Steps {
			sr, err := stepRow(&enc, t, ti, th, si, s, prev)
			if err != nil {
				return TapeRow{}, nil, fmt.Errorf("thread %q step %d: %w", th.ID, si, err)
			}
			steps = append(steps, sr)
			prev = s
		}
	}
	return row, steps, nil
}

// micros is t in UTC to the microsecond, as the timestamp columns hold it (tape_json keeps
// the exact time).
func micros(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func stepRow(enc *pieceEncoder, t *tape.Tape, ti int, th *tape.Thread, si int, s, prev *tape.Step) (StepRow, error) {
	r := StepRow{
		TapeID:      t.Meta.TapeID,
		ThreadID:    th.ID,
		ThreadIndex: int64(ti),
		StepIndex:   int64(si),
		Model:       tape.StepModel(&t.Meta, s),
		Path:        s.Request.Path,
		Stream:      s.Request.Stream,
		Status:      int64(s.Response.Status),
		StopReason:  s.Response.StopReason,

		InputTokens:              s.Response.Usage.InputTokens,
		OutputTokens:             s.Response.Usage.OutputTokens,
		CacheReadInputTokens:     s.Response.Usage.CacheReadInputTokens,
		CacheCreationInputTokens: s.Response.Usage.CacheCreationInputTokens,
		ReasoningTokens:          s.Response.Usage.ReasoningTokens,

		RequestAtMS:       s.Timing.RequestAt,
		FirstByteAtMS:     s.Timing.FirstByteAt,
		LastByteAtMS:      s.Timing.LastByteAt,
		NextRequestAtMS:   s.Timing.NextRequestAt,
		TimeToFirstByteMS: round6(s.Timing.FirstByteAt - s.Timing.RequestAt),
		ResponseMS:        round6(s.Timing.LastByteAt - s.Timing.RequestAt),
		NumChunks:         int64(len(s.Response.Chunks)),
		NumMessages:       int64(len(s.Request.Messages)),
		ResponseText:      s.Response.Text(),
		NumToolCalls:      int64(len(s.ToolCalls)),
	}
	if th.Parent != nil {
		pt, pc := th.Parent.ThreadID, th.Parent.ToolCallID
		r.ParentThreadID, r.ParentToolCallID = &pt, &pc
	}
	if prev == nil || prev.Request.System != s.Request.System {
		sys := s.Request.System
		r.System = &sys
	}
	var err error
	if prev == nil || !toolsEqual(prev.Request.Tools, s.Request.Tools) {
		if r.ToolsJSON, err = enc.encode(s.Request.Tools); err != nil {
			return StepRow{}, err
		}
	}
	if r.ParamsJSON, err = enc.encode(s.Request.Params); err != nil {
		return StepRow{}, err
	}
	msgs := s.Request.Messages
	if prev != nil {
		r.MessageOffset = int64(commonPrefix(prev.Request.Messages, msgs))
	}
	if r.NewMessages, err = enc.encode(msgs[r.MessageOffset:]); err != nil {
		return StepRow{}, err
	}
	if r.ResponseContent, err = enc.encode(s.Response.Content); err != nil {
		return StepRow{}, err
	}
	if r.ToolCalls, err = enc.encode(s.ToolCalls); err != nil {
		return StepRow{}, err
	}
	if r.ToolResults, err = enc.encode(s.ToolResults); err != nil {
		return StepRow{}, err
	}
	return r, nil
}

// round6 keeps differences of millisecond times free of floating-point noise.
func round6(ms float64) float64 {
	const k = 1e6
	if ms < 0 {
		return -float64(int64(-ms*k+0.5)) / k
	}
	return float64(int64(ms*k+0.5)) / k
}

// commonPrefix returns how many leading messages a and b share.
func commonPrefix(a, b []tape.Message) int {
	n := min(len(a), len(b))
	for i := range n {
		if !messageEqual(&a[i], &b[i]) {
			return i
		}
	}
	return n
}

func messageEqual(a, b *tape.Message) bool {
	return a.Role == b.Role && blocksEqual(a.Content, b.Content)
}

func blocksEqual(a, b []tape.Block) bool {
	return slices.EqualFunc(a, b, func(x, y tape.Block) bool {
		return x.Type == y.Type && x.Text == y.Text && x.ID == y.ID && x.Name == y.Name &&
			bytes.Equal(x.Input, y.Input) && x.ToolCallID == y.ToolCallID && x.IsError == y.IsError &&
			bytes.Equal(x.Raw, y.Raw) && blocksEqual(x.Content, y.Content)
	})
}

func toolsEqual(a, b []tape.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y tape.Tool) bool {
		return x.Name == y.Name && x.Description == y.Description && x.Kind == y.Kind &&
			bytes.Equal(x.InputSchema, y.InputSchema)
	})
}

// pieceEncoder encodes values the way tape.Marshal does (compact, no HTML escaping) into
// fresh slices that rows may keep.
type pieceEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func (p *pieceEncoder) encode(v any) ([]byte, error) {
	if p.enc == nil {
		p.enc = json.NewEncoder(&p.buf)
		p.enc.SetEscapeHTML(false)
	}
	p.buf.Reset()
	if err := p.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode column: %w", err)
	}
	b := p.buf.Bytes()
	return bytes.Clone(b[:len(b)-1]), nil
}

func ptr[T any](v T) *T { return &v }
