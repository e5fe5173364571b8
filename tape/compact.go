package tape

import (
	"bytes"
	"encoding/json"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// maxDepth is encoding/json's nesting limit; deeper values take encoding/json's path.
const maxDepth = jsonlex.MaxDepth

// compactJSON appends to dst the compact form of the JSON value b, as json.Compact gives it,
// validating b in the same pass. It reports false, leaving the decision to encoding/json,
// when b is not valid JSON (or nests deeper than encoding/json allows).
func compactJSON(dst, b []byte) ([]byte, bool) { return jsonlex.Compact(dst, b) }

// minSplice is the size of a raw body from which encoding it with compactJSON and splicing
// it in pays (encoding/json validates and compacts a raw value in two slower passes).
const minSplice = 512

// spliceRaw encodes v, whose raw field is set to the placeholder 0 so that its encoding
// holds marker (`"raw":0` and what follows it): at its end when atEnd, else last (the
// fields after raw must not be able to hold it), then puts the compact form of raw in the
// placeholder's place. It reports false when raw is not valid JSON or the marker is not found: the
// caller then encodes v with raw itself and lets encoding/json decide. The result starts
// with prefix and has room for extra more bytes, so that a caller building a larger piece
// around a large body copies it no more.
func spliceRaw(v any, raw []byte, marker string, atEnd bool, prefix string, extra int) ([]byte, bool, error) {
	head, err := marshalPiece(v)
	if err != nil {
		return nil, false, err
	}
	at := bytes.LastIndex(head, []byte(marker))
	if at < 0 || atEnd && at != len(head)-len(marker) {
		return nil, false, nil
	}
	at += len(`"raw":`)
	out := make([]byte, 0, len(prefix)+len(head)+len(raw)+extra)
	out = append(append(out, prefix...), head[:at]...)
	mid := len(out)
	out, ok := compactJSON(out, raw)
	if !ok {
		return nil, false, nil
	}
	if bytes.Contains(out[mid:], escapedReplacement) {
		// encode writes U+FFFD unescaped everywhere, raw values included.
		fixed := unescapeReplacement(out[mid:])
		out = append(out[:mid], fixed...)
	}
	out = append(out, head[at+1:]...) // what followed the placeholder 0
	return out, true, nil
}

var rawPlaceholder = json.RawMessage("0")

// marshalRequest is the canonical encoding of r.
func marshalRequest(r *Request) ([]byte, error) {
	if len(r.Raw) >= minSplice {
		tmp := *r
		tmp.Raw = rawPlaceholder
		if out, ok, err := spliceRaw(&tmp, r.Raw, `"raw":0}`, true, "", 0); err != nil || ok {
			return out, err
		}
	}
	return marshalPiece(r)
}

// marshalResponse is the canonical encoding of r.
func marshalResponse(r *Response) ([]byte, error) {
	return appendResponse("", r, 0)
}

// appendResponse is prefix followed by the canonical encoding of r, with room for extra
// more bytes.
func appendResponse(prefix string, r *Response, extra int) ([]byte, error) {
	if len(r.Raw) >= minSplice {
		tmp := *r
		tmp.Raw = rawPlaceholder
		if out, ok, err := spliceRaw(&tmp, r.Raw, `"raw":0,"chunks":`, false, prefix, extra); err != nil || ok {
			return out, err
		}
	}
	b, err := marshalPiece(r)
	if err != nil || prefix == "" && extra == 0 {
		return b, err
	}
	out := make([]byte, 0, len(prefix)+len(b)+extra)
	return append(append(out, prefix...), b...), nil
}
