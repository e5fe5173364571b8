// Package secrets finds credentials in tapes (API keys, tokens, private keys, passwords)
// with gitleaks' maintained rule set, used as a library, so that no tape with a secret is
// published.
//
// Every string of a tape is scanned: the raw request and response bodies (walked as the
// JSON they are, so a finding's pointer goes inside them), the normalized messages, tool
// calls and results, headers, stream chunks and meta. A secret is reported at each place it
// appears; nothing here prints or stores a secret beyond a four-character preview.
//
// Protocol values that are random by design (tool-use ids, thinking signatures, encrypted
// reasoning, request ids, digests) are not findings: see the field allowlist in allow.go.
//
// Only cmd/tapebox links this package (through cli): gitleaks brings viper, sprig and
// archive readers with it, which the sandbox-side executor must not carry.
package secrets
