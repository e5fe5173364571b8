package fidelity

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Entry is one outcome as a ledger keeps it: what the scoreboard needs of it, without the
// sequence's files and calls (its seed names them). A long run writes one entry a
// sequence, one JSON object a line, so that runs made in chunks, on other days or by other
// people add up to one scoreboard (Board.AddEntry).
type Entry struct {
	Harness string `json:"harness"`
	// Version is the target's harness version.
	Version string `json:"version"`
	// Seed is the sequence's seed; Origin, for a shrunk one, the seed it came from.
	Seed   uint64 `json:"seed"`
	Origin uint64 `json:"origin,omitempty"`
	// Executor names the executor the replay ran (a commit), when known.
	Executor     string        `json:"executor,omitempty"`
	Calls        []CallOutcome `json:"calls"`
	EndIdentical bool          `json:"end_identical"`
	Divergences  []Divergence  `json:"divergences,omitempty"`
	// Err is why the sequence did not run (empty when it did).
	Err string `json:"error,omitempty"`
	// RecordMS and ReplayMS are how long each half took.
	RecordMS int64 `json:"record_ms"`
	ReplayMS int64 `json:"replay_ms"`
}

// ledgerText bounds each side of a divergence in a ledger: enough to read and classify it.
const ledgerText = 4000

// Entry returns o as a ledger entry of target version.
func (o *Outcome) Entry(version string) Entry {
	e := Entry{Harness: o.Seq.Harness, Version: version, Seed: o.Seq.Seed, Origin: o.Seq.Origin, Calls: o.Calls,
		EndIdentical: o.EndIdentical, RecordMS: o.Record.Milliseconds(), ReplayMS: o.Replay.Milliseconds()}
	if e.Calls == nil {
		e.Calls = []CallOutcome{}
	}
	if o.Err != nil {
		e.Err = o.Err.Error()
	}
	for _, d := range o.Divergences {
		d.Recorded, d.Replayed = clip(d.Recorded, ledgerText), clip(d.Replayed, ledgerText)
		e.Divergences = append(e.Divergences, d)
	}
	return e
}

// Reclassify classifies again, with classes, the divergences the entry left unclassified:
// a class added since the run takes them.
func (e *Entry) Reclassify(classes []Class) {
	for i := range e.Divergences {
		if e.Divergences[i].Class == "" {
			e.Divergences[i].Class = Classify(classes, e.Version, e.Divergences[i])
		}
	}
	follow(classes, e.Divergences)
}

// name is how reports name the entry's sequence (Sequence.Name).
func (e Entry) name() string {
	if e.Origin != 0 {
		return fmt.Sprintf("%s seed %d (shrunk)", e.Harness, e.Origin)
	}
	return fmt.Sprintf("%s seed %d", e.Harness, e.Seed)
}

// AppendEntry appends e to the ledger file, one JSON line.
func AppendEntry(file string, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("fidelity: ledger %s: %w", file, err)
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("fidelity: ledger %s: %w", file, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("fidelity: ledger %s: %w", file, err)
	}
	return f.Close()
}

// ReadLedger reads the entries of a ledger file. A line that is not an entry is an error
// naming the file and the line.
func ReadLedger(file string) ([]Entry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("fidelity: ledger: %w", err)
	}
	defer f.Close()
	var out []Entry
	r := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if len(b) > 0 && string(b) != "\n" {
			var e Entry
			if jerr := json.Unmarshal(b, &e); jerr != nil {
				return nil, fmt.Errorf("fidelity: ledger %s line %d: %w", file, line, jerr)
			}
			if e.Harness == "" || e.Version == "" {
				return nil, fmt.Errorf("fidelity: ledger %s line %d: no harness or version", file, line)
			}
			out = append(out, e)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("fidelity: ledger %s line %d: %w", file, line, err)
		}
	}
}

func (e Entry) elapsed() time.Duration {
	return time.Duration(e.RecordMS+e.ReplayMS) * time.Millisecond
}
