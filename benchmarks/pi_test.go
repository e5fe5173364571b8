package benchmarks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tapebox/tapebox/interop"
	"github.com/tapebox/tapebox/tape"
)

// piAPI names, as a Pi session does, the wire API of a tape's provider.
var piAPI = map[tape.Provider]string{
	tape.ProviderAnthropic:       "anthropic-messages",
	tape.ProviderOpenAIChat:      "openai-completions",
	tape.ProviderOpenAIResponses: "openai-responses",
}

// writePiSessions writes the main thread of every tape at paths as a Pi session file
// under out (TapeBox has no Pi export: this is the benchmark's corpus for import-pi), and
// returns the bytes written: a linear chain of entries, the first step's user messages,
// then per step the assistant message and its tool results.
func writePiSessions(paths []string, out string) (int64, error) {
	var total int64
	for i, p := range paths {
		tp, err := interop.LoadFor(p, interop.STS)
		if err != nil {
			return 0, err
		}
		n, err := writePiSession(tp, filepath.Join(out, fmt.Sprintf("--bench--/%06d.jsonl", i)))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		total += n
	}
	return total, nil
}

func writePiSession(tp *tape.Tape, path string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(f)
	var n int64
	var parent any
	seq := 0
	line := func(v map[string]any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		n += int64(len(b)) + 1
		_, err = w.Write(append(b, '\n'))
		return err
	}
	entry := func(msg map[string]any) error {
		seq++
		id := fmt.Sprintf("%08x", seq)
		err := line(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-11-30T10:00:00.000Z", "message": msg})
		parent = id
		return err
	}
	text := func(bs []tape.Block) []map[string]any {
		out := []map[string]any{}
		for _, b := range bs {
			if b.Type == tape.BlockText {
				out = append(out, map[string]any{"type": "text", "text": b.Text})
			}
		}
		return out
	}
	err = line(map[string]any{"type": "session", "version": 3, "id": tp.Meta.TapeID, "timestamp": "2026-11-30T10:00:00.000Z", "cwd": tp.Meta.Cwd})
	main := tp.Main()
	for i, st := range main.Steps {
		if err != nil {
			break
		}
		if i == 0 {
			for _, m := range st.Request.Messages {
				if m.Role == "user" && err == nil {
					err = entry(map[string]any{"role": "user", "content": text(m.Content)})
				}
			}
		}
		content := []map[string]any{}
		for _, b := range st.Response.Content {
			switch b.Type {
			case tape.BlockText:
				content = append(content, map[string]any{"type": "text", "text": b.Text})
			case tape.BlockThinking:
				content = append(content, map[string]any{"type": "thinking", "thinking": b.Text})
			case tape.BlockToolUse:
				content = append(content, map[string]any{"type": "toolCall", "id": b.ID, "name": b.Name, "arguments": b.Input})
			}
		}
		u := st.Response.Usage
		if err == nil {
			err = entry(map[string]any{"role": "assistant", "content": content, "api": piAPI[tp.Meta.Provider], "provider": "bench", "model": tp.Meta.Model,
				"usage": map[string]any{"input": u.InputTokens, "output": u.OutputTokens, "cacheRead": u.CacheReadInputTokens, "cacheWrite": u.CacheCreationInputTokens}, "stopReason": "stop"})
		}
		for _, r := range st.ToolResults {
			if err == nil {
				err = entry(map[string]any{"role": "toolResult", "toolCallId": r.ToolCallID, "toolName": "bash", "content": text(r.Content), "isError": r.IsError})
			}
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}
