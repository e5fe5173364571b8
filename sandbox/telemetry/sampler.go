package telemetry

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/tapebox/tapebox/sandbox"
)

// DefaultInterval is the sampling period: 4 samples a second.
const DefaultInterval = 250 * time.Millisecond

// Source says where a sample's numbers came from.
type Source string

// Sources.
const (
	// SourceCgroupV1 and SourceCgroupV2: the container's cgroup files, read on this host
	// every Options.Interval.
	SourceCgroupV1 Source = "cgroup-v1"
	SourceCgroupV2 Source = "cgroup-v2"
	// SourceAPI: the Docker Engine API's stats stream, at its own rate (about once a second).
	SourceAPI Source = "api"
)

// Options configure a Sampler.
type Options struct {
	// Container is the container's name or ID (required).
	Container string
	// Start is the origin of the t_ms column: the tape's meta.started_at. Zero means when
	// Start is called.
	Start time.Time
	// Path is the CSV file to write (required); parent directories are created and an
	// existing file is replaced.
	Path string
	// Interval is the sampling period for cgroup sampling; zero means DefaultInterval.
	Interval time.Duration
	// ForceAPI samples the Docker stats API stream even when the cgroup files are readable.
	ForceAPI bool
	// Getenv reads DOCKER_HOST and the docker CLI's context settings; nil means os.Getenv.
	Getenv func(string) string
	// Logf receives the source chosen, problems and the end of sampling; nil discards them.
	Logf func(format string, args ...any)
}

// Sampler samples one container's CPU and memory into a CSV file until Close, the end of
// the context given to Start, or the container's stop.
type Sampler struct {
	opts   Options
	cli    *client.Client
	id     string
	name   string
	source Source
	cg     *cgroup

	f      *os.File
	w      *bufio.Writer
	cw     *csv.Writer
	werr   error // the first write error; only the sampling goroutine writes it before done
	rows   atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
	close  sync.Once

	prevAt  time.Time
	prevCPU int64 // -1 when unknown
	lastErr string
	repeats int
}

// Start checks that the container exists and runs, picks the source (the container's cgroup
// files on this host when they can be found, else the Docker stats API stream, which it logs),
// writes the CSV header and takes the first sample at once, then one every Interval. A missing
// or stopped container is an error wrapping sandbox.ErrNotFound or sandbox.ErrNotRunning, and
// no file is written. Later problems are logged and sampling goes on; a container that stops
// ends sampling cleanly (Done is closed).
func Start(ctx context.Context, opts Options) (*Sampler, error) {
	if opts.Container == "" {
		return nil, errors.New("telemetry: a container name or ID is required")
	}
	if opts.Path == "" {
		return nil, errors.New("telemetry: an output path is required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Start.IsZero() {
		opts.Start = time.Now()
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	cli, ep, err := NewClient(ctx, opts.Getenv)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s := &Sampler{opts: opts, cli: cli, prevCPU: -1, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			cli.Close()
		}
	}()
	info, err := cli.ContainerInspect(ctx, opts.Container)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("telemetry: container %q: %w on the Docker engine at %s; check the name with docker ps", opts.Container, sandbox.ErrNotFound, ep)
		}
		return nil, fmt.Errorf("telemetry: inspect container %q: %w", opts.Container, err)
	}
	if !running(info) {
		return nil, fmt.Errorf("telemetry: container %q: %w (%s); start it first", opts.Container, sandbox.ErrNotRunning, stateOf(info))
	}
	s.id, s.name = info.ID, opts.Container
	if !opts.ForceAPI {
		mem := hostMemTotal("/proc")
		if sys, err := cli.Info(ctx); err == nil && sys.MemTotal > 0 {
			mem = sys.MemTotal
		}
		s.cg, err = findCgroup("/sys/fs/cgroup", "/proc", info.State.Pid, info.ID, mem, s.logf)
		if err != nil {
			s.logf("the cgroup files of container %s cannot be read on this host (%v; the engine at %s may be remote): "+
				"falling back to the Docker stats API stream at its own rate (about 1 sample/s, not every %v); the source column says %s",
				s.name, err, ep, opts.Interval, SourceAPI)
		}
	}
	switch {
	case s.cg == nil:
		s.source = SourceAPI
	case s.cg.version == 2:
		s.source = SourceCgroupV2
	default:
		s.source = SourceCgroupV1
	}
	if err := os.MkdirAll(filepath.Dir(opts.Path), 0o755); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s.f, err = os.Create(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	s.w = bufio.NewWriter(s.f)
	s.cw = csv.NewWriter(s.w)
	s.write(Columns)
	if s.werr != nil {
		s.f.Close()
		return nil, fmt.Errorf("telemetry: write %s: %w", opts.Path, s.werr)
	}
	ok = true
	if s.source != SourceAPI {
		s.logf("sampling container %s every %v from its %s files into %s", s.name, opts.Interval, s.source, opts.Path)
	}
	lctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		if s.cg != nil {
			s.loopCgroup(lctx)
		} else {
			s.loopAPI(lctx)
		}
	}()
	return s, nil
}

