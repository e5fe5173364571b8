// Package secrets finds credentials in tapes (API keys, tokens, private keys, passwords)
// with gitleaks' maintained rule set, used as a library, and a few rules of its own
// (ExtraRules: passwords in URLs, formats gitleaks lacks), so that no tape with a secret
// is published.
//
// Everything a dataset publishes is scanned: every string of a tape, member names
// included (the raw request and response bodies, walked as the JSON they are, so a
// finding's pointer goes inside them; the normalized messages, tool calls and results,
// headers, stream chunks and meta), and every file of the start snapshot the tape names
// (meta.workspace.snapshot, a tar compressed with zstd beside the tape), read as the
// untrusted archive it is. A secret is reported at each place it appears, with the JSON
// pointer, the byte offset and length in the string (or in the file inside the snapshot,
// which Member names), and the rule; nothing here prints or stores a secret beyond a
// four-character preview.
//
// Protocol values that are random by design (tool-use ids, thinking signatures, encrypted
// reasoning, request ids, digests) are not findings: see the field allowlist in allow.go.
//
// # Speed
//
// Most of a tape holds no secret, and most of the rest repeats (every request carries the
// conversation so far). So each string is first looked up in a memo of the strings the
// scan has seen, then passed through one Aho–Corasick automaton over the rules' keywords
// (a dense DFA on case-folded bytes, ac.go). Only a string with a keyword (followed by a
// byte its rule allows) or with encoded text that may decode to one goes to gitleaks, and
// then only to the rules it calls for, on the spans around the keywords that a match can
// reach (window.go, engine.go). Tests hold this to gitleaks' own detector run on whole
// strings with every rule.
//
// A container (object or array) of a request body that the tape has already shown, byte for
// byte (the conversation so far, in every request), is not walked again: its findings are
// added from a memo of the containers walked (walk.go, containerMemo).
//
// Every core is used: ScanFiles scans several files at once, largest first, and a tape
// large enough is cut at member and element boundaries into parts walked on the idle cores
// (parallel.go), its snapshot's files scanned in batches beside; the findings are put back
// in document order, the same as a scan on one goroutine gives (TestParallelScanMatchesSerial).
// A snapshot file that is binary (a NUL byte in its first 8000 bytes) is scanned as its runs
// of printable text.
//
// Only cmd/tapebox links this package (through cli): gitleaks brings viper, sprig and
// archive readers with it, which the sandbox-side executor must not carry.
package secrets
