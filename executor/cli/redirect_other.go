//go:build !linux

package cli

import (
	"io"
	"os"
)

// RedirectStdout returns os.Stdout unchanged: the executor runs on Linux, where fd 1 is
// pointed at stderr; elsewhere (development builds) nothing is redirected.
func RedirectStdout() (io.WriteCloser, error) { return os.Stdout, nil }

// ProtocolStdin returns os.Stdin unchanged (see RedirectStdout).
func ProtocolStdin() (io.ReadCloser, error) { return os.Stdin, nil }

// NotDumpable does nothing: it is for Linux (see the Linux build).
func NotDumpable() error { return nil }

// KeepInheritedFiles does nothing: it is for Linux (see the Linux build).
func KeepInheritedFiles() error { return nil }
