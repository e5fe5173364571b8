package telemetry

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// Columns are the CSV's header. The first seven are TapeBox's telemetry format; source says
// where each row came from (see Source).
var Columns = []string{"t_ms", "time", "cpu_percent", "cpu_ms", "memory_bytes", "memory_limit_bytes", "pids", "source"}

// Sample is one row of telemetry. Unknown values are NaN (floats) or -1 (integers) and are
// written as empty cells.
type Sample struct {
	// TMS is milliseconds since Options.Start: the tape's clock. At is when the sample was
	// really taken.
	TMS float64
	At  time.Time
	// CPUPercent is the CPU used since the previous sample as a share of one core (100 = one
	// core busy, 200 = two), as docker stats shows it; NaN on the first row.
	CPUPercent float64
	// CPUms is the container's cumulative CPU time.
	CPUms float64
	// MemoryBytes is the memory in use: usage minus the inactive file cache, as docker stats
	// computes it. MemoryLimitBytes is the container's limit, the host's memory when it has
	// none. Pids counts its processes.
	MemoryBytes, MemoryLimitBytes, Pids int64
	// Source is where the numbers came from.
	Source Source
}

func (s Sample) record() []string {
	f := func(v float64, prec int) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	i := func(v int64) string {
		if v < 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	return []string{
		strconv.FormatFloat(roundMS(s.TMS), 'f', -1, 64),
		s.At.UTC().Format(time.RFC3339Nano),
		f(s.CPUPercent, 2),
		strconv.FormatFloat(roundMS(s.CPUms), 'f', -1, 64),
		i(s.MemoryBytes), i(s.MemoryLimitBytes), i(s.Pids),
		string(s.Source),
	}
}

// roundMS rounds milliseconds to microseconds, as the tape's timing is; NaN stays NaN.
func roundMS(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// ReadCSV reads a telemetry file written by a Sampler.
func ReadCSV(r io.Reader) ([]Sample, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read telemetry header: %w", err)
	}
	if len(head) < 7 || !slices.Equal(head[:7], Columns[:7]) {
		return nil, fmt.Errorf("read telemetry: header %q, want %q", head, Columns)
	}
	var out []Sample
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read telemetry: %w", err)
		}
		if len(rec) < 7 {
			return out, fmt.Errorf("read telemetry: line %d: %d fields, want %d", line, len(rec), len(Columns))
		}
		var s Sample
		var perr error
		float := func(v string) float64 {
			if v == "" {
				return math.NaN()
			}
			x, err := strconv.ParseFloat(v, 64)
			perr = errors.Join(perr, err)
			return x
		}
		integer := func(v string) int64 {
			if v == "" {
				return -1
			}
			x, err := strconv.ParseInt(v, 10, 64)
			perr = errors.Join(perr, err)
			return x
		}
		s.TMS = float(rec[0])
		s.At, err = time.Parse(time.RFC3339Nano, rec[1])
		perr = errors.Join(perr, err)
		s.CPUPercent, s.CPUms = float(rec[2]), float(rec[3])
		s.MemoryBytes, s.MemoryLimitBytes, s.Pids = integer(rec[4]), integer(rec[5]), integer(rec[6])
		if len(rec) > 7 {
			s.Source = Source(rec[7])
		}
		if perr != nil {
			return out, fmt.Errorf("read telemetry: line %d: %w", line, perr)
		}
		out = append(out, s)
	}
}
