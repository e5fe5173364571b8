//go:build !linux

package local

import (
	"context"
	"errors"
	"os"
)

// jail is bubblewrap's, which only Linux has.
type jail struct{}

func openJail(ctx context.Context, dir, exe string) (*jail, error) {
	return nil, errors.New("bubblewrap needs Linux")
}

func (j *jail) command(argv []string) (string, []string, []*os.File) { return argv[0], argv[1:], nil }
func (j *jail) path(host string) string                              { return host }
func (j *jail) close() error                                         { return nil }
func jailVisible(p string) bool                                      { return true }

// reapLeftovers has nothing to reap: only Linux has jails.
func reapLeftovers(func(string, ...any)) {}
