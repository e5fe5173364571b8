package tape

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// The field table: every object of the format, its members in the order the canonical
// encoding writes them, when a member is left out, and how its value is written and read.
// It is the one place that spells out the format's layout: the encoder (Marshal), the
// Writer's pieces, the decoder (Unmarshal, Decode), the summary reader (Summarize) and the
// digests (Seal, Verify) all take keys, order and omission from it. A field added to a
// type is added here, once; TestEdgeTapeSetsEveryField and TestFieldTableCoversTypes fail
// until it is.

// field is one member of an object whose Go type is T.
type field[T any] struct {
	key    string
	member string // the key's JSON text and the colon: "key":
	// omit reports that the encoding leaves the member out (omitempty, omitzero); nil
	// for a member always written.
	omit func(*T) bool
	enc  func(*enc, *T)
	dec  func(*decoder, *T) error
	// sub is the object type of the value, or of a list's elements; nil for other values.
	sub  func() *shape
	list bool
	// cut says what a summary leaves out of the value (cutBody, cutStream).
	cut cut
}

// cut is what Summarize leaves out of a member's value.
type cut uint8

const (
	cutNothing cut = iota
	cutBody        // a raw body: null unless SmallBody bytes or fewer
	cutStream      // the stream's chunks: []
)

// shape is an object type of the format without its Go type: the view of the table that
// readers walking JSON rather than Go values (Summarize, Verify) use.
type shape struct {
	name string
	keys []string
	subs []func() *shape
	list []bool
	cuts []cut
	// holdsCuts says a value of this type holds something a summary leaves out, at any
	// depth.
	holdsCuts bool
}

