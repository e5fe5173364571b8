package tape

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Truncation describes a body a recorder did not keep because it was larger than the
// recording limit (the gateway's --max-record-body). The body's raw field then holds the
// marker {"tapebox_truncated":{"bytes":N,"limit":L}} (Raw) in place of the body, for a
// request or a response, a JSON body or a stream: a prefix of a JSON body is not JSON, and
// a prefix of a stream would normalize into an answer that looks whole. A truncated
// response has no chunks, and the normalized fields of a truncated body are empty
// (package tape/provider reads the marker as a body that says nothing). The client and the
// upstream still got every byte: only the tape lacks them.
type Truncation struct {
	// Bytes is the body's length as it crossed the wire, all of a stream's events included.
	Bytes int64 `json:"bytes"`
	// Limit is the recording limit the body was over.
	Limit int64 `json:"limit"`
}

// truncationKey opens the canonical encoding of a marker; no provider's body has the key.
const truncationKey = `{"tapebox_truncated":`

// Raw returns the marker that stands for the body in its raw field.
func (t Truncation) Raw() json.RawMessage {
	b := make([]byte, 0, 64)
	b = append(b, truncationKey+`{"bytes":`...)
	b = strconv.AppendInt(b, t.Bytes, 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, t.Limit, 10)
	return append(b, "}}"...)
}

// maxMarker bounds the length of a marker, white space included, that TruncationOf reads.
const maxMarker = 256

// TruncationOf reports whether raw is a truncation marker (an object with the one key
// tapebox_truncated, in any layout), and what it says.
func TruncationOf(raw json.RawMessage) (Truncation, bool) {
	if len(raw) > maxMarker || !bytes.Contains(raw, []byte(`"tapebox_truncated"`)) {
		return Truncation{}, false
	}
	var m map[string]*Truncation
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 || m["tapebox_truncated"] == nil {
		return Truncation{}, false
	}
	return *m["tapebox_truncated"], true
}
