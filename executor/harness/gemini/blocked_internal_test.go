package gemini

import "testing"

// TestBlockedSegment: the CLI's hasBlockedPathSegment, whose paths its workspace refuses
// ("Path not in workspace"; fidelity seeds 40027, 40035, 40065 and 40096 wrote
// node_modules/pkg/index.txt), and paths it lets through.
func TestBlockedSegment(t *testing.T) {
	for rel, want := range map[string]bool{
		"/node_modules/pkg/index.txt": true, "node_modules": true, "a/.git/config": true, ".env": true,
		"Node_Modules/x": true, ".git./x": true, ".git /x": true, ".env:stream": true, "sub\\.git\\x": true,
		"gha-creds-1234.json": true, "GIT~1/x": true, "gi1a2b~12/x": true, "node_m~1": true, "no00ff~3": true,
		"env~2": true, "gha-cr~1.json": true, "gha-cr~1.jso": true, "gh0a0b~9.json": true,
		"": false, "/a/b.txt": false, ".gitignore": false, ".github/x": false, ".envrc": false, "node_modules2/x": false,
		"my.git/x": false, "git~": false, "git~1a": false, "gi1a2~1": false, "gha-creds-1.txt": false, "no00fg~1": false,
	} {
		if got := blockedSegment(rel); got != want {
			t.Errorf("blockedSegment(%q) = %v, want %v", rel, got, want)
		}
	}
}
