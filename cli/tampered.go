package cli

import (
	"flag"
	"fmt"
	"os"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

// allowTamperedFlag adds --allow-tampered, for the verbs that act on a tape (replay, fork,
// dataset export and import).
func allowTamperedFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("allow-tampered", false, "act on a tape whose digests do not match (it was changed after it was recorded); by default such a tape is refused, naming the changed part")
}

// loadTapeToAct is loadValidTape for a verb that acts on the tape: a tape that carries
// digests which do not match (seal.Check) is refused, naming the first changed part, unless
// allowTampered, which acts on it with a warning.
func loadTapeToAct(env *Env, verb, path string, allowTampered bool) (*tape.Tape, int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, failf(env, verb, "%v", err)
	}
	t, code := decodeValidTape(env, verb, path, data)
	if t == nil {
		return nil, code
	}
	if err := seal.Check(t, data); err != nil {
		if !allowTampered {
			return nil, failf(env, verb, "%s: %v; run \"tapebox verify %s\", or act on it anyway with --allow-tampered", path, term.Printable(err.Error()), path)
		}
		fmt.Fprintf(env.Stderr, "tapebox %s: warning: %s: %s; acting on it anyway (--allow-tampered)\n", verb, path, term.Printable(err.Error()))
	}
	return t, ExitOK
}

// flagBool is the value of the boolean flag name of fs (false when fs has none).
func flagBool(fs *flag.FlagSet, name string) bool {
	if f := fs.Lookup(name); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			b, _ := g.Get().(bool)
			return b
		}
	}
	return false
}
