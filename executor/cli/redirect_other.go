//go:build !linux

package cli

import "os"

// RedirectStdout returns os.Stdout unchanged: the executor runs on Linux, where fd 1 is
// pointed at stderr; elsewhere (development builds) nothing is redirected.
func RedirectStdout() (*os.File, error) { return os.Stdout, nil }
