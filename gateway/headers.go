package gateway

import (
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/tapebox/tapebox/tape"
)

// Redacted replaces a credential's value in a tape.
const Redacted = tape.Redacted

// IsCredential says whether a header (any case) carries a credential.
func IsCredential(name string) bool { return tape.IsCredential(name) }

// hopHeaders are connection-level headers a proxy does not forward (RFC 9110 7.6.1, with
// the Proxy-* headers of RFC 9110 11.7 and the legacy Proxy-Connection), either way: a
// Proxy-Authorization meant for the gateway must never reach the provider. Headers the
// Connection header names are dropped too (isHop).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// recordHeaders turns HTTP headers into a tape's, credentials redacted.
func recordHeaders(h http.Header, extraSecret []string) tape.Headers {
	return tape.RedactHeaders(h, extraSecret...)
}

// Injection makes the gateway hold a credential: the model calls it records (POST to exactly
// /v1/messages, /v1/chat/completions or /v1/responses as sent, after a /r/LABEL prefix; see
// route) that go to Host get header Name set to Value, and any credential the agent sent
// with them is dropped first. Other requests to Host (count_tokens, models, admin and file APIs) are
// forwarded with the agent's own headers: the held key is never spent on them.
type Injection struct {
	Host  string // host[:port] of the upstream
	Name  string
	Value string
}

// ParseInjection parses HOST:NAME=VALUE. VALUE may be $VAR or env:VAR to read an
// environment variable (through getenv), so the key never appears in a command line.
func ParseInjection(s string, getenv func(string) string) (Injection, error) {
	hostName, value, ok := strings.Cut(s, "=")
	if !ok {
		return Injection{}, fmt.Errorf("inject header %q: want HOST:NAME=VALUE", s)
	}
	i := strings.LastIndex(hostName, ":")
	if i <= 0 || i == len(hostName)-1 {
		return Injection{}, fmt.Errorf("inject header %q: want HOST:NAME=VALUE", s)
	}
	inj := Injection{Host: strings.ToLower(hostName[:i]), Name: hostName[i+1:], Value: value}
	var env string
	switch {
	case strings.HasPrefix(value, "$"):
		env = value[1:]
	case strings.HasPrefix(value, "env:"):
		env = value[4:]
	}
	if env != "" {
		if getenv == nil {
			getenv = os.Getenv
		}
		inj.Value = getenv(env)
		if inj.Value == "" {
			return Injection{}, fmt.Errorf("inject header %q: environment variable %s is empty or unset", s, env)
		}
	}
	return inj, nil
}

// matches says whether the injection applies to an upstream host (with or without port).
func (inj Injection) matches(host string) bool {
	host = strings.ToLower(host)
	if inj.Host == host {
		return true
	}
	h, _, _ := strings.Cut(host, ":")
	return inj.Host == h
}
