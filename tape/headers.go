package tape

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces a credential's value in a tape.
const Redacted = "[redacted]"

// credentialWords mark the names that carry a credential: a header or query parameter whose
// lower-case name contains one of them is redacted, unless it is harmless (harmlessHeaders,
// harmlessPrefixes). The words are issue 14's (key, token, secret, auth, session, cookie,
// signature, password) and two more of the same kind; "key" covers apikey, api-key, api_key,
// x-goog-api-key, x-portkey-virtual-key; "auth" covers authorization, proxy-authorization,
// oauth, x-auth-token.
var credentialWords = []string{"key", "token", "secret", "auth", "session", "cookie", "signature", "password", "passwd", "credential"}

// harmlessHeaders are headers (lower case) whose names contain a credential word but whose
// values are not secrets and serve replay or analysis; they are kept as sent. Names without
// a credential word need no entry (anthropic-beta, anthropic-version, openai-beta,
// x-stainless-*, x-codex-*, content-length, user-agent ...). Everything else with a word is
// redacted, including x-session, www-authenticate and proxy-authenticate: a header nobody
// listed here is taken for a secret.
var harmlessHeaders = []string{
	// Claude Code's id of its session: a random UUID, the name of the harness's own
	// transcript; it ties a tape to those logs and grants nothing.
	"x-claude-code-session-id",
	// Codex's session id: the same value is in the body (prompt_cache_key and the
	// x-codex-turn-metadata header), so redacting it would hide nothing.
	"session-id",
	// The SDKs' idempotency key: a random value per call, and the same one on two calls
	// marks an SDK retry.
	"idempotency-key",
}

// harmlessPrefixes start header names that are harmless whatever follows: the providers'
// rate-limit counts and reset times (anthropic-ratelimit-input-tokens-remaining,
// x-ratelimit-remaining-tokens ...), which analysis of a run needs.
var harmlessPrefixes = []string{"anthropic-ratelimit-", "x-ratelimit-"}

// credentialName says whether a lower-case name contains a credential word.
func credentialName(n string) bool {
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// isCredentialHeader says whether a lower-case header name carries a credential.
func isCredentialHeader(n string) bool {
	if !credentialName(n) || slices.Contains(harmlessHeaders, n) {
		return false
	}
	for _, p := range harmlessPrefixes {
		if strings.HasPrefix(n, p) {
			return false
		}
	}
	return true
}

// IsCredential says whether a header (any case) carries a credential: its name contains a
// credential word and is not a harmless one. The gateway redacts these in tapes and, for a
// host whose credentials it holds, drops the agent's.
func IsCredential(name string) bool { return lookupHeader(name).secret }

// headerName is what the redaction knows of a header name.
type headerName struct {
	lower  string
	secret bool
}

// headerNames caches headerName per name as received: a harness sends the same few dozen
// names on every call, so each is lowered and matched once, not once per call. The map is
// copied on write and read without a lock; it stops growing at maxHeaderNames, so that a
// client sending ever new names cannot grow it without bound.
var (
	headerNames   atomic.Pointer[map[string]headerName]
	headerNamesMu sync.Mutex
)

const maxHeaderNames = 1024

func lookupHeader(name string) headerName {
	if m := headerNames.Load(); m != nil {
		if hn, ok := (*m)[name]; ok {
			return hn
		}
	}
	n := strings.ToLower(name)
	hn := headerName{lower: n, secret: isCredentialHeader(n)}
	headerNamesMu.Lock()
	defer headerNamesMu.Unlock()
	old := headerNames.Load()
	if old != nil && len(*old) >= maxHeaderNames {
		return hn
	}
	m := map[string]headerName{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[strings.Clone(name)] = hn
	headerNames.Store(&m)
	return hn
}

// RedactHeaders turns HTTP headers (an http.Header) into a tape's: lower-case names,
// repeated values joined with ", ", the values of credentials (IsCredential) and of the
// extra secret names (lower case) replaced by Redacted. Everything that writes headers
// into a tape goes through it.
func RedactHeaders(h map[string][]string, extraSecret ...string) Headers {
	out := make(Headers, len(h))
	for name, vals := range h {
		hn := lookupHeader(name)
		if hn.secret || slices.Contains(extraSecret, hn.lower) {
			out[hn.lower] = Redacted
			continue
		}
		out[hn.lower] = strings.Join(vals, ", ")
	}
	return out
}
