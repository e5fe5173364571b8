package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// isOpenCode says whether argv runs the OpenCode CLI (its npm bin link, the platform binary,
// or the package's bin/opencode.exe).
func isOpenCode(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	base := filepath.Base(argv[0])
	return base == "opencode" || base == "opencode.exe"
}

// openCodeConfig is the OpenCode configuration record gives a recorded opencode: its
// built-in anthropic and openai providers keep their models and the user's credentials
// (auth.json, ANTHROPIC_API_KEY, OPENAI_API_KEY) and send their calls to the gateway, whose
// /v1/messages and /v1/responses are theirs.
func openCodeConfig(base string) []byte {
	cfg := map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{
			"anthropic": map[string]any{"options": map[string]any{"baseURL": base + "/v1"}},
			"openai":    map[string]any{"options": map[string]any{"baseURL": base + "/v1"}},
		},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n')
}

// openCodeEnv writes the configuration of openCodeConfig into a new temporary directory
// and returns the variable that makes opencode load it, and the directory's removal.
// Nothing of the user's own is written: OpenCode merges an OPENCODE_CONFIG file over the
// global ~/.config/opencode/opencode.json. When the user already names a file in
// OPENCODE_CONFIG (getenv), it keeps loading, and the configuration goes inline in
// OPENCODE_CONFIG_CONTENT instead (merged last); when both are set, nothing is added and
// the returned note says so.
func openCodeEnv(base string, getenv func(string) string) (env []string, cleanup func(), note string, err error) {
	cfg := openCodeConfig(base)
	if getenv("OPENCODE_CONFIG") != "" {
		if getenv("OPENCODE_CONFIG_CONTENT") != "" {
			return nil, func() {}, "OPENCODE_CONFIG and OPENCODE_CONFIG_CONTENT are both set: opencode's providers are left as they are; point their baseURL at $TAPEBOX_GATEWAY_URL/v1", nil
		}
		var inline bytes.Buffer
		if err := json.Compact(&inline, cfg); err != nil {
			return nil, nil, "", fmt.Errorf("opencode config: %w", err)
		}
		return []string{"OPENCODE_CONFIG_CONTENT=" + inline.String()}, func() {}, "", nil
	}
	dir, err := os.MkdirTemp("", "tapebox-opencode-")
	if err != nil {
		return nil, nil, "", fmt.Errorf("opencode config: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path := filepath.Join(dir, "opencode.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		cleanup()
		return nil, nil, "", fmt.Errorf("opencode config: %w", err)
	}
	return []string{"OPENCODE_CONFIG=" + path}, cleanup, "", nil
}