// Source returns where the samples come from.
func (s *Sampler) Source() Source { return s.source }

// ContainerID returns the sampled container's full ID.
func (s *Sampler) ContainerID() string { return s.id }

// Rows returns how many samples were written so far.
func (s *Sampler) Rows() int { return int(s.rows.Load()) }

// Done is closed when sampling has ended: the container stopped, the context ended, or
// Close was called.
func (s *Sampler) Done() <-chan struct{} { return s.done }

// Close stops sampling, waits for the sampling goroutine, flushes and closes the file. It
// returns the first error writing the file. Close is idempotent.
func (s *Sampler) Close() error {
	var err error
	s.close.Do(func() {
		s.cancel()
		<-s.done
		s.cw.Flush()
		err = errors.Join(s.werr, s.cw.Error(), s.w.Flush(), s.f.Close())
		if err != nil {
			err = fmt.Errorf("telemetry: write %s: %w", s.opts.Path, err)
		}
		s.cli.Close()
	})
	return err
}

func (s *Sampler) logf(format string, args ...any) {
	s.opts.Logf("telemetry: "+format, args...)
}

// write writes one record and flushes it, so the file is readable while sampling goes on.
func (s *Sampler) write(rec []string) {
	if s.werr != nil {
		return
	}
	if err := s.cw.Write(rec); err != nil {
		s.werr = err
		return
	}
	s.cw.Flush()
	if err := s.cw.Error(); err != nil {
		s.werr = err
		return
	}
	s.werr = s.w.Flush()
}

// emit writes a sample taken at at with the given counters.
func (s *Sampler) emit(at time.Time, c counters) {
	sm := Sample{
		TMS: float64(at.Sub(s.opts.Start).Microseconds()) / 1000, At: at, CPUPercent: math.NaN(), CPUms: math.NaN(),
		MemoryBytes: c.mem, MemoryLimitBytes: c.limit, Pids: c.pids, Source: s.source,
	}
	if c.cpuNs >= 0 {
		sm.CPUms = float64(c.cpuNs) / 1e6
		if s.prevCPU >= 0 && at.After(s.prevAt) && c.cpuNs >= s.prevCPU {
			sm.CPUPercent = 100 * float64(c.cpuNs-s.prevCPU) / float64(at.Sub(s.prevAt).Nanoseconds())
		}
	}
	s.prevAt, s.prevCPU = at, c.cpuNs
	s.write(sm.record())
	if s.werr != nil {
		s.transient(fmt.Errorf("write %s: %w", s.opts.Path, s.werr))
		return
	}
	s.rows.Add(1)
}

