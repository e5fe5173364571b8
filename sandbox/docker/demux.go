package docker

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/tapebox/tapebox/sandbox/internal/kit"
)

// The stream types of the Engine's multiplexed stream (the first byte of a frame header).
const (
	streamStdin  = 0 // written to stdout, as stdcopy does
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3 // an error message from the engine
)

// maxFrame bounds one frame's payload; the engine sends at most 32 KiB.
const maxFrame = 64 << 20

// demuxReader is a session's Stdout on Docker: it reads the multiplexed exec stream (frames of
// an 8-byte header and a payload) in the caller's Read, handing stdout payload to the caller
// and stderr payload to the stderr writer. Unlike stdcopy.StdCopy into a pipe, no goroutine
// sits between the connection and the reader, which saves a hand-off on every round trip.
//
// The first error (io.EOF at a frame boundary when the stream ends cleanly) is sticky and is
// passed once to onEnd. Read must not be called concurrently, like any io.Reader.
type demuxReader struct {
	r      *bufio.Reader
	stderr io.Writer
	head   *kit.Head   // the first bytes of stdout, for diagnostics
	onEnd  func(error) // nil for a clean end
	remain int         // stdout payload left in the current frame
	err    error
	hdr    [8]byte
}

func (d *demuxReader) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for d.remain == 0 {
		if _, err := io.ReadFull(d.r, d.hdr[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("exec stream: truncated frame header: %w", err)
			}
			return 0, d.end(err)
		}
		size := int(binary.BigEndian.Uint32(d.hdr[4:]))
		if size > maxFrame {
			return 0, d.end(fmt.Errorf("exec stream: frame of %d bytes: the stream is corrupt", size))
		}
		switch d.hdr[0] {
		case streamStdin, streamStdout:
			d.remain = size
		case streamStderr:
			if _, err := io.CopyN(d.stderr, d.r, int64(size)); err != nil {
				return 0, d.end(midFrame(err))
			}
		case streamSystem:
			msg := make([]byte, size)
			if _, err := io.ReadFull(d.r, msg); err != nil {
				return 0, d.end(midFrame(err))
			}
			return 0, d.end(fmt.Errorf("exec stream: the engine reports: %s", msg))
		default:
			return 0, d.end(fmt.Errorf("exec stream: unknown stream type %d: the stream is corrupt", d.hdr[0]))
		}
	}
	n, err := d.r.Read(p[:min(len(p), d.remain)])
	d.remain -= n
	if d.head != nil {
		d.head.Write(p[:n])
	}
	if err != nil {
		return n, d.end(midFrame(err))
	}
	return n, nil
}

// midFrame turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func midFrame(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("exec stream: truncated frame: %w", io.ErrUnexpectedEOF)
	}
	return err
}

func (d *demuxReader) end(err error) error {
	d.err = err
	if d.onEnd != nil {
		if errors.Is(err, io.EOF) {
			d.onEnd(nil)
		} else {
			d.onEnd(err)
		}
	}
	return err
}
