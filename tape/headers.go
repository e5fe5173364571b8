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
	url    bool // the value is a URL, whose query may hold credentials (urlHeaders)
}

// urlHeaders are headers whose value is a URL: a signed one (a redirect to storage, a
// referer) holds its credentials in the query, which RedactHeaders redacts like a
// request's.
var urlHeaders = []string{"location", "content-location", "referer"}

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
	hn := headerName{lower: n, secret: isCredentialHeader(n), url: slices.Contains(urlHeaders, n)}
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
		v := strings.Join(vals, ", ")
		if hn.url {
			v = RedactURL(v)
		}
		out[hn.lower] = v
	}
	return out
}

// isCredentialParam says whether a query parameter's name (unescaped, lower case) carries a
// credential: it contains a credential word, or it is sig (a signed URL's signature, as in
// Azure's SAS) or pwd. The harmless header names do not apply to parameters.
func isCredentialParam(n string) bool {
	return credentialName(n) || n == "sig" || n == "pwd"
}

// RedactURL returns a URL, or a request URI (path?query), with the value of every query
// parameter that carries a credential (any name with a credential word, sig, pwd) replaced
// by Redacted. Everything else is kept byte for byte, and a URL without such a parameter is
// returned as it is, without a copy.
func RedactURL(u string) string {
	path, query, ok := strings.Cut(u, "?")
	if !ok {
		return u
	}
	frag := ""
	if i := strings.IndexByte(query, '#'); i >= 0 {
		query, frag = query[:i], query[i:]
	}
	q := RedactQuery(query)
	if q == query {
		return u
	}
	return path + "?" + q + frag
}

// RedactQuery returns a URL query (or a form body: the same syntax) with the value of every
// parameter that carries a credential replaced by Redacted; see RedactURL. Parameters are
// separated by & or ;.
func RedactQuery(query string) string {
	var b []byte // the result, once a value is redacted
	start := 0   // the current parameter's start in query
	for start <= len(query) {
		end := strings.IndexAny(query[start:], "&;")
		if end < 0 {
			end = len(query)
		} else {
			end += start
		}
		param := query[start:end]
		name, _, hasValue := strings.Cut(param, "=")
		if hasValue && isCredentialParam(paramName(name)) {
			if b == nil {
				b = append(make([]byte, 0, len(query)+len(Redacted)), query[:start]...)
			}
			b = append(b, name...)
			b = append(b, '=')
			b = append(b, Redacted...)
		} else if b != nil {
			b = append(b, param...)
		}
		if end < len(query) && b != nil {
			b = append(b, query[end])
		}
		start = end + 1
	}
	if b == nil {
		return query
	}
	return string(b)
}

// paramName unescapes a query parameter's name as url.QueryUnescape does ("+" is a space,
// %XX a byte; a malformed escape leaves the name as it is) and lowers it. It is written out
// rather than taken from net/url, which would grow the executor (it links package tape)
// past its size budget.
func paramName(name string) string {
	if strings.ContainsAny(name, "%+") {
		if n, ok := queryUnescape(name); ok {
			name = n
		}
	}
	return strings.ToLower(name)
}

func queryUnescape(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%':
			if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
				return s, false
			}
			b = append(b, byte(unhex(s[i+1])<<4|unhex(s[i+2])))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
