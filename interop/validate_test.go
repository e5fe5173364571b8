package interop

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/schema"
	"github.com/tapebox/tapebox/tape"
)

// TestImportedArtifactsValidate: every tape an import gives (from Claude Code, Codex, STS
// and Pi files), normalized and synthesized, validates against the tape schema; every export of
// it is readable again, its ATIF passes the v1.7 check, and OTLP says what it lacks.
func TestImportedArtifactsValidate(t *testing.T) {
	atif := atifSchema(t)
	for _, c := range []struct {
		tape   string
		format Format
	}{{"claude-code.json", ClaudeCode}, {"codex.json", Codex}, {"claude-code.json", STS}, {"codex.json", STS}, {piFixture, Pi}} {
		t.Run(string(c.format)+"/"+c.tape, func(t *testing.T) {
			var files []File
			var err error
			if c.format == Pi { // not an export format: a hand-written session
				b, rerr := os.ReadFile(c.tape)
				require.NoError(t, rerr)
				files = []File{{Path: "--home-u-proj--/session.jsonl", Data: b}}
			} else {
				files, err = Export(loadTestTape(t, c.tape), c.format, Options{})
				require.NoError(t, err)
			}
			dir := t.TempDir()
			writeFiles(t, dir, files)
			tapes, err := Import(Auto, dir)
			require.NoError(t, err)
			require.Len(t, tapes, 1)
			imp := tapes[0]
			valid := func(what string) {
				data, err := tape.Marshal(imp)
				require.NoError(t, err)
				require.NoError(t, schema.Validate(data), "%s tape", what)
			}
			valid("imported")

			formats := []Format{STS, ATIF}
			switch imp.Meta.Provider {
			case tape.ProviderAnthropic:
				formats = append(formats, ClaudeCode)
			case tape.ProviderOpenAIResponses:
				formats = append(formats, Codex)
			}
			for _, f := range formats {
				out, err := Export(imp, f, Options{})
				require.NoError(t, err, "export %s of the imported tape", f)
				require.NotEmpty(t, out)
				if f == ATIF {
					for _, x := range out {
						assert.Empty(t, checkATIF(t, atif, x.Data), "ATIF of the imported tape")
					}
					continue
				}
				again := t.TempDir()
				writeFiles(t, again, out)
				back, err := Import(f, again)
				require.NoError(t, err, "the %s export of the imported tape imports", f)
				require.Len(t, back, 1)
				assert.Equal(t, calls(imp), calls(back[0]))
			}
			_, err = Export(imp, OTLP, Options{})
			if imp.Meta.Labels[LabelTiming] != "" {
				require.NoError(t, err, "OTLP of an imported tape timed by its entries")
			} else {
				var missing *MissingError
				require.True(t, errors.As(err, &missing), "OTLP of an imported tape without timing: %v", err)
			}

			require.NoError(t, Synthesize(imp))
			valid("synthesized")
		})
	}
	// The check is not vacuous: a tape the import got wrong does not validate.
	files, err := Export(loadTestTape(t, "codex.json"), STS, Options{})
	require.NoError(t, err)
	dir := t.TempDir()
	writeFiles(t, dir, files)
	tapes, err := Import(STS, dir)
	require.NoError(t, err)
	tapes[0].Threads[0].Steps[0].ToolCalls[0].Kind = "freeform"
	data, err := tape.Marshal(tapes[0])
	require.NoError(t, err)
	require.Error(t, schema.Validate(data))
}
