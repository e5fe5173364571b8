package cli

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/seal"
)

func init() {
	register(&command{name: "verify", summary: "check that tapes were not altered: their digest chains, root and signature", run: runVerify})
}

// verifyResult is one file's entry in verify --json.
type verifyResult struct {
	File  string `json:"file"`
	State string `json:"state"` // ok, no digests, mismatch, error
	Steps int    `json:"steps"`
	Root  string `json:"root,omitempty"`
	// Signed and SignatureOK say whether the tape is signed and the signature verified.
	Signed      bool `json:"signed"`
	SignatureOK bool `json:"signature_ok"`
	// Pointer and Problem name the first part that does not match.
	Pointer string `json:"pointer,omitempty"`
	Problem string `json:"problem,omitempty"`
	Error   string `json:"error,omitempty"`
}

func runVerify(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "verify", "[--key PUB] [--require-digests] [--json] [-q] TAPE|DIR...", `
Checks each tape's digests: every step's link in its thread's chain (SHA-256 over the step's
canonical encoding and the link before it, a thread's first link bound to the tape's id), the
hash of meta, and the root over the threads' last links; with a signature, that it verifies.
Prints "FILE: ok (N steps, root sha256:...)" for a tape that verifies, and for one that does not
the first part that does not match, by JSON pointer:
  run.json: mismatch at /threads/0/steps/3: the step does not match its digest ...
A tape without digests (written before they existed, or with --no-digests) prints
"FILE: no digests" and is no failure, unless --require-digests or --key.

The digests show a tape was not changed by accident or by someone who did not recompute them;
anyone can recompute them. Only a signature (record --sign KEY, checked with --key PUB) shows
who wrote the tape. Keys: an ed25519 key as PEM (openssl genpkey -algorithm ed25519; the public
half with openssl pkey -pubout) or as hex (the private key's 32-byte seed, the public key's 32
bytes).

Exits 0 when every tape verifies, 1 when any does not or cannot be read.`)
	keyFile := fs.String("key", "", "the ed25519 public key every tape must be signed with (PEM or 64 hex digits)")
	require := fs.Bool("require-digests", false, "a tape without digests fails")
	asJSON := fs.Bool("json", false, `print a JSON array of {"file", "state", "steps", "root", "signed", "signature_ok", "pointer", "problem", "error"}`)
	quiet := fs.Bool("q", false, "print nothing for tapes that verify")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(env, fs, "want at least one tape file")
	}
	var pub ed25519.PublicKey
	if *keyFile != "" {
		key, err := readPublicKey(*keyFile)
		if err != nil {
			return usageError(env, fs, "--key: %v", err)
		}
		pub = key
	}
	paths, err := tapeArgs(fs.Args())
	if err != nil {
		return failf(env, "verify", "%v", err)
	}
	out := make([]verifyResult, len(paths))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range paths {
		g.Go(func() error {
			out[i] = verifyFile(ctx, p, pub, *require)
			return nil
		})
	}
	g.Wait()
	bad := 0
	for _, r := range out {
		if r.State != string(tape.DigestsOK) && !(r.State == string(tape.DigestsNone) && !*require) {
			bad++
		}
	}
	if err := writeReport(env, *asJSON, out, func() {
		for _, r := range out {
			switch r.State {
			case string(tape.DigestsOK):
				if !*quiet {
					signed := ""
					if r.SignatureOK {
						signed = ", signature ok"
					}
					fmt.Fprintf(env.Stdout, "%s: ok (%s, root %s%s)\n", r.File, plural(r.Steps, "step"), r.Root, signed)
				}
			case string(tape.DigestsNone):
				if !*quiet || *require {
					fmt.Fprintf(env.Stdout, "%s: no digests\n", r.File)
				}
			case string(tape.DigestsMismatch):
				fmt.Fprintf(env.Stdout, "%s: mismatch at %s: %s\n", r.File, r.Pointer, r.Problem)
			default:
				fmt.Fprintf(env.Stdout, "%s: %s\n", r.File, r.Error)
			}
		}
	}); err != nil {
		return failf(env, "verify", "write report: %v", err)
	}
	if bad > 0 {
		return failf(env, "verify", "%d of %d tapes do not verify", bad, len(out))
	}
	return ExitOK
}

func verifyFile(ctx context.Context, path string, pub ed25519.PublicKey, require bool) verifyResult {
	r := verifyResult{File: path}
	if err := ctx.Err(); err != nil {
		r.State, r.Error = "error", err.Error()
		return r
	}
	f, err := os.Open(path)
	if err != nil {
		r.State, r.Error = "error", fmt.Sprintf("verify: %v", err)
		return r
	}
	defer f.Close()
	v, err := seal.Verify(bufio.NewReaderSize(f, 1<<20), pub)
	if err != nil {
		r.State, r.Error = "error", err.Error()
		return r
	}
	r.State, r.Steps, r.Root, r.Signed, r.SignatureOK, r.Pointer, r.Problem = string(v.State), v.Steps, v.Root, v.Signed, v.SignatureOK, v.Pointer, v.Problem
	if v.State == tape.DigestsNone && require {
		r.Problem = "no digests (--require-digests)"
	}
	return r
}
