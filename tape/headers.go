package tape

import (
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces a credential's value in a tape.
const Redacted = "[redacted]"

// credentialHeaders are the headers that carry credentials, lower case.
var credentialHeaders = []string{
	"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
	"anthropic-api-key", "openai-api-key", "x-goog-api-key",
}

// credentialName matches other header names that look like they carry a secret.
var credentialName = regexp.MustCompile(`(?i)(secret|token|password|passwd|api[-_]?key|auth|session-token|cookie)`)

// IsCredential says whether a header (any case) carries a credential.
func IsCredential(name string) bool {
	n := strings.ToLower(name)
	return slices.Contains(credentialHeaders, n) || credentialName.MatchString(n)
}

// RedactHeaders turns HTTP headers (an http.Header) into a tape's: lower-case names,
// repeated values joined with ", ", credentials and the extra secret names redacted.
// Everything that writes headers into a tape goes through it, so credentials never reach
// a tape.
func RedactHeaders(h map[string][]string, extraSecret ...string) Headers {
	out := Headers{}
	for name, vals := range h {
		n := strings.ToLower(name)
		if IsCredential(n) || slices.Contains(extraSecret, n) {
			out[n] = Redacted
			continue
		}
		out[n] = strings.Join(vals, ", ")
	}
	return out
}
