package controller_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/executor/harness"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// BenchmarkReplayWorkspace measures what the workspace adds to a local replay: a five-step
// Bash tape replayed from an empty directory, and the same tape carrying a 50 MB, 5,000-file
// start snapshot (restored before step 1) and its end manifest (read after the last step).
func BenchmarkReplayWorkspace(b *testing.B) {
	src := b.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		d := filepath.Join(src, fmt.Sprintf("pkg%02d", i%50))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		data := make([]byte, 10<<10)
		for j := range data {
			data[j] = "abcdefgh ijklmnop\n"[rng.IntN(18)]
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.txt", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmds := []string{"true", "true", "true", "true", "true"}
	outs := []string{"(Bash completed with no output)", "(Bash completed with no output)", "(Bash completed with no output)", "(Bash completed with no output)", "(Bash completed with no output)"}
	path := filepath.Join(b.TempDir(), "run.json")
	info, err := workspace.SnapshotFile(b.Context(), src, workspace.SnapshotPath(path), workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := workspace.ManifestDir(b.Context(), src, workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	with := bashTape(cmds, outs)
	with.Meta.Workspace = &tape.Workspace{Snapshot: filepath.Base(workspace.SnapshotPath(path)), Digest: info.Digest, Size: info.Size,
		Files: info.Files, Bytes: info.Bytes, Exclude: workspace.Options{}.Patterns(), End: m.TapeEntries()}
	without := bashTape(cmds, outs)
	for _, bc := range []struct {
		name string
		rec  *tape.Tape
		snap string
	}{{"empty", without, ""}, {"50MB-5000-files", with, workspace.SnapshotPath(path)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				dir := filepath.Join(b.TempDir(), "w")
				sb, err := sandbox.Open(b.Context(), "local:"+dir, sandbox.Options{})
				if err != nil {
					b.Fatal(err)
				}
				res, err := controller.Replay(b.Context(), bc.rec, sb, controller.Options{Cwd: sb.Cwd(), Snapshot: bc.snap})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(res.RestoreTime.Milliseconds()), "restore-ms")
				b.ReportMetric(float64(res.ManifestTime.Milliseconds()), "manifest-ms")
				sb.Close(b.Context())
				os.RemoveAll(harness.DefaultStateDir(dir))
				os.RemoveAll(dir)
			}
		})
	}
}
