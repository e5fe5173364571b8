package docker

import (
	"strings"
	"testing"
)

// The hint for a missing engine does not call local: "no isolation": it runs under
// bubblewrap where bwrap is installed (sandbox/local); unsafe-local: is the one without.
func TestNoEngineHintIsolation(t *testing.T) {
	if strings.Contains(noEngineHint, "local:DIR sandbox (no isolation)") {
		t.Fatalf("hint: %s", noEngineHint)
	}
	for _, want := range []string{"local:DIR", "bubblewrap", "unsafe-local:DIR is not isolated"} {
		if !strings.Contains(noEngineHint, want) {
			t.Errorf("the hint does not say %q: %s", want, noEngineHint)
		}
	}
}
