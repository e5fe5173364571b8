package tape

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTruncationMarker(t *testing.T) {
	tr := Truncation{Bytes: 104857600, Limit: 32 << 20}
	raw := tr.Raw()
	require.Equal(t, `{"tapebox_truncated":{"bytes":104857600,"limit":33554432}}`, string(raw))
	require.True(t, json.Valid(raw))
	got, ok := TruncationOf(raw)
	require.True(t, ok)
	require.Equal(t, tr, got)

	// A marker survives the canonical encoding of a step as it is.
	s := &Step{Request: Request{Raw: raw}, Response: Response{Raw: raw}}
	enc, err := MarshalStep(s)
	require.NoError(t, err)
	var back Step
	require.NoError(t, json.Unmarshal(enc, &back))
	got, ok = TruncationOf(back.Response.Raw)
	require.True(t, ok)
	require.Equal(t, tr, got)

	for _, raw := range []string{
		``, `null`, `{}`, `"{\"tapebox_truncated\":{}}"`, `{"tapebox_truncated":null}`,
		`{"tapebox_truncated":{"bytes":"many"}}`, `{"id":"msg_1","tapebox_truncated":{"bytes":1,"limit":1}}`,
		`{"tapebox_truncated":{"bytes":1,"limit":1}`,
	} {
		_, ok := TruncationOf(json.RawMessage(raw))
		require.False(t, ok, raw)
	}
}
