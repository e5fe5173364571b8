package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tapebox/tapebox/sandbox/telemetry"
)

// telemetryPath returns where --telemetry writes for a tape at output: "<output stem>.telemetry.csv"
// (run.json -> run.telemetry.csv).
func telemetryPath(output string) string {
	return strings.TrimSuffix(output, filepath.Ext(output)) + ".telemetry.csv"
}

// startTelemetry samples container's CPU and memory 4 times a second into
// <output stem>.telemetry.csv, with t_ms counted from start (the tape's meta.started_at). It
// fails when there is no output path or the container is missing or stopped. stop ends the
// sampling, flushes the file and reports the number of samples; it is safe to call more than
// once. Sampling also ends by itself when ctx ends or the container stops.
func startTelemetry(ctx context.Context, env *Env, container string, start time.Time, outputPath string) (stop func(), err error) {
	if container == "" {
		return nil, errors.New("--telemetry needs a container: a docker: or docker-image: sandbox, or --container NAME")
	}
	if outputPath == "" {
		return nil, errors.New("--telemetry needs --output: the samples go next to the tape, in <output stem>.telemetry.csv")
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(env.Stderr, "tapebox %s\n", fmt.Sprintf(format, args...))
	}
	path := telemetryPath(outputPath)
	s, err := telemetry.Start(ctx, telemetry.Options{Container: container, Start: start, Path: path, Getenv: env.Getenv, Logf: logf})
	if err != nil {
		return nil, err
	}
	stopped := false
	return func() {
		if stopped {
			return
		}
		stopped = true
		if err := s.Close(); err != nil {
			logf("telemetry: %v", err)
			return
		}
		logf("telemetry: %d samples (%s) in %s", s.Rows(), s.Source(), path)
	}, nil
}

// telemetryFlags are --telemetry and --container, for the verbs that sample a container
// while they record or replay.
type telemetryFlags struct {
	on        bool
	container string
}

// addTelemetryFlags adds --telemetry to fs, and --container NAME when withContainer (gateway
// and simulator mode, where no sandbox names the container).
func addTelemetryFlags(fs *flag.FlagSet, withContainer bool) *telemetryFlags {
	tf := &telemetryFlags{}
	fs.BoolVar(&tf.on, "telemetry", false, "sample the container's CPU and memory 4 times a second into <output stem>.telemetry.csv")
	if withContainer {
		fs.StringVar(&tf.container, "container", "", "the container --telemetry samples (name or ID)")
	}
	return tf
}

// start starts sampling when --telemetry is set (see startTelemetry); --container, when
// given, wins over container (the sandbox's). Without --telemetry it does nothing and
// returns a stop that does nothing.
func (tf *telemetryFlags) start(ctx context.Context, env *Env, container string, start time.Time, outputPath string) (stop func(), err error) {
	if tf == nil || !tf.on {
		return func() {}, nil
	}
	if tf.container != "" {
		container = tf.container
	}
	return startTelemetry(ctx, env, container, start, outputPath)
}
