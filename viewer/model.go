package viewer

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/tape"
)

// tapeIndex is what the page knows of a tape at once: everything but the steps' detail,
// which stays compressed in the page until a step is shown.
type tapeIndex struct {
	Path    string        `json:"path"`
	Meta    metaIndex     `json:"meta"`
	Threads []threadIndex `json:"threads"`
	Steps   []stepIndex   `json:"steps"`
	Cost    costIndex     `json:"cost"`
	Totals  totalsIndex   `json:"totals"`
}

// metaIndex is the tape's meta as the page shows it: without the workspace, the limits
// and the fork record (all nil here), with the count of the end manifest's entries.
type metaIndex struct {
	tape.Meta
	// WorkspaceEntries counts the end manifest's entries; -1 when there is none.
	WorkspaceEntries int `json:"workspace_entries"`
}

type threadIndex struct {
	ID     string       `json:"id"`
	Parent *tape.Parent `json:"parent"`
	// ParentStep is the step (an index into steps) whose tool call spawned the thread, -1
	// for the main thread or when the tape lacks that call.
	ParentStep int `json:"parent_step"`
	// Steps are indexes into steps, in the thread's order.
	Steps []int `json:"steps"`
}

type stepIndex struct {
	Thread int `json:"th"`
	Index  int `json:"i"`
	// Timing: request sent, first byte, last byte, next request (nil for a thread's last step).
	Req   float64  `json:"req"`
	First float64  `json:"fb"`
	Last  float64  `json:"lb"`
	Next  *float64 `json:"next"`
	Stop  string   `json:"stop"`
	Usage [5]int64 `json:"u"` // input, output, cache read, cache write, reasoning
	Model string   `json:"model"`
	// USD is nil when the model has no price.
	USD    *float64    `json:"usd"`
	Calls  []callIndex `json:"calls"`
	Chunks int         `json:"chunks"`
	Status int         `json:"status"`
	// Blob is the offset and length, in base64 characters, of the step's detail in the
	// page's blob text.
	Blob [2]int64 `json:"b"`

	usage tape.Usage
	seq   int // the blob's number in the page
}

type callIndex struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Err says the call's result is an error; Missing that the tape has no result for it.
	Err     bool `json:"err,omitempty"`
	Missing bool `json:"missing,omitempty"`
	// Child is the thread (an index into threads) the call spawned, -1 for none.
	Child int `json:"child"`
}

type costIndex struct {
	PricesDate string              `json:"prices_date"`
	USD        *float64            `json:"usd"`
	Threads    []prices.ThreadCost `json:"threads"`
	Unpriced   []string            `json:"unpriced"`
}

type totalsIndex struct {
	Steps      int        `json:"steps"`
	ToolCalls  int        `json:"tool_calls"`
	DurationMS float64    `json:"duration_ms"`
	Usage      tape.Usage `json:"usage"`
}

// detail is one step as the page shows it on demand.
type detail struct {
	Path   string                     `json:"path"`
	Status int                        `json:"status"`
	Stream bool                       `json:"stream"`
	Params map[string]json.RawMessage `json:"params"`
	// System is set on a thread's first step and whenever it changes.
	System *string `json:"system,omitempty"`
	// Carried counts the request's messages the previous step of the thread already had,
	// which are not repeated; Dropped the new ones left out because the previous step shows
	// them (its answer and its tool results).
	Carried  int             `json:"carried"`
	Dropped  int             `json:"dropped"`
	Messages []tape.Message  `json:"messages"`
	Content  []tape.Block    `json:"content"`
	Calls    []tape.ToolCall `json:"calls"`
	// Results are the step's tool results, their content passed through as the tape has it:
	// marshal writes them after the other fields.
	Results []wireResult `json:"-"`
	Chunks  []float64    `json:"chunks"`
}

// wireStep is the part of a tape step the page uses: raw bodies, chunk data and the tool
// definitions are skipped while decoding, and messages stay raw until they are new.
type wireStep struct {
	Request struct {
		Path     string                     `json:"path"`
		System   string                     `json:"system"`
		Messages []json.RawMessage          `json:"messages"`
		Params   map[string]json.RawMessage `json:"params"`
		Stream   bool                       `json:"stream"`
	} `json:"request"`
	Response struct {
		Status     int          `json:"status"`
		Content    []tape.Block `json:"content"`
		StopReason string       `json:"stop_reason"`
		Usage      tape.Usage   `json:"usage"`
		Chunks     []struct {
			AtMS float64 `json:"at_ms"`
		} `json:"chunks"`
	} `json:"response"`
	ToolCalls   []tape.ToolCall `json:"tool_calls"`
	ToolResults []wireResult    `json:"tool_results"`
	Timing      tape.Timing     `json:"timing"`
}

