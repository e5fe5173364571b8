package protocol

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeRequests(t *testing.T) {
	in := strings.Join([]string{
		`{"op":"hello","harness":"claude-code","cwd":"/app","env":{},"state_dir":null}`,
		`not json`,
		`{"op":"launch","id":"9"}`,
		`{"op":"call","id":"7","call":{"id":"toolu_01","name":"Bash","input":{"command":"ls"}},"recorded":null}`,
		`{"op":"call","id":"8","call":{"id":"x","name":""}}`,
		strings.Repeat("x", MaxLine+10),
		``,
		`{"op":"bye"}`,
	}, "\n")
	d := NewRequestDecoder(strings.NewReader(in))
	env, err := d.Decode()
	require.NoError(t, err)
	require.Equal(t, "claude-code", env.Hello.Harness)
	_, err = d.Decode()
	var le *LineError
	require.ErrorAs(t, err, &le)
	require.Equal(t, 2, le.Line)
	_, err = d.Decode()
	require.ErrorIs(t, err, ErrUnknownOp)
	require.ErrorAs(t, err, &le)
	require.Equal(t, "9", *le.ID)
	env, err = d.Decode()
	require.NoError(t, err)
	require.Equal(t, "Bash", env.Call.Call.Name)
	require.Nil(t, env.Call.Recorded)
	_, err = d.Decode()
	require.ErrorContains(t, err, "call.name")
	_, err = d.Decode()
	require.ErrorContains(t, err, "longer than")
	env, err = d.Decode()
	require.NoError(t, err)
	require.Equal(t, OpBye, env.Op)
	_, err = d.Decode()
	require.True(t, errors.Is(err, io.EOF))
}

func FuzzDecodeLine(f *testing.F) {
	f.Add(`{"op":"call","id":"7","call":{"id":"a","name":"Bash","input":{}},"recorded":null}`)
	f.Add(`{"op":"hello","harness":"codex"}`)
	f.Add(`{"op":`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, d := range []*Decoder{NewRequestDecoder(strings.NewReader(s)), NewReplyDecoder(strings.NewReader(s))} {
			for range 100 {
				_, err := d.Decode()
				var le *LineError
				if err != nil && !errors.As(err, &le) {
					break
				}
			}
		}
	})
}