// field returns the index of key, or -1.
func (s *shape) field(key string) int {
	for i, k := range s.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// object is the table of an object type T.
type object[T any] struct {
	shape
	fields []field[T]
}

// define fills o with its fields.
func define[T any](o *object[T], name string, fields ...field[T]) {
	o.name = name
	o.fields = fields
	for i := range fields {
		f := &o.fields[i]
		f.member = string(jsonlex.AppendString(nil, f.key, false)) + ":"
		o.keys = append(o.keys, f.key)
		o.subs = append(o.subs, f.sub)
		o.list = append(o.list, f.list)
		o.cuts = append(o.cuts, f.cut)
	}
	if len(fields) > 64 {
		panic("tape: an object type of more than 64 fields")
	}
}

// The object types of the format. Each table is filled on first use, by its accessor
// (tapeTable, stepTable...), not by init: the executor links this package for
// AppendToolResult and AppendToolCall, and a table filled at init would link every
// reader and writer of the format into it. A table refers to the tables of its members
// through their accessors, so that filling one fills no other.
var (
	tapeObj       lazyObject[Tape]
	metaObj       lazyObject[Meta]
	redactionObj  lazyObject[Redaction]
	workspaceObj  lazyObject[Workspace]
	fileEntryObj  lazyObject[FileEntry]
	limitsObj     lazyObject[Limits]
	forkedFromObj lazyObject[ForkedFrom]
	endedObj      lazyObject[Ended]
	threadObj     lazyObject[Thread]
	stepObj       lazyObject[Step]
	requestObj    lazyObject[Request]
	messageObj    lazyObject[Message]
	toolObj       lazyObject[Tool]
	responseObj   lazyObject[Response]
	usageObj      lazyObject[Usage]
	chunkObj      lazyObject[Chunk]
	toolCallObj   lazyObject[ToolCall]
	toolResultObj lazyObject[ToolResult]
	timingObj     lazyObject[Timing]
	blockObj      lazyObject[Block]
	digestObj     lazyObject[Digest]
)

// lazyObject is a table filled once, by its accessor.
type lazyObject[T any] struct {
	once sync.Once
	o    object[T]
}

// get fills the table with fields() the first time and returns it.
func (l *lazyObject[T]) get(name string, fields func() []field[T]) *object[T] {
	l.once.Do(func() { define(&l.o, name, fields()...) })
	return &l.o
}

// Where a member is left out.
const (
	always    = false
	omitEmpty = true
)

func tapeTable() *object[Tape] {
	return tapeObj.get("tape", func() []field[Tape] {
		return []field[Tape]{
			intField("version", always, func(t *Tape) *int { return &t.Version }),
			objField("meta", func(t *Tape) *Meta { return &t.Meta }, metaTable),
			ptrListField("threads", func(t *Tape) *[]*Thread { return &t.Threads }, threadTable),
			optField("digest", omitEmpty, func(t *Tape) **Digest { return &t.Digest }, digestTable),
		}
	})
}

func metaTable() *object[Meta] {
	return metaObj.get("meta", func() []field[Meta] {
		return []field[Meta]{
			strField("tape_id", always, func(m *Meta) *string { return &m.TapeID }),
			strField("harness", always, func(m *Meta) *string { return &m.Harness }),
			strField("harness_version", always, func(m *Meta) *string { return &m.HarnessVersion }),
			strField("provider", always, func(m *Meta) *Provider { return &m.Provider }),
			strField("model", always, func(m *Meta) *string { return &m.Model }),
			strField("cwd", omitEmpty, func(m *Meta) *string { return &m.Cwd }),
			timeField("started_at", func(m *Meta) *time.Time { return &m.StartedAt }),
			mapField("task", func(m *Meta) *map[string]string { return &m.Task }, (*decoder).str, appendStr),
			optStrField("replay_of", func(m *Meta) **string { return &m.ReplayOf }),
			mapField("labels", func(m *Meta) *map[string]string { return &m.Labels }, (*decoder).str, appendStr),
			optField("workspace", omitEmpty, func(m *Meta) **Workspace { return &m.Workspace }, workspaceTable),
			optField("limits", omitEmpty, func(m *Meta) **Limits { return &m.Limits }, limitsTable),
			optField("forked_from", omitEmpty, func(m *Meta) **ForkedFrom { return &m.ForkedFrom }, forkedFromTable),
			optField("ended", always, func(m *Meta) **Ended { return &m.Ended }, endedTable),
			listField("redactions", omitEmpty, func(m *Meta) *[]Redaction { return &m.Redactions }, redactionTable),
		}
	})
}

func redactionTable() *object[Redaction] {
	return redactionObj.get("redaction", func() []field[Redaction] {
		return []field[Redaction]{
			strField("rule", always, func(r *Redaction) *string { return &r.Rule }),
			strField("pointer", always, func(r *Redaction) *string { return &r.Pointer }),
		}
	})
}

func workspaceTable() *object[Workspace] {
	return workspaceObj.get("workspace", func() []field[Workspace] {
		return []field[Workspace]{
			strField("snapshot", omitEmpty, func(w *Workspace) *string { return &w.Snapshot }),
			strField("digest", omitEmpty, func(w *Workspace) *string { return &w.Digest }),
			intField("size", omitEmpty, func(w *Workspace) *int64 { return &w.Size }),
			intField("files", omitEmpty, func(w *Workspace) *int { return &w.Files }),
			intField("bytes", omitEmpty, func(w *Workspace) *int64 { return &w.Bytes }),
			strListField("exclude", func(w *Workspace) *[]string { return &w.Exclude }),
			// omitzero: an empty manifest (an empty workspace) is written as [].
			withOmit(listField("end", always, func(w *Workspace) *[]FileEntry { return &w.End }, fileEntryTable),
				func(w *Workspace) bool { return w.End == nil }),
		}
	})
}

func fileEntryTable() *object[FileEntry] {
	return fileEntryObj.get("file entry", func() []field[FileEntry] {
		return []field[FileEntry]{
			strField("path", always, func(f *FileEntry) *string { return &f.Path }),
			strField("type", always, func(f *FileEntry) *string { return &f.Type }),
			strField("mode", always, func(f *FileEntry) *string { return &f.Mode }),
			intField("size", always, func(f *FileEntry) *int64 { return &f.Size }),
			strField("sha256", omitEmpty, func(f *FileEntry) *string { return &f.SHA256 }),
			strField("link", omitEmpty, func(f *FileEntry) *string { return &f.Link }),
		}
	})
}

func limitsTable() *object[Limits] {
	return limitsObj.get("limits", func() []field[Limits] {
		return []field[Limits]{
			floatField("max_cost_usd", omitEmpty, func(l *Limits) *float64 { return &l.MaxCostUSD }),
			intField("max_steps", omitEmpty, func(l *Limits) *int { return &l.MaxSteps }),
			intField("max_thread_steps", omitEmpty, func(l *Limits) *int { return &l.MaxThreadSteps }),
			intField("max_tokens", omitEmpty, func(l *Limits) *int64 { return &l.MaxTokens }),
			intField("max_repeat", omitEmpty, func(l *Limits) *int { return &l.MaxRepeat }),
		}
	})
}

func forkedFromTable() *object[ForkedFrom] {
	return forkedFromObj.get("forked_from", func() []field[ForkedFrom] {
		return []field[ForkedFrom]{
			strField("tape_id", always, func(f *ForkedFrom) *string { return &f.TapeID }),
			strField("thread", always, func(f *ForkedFrom) *string { return &f.Thread }),
			intField("step", always, func(f *ForkedFrom) *int { return &f.Step }),
			mapField("served", func(f *ForkedFrom) *map[string]int { return &f.Served }, (*decoder).integerInt, appendInt),
			mapField("overrides", func(f *ForkedFrom) *map[string]string { return &f.Overrides }, (*decoder).str, appendStr),
		}
	})
}

func endedTable() *object[Ended] {
	return endedObj.get("ended", func() []field[Ended] {
		return []field[Ended]{
			strField("reason", always, func(e *Ended) *EndReason { return &e.Reason }),
			timeField("at", func(e *Ended) *time.Time { return &e.At }),
			strField("detail", omitEmpty, func(e *Ended) *string { return &e.Detail }),
			strField("limit", omitEmpty, func(e *Ended) *string { return &e.Limit }),
		}
	})
}

func threadTable() *object[Thread] {
	return threadObj.get("thread", func() []field[Thread] {
		return []field[Thread]{
			strField("id", always, func(th *Thread) *string { return &th.ID }),
			parentField("parent", func(th *Thread) **Parent { return &th.Parent }),
			stepsField("steps"),
		}
	})
}

func stepTable() *object[Step] {
	return stepObj.get("step", func() []field[Step] {
		return []field[Step]{
			objField("request", func(s *Step) *Request { return &s.Request }, requestTable),
			objField("response", func(s *Step) *Response { return &s.Response }, responseTable),
			listField("tool_calls", always, func(s *Step) *[]ToolCall { return &s.ToolCalls }, toolCallTable),
			listField("tool_results", always, func(s *Step) *[]ToolResult { return &s.ToolResults }, toolResultTable),
			objField("timing", func(s *Step) *Timing { return &s.Timing }, timingTable),
			boolField("served_from_tape", omitEmpty, func(s *Step) *bool { return &s.ServedFromTape }),
			strField("digest", omitEmpty, func(s *Step) *string { return &s.Digest }),
		}
	})
}

func requestTable() *object[Request] {
	return requestObj.get("request", func() []field[Request] {
		return []field[Request]{
			strField("path", always, func(r *Request) *string { return &r.Path }),
			systemField("system"),
			messagesField("messages"),
			toolsField("tools"),
			mapField("params", func(r *Request) *map[string]json.RawMessage { return &r.Params }, (*decoder).raw, appendRawValue),
			boolField("stream", always, func(r *Request) *bool { return &r.Stream }),
			mapField("headers", func(r *Request) *Headers { return &r.Headers }, (*decoder).str, appendStr),
			requestRawField("raw"),
		}
	})
}

func messageTable() *object[Message] {
	return messageObj.get("message", func() []field[Message] {
		return []field[Message]{
			strField("role", always, func(m *Message) *string { return &m.Role }),
			listField("content", always, func(m *Message) *[]Block { return &m.Content }, blockTable),
		}
	})
}

func toolTable() *object[Tool] {
	return toolObj.get("tool", func() []field[Tool] {
		return []field[Tool]{
			strField("name", always, func(t *Tool) *string { return &t.Name }),
			strField("description", omitEmpty, func(t *Tool) *string { return &t.Description }),
			strField("kind", always, func(t *Tool) *string { return &t.Kind }),
			rawField("input_schema", omitEmpty, func(t *Tool) *json.RawMessage { return &t.InputSchema }),
		}
	})
}

func responseTable() *object[Response] {
	return responseObj.get("response", func() []field[Response] {
		return []field[Response]{
			intField("status", always, func(r *Response) *int { return &r.Status }),
			mapField("headers", func(r *Response) *Headers { return &r.Headers }, (*decoder).str, appendStr),
			listField("content", always, func(r *Response) *[]Block { return &r.Content }, blockTable),
			strField("stop_reason", always, func(r *Response) *string { return &r.StopReason }),
			objField("usage", func(r *Response) *Usage { return &r.Usage }, usageTable),
			withCut(rawField("raw", always, func(r *Response) *json.RawMessage { return &r.Raw }), cutBody),
			withCut(listField("chunks", always, func(r *Response) *[]Chunk { return &r.Chunks }, chunkTable), cutStream),
		}
	})
}

func usageTable() *object[Usage] {
	return usageObj.get("usage", func() []field[Usage] {
		return []field[Usage]{
			intField("input_tokens", always, func(u *Usage) *int64 { return &u.InputTokens }),
			intField("output_tokens", always, func(u *Usage) *int64 { return &u.OutputTokens }),
			intField("cache_read_input_tokens", always, func(u *Usage) *int64 { return &u.CacheReadInputTokens }),
			intField("cache_creation_input_tokens", always, func(u *Usage) *int64 { return &u.CacheCreationInputTokens }),
			intField("reasoning_tokens", always, func(u *Usage) *int64 { return &u.ReasoningTokens }),
		}
	})
}

func chunkTable() *object[Chunk] {
	return chunkObj.get("chunk", func() []field[Chunk] {
		return []field[Chunk]{
			floatField("at_ms", always, func(c *Chunk) *float64 { return &c.AtMS }),
			chunkDataField("data"),
		}
	})
}

func toolCallTable() *object[ToolCall] {
	return toolCallObj.get("tool call", func() []field[ToolCall] {
		return []field[ToolCall]{
			strField("id", always, func(c *ToolCall) *string { return &c.ID }),
			strField("name", always, func(c *ToolCall) *string { return &c.Name }),
			rawField("input", always, func(c *ToolCall) *json.RawMessage { return &c.Input }),
			strField("kind", omitEmpty, func(c *ToolCall) *string { return &c.Kind }),
			strField("namespace", omitEmpty, func(c *ToolCall) *string { return &c.Namespace }),
		}
	})
}

func toolResultTable() *object[ToolResult] {
	return toolResultObj.get("tool result", func() []field[ToolResult] {
		return []field[ToolResult]{
			strField("tool_call_id", always, func(r *ToolResult) *string { return &r.ToolCallID }),
			listField("content", always, func(r *ToolResult) *[]Block { return &r.Content }, blockTable),
			boolField("is_error", always, func(r *ToolResult) *bool { return &r.IsError }),
			optFloatField("duration_ms", func(r *ToolResult) **float64 { return &r.DurationMS }),
			boolField("copied_from_tape", omitEmpty, func(r *ToolResult) *bool { return &r.CopiedFromTape }),
		}
	})
}

func timingTable() *object[Timing] {
	return timingObj.get("timing", func() []field[Timing] {
		return []field[Timing]{
			floatField("request_at", always, func(t *Timing) *float64 { return &t.RequestAt }),
			floatField("first_byte_at", always, func(t *Timing) *float64 { return &t.FirstByteAt }),
			floatField("last_byte_at", always, func(t *Timing) *float64 { return &t.LastByteAt }),
			optFloatField("next_request_at", func(t *Timing) **float64 { return &t.NextRequestAt }),
		}
	})
}

func blockTable() *object[Block] {
	return blockObj.get("block", func() []field[Block] {
		return []field[Block]{
			strField("type", always, func(b *Block) *string { return &b.Type }),
			strField("text", omitEmpty, func(b *Block) *string { return &b.Text }),
			strField("id", omitEmpty, func(b *Block) *string { return &b.ID }),
			strField("name", omitEmpty, func(b *Block) *string { return &b.Name }),
			rawField("input", omitEmpty, func(b *Block) *json.RawMessage { return &b.Input }),
			strField("tool_call_id", omitEmpty, func(b *Block) *string { return &b.ToolCallID }),
			listField("content", omitEmpty, func(b *Block) *[]Block { return &b.Content }, blockTable),
			boolField("is_error", omitEmpty, func(b *Block) *bool { return &b.IsError }),
			rawField("raw", omitEmpty, func(b *Block) *json.RawMessage { return &b.Raw }),
		}
	})
}

func digestTable() *object[Digest] {
	return digestObj.get("digest", func() []field[Digest] {
		return []field[Digest]{
			strField("algorithm", always, func(g *Digest) *string { return &g.Algorithm }),
			strField("meta", always, func(g *Digest) *string { return &g.Meta }),
			strField("root", always, func(g *Digest) *string { return &g.Root }),
			strField("public_key", omitEmpty, func(g *Digest) *string { return &g.PublicKey }),
			strField("signature", omitEmpty, func(g *Digest) *string { return &g.Signature }),
		}
	})
}

// The members the Writer, the summary reader and the digests address by name, set by
// layout.
var (
	tapeVersion, tapeMeta, tapeThreads, tapeDigest   int
	threadID, threadParent, threadSteps              int
	stepRequest, stepResponse, stepToolCalls         int
	stepToolResults, stepTiming, stepServed, stepDig int
)

var layoutOnce sync.Once

// layout fills the tables of the tape, its threads and its steps, and finds the members
// that code beyond the table addresses, so that the table stays the one place that orders
// them; it panics when one is missing. Every reader and writer of whole tapes calls it
// before it reads those.
func layout() {
	layoutOnce.Do(func() {
		at := func(s *shape, key string) int {
			i := s.field(key)
			if i < 0 {
				panic("tape: the field table lacks " + s.name + "." + key)
			}
			return i
		}
		ts, hs, ss := &tapeTable().shape, &threadTable().shape, &stepTable().shape
		tapeVersion, tapeMeta, tapeThreads, tapeDigest = at(ts, "version"), at(ts, "meta"), at(ts, "threads"), at(ts, "digest")
		threadID, threadParent, threadSteps = at(hs, "id"), at(hs, "parent"), at(hs, "steps")
		stepRequest, stepResponse, stepToolCalls = at(ss, "request"), at(ss, "response"), at(ss, "tool_calls")
		stepToolResults, stepTiming, stepServed, stepDig = at(ss, "tool_results"), at(ss, "timing"), at(ss, "served_from_tape"), at(ss, "digest")
		initStepLayout()
		initCuts(ts)
	})
}

// withOmit gives f another omission rule.
func withOmit[T any](f field[T], omit func(*T) bool) field[T] {
	f.omit = omit
	return f
}

// withCut marks what a summary leaves out of f's value.
func withCut[T any](f field[T], c cut) field[T] {
	f.cut = c
	return f
}

// The fields by kind of value. get returns where the value lives in T.

func strField[T any, S ~string](key string, omit bool, get func(*T) *S) field[T] {
	f := field[T]{key: key,
		enc: func(e *enc, v *T) { e.b = jsonlex.AppendString(e.b, string(*get(v)), false) },
		dec: func(d *decoder, v *T) error {
			s, err := d.str()
			*get(v) = S(s)
			return err
		},
	}
	if omit {
		f.omit = func(v *T) bool { return *get(v) == "" }
	}
	return f
}

func intField[T any, I int | int64](key string, omit bool, get func(*T) *I) field[T] {
	f := field[T]{key: key,
		enc: func(e *enc, v *T) { e.b = strconv.AppendInt(e.b, int64(*get(v)), 10) },
		dec: func(d *decoder, v *T) error {
			n, err := d.integer()
			*get(v) = I(n)
			return err
		},
	}
	if omit {
		f.omit = func(v *T) bool { return *get(v) == 0 }
	}
	return f
}

func floatField[T any](key string, omit bool, get func(*T) *float64) field[T] {
	f := field[T]{key: key,
		enc: func(e *enc, v *T) { e.float(*get(v)) },
		dec: func(d *decoder, v *T) (err error) {
			*get(v), err = d.float()
			return err
		},
	}
	if omit {
		f.omit = func(v *T) bool { return *get(v) == 0 }
	}
	return f
}

func boolField[T any](key string, omit bool, get func(*T) *bool) field[T] {
	f := field[T]{key: key,
		enc: func(e *enc, v *T) { e.b = strconv.AppendBool(e.b, *get(v)) },
		dec: func(d *decoder, v *T) (err error) {
			*get(v), err = d.boolean()
			return err
		},
	}
	if omit {
		f.omit = func(v *T) bool { return !*get(v) }
	}
	return f
}

// optFloatField is a *float64, null when nil.
func optFloatField[T any](key string, get func(*T) **float64) field[T] {
	return field[T]{key: key,
		enc: func(e *enc, v *T) {
			if p := *get(v); p != nil {
				e.float(*p)
			} else {
				e.null()
			}
		},
		dec: func(d *decoder, v *T) error {
			if d.null() {
				*get(v) = nil
				return nil
			}
			x, err := d.float()
			*get(v) = &x
			return err
		},
	}
}

// optStrField is a *string, null when nil.
func optStrField[T any](key string, get func(*T) **string) field[T] {
	return field[T]{key: key,
		enc: func(e *enc, v *T) {
			if p := *get(v); p != nil {
				e.b = jsonlex.AppendString(e.b, *p, false)
			} else {
				e.null()
			}
		},
		dec: func(d *decoder, v *T) error {
			if d.null() {
				*get(v) = nil
				return nil
			}
			s, err := d.str()
			*get(v) = &s
			return err
		},
	}
}

func timeField[T any](key string, get func(*T) *time.Time) field[T] {
	return field[T]{key: key,
		enc: func(e *enc, v *T) { e.time(*get(v)) },
		dec: func(d *decoder, v *T) (err error) {
			*get(v), err = d.time()
			return err
		},
	}
}

// rawField is a json.RawMessage: compacted, nil as null.
func rawField[T any](key string, omit bool, get func(*T) *json.RawMessage) field[T] {
	f := field[T]{key: key,
		enc: func(e *enc, v *T) { e.raw(*get(v)) },
		dec: func(d *decoder, v *T) (err error) {
			*get(v), err = d.raw()
			return err
		},
	}
	if omit {
		f.omit = func(v *T) bool { return len(*get(v)) == 0 }
	}
	return f
}

// mapField is a map with string keys, written with its keys sorted, nil as null.
func mapField[T any, M ~map[string]V, V any](key string, get func(*T) *M, read func(*decoder) (V, error), write func(*enc, V)) field[T] {
	return field[T]{key: key,
		enc: func(e *enc, v *T) { writeMap(e, *get(v), write) },
		dec: func(d *decoder, v *T) error { return readMap(d, get(v), read) },
	}
}

func appendStr(e *enc, s string)               { e.b = jsonlex.AppendString(e.b, s, false) }
func appendInt(e *enc, n int)                  { e.b = strconv.AppendInt(e.b, int64(n), 10) }
func appendRawValue(e *enc, r json.RawMessage) { e.raw(r) }

// strListField is a list of strings left out when empty.
func strListField[T any](key string, get func(*T) *[]string) field[T] {
	return field[T]{key: key,
		omit: func(v *T) bool { return len(*get(v)) == 0 },
		enc: func(e *enc, v *T) {
			writeList(e, *get(v), func(e *enc, s *string) { e.b = jsonlex.AppendString(e.b, *s, false) })
		},
		dec: func(d *decoder, v *T) error {
			return readList(d, get(v), func(d *decoder, s *string) (err error) {
				*s, err = d.str()
				return err
			})
		},
	}
}

// objField is an embedded object of type E.
func objField[T, E any](key string, get func(*T) *E, o func() *object[E]) field[T] {
	return field[T]{key: key, sub: shapeOf(o),
		enc: func(e *enc, v *T) { writeObject(e, o(), get(v)) },
		dec: func(d *decoder, v *T) error { return readObject(d, o(), get(v)) },
	}
}

// shapeOf is the shape accessor of a table accessor.
func shapeOf[E any](o func() *object[E]) func() *shape {
	return func() *shape { return &o().shape }
}

// optField is a *E: with omit, left out when nil; else null when nil.
func optField[T, E any](key string, omit bool, get func(*T) **E, o func() *object[E]) field[T] {
	f := field[T]{key: key, sub: shapeOf(o),
		enc: func(e *enc, v *T) {
			if p := *get(v); p != nil {
				writeObject(e, o(), p)
			} else {
				e.null()
			}
		},
		dec: func(d *decoder, v *T) error {
			if d.null() {
				d.nonCanon = d.nonCanon || omit // the encoding leaves nil out
				*get(v) = nil
				return nil
			}
			p := new(E)
			*get(v) = p
			return readObject(d, o(), p)
		},
	}
	if omit {
		f.omit = func(v *T) bool { return *get(v) == nil }
	}
	return f
}

// listField is a list of objects of type E, nil as null; with omit, left out when empty.
func listField[T, E any](key string, omit bool, get func(*T) *[]E, o func() *object[E]) field[T] {
	f := field[T]{key: key, sub: shapeOf(o), list: true,
		enc: func(e *enc, v *T) {
			t := o()
			writeList(e, *get(v), func(e *enc, x *E) { writeObject(e, t, x) })
		},
		dec: func(d *decoder, v *T) error {
			t := o()
			return readList(d, get(v), func(d *decoder, x *E) error { return readObject(d, t, x) })
		},
	}
	if omit {
		f.omit = func(v *T) bool { return len(*get(v)) == 0 }
	}
	return f
}

// ptrListField is a list of *E (threads), nil as null.
func ptrListField[T, E any](key string, get func(*T) *[]*E, o func() *object[E]) field[T] {
	return field[T]{key: key, sub: shapeOf(o), list: true,
		enc: func(e *enc, v *T) { writePtrs(e, *get(v), o()) },
		dec: func(d *decoder, v *T) error {
			t := o()
			return readList(d, get(v), func(d *decoder, x **E) error {
				*x = new(E)
				return readObject(d, t, *x)
			})
		},
	}
}

// parentField is a thread's parent, [thread id, tool call id], null when nil, as Parent's
// MarshalJSON writes it (HTML escaped).
func parentField[T any](key string, get func(*T) **Parent) field[T] {
	return field[T]{key: key,
		enc: func(e *enc, v *T) {
			p := *get(v)
			if p == nil {
				e.null()
				return
			}
			b, _ := p.MarshalJSON()
			e.b = append(e.b, b...)
		},
		dec: func(d *decoder, v *T) error {
			if d.null() {
				*get(v) = nil
				return nil
			}
			p := new(Parent)
			*get(v) = p
			return d.parent(p)
		},
	}
}

// stepsField is a thread's steps: the decoder keeps a memo of the thread's requests
// while it reads them (see threadMemo).
func stepsField(key string) field[Thread] {
	f := ptrListField(key, func(th *Thread) *[]*Step { return &th.Steps }, stepTable)
	read := f.dec
	f.dec = func(d *decoder, th *Thread) error {
		d.memo = &threadMemo{}
		defer func() { d.memo = nil }()
		return read(d, th)
	}
	return f
}

// initCuts sets holdsCuts on the shapes reachable from s.
func initCuts(s *shape) {
	var all []*shape
	seen := map[*shape]bool{}
	var walk func(*shape)
	walk = func(s *shape) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		all = append(all, s)
		for _, sub := range s.subs {
			if sub != nil {
				walk(sub())
			}
		}
	}
	walk(s)
	for changed := true; changed; {
		changed = false
		for _, s := range all {
			if s.holdsCuts {
				continue
			}
			for i, c := range s.cuts {
				if c != cutNothing || s.subs[i] != nil && s.subs[i]().holdsCuts {
					s.holdsCuts, changed = true, true
					break
				}
			}
		}
	}
}