// wireResult is a tool result whose content, most of a large tape, is kept as the tape's
// own JSON rather than decoded and encoded again.
type wireResult struct {
	ToolCallID string          `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	IsError    bool            `json:"is_error"`
	DurationMS *float64        `json:"duration_ms"`
}

// threadState is what the walk remembers of a thread's previous step.
type threadState struct {
	messages int
	system   string
	calls    map[string]bool
	started  bool
}

// walkTape decodes a tape's bytes one step at a time, calling step for each with the
// step's detail; it returns the index without costs and links. One pass over the bytes finds
// each thread's steps, which are then decoded on every core and handed over in order. The
// members of the tape and of its threads may come in any order.
func walkTape(path string, data []byte, step func(d *detail) (int, error)) (*tapeIndex, error) {
	ix := &tapeIndex{Path: path, Threads: []threadIndex{}, Steps: []stepIndex{}}
	ix.Meta.WorkspaceEntries = -1
	s := &scanner{data: data}
	err := s.members(func(key string) error {
		switch key {
		case "meta":
			raw, err := s.value()
			if err != nil {
				return fmt.Errorf("meta: %w", err)
			}
			var m tape.Meta
			if err := json.Unmarshal(raw, &m); err != nil {
				return fmt.Errorf("meta: %w", err)
			}
			ix.Meta = metaIndex{Meta: m, WorkspaceEntries: -1}
			if m.Workspace != nil && m.Workspace.End != nil {
				ix.Meta.WorkspaceEntries = len(m.Workspace.End)
			}
			ix.Meta.Workspace, ix.Meta.Limits = nil, nil
			return nil
		case "threads":
			return s.items(func(n int) error {
				if err := walkThread(s, ix, step); err != nil {
					return fmt.Errorf("threads/%d: %w", n, err)
				}
				return nil
			})
		default:
			_, err := s.value()
			return err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read tape %s: %w", path, err)
	}
	if s.peek() != 0 {
		return nil, fmt.Errorf("read tape %s: %w", path, s.errorf("data after the tape"))
	}
	return ix, nil
}

func walkThread(s *scanner, ix *tapeIndex, step func(d *detail) (int, error)) error {
	th := len(ix.Threads)
	ix.Threads = append(ix.Threads, threadIndex{ParentStep: -1, Steps: []int{}})
	return s.members(func(key string) error {
		switch key {
		case "id", "parent":
			raw, err := s.value()
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			dst := any(&ix.Threads[th].ID)
			if key == "parent" {
				dst = &ix.Threads[th].Parent
			}
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		case "steps":
			var spans [][]byte
			err := s.items(func(i int) error {
				raw, err := s.value()
				if err != nil {
					return fmt.Errorf("steps/%d: %w", i, err)
				}
				spans = append(spans, raw)
				return nil
			})
			if err != nil {
				return err
			}
			var st threadState
			return decodeSteps(spans, func(i int, ws *wireStep) error {
				si, d, err := st.next(th, i, ws)
				if err != nil {
					return err
				}
				if si.seq, err = step(d); err != nil {
					return err
				}
				ix.Threads[th].Steps = append(ix.Threads[th].Steps, len(ix.Steps))
				ix.Steps = append(ix.Steps, si)
				return nil
			})
		default:
			_, err := s.value()
			return err
		}
	})
}

// next turns a decoded step into its index entry and detail, and remembers what the next
// step of the thread need not repeat.
func (st *threadState) next(th, i int, ws *wireStep) (stepIndex, *detail, error) {
	u := ws.Response.Usage
	si := stepIndex{
		Thread: th, Index: i,
		Req: ws.Timing.RequestAt, First: ws.Timing.FirstByteAt, Last: ws.Timing.LastByteAt, Next: ws.Timing.NextRequestAt,
		Stop:   ws.Response.StopReason,
		Usage:  [5]int64{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.ReasoningTokens},
		usage:  u,
		Calls:  make([]callIndex, 0, len(ws.ToolCalls)),
		Chunks: len(ws.Response.Chunks),
		Status: ws.Response.Status,
	}
	if raw, ok := ws.Request.Params["model"]; ok {
		_ = json.Unmarshal(raw, &si.Model)
	}
	for _, c := range ws.ToolCalls {
		ci := callIndex{ID: c.ID, Name: c.Name, Child: -1, Missing: true}
		for _, r := range ws.ToolResults {
			if r.ToolCallID == c.ID {
				ci.Missing, ci.Err = false, r.IsError
			}
		}
		si.Calls = append(si.Calls, ci)
	}
	d := &detail{
		Path: ws.Request.Path, Status: ws.Response.Status, Stream: ws.Request.Stream, Params: ws.Request.Params,
		Content: ws.Response.Content, Calls: ws.ToolCalls, Results: ws.ToolResults,
		Chunks: make([]float64, len(ws.Response.Chunks)),
	}
	for k, c := range ws.Response.Chunks {
		d.Chunks[k] = c.AtMS
	}
	if !st.started || ws.Request.System != st.system {
		s := ws.Request.System
		d.System = &s
	}
	from := 0
	if st.started && st.messages <= len(ws.Request.Messages) {
		from = st.messages
	}
	d.Carried = from
	d.Messages = []tape.Message{}
	for k, raw := range ws.Request.Messages[from:] {
		var m tape.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return si, nil, fmt.Errorf("request/messages/%d: %w", from+k, err)
		}
		if st.started && k == 0 && m.Role == "assistant" {
			d.Dropped++ // the previous step's answer, shown there
			continue
		}
		kept := m.Content[:0:0]
		for _, b := range m.Content {
			if b.Type == tape.BlockToolResult && st.calls[b.ToolCallID] {
				continue // shown as the previous step's result
			}
			kept = append(kept, b)
		}
		if len(kept) == 0 && len(m.Content) > 0 {
			d.Dropped++
			continue
		}
		m.Content = kept
		d.Messages = append(d.Messages, m)
	}
	st.started = true
	st.messages = len(ws.Request.Messages)
	st.system = ws.Request.System
	st.calls = make(map[string]bool, len(ws.ToolCalls))
	for _, c := range ws.ToolCalls {
		st.calls[c.ID] = true
	}
	return si, d, nil
}

// finish links spawned threads to their calls and prices the steps.
func (ix *tapeIndex) finish(pt *prices.Table) {
	for ti := range ix.Threads {
		p := ix.Threads[ti].Parent
		if p == nil {
			continue
		}
		for pi := range ix.Threads {
			if ix.Threads[pi].ID != p.ThreadID {
				continue
			}
			for _, s := range ix.Threads[pi].Steps {
				for k := range ix.Steps[s].Calls {
					if ix.Steps[s].Calls[k].ID == p.ToolCallID {
						ix.Steps[s].Calls[k].Child = ti
						ix.Threads[ti].ParentStep = s
					}
				}
			}
		}
	}
	// prices.Table.Tape does the pricing; it reads each step's model parameter and usage
	// only, so a tape of just those is built for it.
	meta := tape.Meta{Model: ix.Meta.Model}
	lite := &tape.Tape{Meta: meta}
	for _, th := range ix.Threads {
		lt := &tape.Thread{ID: th.ID}
		for _, s := range th.Steps {
			si := &ix.Steps[s]
			ls := &tape.Step{Response: tape.Response{Usage: si.usage}}
			if si.Model != "" {
				m, _ := json.Marshal(si.Model)
				ls.Request.Params = map[string]json.RawMessage{"model": m}
			}
			lt.Steps = append(lt.Steps, ls)
			model := si.Model
			if model == "" {
				model = ix.Meta.Model
				si.Model = model
			}
			si.USD = pt.Cost(model, si.usage)
			ix.Totals.Steps++
			ix.Totals.ToolCalls += len(si.Calls)
			ix.Totals.Usage = ix.Totals.Usage.Add(si.usage)
			ix.Totals.DurationMS = max(ix.Totals.DurationMS, si.Last)
		}
		lite.Threads = append(lite.Threads, lt)
	}
	if e := ix.Meta.Ended; e != nil && !e.At.IsZero() && !ix.Meta.StartedAt.IsZero() {
		ix.Totals.DurationMS = max(ix.Totals.DurationMS, float64(e.At.Sub(ix.Meta.StartedAt).Microseconds())/1000)
	}
	tc := pt.Tape(lite)
	ix.Cost = costIndex{PricesDate: tc.PricesDate, USD: tc.USD, Threads: tc.Threads, Unpriced: tc.Unpriced}
	if ix.Cost.Unpriced == nil {
		ix.Cost.Unpriced = []string{}
	}
}

// marshal encodes d with its results' content copied as it is: encoding/json would scan and
// copy it once more to compact it, and it is most of a large tape.
func (d *detail) marshal() ([]byte, error) {
	js, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	n := len(js) + 16
	for _, r := range d.Results {
		n += len(r.Content) + len(r.ToolCallID) + 80
	}
	out := make([]byte, 0, n)
	out = append(out, js[:len(js)-1]...)
	out = append(out, `,"results":[`...)
	for i, r := range d.Results {
		if i > 0 {
			out = append(out, ',')
		}
		id, _ := json.Marshal(r.ToolCallID)
		out = append(out, `{"tool_call_id":`...)
		out = append(out, id...)
		out = append(out, `,"content":`...)
		if len(r.Content) == 0 {
			out = append(out, "[]"...)
		} else {
			out = append(out, r.Content...)
		}
		out = append(out, `,"is_error":`...)
		out = strconv.AppendBool(out, r.IsError)
		out = append(out, `,"duration_ms":`...)
		if r.DurationMS == nil {
			out = append(out, "null"...)
		} else {
			out = strconv.AppendFloat(out, *r.DurationMS, 'g', -1, 64)
		}
		out = append(out, '}')
	}
	return append(out, "]}"...), nil
}
