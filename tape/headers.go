package tape

import (
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

// credentialWords mark other header names that look like they carry a secret: a name
// (lower case) that contains one of them is a credential.
var credentialWords = []string{"secret", "token", "password", "passwd", "apikey", "api-key", "api_key", "auth", "cookie"}

// IsCredential says whether a header (any case) carries a credential.
func IsCredential(name string) bool {
	n := strings.ToLower(name)
	if slices.Contains(credentialHeaders, n) {
		return true
	}
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
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
