package tape

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// credentialPattern is the regular expression IsCredential's word list stands for (a
// regular expression per header of every recorded call would cost too much); the harmless
// names are then kept.
var credentialPattern = regexp.MustCompile(`(?i)(key|token|secret|auth|session|cookie|signature|password|passwd|credential)`)

func harmlessOracle(n string) bool {
	switch {
	case n == "x-claude-code-session-id", n == "session-id", n == "idempotency-key",
		strings.HasPrefix(n, "anthropic-ratelimit-"), strings.HasPrefix(n, "x-ratelimit-"):
		return true
	}
	return false
}

// FuzzIsCredential: IsCredential says what the regular expression and the allowlist say,
// and says it again from its cache.
func FuzzIsCredential(f *testing.F) {
	for _, name := range []string{"Authorization", "X-Api-Key", "X-API_KEY", "Apikey", "Content-Type",
		"X-Session-Token", "Set-Cookie", "X-Passwd", "User-Agent", "Anthropic-Version", "X-Auth", "api-kex", "ÄUTH",
		"X-Custom-Key", "X-Portkey-Virtual-Key", "X-Session", "X-Amz-Signature", "X-Claude-Code-Session-Id", "Session-Id",
		"Idempotency-Key", "Anthropic-Ratelimit-Input-Tokens-Remaining", "X-Ratelimit-Remaining-Tokens", "Www-Authenticate"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		n := strings.ToLower(name)
		want := credentialPattern.MatchString(n) && !harmlessOracle(n)
		for range 2 {
			if got := IsCredential(name); got != want {
				t.Fatalf("IsCredential(%q) = %v, want %v", name, got, want)
			}
		}
	})
}

func TestRedactHeaders(t *testing.T) {
	in := map[string][]string{
		"X-Custom-Key":                            {"k1"},
		"X-Portkey-Virtual-Key":                   {"k2"},
		"X-Session":                               {"s1"},
		"Authorization":                           {"Bearer t"},
		"Proxy-Authorization":                     {"Basic p"},
		"Cookie":                                  {"a=1", "b=2"},
		"Www-Authenticate":                        {`Bearer realm="x"`},
		"X-Injected-Route":                        {"r"}, // not a credential by name, but injected
		"X-Claude-Code-Session-Id":                {"uuid"},
		"Session-Id":                              {"uuid2"},
		"Idempotency-Key":                         {"retry-1"},
		"X-Ratelimit-Limit-Tokens":                {"100"},
		"Anthropic-Ratelimit-Output-Tokens-Reset": {"2026-01-01T00:00:00Z"},
		"Anthropic-Beta":                          {"a", "b"},
		"Content-Length":                          {"42"},
		"X-Stainless-Os":                          {"Linux"},
	}
	want := Headers{
		"x-custom-key": Redacted, "x-portkey-virtual-key": Redacted, "x-session": Redacted,
		"authorization": Redacted, "proxy-authorization": Redacted, "cookie": Redacted,
		"www-authenticate": Redacted, "x-injected-route": Redacted,
		"x-claude-code-session-id": "uuid", "session-id": "uuid2", "idempotency-key": "retry-1",
		"x-ratelimit-limit-tokens": "100", "anthropic-ratelimit-output-tokens-reset": "2026-01-01T00:00:00Z",
		"anthropic-beta": "a, b", "content-length": "42", "x-stainless-os": "Linux",
	}
	for range 2 { // the second time from the name cache
		assert.Equal(t, want, RedactHeaders(in, "x-injected-route"))
	}
}
