package gateway

import (
	"net/http"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// apiError is an error the endpoint answers itself, in place of a model's answer, in every
// mode: an upstream it cannot reach, a tripped breaker, a refused path, a request the tape
// cannot answer, a fork that cannot go live. It goes out in the provider's own shape
// (provider.ErrorBody), so that the harness reports it as it reports the provider's errors.
type apiError struct {
	status int    // the HTTP status
	typ    string // the error type: api_error, invalid_request_error, not_found_error
	code   string // OpenAI's error code ("" for null), such as tapebox_budget_exceeded
	msg    string
}

// body is e in p's wire format.
func (e apiError) body(p tape.Provider) []byte { return provider.ErrorBody(p, e.typ, e.code, e.msg) }

// writeError answers with e in p's wire format, marked with the header X-Tapebox-Error: 1
// as the endpoint's own, and returns the body it sent, for the tape. It is the endpoint's
// one writer of errors in a provider's shape.
func writeError(w http.ResponseWriter, p tape.Provider, e apiError) []byte {
	body := e.body(p)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Tapebox-Error", "1")
	w.WriteHeader(e.status)
	w.Write(append(body, '\n'))
	return body
}
