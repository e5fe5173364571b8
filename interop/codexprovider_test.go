package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/tape"
)

// rolloutProviders reads session_meta.model_provider of every rollout of an export.
func rolloutProviders(t *testing.T, files []File) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		first, _, _ := strings.Cut(string(f.Data), "\n")
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				ModelProvider string `json:"model_provider"`
			} `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(first), &l))
		require.Equal(t, "session_meta", l.Type, f.Path)
		out = append(out, l.Payload.ModelProvider)
	}
	return out
}

// TestCodexModelProvider: the Codex export names the provider the tape says the run used
// (tapebox.codex_model_provider), openai when it says none or something that is no
// provider id, and the one given when one is; a Codex import takes it from the rollout, so
// that export -> import -> export keeps it; CodexRolloutProvider finds it in a Codex home.
func TestCodexModelProvider(t *testing.T) {
	base := loadTestTape(t, "codex.json")
	sub := agentTraceTapes(t)["codex-subagent"]
	for _, c := range []struct {
		name, label, flag string
		want              string
	}{
		{"no label", "", "", "openai"},
		{"label", "fake", "", "fake"},
		{"record's own", "tapebox", "", "tapebox"},
		{"flag overrides", "fake", "mine", "mine"},
		{"not an id", "bad id\"\n", "", "openai"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, tp := range []*tape.Tape{base, sub} {
				tp.Meta.Labels = map[string]string{}
				if c.label != "" {
					tp.Meta.Labels[LabelCodexModelProvider] = c.label
				}
				files, err := ExportCodex(tp, c.flag)
				require.NoError(t, err)
				require.Len(t, files, len(tp.Threads))
				for _, p := range rolloutProviders(t, files) {
					assert.Equal(t, c.want, p, "every thread's rollout")
				}
			}
		})
	}

	base.Meta.Labels = map[string]string{LabelCodexModelProvider: "fake"}
	files, err := ExportCodex(base, "")
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, filepath.Join(dir, "sessions"), files)
	imported, err := Import(Codex, filepath.Join(dir, "sessions"))
	require.NoError(t, err)
	require.Len(t, imported, 1)
	assert.Equal(t, "fake", imported[0].Meta.Labels[LabelCodexModelProvider], "the import reads the rollout's provider")
	again, err := ExportCodex(imported[0], "")
	require.NoError(t, err)
	assert.Equal(t, []string{"fake"}, rolloutProviders(t, again))

	id := CodexThreadID(base, base.Main())
	assert.Equal(t, "fake", CodexRolloutProvider(dir, id))
	assert.Empty(t, CodexRolloutProvider(dir, "00000000-0000-4000-8000-000000000000"), "no rollout of that thread")
	assert.Empty(t, CodexRolloutProvider(dir, "../../x"), "not a thread id")
	assert.Empty(t, CodexRolloutProvider(t.TempDir(), id), "another home")
	// A rollout that names no valid provider id gives none.
	bad := strings.Replace(string(files[0].Data), `"model_provider":"fake"`, `"model_provider":"no such id!"`, 1)
	require.NotEqual(t, string(files[0].Data), bad)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sessions", filepath.FromSlash(files[0].Path)), []byte(bad), 0o644))
	assert.Empty(t, CodexRolloutProvider(dir, id))
}
