package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// WorkspaceSandbox is a sandbox that can restore a workspace snapshot into its working
// directory and list what that directory holds (package sandbox's backends).
type WorkspaceSandbox interface {
	Sandbox
	RestoreWorkspace(ctx context.Context, snapshot string, want workspace.Info) error
	WorkspaceManifest(ctx context.Context, opts workspace.Options) (workspace.Manifest, error)
}

// ErrNoSnapshot: the tape names a start snapshot that is not beside it.
var ErrNoSnapshot = errors.New("workspace snapshot missing")

// SnapshotFor finds the start snapshot rec names (meta.workspace.snapshot, a file beside
// tapePath) and checks it against the recorded digest, size and entry count before anything
// runs. It returns "" when the tape names none. A tape from someone else may name any path:
// only a plain file name in the tape's own directory is accepted.
func SnapshotFor(tapePath string, rec *tape.Tape) (string, error) {
	w := rec.Meta.Workspace
	if w == nil || w.Snapshot == "" {
		return "", nil
	}
	name := w.Snapshot
	if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("tape %s: meta.workspace.snapshot %q: want a file name beside the tape", tapePath, name)
	}
	path := filepath.Join(filepath.Dir(tapePath), name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("tape %s names the workspace snapshot %s, which is missing (%w): put it beside the tape, or replay with --no-workspace", tapePath, path, ErrNoSnapshot)
	}
	if err != nil {
		return "", fmt.Errorf("tape %s: workspace snapshot: %w", tapePath, err)
	}
	defer f.Close()
	if err := workspace.Verify(f, workspace.InfoOf(w)); err != nil {
		return "", fmt.Errorf("tape %s: %w", tapePath, err)
	}
	return path, nil
}

// RestoreSnapshot puts a recording's start snapshot (SnapshotFor) into dir, which must be
// empty or missing, for a simulator run whose harness works there. A tape without a snapshot
// needs only the directory.
func RestoreSnapshot(ctx context.Context, rec *tape.Tape, snapshot, dir string) error {
	w := rec.Meta.Workspace
	if w == nil || w.Snapshot == "" || snapshot == "" {
		return os.MkdirAll(dir, 0o755)
	}
	f, err := os.Open(snapshot)
	if err != nil {
		return fmt.Errorf("restore the workspace: %w", err)
	}
	defer f.Close()
	if err := workspace.Restore(ctx, f, workspace.InfoOf(w), dir); err != nil {
		return fmt.Errorf("restore the workspace into %s: %w", dir, err)
	}
	return nil
}

// restoreWorkspace puts the recording's start snapshot into the sandbox, before step 1.
func (p *player) restoreWorkspace(ctx context.Context) error {
	w := p.rec.Meta.Workspace
	if p.opts.NoWorkspace || w == nil {
		return nil
	}
	if w.Snapshot == "" {
		return nil // the recording started in an empty directory
	}
	ws, ok := p.sb.(WorkspaceSandbox)
	if !ok {
		return fmt.Errorf("the tape carries a workspace snapshot, and this sandbox cannot restore one: replay with --no-workspace")
	}
	if p.opts.Snapshot == "" {
		return fmt.Errorf("the tape names the workspace snapshot %s and no path to it was given (controller.SnapshotFor): replay with --no-workspace to start from an empty directory", w.Snapshot)
	}
	start := time.Now()
	if err := ws.RestoreWorkspace(ctx, p.opts.Snapshot, workspace.InfoOf(w)); err != nil {
		return fmt.Errorf("restore the workspace: %w", err)
	}
	p.restoreTime = time.Since(start)
	p.opts.Logf("workspace: restored %s (%d entries, %d bytes) in %v", w.Snapshot, w.Files, w.Size, p.restoreTime.Round(time.Millisecond))
	return nil
}

// recordEndState reads the sandbox's end manifest into the replay tape, with the
// recording's exclusions, when the recording carries a workspace.
func (p *player) recordEndState(ctx context.Context) {
	w := p.rec.Meta.Workspace
	if p.opts.NoWorkspace || w == nil {
		return
	}
	ws, ok := p.sb.(WorkspaceSandbox)
	if !ok {
		return
	}
	start := time.Now()
	m, err := ws.WorkspaceManifest(ctx, workspace.Recorded(w, p.opts.WorkspaceExclude...))
	p.manifestTime = time.Since(start)
	if err != nil {
		p.opts.Logf("workspace: end manifest: %v", err)
		return
	}
	if err := setEndWorkspace(p.out, p.w, w, m); err != nil {
		p.opts.Logf("workspace: end manifest: %v", err)
	}
}

// setEndWorkspace puts the meta.workspace a replay tape gets in the replay's meta: its end
// manifest m, and the exclusions of the recording's rec it was taken with. It goes through w
// when the replay is written as it runs, else in out.
func setEndWorkspace(out *tape.Tape, w *tape.Writer, rec *tape.Workspace, m workspace.Manifest) error {
	end := &tape.Workspace{Exclude: rec.Exclude, End: m.TapeEntries()}
	if w == nil {
		out.Meta.Workspace = end
		return nil
	}
	return w.UpdateMeta(func(meta *tape.Meta) { meta.Workspace = end })
}
