package cli

import (
	"context"

	"github.com/tapebox/tapebox/tape"
)

// runSimulator serves the tape's recorded responses to a real harness (simulator mode).
func runSimulator(ctx context.Context, env *Env, verb string, rec *tape.Tape, f *replayFlags) int {
	return failf(env, verb, "simulator mode (--listen) is not in this build yet; use executor mode (--sandbox)")
}
