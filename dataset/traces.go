package dataset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// TraceRow is one row of the traces table: one session file of a tape (one per thread), in
// the Hugging Face Hub's agent-traces schema, the columns its `datasets` library gives the
// session files of Claude Code, Codex, Pi and the Session Trace Simple format and that its
// trace viewer shows. The card describes Messages and Tools as lists of json, Metadata and
// Trace as json (the library's Json feature, stored as JSON text); the others as strings
// and int64, every one nullable, as the library's features are.
type TraceRow struct {
	// Harness is the Hub's harness id: claude_code, codex, or an STS file's harness.
	Harness string `parquet:"harness,dict"`
	// SessionID is the id of the session the file belongs to.
	SessionID string `parquet:"session_id"`
	// Prompt is the user's first message (null when the thread has none); SentAt when it
	// was sent, as the session file writes it (2026-04-01T10:01:00.000Z).
	Prompt *string `parquet:"prompt,optional" dataset:"text"`
	// Messages are the thread's chat messages, Tools the tools it was offered: one JSON
	// object each.
	Messages []string `parquet:"messages,list" dataset:"json"`
	Tools    []string `parquet:"tools,list" dataset:"json"`
	// Metadata is a JSON object: tape and thread ids, model, provider, usage and so on.
	Metadata        string  `parquet:"metadata" dataset:"text,json"`
	SentAt          *string `parquet:"sent_at,optional"`
	NumUserMessages int64   `parquet:"num_user_messages"`
	NumToolCalls    int64   `parquet:"num_tool_calls"`
	// Trace is the session file's content, JSON-encoded as a string (the file is JSON
	// lines, one value only when it has one line), as the Hub stores it.
	Trace string `parquet:"trace" dataset:"text,json"`
	// FilePath is the session file, relative to the dataset folder
	// (traces/claude-code/<project>/<session>.jsonl): ExportOptions.Traces writes it there.
	FilePath string `parquet:"file_path"`
}

// TracesFunc gives the traces rows of a tape: path is its file, data the file's content
// (valid against the schema; not to be kept after the call). An error makes the tape
// invalid, reported with its file.
type TracesFunc func(ctx context.Context, path string, data []byte) ([]TraceRow, error)

// TraceJSON is a session file as the traces table's trace column holds it, as the Hub's
// datasets library stores it: the file's text itself when it is one JSON value (a file of
// one line), else the text as a JSON string.
func TraceJSON(data []byte) string {
	if json.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(data)) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// ReadTraces reads the traces table of a split of the dataset folder dir, in row order
// (none when the split has no traces table).
func ReadTraces(dir, split string) ([]TraceRow, error) {
	l, err := scanLayout(dir)
	if err != nil {
		return nil, fmt.Errorf("read traces: %s: %w", dir, err)
	}
	_, files := l.primary(configTraces, split)
	var out []TraceRow
	for _, f := range files {
		err := readShard(f, tracesTable, 256, func(_ int64, rows []TraceRow) error {
			out = append(out, rows...)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read traces: %w", err)
		}
	}
	return out, nil
}
