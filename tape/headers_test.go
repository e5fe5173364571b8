package tape

import (
	"net/url"
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

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/v1/messages", "/v1/messages"},
		{"/v1/messages?beta=true", "/v1/messages?beta=true"},
		{"/v1/messages?key=AIzaSECRET", "/v1/messages?key=[redacted]"},
		{"/v1/messages?beta=true&api_key=s1&Token=s2&sig=s3&X-Amz-Signature=s4&X-Amz-Credential=s5&model=m",
			"/v1/messages?beta=true&api_key=[redacted]&Token=[redacted]&sig=[redacted]&X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]&model=m"},
		{"/p?%6Bey=s1;access%5Ftoken=s2;pwd=s3", "/p?%6Bey=[redacted];access%5Ftoken=[redacted];pwd=[redacted]"},
		{"/p?key&key=&=v&&signature=s#frag", "/p?key&key=[redacted]&=v&&signature=[redacted]#frag"},
		{"https://bucket.s3.amazonaws.com/o?X-Amz-Security-Token=t&X-Amz-Date=d", "https://bucket.s3.amazonaws.com/o?X-Amz-Security-Token=[redacted]&X-Amz-Date=d"},
		{"/p?design=1&sigma=2&monkey=3", "/p?design=1&sigma=2&monkey=[redacted]"},
		{"/p?bad%zzkey=s", "/p?bad%zzkey=[redacted]"},
	} {
		assert.Equal(t, tc.want, RedactURL(tc.in), tc.in)
	}
}

// FuzzRedactURL: RedactURL keeps every parameter but a credential's value, redacts every
// credential's value, and is idempotent.
func FuzzRedactURL(f *testing.F) {
	for _, u := range []string{"/v1/messages?beta=true", "/p?key=1&a=2;TOKEN=3", "/p?&&=;%6bey=x#f", "https://h/o?sig=1"} {
		f.Add(u)
	}
	f.Fuzz(func(t *testing.T, u string) {
		got := RedactURL(u)
		if again := RedactURL(got); again != got {
			t.Fatalf("RedactURL(%q) = %q, then %q", u, got, again)
		}
		path, query, ok := strings.Cut(u, "?")
		if !ok {
			if got != u {
				t.Fatalf("RedactURL(%q) = %q, want it as it is", u, got)
			}
			return
		}
		query, frag, _ := strings.Cut(query, "#")
		gpath, gquery, _ := strings.Cut(got, "?")
		gquery, gfrag, _ := strings.Cut(gquery, "#")
		if gpath != path || gfrag != frag {
			t.Fatalf("RedactURL(%q) = %q: path or fragment changed", u, got)
		}
		split := func(s string) []string {
			return strings.FieldsFunc(s, func(r rune) bool { return r == '&' || r == ';' })
		}
		in, out := split(query), split(gquery)
		if len(in) != len(out) {
			t.Fatalf("RedactURL(%q) = %q: %d parameters, want %d", u, got, len(out), len(in))
		}
		for i := range in {
			name, _, hasValue := strings.Cut(in[i], "=")
			want := in[i]
			if hasValue && isCredentialParam(paramName(name)) {
				want = name + "=" + Redacted
			}
			if out[i] != want {
				t.Fatalf("RedactURL(%q) = %q: parameter %d is %q, want %q", u, got, i, out[i], want)
			}
		}
	})
}

// TestQueryUnescapeAsNetURL: the hand-written unescape gives url.QueryUnescape's answers.
func TestQueryUnescapeAsNetURL(t *testing.T) {
	for _, s := range []string{"api%5Fkey", "a+b", "%4B%45%59", "bad%zz", "trail%4", "%", "x%2", "plain", "%e2%9c%93"} {
		want, err := url.QueryUnescape(s)
		got, ok := queryUnescape(s)
		if (err == nil) != ok || (ok && got != want) {
			t.Errorf("queryUnescape(%q) = %q, %v; url.QueryUnescape = %q, %v", s, got, ok, want, err)
		}
	}
}
