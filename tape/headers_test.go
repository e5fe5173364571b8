package tape

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// credentialPattern is the regular expression IsCredential's word list replaces (it ran on
// every header of every recorded call).
var credentialPattern = regexp.MustCompile(`(?i)(secret|token|password|passwd|api[-_]?key|auth|session-token|cookie)`)

// FuzzIsCredential: IsCredential says what the regular expression says.
func FuzzIsCredential(f *testing.F) {
	for _, name := range []string{"Authorization", "X-Api-Key", "X-API_KEY", "Apikey", "Content-Type",
		"X-Session-Token", "Set-Cookie", "X-Passwd", "User-Agent", "Anthropic-Version", "X-Auth", "api-kex", "ÄUTH"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := slices.Contains(credentialHeaders, strings.ToLower(name)) || credentialPattern.MatchString(strings.ToLower(name))
		if got := IsCredential(name); got != want {
			t.Fatalf("IsCredential(%q) = %v, want %v", name, got, want)
		}
	})
}
