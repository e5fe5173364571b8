package compare

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tapebox/tapebox/internal/testutil/tapegen"
	"github.com/tapebox/tapebox/tape"
)

func TestCompareEndState(t *testing.T) {
	end := []tape.FileEntry{
		{Path: "README.md", Type: "file", Mode: "0644", Size: 6, SHA256: strings.Repeat("a", 64)},
		{Path: "src", Type: "dir", Mode: "0755"},
		{Path: "src/run.sh", Type: "file", Mode: "0755", Size: 10, SHA256: strings.Repeat("b", 64)},
	}
	withEnd := func(tp *tape.Tape, es []tape.FileEntry) *tape.Tape {
		if es != nil {
			tp.Meta.Workspace = &tape.Workspace{End: es}
		} else {
			tp.Meta.Workspace = nil
		}
		return tp
	}
	for _, tc := range []struct {
		name      string
		rec, rep  []tape.FileEntry
		identical bool
		says      string
	}{
		{"same end state", end, end, true, "end state: identical (3 entries)"},
		{"a removed file", end, []tape.FileEntry{end[0], end[1]}, false, "src/run.sh: missing: recorded file 0755, 10 bytes"},
		{"an extra file", end[:2], end, false, "src/run.sh: extra: file 0755, 10 bytes"},
		{"one changed byte", end, []tape.FileEntry{end[0], end[1], {Path: "src/run.sh", Type: "file", Mode: "0755", Size: 10, SHA256: strings.Repeat("c", 64)}}, false, "src/run.sh: content differs"},
		{"a changed mode", end, []tape.FileEntry{end[0], end[1], {Path: "src/run.sh", Type: "file", Mode: "0644", Size: 10, SHA256: strings.Repeat("b", 64)}}, false, "src/run.sh: mode differs"},
		{"a replay without a manifest", end, nil, false, "end state: DIFFERS: the replay has no end manifest"},
		{"a recording without a manifest", nil, end, true, "end state: not compared: the recording has no end manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := withEnd(tapegen.Pair("claude-code", "ok"), tc.rec)
			rep := withEnd(tapegen.ReplayOf(t, tapegen.Pair("claude-code", "ok"), "ok"), tc.rep)
			r := Compare(rec, rep)
			require.Empty(t, r.Differences)
			require.Equal(t, tc.identical, r.Identical)
			require.Equal(t, tc.identical, r.EndState.Identical)
			var b strings.Builder
			r.WriteText(&b)
			require.Contains(t, b.String(), tc.says)
			if !tc.identical {
				require.Contains(t, b.String(), ": DIFFERS\n")
			}
		})
	}
}

// TestCompareEndStateNamesExclusions: a recording can leave anything out of both manifests
// ("*" leaves everything); the report names the patterns beyond the defaults, so that an
// end state of 0 identical entries does not pass for a checked one.
func TestCompareEndStateNamesExclusions(t *testing.T) {
	rec := tapegen.Pair("claude-code", "ok")
	rec.Meta.Workspace = &tape.Workspace{Exclude: []string{"node_modules", ".venv", "*"}, End: []tape.FileEntry{}}
	rep := tapegen.ReplayOf(t, tapegen.Pair("claude-code", "ok"), "ok")
	rep.Meta.Workspace = &tape.Workspace{Exclude: rec.Meta.Workspace.Exclude, End: []tape.FileEntry{}}
	r := Compare(rec, rep)
	require.True(t, r.Identical)
	require.Equal(t, []string{"node_modules", ".venv", "*"}, r.EndState.Exclude)
	var b strings.Builder
	r.WriteText(&b)
	require.Contains(t, b.String(), "end state: identical (0 entries)\n  end state leaves out what the recording excluded: *\n")
	// The defaults alone are not named.
	rec.Meta.Workspace.Exclude = []string{"node_modules"}
	b.Reset()
	Compare(rec, rep).WriteText(&b)
	require.NotContains(t, b.String(), "excluded")
}
