package viewer

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/tapebox/tapebox/compare"
	"github.com/tapebox/tapebox/match"
	"github.com/tapebox/tapebox/prices"
	"github.com/tapebox/tapebox/sandbox/telemetry"
)

//go:embed page/page.js
var pageJS string

//go:embed page/page.css
var pageCSS string

//go:embed page/body.html
var pageBody string

// Source is one tape to show: the path it was read from (shown in the page) and its bytes,
// which the caller has checked against the schema (schema.Validate).
type Source struct {
	Path string
	Data []byte
}

// Options says what the page shows.
type Options struct {
	// Recording is the tape the page is about.
	Recording Source
	// Replay, when set, is shown beside the recording: a replay or a fork of it.
	Replay *Source
	// Report is compare.Compare of the recording and the replay, whose differences the
	// page highlights; nil without a replay.
	Report *compare.Report
	// Telemetry are CPU and memory samples on the recording's clock, from TelemetryPath.
	Telemetry     []telemetry.Sample
	TelemetryPath string
	// Prices prices the steps; nil means prices.Default().
	Prices *prices.Table
}

// index is the whole of what the page decodes at once.
type index struct {
	Version   int             `json:"version"`
	Recording *tapeIndex      `json:"recording"`
	Replay    *tapeIndex      `json:"replay"`
	Compare   *compareIndex   `json:"compare"`
	Telemetry *telemetryIndex `json:"telemetry"`
}

type compareIndex struct {
	Identical   bool              `json:"identical"`
	ReachedEnd  bool              `json:"reached_end"`
	Ended       string            `json:"ended"`
	Compared    int               `json:"steps_compared"`
	Differences []differenceIndex `json:"differences"`
	EndState    compare.EndState  `json:"end_state"`
	Identifiers []match.Learned   `json:"identifiers"`
	Volatile    []string          `json:"volatile"`
	// NotRun are the replay's calls whose result was copied from the recording.
	NotRun          []compare.NotRun `json:"not_run"`
	ResultsReplayed int              `json:"results_replayed"`
}

type differenceIndex struct {
	compare.Difference
	// Diff is the inline diff of Recorded against Replayed, for tool results and inputs.
	Diff []Edit `json:"diff,omitempty"`
}

type telemetryIndex struct {
	Path string     `json:"path"`
	T    []float64  `json:"t"`
	CPU  []*float64 `json:"cpu"`
	Mem  []int64    `json:"mem"`
	// Limit is the largest memory limit seen.
	Limit  int64  `json:"limit"`
	Source string `json:"source"`
}

// Write writes the page for o to w. The tapes are walked one step at a time: each step's
// detail is compressed into the page as soon as it is decoded, so only the index (a few
// hundred bytes a step) is held.
func Write(ctx context.Context, w io.Writer, o Options) error {
	pt := o.Prices
	if pt == nil {
		pt = prices.Default()
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	title := "tapebox view: " + filepath.Base(o.Recording.Path)
	fmt.Fprintf(bw, `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '%s'; style-src '%s'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="color-scheme" content="light dark">
<title>%s</title>
<style>%s</style>
</head><body>
%s
<script type="application/x-tapebox-blobs" id="tb-blobs">`, hashOf(pageJS), hashOf(pageCSS), html.EscapeString(title), pageCSS, pageBody)

	enc := newBlobs(ctx, bw)
	ix := index{Version: 1}
	var err error
	ix.Recording, err = walkTape(o.Recording.Path, o.Recording.Data, enc.submit)
	if err == nil && o.Replay != nil {
		ix.Replay, err = walkTape(o.Replay.Path, o.Replay.Data, enc.submit)
	}
	offsets, cerr := enc.close()
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	for _, t := range []*tapeIndex{ix.Recording, ix.Replay} {
		if t == nil {
			continue
		}
		for i := range t.Steps {
			t.Steps[i].Blob = offsets[t.Steps[i].seq]
		}
		t.finish(pt)
	}
	if o.Report != nil {
		ix.Compare = compareOf(o.Report)
	}
	if len(o.Telemetry) > 0 {
		ix.Telemetry = telemetryOf(o.TelemetryPath, o.Telemetry)
	}
	bw.WriteString(`</script>
<script type="application/x-tapebox-index" id="tb-index">`)
	js, err := json.Marshal(ix)
	if err != nil {
		return fmt.Errorf("encode page index: %w", err)
	}
	b64, err := newBlobCoder().encode(js)
	if err != nil {
		return err
	}
	bw.Write(b64)
	bw.WriteString("</script>\n<script>")
	bw.WriteString(pageJS)
	bw.WriteString("</script>\n</body></html>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write page: %w", err)
	}
	return nil
}

// hashOf is the CSP source that allows exactly the inline script or style s.
func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

func compareOf(r *compare.Report) *compareIndex {
	c := &compareIndex{
		Identical: r.Identical, ReachedEnd: r.ReachedEnd, Ended: r.Ended, Compared: r.StepsCompared,
		EndState: r.EndState, Identifiers: r.Identifiers, Volatile: r.Volatile,
		NotRun: r.NotRun, ResultsReplayed: r.ResultsReplayed,
		Differences: make([]differenceIndex, 0, len(r.Differences)),
	}
	for _, d := range r.Differences {
		di := differenceIndex{Difference: d}
		switch d.Field {
		case "tool_result", "tool_call.input":
			if d.Recorded != "present" && d.Recorded != "missing" {
				di.Diff = InlineDiff(d.Recorded, d.Replayed)
			}
		}
		c.Differences = append(c.Differences, di)
	}
	return c
}

func telemetryOf(path string, ss []telemetry.Sample) *telemetryIndex {
	t := &telemetryIndex{Path: path, T: make([]float64, len(ss)), CPU: make([]*float64, len(ss)), Mem: make([]int64, len(ss))}
	var sources []string
	for i, s := range ss {
		t.T[i] = s.TMS
		if !math.IsNaN(s.CPUPercent) && !math.IsInf(s.CPUPercent, 0) {
			v := s.CPUPercent
			t.CPU[i] = &v
		}
		t.Mem[i] = s.MemoryBytes
		t.Limit = max(t.Limit, s.MemoryLimitBytes)
		if src := string(s.Source); src != "" && (len(sources) == 0 || sources[len(sources)-1] != src) {
			sources = append(sources, src)
		}
	}
	t.Source = strings.Join(sources, ", ")
	return t
}
