package gateway

import (
	"cmp"
	"fmt"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/provider"
)

// route is where a request goes and what it is: the endpoint's one router, which every
// mode asks (the live gateway, the tape's simulator, a fork on either side of its point). fwd is the path forwarded upstream (after
// the upstream's own base path): the request's path as sent, still escaped, its /r/LABEL
// prefix removed. The request is a model call of provider p when fwd is exactly that
// provider's path (provider.Path: /v1/messages, /v1/chat/completions, /v1/responses), byte
// for byte: what is matched is what is forwarded, so a key injected on a model call goes to
// the model call's path and nowhere else.
//
// ambiguous is set for a path that is not a model call's as sent but could be read as one:
// its decoded form, with dot segments resolved, ";" parameters and a trailing slash dropped
// and case folded, ends in a model call's path (/v1/files%2F..%2F..%2Fv1%2Fmessages,
// /v1/files/abc;/v1/messages, /v1/organizations/me/v1/messages, /v1/messages/). Some
// server on the way could route it to the model; the gateway refuses such a POST rather
// than let a model call through that it neither records nor counts.
//
// A Gemini API call's path names its model (/v1beta/models/MODEL:streamGenerateContent):
// it is a model call when it is exactly geminiCall's shape as sent, and ambiguous when its
// loose form ends in a Gemini method (its wire's loosePath).
func route(r *http.Request) (fwd string, p tape.Provider, model, ambiguous bool) {
	fwd = upstreamPath(r.URL.EscapedPath())
	for _, w := range wires {
		if w.isModelPath(fwd) {
			return fwd, w.p, true, false
		}
	}
	loose := strings.ToLower(upstreamPath(r.URL.Path))
	for _, v := range []string{loose, path.Clean("/" + dropParams(loose))} {
		for _, w := range wires {
			if w.endsInModelPath(v) {
				return fwd, w.p, false, true
			}
		}
	}
	return fwd, "", false, false
}

// geminiCall is the path of a Gemini API model call as the gateway records it: an API
// version, models/ or tunedModels/, a model name of plain characters (no escapes, no dot
// segment), and the method.
var geminiCall = regexp.MustCompile(`^/v1(?:beta|alpha)?/(?:models|tunedModels)/[A-Za-z0-9_-][A-Za-z0-9._-]*:(?:generateContent|streamGenerateContent)$`)

// dropParams removes the ";" parameters of each segment of a path (RFC 3986 3.3), as some
// servers do before routing.
func dropParams(p string) string {
	if !strings.Contains(p, ";") {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ";")
	}
	return strings.Join(segs, "/")
}

// refuseAmbiguous answers a POST whose path is not a model call's as sent but reads as one
// (route's ambiguous), in every mode: 400 with the code tapebox_ambiguous_path, in p's
// shape. who names the endpoint in the message ("tapebox gateway").
func refuseAmbiguous(w http.ResponseWriter, r *http.Request, p tape.Provider, fwd, who string, logf func(string, ...any)) {
	logf("%s %s refused: not a model call's path as sent, but it reads as one once decoded", r.Method, tape.RedactURL(r.URL.RequestURI()))
	writeError(w, p, apiError{status: http.StatusBadRequest, typ: "invalid_request_error", code: "tapebox_ambiguous_path",
		msg: fmt.Sprintf("%s: the path %q is not a model call's path as sent (%s), but reads as one once decoded or normalized: refused, so that no model call goes unrecorded and the gateway's keys go to the model paths only", who, fwd, cmp.Or(provider.Path(p), "/v1beta/models/MODEL:generateContent"))})
}
