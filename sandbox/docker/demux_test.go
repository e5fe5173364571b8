package docker

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/docker/docker/pkg/stdcopy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// frame is one frame of a multiplexed stream.
func frame(stream byte, payload string) []byte {
	hdr := make([]byte, 8, 8+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr, payload...)
}

func frames(fs ...[]byte) []byte { return bytes.Join(fs, nil) }

func TestDemuxReader(t *testing.T) {
	big := strings.Repeat("z", 100_000)
	tests := []struct {
		name    string
		stream  []byte
		stdout  string
		stderr  string
		wantErr string // "" for a clean end
	}{
		{name: "empty", stream: nil},
		{name: "stdout", stream: frames(frame(1, "hello\n"), frame(1, "world\n")), stdout: "hello\nworld\n"},
		{name: "interleaved", stream: frames(frame(2, "log1\n"), frame(1, "a"), frame(2, "log2\n"), frame(1, "b\n")), stdout: "ab\n", stderr: "log1\nlog2\n"},
		{name: "stdin type goes to stdout", stream: frame(0, "x"), stdout: "x"},
		{name: "empty frames", stream: frames(frame(1, ""), frame(2, ""), frame(1, "k")), stdout: "k"},
		{name: "big frame", stream: frame(1, big), stdout: big},
		{name: "system error", stream: frames(frame(1, "a"), frame(3, "boom")), stdout: "a", wantErr: "the engine reports: boom"},
		{name: "truncated header", stream: frames(frame(1, "a"), []byte{1, 0, 0}), stdout: "a", wantErr: "truncated frame header"},
		{name: "truncated payload", stream: frame(1, "abcdef")[:10], stdout: "ab", wantErr: "truncated frame"},
		{name: "truncated stderr", stream: frame(2, "abcdef")[:10], stderr: "ab", wantErr: "truncated frame"},
		{name: "unknown type", stream: frame(9, "x"), wantErr: "unknown stream type 9"},
		{name: "huge size", stream: []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, wantErr: "the stream is corrupt"},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	}
	for _, tt := range tests {
		for rname, wrap := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				var stderr bytes.Buffer
				var ends []error
				head := &kit.Head{Max: 4}
				d := &demuxReader{r: bufio.NewReader(wrap(bytes.NewReader(tt.stream))), stderr: &stderr, head: head,
					onEnd: func(err error) { ends = append(ends, err) }}
				var out bytes.Buffer
				buf := make([]byte, 7)
				var err error
				for {
					var n int
					n, err = d.Read(buf)
					out.Write(buf[:n])
					if err != nil {
						break
					}
				}
				assert.Equal(t, tt.stdout, out.String())
				assert.Equal(t, tt.stderr, stderr.String())
				assert.Equal(t, tt.stdout[:min(4, len(tt.stdout))], head.String())
				require.Len(t, ends, 1, "onEnd called once")
				if tt.wantErr == "" {
					assert.ErrorIs(t, err, io.EOF)
					assert.NoError(t, ends[0])
				} else {
					assert.ErrorContains(t, err, tt.wantErr)
					assert.Equal(t, err, ends[0])
				}
				n, again := d.Read(buf)
				assert.Equal(t, 0, n)
				assert.Equal(t, err, again, "the error is sticky")
				assert.Len(t, ends, 1)
			})
		}
	}
}

// TestDemuxReaderMatchesStdcopy: what the engine's own writer produces reads back the same.
func TestDemuxReaderMatchesStdcopy(t *testing.T) {
	var stream bytes.Buffer
	out, errw := stdcopy.NewStdWriter(&stream, stdcopy.Stdout), stdcopy.NewStdWriter(&stream, stdcopy.Stderr)
	var wantOut, wantErr strings.Builder
	for i := range 200 {
		line := strings.Repeat(string(rune('a'+i%26)), i*37) + "\n"
		if i%3 == 0 {
			errw.Write([]byte(line))
			wantErr.WriteString(line)
		} else {
			out.Write([]byte(line))
			wantOut.WriteString(line)
		}
	}
	var stderr bytes.Buffer
	got, err := io.ReadAll(&demuxReader{r: bufio.NewReader(&stream), stderr: &stderr})
	require.NoError(t, err)
	assert.Equal(t, wantOut.String(), string(got))
	assert.Equal(t, wantErr.String(), stderr.String())
}

func FuzzDemuxReader(f *testing.F) {
	f.Add(frames(frame(1, "a\n"), frame(2, "e"), frame(1, "b")))
	f.Add(frame(3, "x"))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 5, 'a'})
	f.Fuzz(func(t *testing.T, stream []byte) {
		var stderr bytes.Buffer
		calls := 0
		d := &demuxReader{r: bufio.NewReader(bytes.NewReader(stream)), stderr: &stderr, head: &kit.Head{Max: 8},
			onEnd: func(error) { calls++ }}
		out, err := io.ReadAll(d)
		if calls != 1 {
			t.Fatalf("onEnd called %d times", calls)
		}
		if len(out)+stderr.Len() > len(stream) {
			t.Fatalf("read %d bytes out of a %d-byte stream", len(out)+stderr.Len(), len(stream))
		}
		if err == nil && !errors.Is(d.err, io.EOF) {
			t.Fatalf("clean end without EOF: %v", d.err)
		}
	})
}
