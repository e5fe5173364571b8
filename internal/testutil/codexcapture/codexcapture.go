// Package codexcapture turns the trimmed Codex 0.171.0 request captures of
// docs/captures/codex-subagent into requests a gateway takes: the headers as captured
// (Authorization replaced by a placeholder key) and a JSON body whose elided parts are
// filled back in.
package codexcapture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
)

// Dir is docs/captures/codex-subagent of this module.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "captures", "codex-subagent")
}

var (
	elided   = regexp.MustCompile(`^…\[first (\d+) input items`)
	function = regexp.MustCompile(`^<function (\w+)\(`)
	custom   = regexp.MustCompile(`^<custom (\w+)`)
	builtin  = regexp.MustCompile(`^<(\w+)>$`)
)

// Load reads the capture name (v2-3-child-request.txt) of Dir. An input item elided as
// "…[first N input items: …]" becomes the first N input items of prefix's body (a capture
// name; as many as it has), and a tool summarised as "<function NAME(…)>", "<custom NAME …>"
// or "<TYPE>" a minimal tool of that kind.
func Load(name, prefix string) (http.Header, []byte, error) {
	h, body, err := read(name)
	if err != nil {
		return nil, nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, nil, fmt.Errorf("capture %s: body: %w", name, err)
	}
	var fill []any
	if prefix != "" {
		_, pb, err := Load(prefix, "")
		if err != nil {
			return nil, nil, err
		}
		var p map[string]any
		if err := json.Unmarshal(pb, &p); err != nil {
			return nil, nil, fmt.Errorf("capture %s: body: %w", prefix, err)
		}
		fill, _ = p["input"].([]any)
	}
	var input []any
	for _, it := range doc["input"].([]any) {
		s, ok := it.(string)
		if !ok {
			input = append(input, it)
			continue
		}
		m := elided.FindStringSubmatch(s)
		if m == nil {
			return nil, nil, fmt.Errorf("capture %s: input item %q", name, s)
		}
		n, _ := strconv.Atoi(m[1])
		input = append(input, fill[:min(n, len(fill))]...)
	}
	doc["input"] = input
	tools, _ := doc["tools"].([]any)
	for i, t := range tools {
		s, ok := t.(string)
		if !ok {
			continue
		}
		switch {
		case function.MatchString(s):
			tools[i] = map[string]any{"type": "function", "name": function.FindStringSubmatch(s)[1], "parameters": map[string]any{"type": "object"}}
		case custom.MatchString(s):
			tools[i] = map[string]any{"type": "custom", "name": custom.FindStringSubmatch(s)[1]}
		case builtin.MatchString(s):
			tools[i] = map[string]any{"type": builtin.FindStringSubmatch(s)[1]}
		default:
			return nil, nil, fmt.Errorf("capture %s: tool %q", name, s)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("capture %s: %w", name, err)
	}
	return h, out, nil
}

// read splits a capture into its headers and its body (after the first blank line); the
// leading "#" comment and the request line are skipped.
func read(name string) (http.Header, []byte, error) {
	data, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		return nil, nil, fmt.Errorf("capture %s: %w", name, err)
	}
	head, body, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return nil, nil, fmt.Errorf("capture %s: no blank line before the body", name)
	}
	h := http.Header{}
	sc := bufio.NewScanner(bytes.NewReader(head))
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, ": ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch strings.ToLower(k) {
		case "host", "content-length", "accept-encoding":
			continue
		case "authorization":
			v = "Bearer sk-placeholder"
		}
		h.Set(k, v)
	}
	return h, body, nil
}
