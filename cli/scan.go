package cli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/dataset"
	"github.com/tapebox/tapebox/secrets"
)

func init() {
	register(&command{name: "scan", summary: "find secrets (API keys, tokens, private keys) in tapes", run: runScan})
}

// scanResult is one file's entry in scan --json.
type scanResult struct {
	File     string            `json:"file"`
	Findings []secrets.Finding `json:"findings"`
	// Error is set when the file could not be read or is not JSON.
	Error string `json:"error,omitempty"`
}

func runScan(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "scan", "[--json] FILE|DIR...", `
Finds secrets in tapes with `+secrets.RuleSet()+`'s rule set (API keys of some 200 services,
tokens, private keys, JWTs, passwords assigned to key-like names) and rules of its own for
passwords in URLs (postgres://user:PASSWORD@host, https://user:TOKEN@github.com) and formats
gitleaks lacks:
`+wrapList(secrets.ExtraRules(), "  ", 92)+`
Every string of a tape is scanned, member names included: request and response bodies (raw,
walked as JSON), normalized messages, tool calls and results, headers, the request path with
its query string, stream chunks, meta. A string is seen with the name of the member that holds
it, so "x-custom-key: VALUE" is found. Text encoded in base64, hex or percent-encoding is
decoded and scanned too. The start snapshot a tape names (meta.workspace.snapshot) is scanned
file by file: its findings name the file inside the snapshot; a binary file (a NUL byte in
its first 8000 bytes) is scanned as its runs of printable text, as strings(1) shows them; a
snapshot that is missing or cannot be read counts as a file that could not be scanned.

Prints one line per place a secret was found, the places of one secret together:
  FILE: JSON-POINTER: RULE: PREVIEW
for example
  run.json: /threads/0/steps/3/request/raw/messages/2/content/0/text: anthropic-api-key: sk-a…
  run.json: /meta/workspace/snapshot: .env: aws-access-token: AKIA…
PREVIEW is the secret's first four characters; the secret itself is never printed.

Protocol values are not findings. In members named
`+wrapList(secrets.ProtocolFields(), "  ", 92)+`
only the rules of known key formats apply, not the generic one (a high-entropy value under
a key-like name); members named `+strings.Join(secrets.OpaqueFields(), ", ")+` are not scanned.

Directories are searched for *.json files as dataset export does (recursively, hidden files
skipped); files, and the parts of a large tape, are scanned in parallel on every core.
Exits 0 when no secret is found, 1 when one is or a file cannot be read, 2 on usage error.`)
	asJSON := fs.Bool("json", false, `print a JSON array of {"file", "findings": [{"pointer", "offset", "length", "rule", "preview", "secret", "key", "member", "in"}], "error"}; "secret" numbers the distinct secrets of a file, "key" is true for a secret in a member name, "member" names the file inside the start snapshot, "in" is "name" or "link" for a secret in its name or link target; a secret in a name is masked in every pointer and member`)
	if code, done := parse(env, fs, args); done {
		return code
	}
	pos := fs.Args()
	if len(pos) == 0 {
		return usageError(env, fs, "want at least one tape file or directory")
	}
	inputs, err := dataset.ExpandInputs(pos)
	if err != nil {
		return failf(env, "scan", "%v", err)
	}
	if len(inputs) == 0 {
		return failf(env, "scan", "no tape files in %s", strings.Join(pos, " "))
	}
	results := secrets.ScanFiles(ctx, inputPaths(inputs))
	out := make([]scanResult, len(results))
	findings, distinct, dirty, failed := 0, 0, 0, 0
	for i, r := range results {
		out[i] = scanResult{File: r.Path, Findings: secrets.Masked(r.Findings)}
		if out[i].Findings == nil {
			out[i].Findings = []secrets.Finding{}
		}
		if r.Err != nil {
			// The file's name starts the line already.
			out[i].Error = strings.TrimPrefix(r.Err.Error(), "scan "+r.Path+": ")
			failed++
		}
		if len(r.Findings) > 0 {
			dirty++
		}
		findings += len(r.Findings)
		n := 0 // Secret numbers a file's distinct secrets from 1
		for _, f := range r.Findings {
			n = max(n, f.Secret)
		}
		distinct += n
	}
	if err := writeReport(env, *asJSON, out, func() {
		for _, r := range out {
			if r.Error != "" {
				fmt.Fprintf(env.Stdout, "%s: %s\n", r.File, r.Error)
			}
			for _, f := range groupBySecret(r.Findings) { // masked above
				fmt.Fprintln(env.Stdout, f)
			}
		}
	}); err != nil {
		return failf(env, "scan", "write report: %v", err)
	}
	var problems []string
	if findings > 0 {
		problems = append(problems, fmt.Sprintf("%s of %s in %d of %d tapes", plural(findings, "finding"), plural(distinct, "secret"), dirty, len(results)))
	}
	if failed > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d tapes could not be scanned", failed, len(results)))
	}
	if len(problems) > 0 {
		return failf(env, "scan", "%s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(env.Stderr, "tapebox scan: no secrets in %s\n", plural(len(results), "tape"))
	return ExitOK
}

// tapeArgs expands the tape arguments of validate and verify: a directory stands for the
// tapes in it (*.json, recursively), as for scan and dataset export; any other argument is
// a file, reported on its own line by the verb if it cannot be read.
func tapeArgs(args []string) ([]string, error) {
	var paths []string
	for _, a := range args {
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			paths = append(paths, a)
			continue
		}
		inputs, err := dataset.ExpandInputs([]string{a})
		if err != nil {
			return nil, err
		}
		paths = append(paths, inputPaths(inputs)...)
	}
	return paths, nil
}

// inputPaths returns the paths of the tape files, for secrets.ScanFiles and secrets.Check.
func inputPaths(inputs []dataset.Input) []string {
	paths := make([]string, len(inputs))
	for i, in := range inputs {
		paths[i] = in.Path
	}
	return paths
}

// groupBySecret orders a file's findings so that the places of one secret are together,
// secrets in order of first appearance and places in tape order.
func groupBySecret(fs []secrets.Finding) []secrets.Finding {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b secrets.Finding) int { return cmp.Compare(a.Secret, b.Secret) })
	return out
}

// wrapList joins words with ", " into indented lines of at most width characters.
func wrapList(words []string, indent string, width int) string {
	var b strings.Builder
	line := indent
	for i, w := range words {
		if i < len(words)-1 {
			w += ","
		}
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line)
	return b.String()
}
