package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/fork"
	"github.com/tapebox/tapebox/gateway"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// simulatorGrace is how long the simulator must see no request, once every run has finished,
// before it exits.
const simulatorGrace = 3 * time.Second

// runSimulator serves the tape's recorded responses to a real harness (simulator mode) until
// every run has finished or a signal stops it.
func runSimulator(ctx context.Context, env *Env, verb string, rec *tape.Tape, f *replayFlags) int {
	logf := func(format string, args ...any) {
		if !f.quiet {
			fmt.Fprintf(env.Stderr, "tapebox replay: %s\n", fmt.Sprintf(format, args...))
		}
	}
	sopts := gateway.SimulatorOptions{Speed: f.speed, Output: f.output, Logf: logf}
	// A warning: printed even with --quiet.
	fmt.Fprintf(env.Stderr, "tapebox replay: warning: simulator mode: %s; run it in a container or a VM for a tape you do not trust\n", fork.HostNote)
	if f.workspaceDir != "" && !f.noWorkspace {
		dir, _, err := fork.HostWorkdir(f.workspaceDir, false, rec) // checked, and clean
		if err != nil {
			return failf(env, verb, "--workspace: %v", err)
		}
		f.workspaceDir = dir
		snapshot, err := controller.SnapshotFor(f.tapePath, rec)
		if err != nil {
			return failf(env, verb, "%v", err)
		}
		if err := controller.RestoreSnapshot(ctx, rec, snapshot, f.workspaceDir); err != nil {
			return failf(env, verb, "%v", err)
		}
		sopts.Workspace = f.workspaceDir
		if f.output != "" {
			sopts.WorkspaceExclude = workspace.OwnFiles(f.workspaceDir, f.output)
		}
		logf("workspace %s: the harness must run there", f.workspaceDir)
	}
	sim, err := gateway.NewSimulator(rec, sopts)
	if err != nil {
		return failf(env, verb, "%v", err)
	}
	stopTelemetry, err := f.telemetry.start(ctx, env, "", time.Now(), f.output)
	if err != nil {
		return failf(env, verb, "%v", err)
	}
	defer stopTelemetry()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return failf(env, verb, "listen on %s: %v", f.listen, err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(env.Stderr, "tapebox replay: simulating %s (%s, %s) on http://%s; point the harness's base URL here (/r/RUN/ for concurrent runs)\n",
		rec.Meta.TapeID, rec.Meta.Harness, rec.Meta.Provider, ln.Addr())
	code := ExitOK
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-errc:
			if !errors.Is(err, http.ErrServerClosed) {
				code = failf(env, verb, "serve: %v", err)
			}
			break wait
		case <-sim.Finished():
			// A harness may still ask something after its run's last step (a late retry or
			// notification: it gets a clear error), and another run may start: stop only once
			// no request has come for simulatorGrace.
			for sim.Idle() < simulatorGrace {
				t := time.NewTimer(simulatorGrace - sim.Idle())
				select {
				case <-ctx.Done():
					t.Stop()
					break wait
				case <-t.C:
				}
			}
			break wait
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	if err := sim.Close(); err != nil {
		return failf(env, verb, "%v", err)
	}
	for _, run := range sim.Runs() {
		t := sim.RunTape(run)
		reason := "running"
		if t != nil && t.Meta.Ended != nil {
			reason = string(t.Meta.Ended.Reason)
			if t.Meta.Ended.Reason != tape.EndComplete {
				code = ExitFailure
			}
		}
		where := gateway.OutputFor(f.output, run)
		if where == "" {
			where = "(no --output)"
		}
		logf("run %s: %s; replay tape %s", run, reason, where)
	}
	return code
}
