package testkit

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The advice to rewrite golden files names what works in the test binary: -update only
// where the test package defines it (here it does not, as in most packages: go test
// -update would fail with "flag provided but not defined"), else TAPEBOX_UPDATE=1.
func TestUpdateHint(t *testing.T) {
	none := func(string) *flag.Flag { return nil }
	assert.Equal(t, "TAPEBOX_UPDATE=1 go test (this test package defines no -update flag)", updateHint(none))
	defined := func(string) *flag.Flag { return &flag.Flag{Name: "update"} }
	assert.Equal(t, "go test -update (or TAPEBOX_UPDATE=1 go test)", updateHint(defined))
}
