package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// snapshotStart takes the start snapshot of cfg.Workspace beside the tape, before the tape
// exists: a workspace over the size cap fails New, and nothing is written. The tape's own
// files are excluded when it is written inside the workspace.
func snapshotStart(ctx context.Context, cfg *Config) (*tape.Workspace, workspace.Options, error) {
	opts := cfg.WorkspaceOptions
	exclude := append(opts.Patterns(), workspace.OwnFiles(cfg.Workspace, cfg.Output)...)
	opts = workspace.Options{Exclude: slices.Compact(exclude), NoDefaultExclude: true, MaxBytes: opts.MaxBytes}
	snap := workspace.SnapshotPath(cfg.Output)
	info, err := workspace.SnapshotFile(ctx, cfg.Workspace, snap, opts)
	if err != nil {
		return nil, opts, fmt.Errorf("gateway: workspace: %w", err)
	}
	if info.Files == 0 {
		// An empty start needs no snapshot: a replay starts from an empty directory anyway.
		os.Remove(snap)
		return &tape.Workspace{Exclude: opts.Exclude}, opts, nil
	}
	return &tape.Workspace{Snapshot: filepath.Base(snap), Digest: info.Digest, Size: info.Size, Files: info.Files, Bytes: info.Bytes, Exclude: opts.Exclude}, opts, nil
}

// recordEnd writes the workspace's end manifest into the tape's meta.
func (g *Gateway) recordEnd(ctx context.Context) error {
	m, err := workspace.ManifestDir(ctx, g.cfg.Workspace, g.wsOpts)
	if err != nil {
		return fmt.Errorf("gateway: workspace end manifest: %w", err)
	}
	return g.out.updateMeta(func(meta *tape.Meta) {
		if meta.Workspace == nil {
			meta.Workspace = &tape.Workspace{Exclude: g.wsOpts.Exclude}
		}
		meta.Workspace.End = m.TapeEntries()
	})
}

// setReplayEnd puts the meta.workspace a replay tape gets in its meta: its end manifest m,
// and the exclusions of the recording's rec it was taken with.
func setReplayEnd(out *recorder, rec *tape.Workspace, m workspace.Manifest) error {
	end := &tape.Workspace{Exclude: rec.Exclude, End: m.TapeEntries()}
	return out.updateMeta(func(meta *tape.Meta) { meta.Workspace = end })
}
