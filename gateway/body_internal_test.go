package gateway

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRequestBodyEndAfterFinish: the transport reads a body's Content-Length bytes, then
// once more to see its end. When finish (the step's commit) read that end first, the
// transport's read still gets io.EOF, not errDetached, which would make it drop the
// upstream connection while the answer is still being relayed (TestBreakerCost saw
// "unexpected EOF" from this now and then). A body finish had to read, unseen by the
// transport, still answers errDetached.
func TestRequestBodyEndAfterFinish(t *testing.T) {
	const text = `{"model":"m","messages":[]}`
	b := &requestBody{src: strings.NewReader(text), limit: -1, length: int64(len(text)), logf: t.Logf, kept: &spill{}, decided: make(chan struct{})}
	buf := make([]byte, len(text))
	n, err := io.ReadFull(io.LimitReader(b, int64(len(text))), buf)
	require.NoError(t, err)
	require.Equal(t, text, string(buf[:n]))
	b.finish()
	n, err = b.Read(buf)
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF, "the body is whole: its end, not an error")
	data, err := b.whole()
	require.NoError(t, err)
	require.Equal(t, text, string(data))

	cut := &requestBody{src: strings.NewReader(text), limit: 4, length: -1, logf: t.Logf, kept: &spill{}, decided: make(chan struct{})}
	cut.finish()
	_, err = cut.Read(buf)
	require.ErrorIs(t, err, errDetached, "over the limit: finish stopped reading, the transport cannot go on")
}
