//go:build !linux

package cli

import (
	"context"
	"errors"
	"io"
)

// serveUnix is not available off Linux, where the executor does not run in sandboxes.
func serveUnix(ctx context.Context, path string, stdin io.Reader, stderr io.Writer) error {
	return errors.New("--dial unix:PATH needs Linux")
}
