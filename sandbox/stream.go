package sandbox

import (
	"context"
	"io"
)

// Read reads the command's standard output, so that a Session is an io.ReadWriteCloser.
func (s *Session) Read(p []byte) (int, error) { return s.Stdout.Read(p) }

// Write writes the command's standard input.
func (s *Session) Write(p []byte) (int, error) { return s.Stdin.Write(p) }

// StartExecutor starts "tapebox-exec serve" and returns its stdio as one stream: the shape
// the replay controller asks of a sandbox.
func (s *Sandbox) StartExecutor(ctx context.Context) (io.ReadWriteCloser, error) {
	sess, err := s.Start(ctx)
	if err != nil {
		return nil, err
	}
	return sess, nil
}
