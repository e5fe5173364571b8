// Command gencorpus writes a generated tape corpus (tapegen.Generate) for the
// export benchmarks: gencorpus -n 250 -seed 1 DIR.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
)

func main() {
	n := flag.Int("n", 250, "number of tapes")
	seed := flag.Uint64("seed", 1, "seed")
	steps := flag.Int("steps", 25, "mean steps per tape")
	output := flag.Int("tool-output", 2500, "mean bytes of a tool output")
	lean := flag.Bool("lean", false, "short system prompts and tool descriptions")
	digests := flag.Bool("digests", false, "give every tape its digest chain (tape.Seal), for tapebox verify")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: gencorpus [-n N] [-seed S] [-steps N] [-tool-output B] [-lean] [-digests] DIR")
		os.Exit(2)
	}
	st, err := tapegen.Generate(context.Background(), flag.Arg(0), tapegen.Options{
		Tapes: *n, Seed: *seed, MeanSteps: *steps, MeanToolOutput: *output, Lean: *lean, Digests: *digests,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
	fmt.Printf("%d tapes, %d steps, %d bytes in %s\n", st.Tapes, st.Steps, st.Bytes, flag.Arg(0))
}