// transient logs a problem that does not end sampling; a repeated one is logged once and
// then every 20th time with its count.
func (s *Sampler) transient(err error) {
	msg := err.Error()
	if msg == s.lastErr {
		s.repeats++
		if s.repeats%20 != 0 {
			return
		}
		s.logf("%s (%d times; sampling goes on)", msg, s.repeats+1)
		return
	}
	s.lastErr, s.repeats = msg, 0
	s.logf("%s (sampling goes on)", msg)
}

// stopped reports whether the container has stopped or gone, logging the end of sampling.
func (s *Sampler) stopped(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := s.cli.ContainerInspect(ictx, s.id)
	switch {
	case errdefs.IsNotFound(err):
		s.logf("container %s was removed; sampling ended after %d samples", s.name, s.Rows())
		return true
	case err != nil:
		if ctx.Err() != nil {
			return true
		}
		s.transient(fmt.Errorf("inspect container %s: %w", s.name, err))
		return false
	case !running(info):
		s.logf("container %s stopped (%s); sampling ended after %d samples", s.name, stateOf(info), s.Rows())
		return true
	}
	return false
}

func (s *Sampler) loopCgroup(ctx context.Context) {
	t := time.NewTicker(s.opts.Interval)
	defer t.Stop()
	for {
		at := time.Now()
		c, err := s.cg.read()
		switch {
		case errors.Is(err, errGone):
			if s.stopped(ctx) {
				return
			}
			s.transient(fmt.Errorf("container %s: %w while it still runs", s.name, err))
		case err != nil:
			s.transient(err)
		default:
			s.emit(at, c)
			// An empty cgroup: the container's processes are gone, it is stopping.
			if c.pids == 0 && s.stopped(ctx) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sampler) loopAPI(ctx context.Context) {
	s.logf("sampling container %s from the Docker stats API stream into %s", s.name, s.opts.Path)
	for {
		err := s.stream(ctx)
		if ctx.Err() != nil || s.stopped(ctx) {
			return
		}
		s.transient(fmt.Errorf("stats stream of container %s ended: %w; reconnecting", s.name, err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// stream reads the stats stream until it ends.
func (s *Sampler) stream(ctx context.Context) error {
	rd, err := s.cli.ContainerStats(ctx, s.id, true)
	if err != nil {
		return err
	}
	defer rd.Body.Close()
	dec := json.NewDecoder(rd.Body)
	for {
		var st container.StatsResponse
		if err := dec.Decode(&st); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("end of stream")
			}
			return err
		}
		if st.Read.IsZero() {
			// The engine sends an empty record for a container that is not running.
			return errors.New("empty stats record")
		}
		s.emit(st.Read, apiCounters(&st))
	}
}

// apiCounters takes the numbers from a stats record the way docker stats does.
func apiCounters(st *container.StatsResponse) counters {
	c := counters{cpuNs: int64(st.CPUStats.CPUUsage.TotalUsage), mem: -1, limit: -1, pids: -1}
	m := st.MemoryStats
	if m.Usage > 0 || m.Limit > 0 {
		c.mem = int64(m.Usage)
		if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage {
			c.mem = int64(m.Usage - v)
		} else if v, ok := m.Stats["inactive_file"]; ok && v < m.Usage {
			c.mem = int64(m.Usage - v)
		}
		c.limit = int64(m.Limit)
	}
	if st.PidsStats.Current > 0 || st.PidsStats.Limit > 0 {
		c.pids = int64(st.PidsStats.Current)
	}
	return c
}

func running(info container.InspectResponse) bool {
	return info.ContainerJSONBase != nil && info.State != nil && info.State.Running
}

func stateOf(info container.InspectResponse) string {
	if info.ContainerJSONBase == nil || info.State == nil {
		return "state unknown"
	}
	st := info.State
	switch {
	case st.Running:
		return "running"
	case st.Status == "exited":
		return fmt.Sprintf("exited with code %d", st.ExitCode)
	case st.Status != "":
		return st.Status
	}
	return "not running"
}
