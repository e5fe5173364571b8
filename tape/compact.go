package tape

import (
	"github.com/tapebox/tapebox/internal/jsonlex"
)

// maxDepth is encoding/json's nesting limit; deeper values take encoding/json's path.
const maxDepth = jsonlex.MaxDepth

// compactJSON appends to dst the compact form of the JSON value b, as json.Compact gives it,
// validating b in the same pass. It reports false, leaving the decision to encoding/json,
// when b is not valid JSON (or nests deeper than encoding/json allows).
func compactJSON(dst, b []byte) ([]byte, bool) { return jsonlex.Compact(dst, b) }

// marshalRequest is the canonical encoding of r.
func marshalRequest(r *Request) ([]byte, error) {
	e := enc{b: make([]byte, 0, 2*len(r.Raw)+len(r.Raw)/8+1<<10), ok: true}
	if writeObject(&e, requestTable(), r); e.ok {
		return fixReplacement(e.b), nil
	}
	return marshalPiece(r)
}

// marshalResponse is the canonical encoding of r.
func marshalResponse(r *Response) ([]byte, error) {
	return appendResponse("", r, 0)
}

// appendResponse is prefix followed by the canonical encoding of r, with room for extra
// more bytes, so that a caller building a larger piece around a large body copies it no
// more.
func appendResponse(prefix string, r *Response, extra int) ([]byte, error) {
	n := len(prefix) + 2*len(r.Raw) + 1<<10 + extra
	for _, c := range r.Chunks {
		n += len(c.Data) + len(c.Data)/2 + 32
	}
	e := enc{b: make([]byte, 0, n), ok: true}
	e.b = append(e.b, prefix...)
	if writeObject(&e, responseTable(), r); e.ok {
		return fixReplacement(e.b), nil
	}
	b, err := marshalPiece(r)
	if err != nil || prefix == "" && extra == 0 {
		return b, err
	}
	out := make([]byte, 0, len(prefix)+len(b)+extra)
	return append(append(out, prefix...), b...), nil
}
