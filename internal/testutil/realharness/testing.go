package realharness

import "testing"

// Need skips the test when harness (Claude, Codex or Pi) is not installed, with a message
// saying how to install it; with TAPEBOX_REQUIRE_HARNESSES=1 (EnvRequire; CI sets it) a
// missing harness fails the test instead.
func Need(t testing.TB, harness string) {
	t.Helper()
	if harness == Pi || harness == Gemini || harness == OpenCode {
		path := PiPath
		switch harness {
		case Gemini:
			path = GeminiPath
		case OpenCode:
			path = OpenCodePath
		}
		if _, err := path(); err != nil {
			if Required() {
				t.Fatalf("%s is required (%s=1) but not installed: %v", harness, EnvRequire, err)
			}
			t.Skipf("%s not installed (cd harnesses && npm ci): %v", harness, err)
		}
		return
	}
	claude, codex, why := Available()
	if (harness == Claude && claude) || (harness == Codex && codex) {
		return
	}
	if Required() {
		t.Fatalf("%s is required (%s=1) but not installed: %s", harness, EnvRequire, why)
	}
	t.Skipf("%s not installed (cd harnesses && npm ci): %s", harness, why)
}

// Excerpt shortens s (a harness's output, for a test's log) to its first and last n/2
// bytes around a "..." line, when it is longer than n.
func Excerpt(s string, n int) string {
	if len(s) > n {
		return s[:n/2] + "\n...\n" + s[len(s)-n/2:]
	}
	return s
}
