package compare

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/workspace"
)

// EndState is compare's verdict on the workspace a replay left, against the one the
// recording left (meta.workspace.end of each tape).
type EndState struct {
	// Compared says both tapes carry an end manifest and they were compared.
	Compared bool `json:"compared"`
	// Identical says the two manifests match entry for entry (path, type, mode, size,
	// content digest, link target).
	Identical bool `json:"identical"`
	// Note says why nothing was compared, when Compared is false.
	Note    string             `json:"note,omitempty"`
	Changes []workspace.Change `json:"changes"`
	// Recorded and Replayed count the entries of each manifest.
	Recorded int `json:"recorded"`
	Replayed int `json:"replayed"`
	// Exclude lists the patterns both manifests left out (the recording's
	// meta.workspace.exclude, which the replay applies too); the report names those beyond
	// workspace.DefaultExclude, since a recording can leave out anything it likes ("*").
	Exclude []string `json:"exclude"`
}

// compareEndState compares the end manifests of a recording and its replay. A recording
// without one has nothing to compare (older tapes, tapes recorded without --workspace): the
// verdict then rests on the tool results, and the report says so. A recording with one
// whose replay has none differs: the replay cannot show it ended where the recording did.
func compareEndState(rec, rep *tape.Tape) EndState {
	rw, pw := rec.Meta.Workspace, rep.Meta.Workspace
	if rw == nil || rw.End == nil {
		return EndState{Identical: true, Changes: []workspace.Change{}, Exclude: []string{}, Note: "the recording has no end manifest (recorded without a workspace)"}
	}
	es := EndState{Recorded: len(rw.End), Changes: []workspace.Change{}, Exclude: append([]string{}, rw.Exclude...)}
	if pw == nil || pw.End == nil {
		es.Note = "the replay has no end manifest (replayed with --no-workspace, in simulator mode without --workspace DIR, or cut short)"
		return es
	}
	es.Compared = true
	es.Replayed = len(pw.End)
	es.Changes = append(es.Changes, workspace.Diff(workspace.FromTape(rw.End), workspace.FromTape(pw.End))...)
	es.Identical = len(es.Changes) == 0
	return es
}

// writeText prints the end-state part of a report.
func (es EndState) writeText(w io.Writer) {
	switch {
	case !es.Compared && es.Identical:
		fmt.Fprintf(w, "  end state: not compared: %s\n", es.Note)
	case !es.Compared:
		fmt.Fprintf(w, "  end state: DIFFERS: %s\n", es.Note)
	case es.Identical:
		fmt.Fprintf(w, "  end state: identical (%d entries)\n", es.Recorded)
	default:
		fmt.Fprintf(w, "  end state: %d difference(s) (%d entries recorded, %d replayed)\n", len(es.Changes), es.Recorded, es.Replayed)
		for _, c := range es.Changes {
			fmt.Fprintf(w, "    - %s\n", c)
		}
	}
	var own []string
	for _, p := range es.Exclude {
		if !slices.Contains(workspace.DefaultExclude, p) {
			own = append(own, p)
		}
	}
	if es.Compared && len(own) > 0 {
		fmt.Fprintf(w, "  end state leaves out what the recording excluded: %s\n", strings.Join(own, ", "))
	}
}
