package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tapebox/tapebox/replay"
	"github.com/tapebox/tapebox/sandbox"
	"github.com/tapebox/tapebox/stats"
	"github.com/tapebox/tapebox/tape"
)

func init() {
	register(&command{name: "bench", summary: "replay a tape n times on two sandboxes and compare them with statistics", run: runBench})
}

// benchMetric is one measured quantity of a run.
type benchMetric struct {
	name, label string
	dir         stats.Direction
	value       func(r *benchRun) float64
}

var benchMetrics = []benchMetric{
	{"wall_ms", "replay wall ms", stats.LowerIsBetter, func(r *benchRun) float64 { return r.WallMS }},
	{"tool_ms", "tool ms", stats.LowerIsBetter, func(r *benchRun) float64 { return r.ToolMS }},
	{"overhead_ms_per_step", "overhead ms/step", stats.LowerIsBetter, func(r *benchRun) float64 { return r.OverheadMSPerStep }},
	{"steps_per_s", "steps/s", stats.HigherIsBetter, func(r *benchRun) float64 { return r.StepsPerS }},
	{"setup_ms", "sandbox setup ms", stats.LowerIsBetter, func(r *benchRun) float64 { return r.SetupMS }},
}

// benchRun is what one replay measured.
type benchRun struct {
	// WallMS is the whole replay (controller.Result.Wall); ToolMS the tool execution the
	// executor measured; ModelMS the paced model latency.
	WallMS  float64 `json:"wall_ms"`
	ToolMS  float64 `json:"tool_ms"`
	ModelMS float64 `json:"model_ms"`
	// ToolPathMS is the tool time on the critical path: per step, the longest call run in
	// the sandbox (calls of one response run concurrently), summed over steps.
	ToolPathMS float64 `json:"tool_path_ms"`
	// OverheadMSPerStep is (wall - tool path - model) / steps: what the controller, the
	// executor session and the sandbox add per step.
	OverheadMSPerStep float64 `json:"overhead_ms_per_step"`
	StepsPerS         float64 `json:"steps_per_s"`
	// SetupMS is opening the sandbox: creating and starting a container, installing the
	// executor (not part of the replay's wall time).
	SetupMS   float64 `json:"setup_ms"`
	Steps     int     `json:"steps"`
	ToolCalls int     `json:"tool_calls"`
	// Identical says whether compare found the replay identical to the recording.
	Identical bool `json:"identical"`
}

// benchSide is one of the two sandboxes.
type benchSide struct {
	label string // "A" or "B"
	spec  string // as given, with its ?options
	base  sandbox.Spec
	opts  sandbox.Options
	runs  []*benchRun
}

type benchFlags struct {
	tapePath, a, b, cwd string
	cwdSet              bool // --cwd was on the command line
	n, warmup           int
	speed               float64
	jsonOut, quiet      bool
	failOnRegression    bool
	install             bool
	callTimeout         time.Duration
	env                 kvFlag
	seed                uint64
	// Defaults for containers TapeBox creates, overridable per side.
	network, memory, runtime string
	cpus                     float64
	pids                     int64
	readOnly                 bool
}

func runBench(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "bench", "--tape run.json --sandbox A --vs B [-n 10] [--json] [flags]", `
Replays a tape n times on each of two sandboxes in executor mode (runs interleaved A, B, A, B ...
so that drift on the machine hits both alike) and compares them per metric: mean, standard
deviation and a bootstrap 95 % confidence interval of the mean for A and for B, Cohen's d of B
against A, and whether B regressed: the 95 % bootstrap interval of mean(B) - mean(A) lies
entirely on the bad side of 0. With -n 1 the deviations, intervals and verdicts are undefined
and print as n/a.

Metrics per run: replay wall ms; tool ms (tool execution as the executor measured it, summed
over calls); controller overhead ms per step, (wall - tool - model) / steps with the tool time
on the critical path (calls of one response run concurrently and count once); steps/s; sandbox
setup ms (creating and starting the container and installing the executor, outside the replay).

Sandboxes are specs as for "tapebox replay", plus options for containers TapeBox creates after
a "?", which override the flags below for that side:
  --sandbox docker-image:tapebox/sandbox:bookworm --vs 'docker-image:tapebox/sandbox:bookworm?runtime=runsc'
  --sandbox 'docker-image:IMG?memory=2g' --vs 'docker-image:IMG?memory=256m&cpus=0.5'
Options: memory, cpus, pids-limit, runtime, network, read-only. local:DIR replays each run in
a fresh directory under DIR, removed after the run. docker:NAME reuses one container, so its
runs are not independent.

A replay that fails makes the verb fail with the reason; no time is reported for it.
Exit codes: 0 done, 1 a replay failed (or B regressed, with --fail-on-regression), 2 usage.`)
	f := benchFlags{env: kvFlag{}}
	fs.StringVar(&f.tapePath, "tape", "", "the recording to replay (required)")
	fs.StringVar(&f.a, "sandbox", "", "sandbox A, the baseline (required)")
	fs.StringVar(&f.b, "vs", "", "sandbox B, compared against A (required)")
	fs.IntVar(&f.n, "n", 10, "runs on each sandbox")
	fs.IntVar(&f.warmup, "warmup", 0, "unmeasured runs on each sandbox first (warms caches and the executor build)")
	fs.Float64Var(&f.speed, "speed", 0, "model latency: 0 none (measures the sandbox), 1 as recorded")
	fs.BoolVar(&f.jsonOut, "json", false, "print JSON instead of a table")
	fs.BoolVar(&f.failOnRegression, "fail-on-regression", false, "exit 1 when B regressed on some metric")
	fs.StringVar(&f.cwd, "cwd", "", "working directory inside a container or pod (default: the tape's meta.cwd, else a fresh /workspace; ignored for local:DIR)")
	fs.BoolVar(&f.install, "install-executor", false, "copy tapebox-exec into a docker:NAME container (always done for docker-image: and k8s:)")
	fs.DurationVar(&f.callTimeout, "call-timeout", 10*time.Minute, "per tool call")
	fs.Var(f.env, "env", "KEY=VALUE for the executor's environment, repeatable")
	fs.Uint64Var(&f.seed, "seed", stats.DefaultSeed, "seed of the bootstrap (the same runs give the same intervals)")
	fs.StringVar(&f.network, "network", "", "network of created containers (default none)")
	fs.StringVar(&f.memory, "memory", "", "memory limit of created containers (e.g. 512m, 2g)")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU limit of created containers")
	fs.Int64Var(&f.pids, "pids-limit", 0, "process limit of created containers")
	fs.BoolVar(&f.readOnly, "read-only", false, "read-only root for created containers")
	fs.StringVar(&f.runtime, "runtime", "", "OCI runtime of created containers (e.g. runsc)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress lines")
	if code, done := parse(env, fs, args); done {
		return code
	}
	fs.Visit(func(fl *flag.Flag) { f.cwdSet = f.cwdSet || fl.Name == "cwd" })
	switch {
	case f.tapePath == "":
		return usageError(env, fs, "--tape is required")
	case f.a == "" || f.b == "":
		return usageError(env, fs, "--sandbox (A) and --vs (B) are both required")
	case f.n < 1:
		return usageError(env, fs, "-n must be 1 or more")
	case f.warmup < 0:
		return usageError(env, fs, "--warmup must be 0 or more")
	case f.speed < 0:
		return usageError(env, fs, "--speed must be 0 or more")
	case fs.NArg() > 0:
		return usageError(env, fs, "unexpected arguments %q", fs.Args())
	}
	sides := make([]*benchSide, 2)
	for i, spec := range []string{f.a, f.b} {
		side, err := parseBenchSide(spec, &f)
		if err != nil {
			return usageError(env, fs, "%v", err)
		}
		side.label = string(rune('A' + i))
		sides[i] = side
	}
	rec, code := loadValidTape(env, "bench", f.tapePath)
	if rec == nil {
		return code
	}
	logf := func(format string, args ...any) {
		if !f.quiet {
			fmt.Fprintf(env.Stderr, "tapebox bench: %s\n", fmt.Sprintf(format, args...))
		}
	}
	for i := range f.warmup {
		for _, side := range sides {
			if _, err := benchOnce(ctx, rec, side, &f); err != nil {
				return failf(env, "bench", "warm-up run %d on %s (%s): %v", i+1, side.label, side.spec, err)
			}
		}
	}
	for i := range f.n {
		for _, side := range sides {
			r, err := benchOnce(ctx, rec, side, &f)
			if err != nil {
				return failf(env, "bench", "run %d of %d on %s (%s): %v", i+1, f.n, side.label, side.spec, err)
			}
			side.runs = append(side.runs, r)
			logf("run %d/%d %s: %.1f ms, %d steps, %.3f ms overhead/step, setup %.0f ms", i+1, f.n, side.label, r.WallMS, r.Steps, r.OverheadMSPerStep, r.SetupMS)
		}
	}
	rep := newBenchReport(rec, &f, sides)
	if f.jsonOut {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return failf(env, "bench", "%v", err)
		}
	} else {
		rep.writeText(env.Stdout)
	}
	if f.failOnRegression && rep.Regressed {
		return failf(env, "bench", "B regressed on %s", strings.Join(rep.regressedNames(), ", "))
	}
	return ExitOK
}

// parseBenchSide parses "SPEC[?key=value&...]" into a sandbox spec and its options.
func parseBenchSide(s string, f *benchFlags) (*benchSide, error) {
	spec, query, _ := strings.Cut(s, "?")
	base, err := sandbox.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	side := &benchSide{spec: s, base: base}
	o := sandbox.Options{Env: f.env, InstallExecutor: f.install,
		Network: f.network, CPUs: f.cpus, PidsLimit: f.pids, ReadOnlyRoot: f.readOnly, Runtime: f.runtime}
	mem := f.memory
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: options after ?: %v", s, err)
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := q.Get(k)
		var perr error
		switch k {
		case "memory":
			mem = v
		case "cpus":
			o.CPUs, perr = strconv.ParseFloat(v, 64)
		case "pids-limit":
			o.PidsLimit, perr = strconv.ParseInt(v, 10, 64)
		case "runtime":
			o.Runtime = v
		case "network":
			o.Network = v
		case "read-only":
			o.ReadOnlyRoot, perr = strconv.ParseBool(cmp.Or(v, "true"))
		default:
			return nil, fmt.Errorf("sandbox %q: unknown option %q (want memory, cpus, pids-limit, runtime, network or read-only)", s, k)
		}
		if perr != nil {
			return nil, fmt.Errorf("sandbox %q: option %s=%q: %v", s, k, v, perr)
		}
	}
	if o.Memory, err = parseBytes(mem); err != nil {
		return nil, fmt.Errorf("sandbox %q: memory: %v", s, err)
	}
	if base.Scheme != sandbox.SchemeDockerImage && (o.Memory != 0 || o.CPUs != 0 || o.PidsLimit != 0 || o.Runtime != "" || o.Network != "" || o.ReadOnlyRoot) {
		return nil, fmt.Errorf("sandbox %q: memory, cpus, pids-limit, runtime, network and read-only apply only to docker-image: sandboxes", s)
	}
	side.opts = o
	return side, nil
}

// benchOnce replays rec once in a fresh sandbox of side (replay.Run), compared with the
// recording.
func benchOnce(ctx context.Context, rec *tape.Tape, side *benchSide, f *benchFlags) (*benchRun, error) {
	spec := side.base.String()
	if side.base.Scheme == sandbox.SchemeLocal {
		if err := os.MkdirAll(side.base.Target, 0o755); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp(side.base.Target, "bench-run-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		run := side.base
		run.Target = dir
		spec = run.String()
	}
	res, err := replay.Run(ctx, rec, spec, replay.Options{TapePath: f.tapePath, Sandbox: side.opts, Cwd: f.cwd, CwdSet: f.cwdSet,
		Env: f.env, Speed: f.speed, CallTimeout: f.callTimeout, Compare: true})
	if err != nil {
		return nil, err
	}
	if res.Steps == 0 {
		return nil, errors.New("the replay played no step")
	}
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	r := &benchRun{WallMS: ms(res.Wall), ToolMS: ms(res.ToolTime), ModelMS: ms(res.ModelTime), SetupMS: ms(res.Setup),
		Steps: res.Steps, ToolCalls: res.ToolCalls}
	r.ToolPathMS = ms(res.ToolPath)
	r.OverheadMSPerStep = (r.WallMS - r.ToolPathMS - r.ModelMS) / float64(res.Steps)
	r.StepsPerS = float64(res.Steps) / res.Wall.Seconds()
	r.Identical = res.Identical()
	return r, nil
}

// benchFloat is a number in JSON output; NaN and infinities (undefined values) encode as null.
type benchFloat float64

func (x benchFloat) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

type benchSummaryJSON struct {
	N      int           `json:"n"`
	Mean   benchFloat    `json:"mean"`
	StdDev benchFloat    `json:"sd"`
	CI     [2]benchFloat `json:"ci95"`
}

type benchMetricJSON struct {
	Name      string           `json:"name"`
	Better    string           `json:"better"`
	A         benchSummaryJSON `json:"a"`
	B         benchSummaryJSON `json:"b"`
	Diff      benchFloat       `json:"diff"`
	DiffCI    [2]benchFloat    `json:"diff_ci95"`
	RelDiff   benchFloat       `json:"rel_diff"`
	CohensD   benchFloat       `json:"cohens_d"`
	Verdict   stats.Verdict    `json:"verdict"`
	Regressed bool             `json:"regressed"`
	Notes     []string         `json:"notes,omitempty"`
}

type benchSideJSON struct {
	Spec string      `json:"spec"`
	Runs []*benchRun `json:"runs"`
}

// benchReport is the verb's result, printed as a table or JSON.
type benchReport struct {
	Tape      string            `json:"tape"`
	TapeID    string            `json:"tape_id"`
	Steps     int               `json:"steps"`
	N         int               `json:"n"`
	Warmup    int               `json:"warmup"`
	Speed     float64           `json:"speed"`
	Seed      uint64            `json:"seed"`
	A         benchSideJSON     `json:"a"`
	B         benchSideJSON     `json:"b"`
	Metrics   []benchMetricJSON `json:"metrics"`
	Regressed bool              `json:"regressed"`
	Notes     []string          `json:"notes,omitempty"`
}

func newBenchReport(rec *tape.Tape, f *benchFlags, sides []*benchSide) *benchReport {
	a, b := sides[0], sides[1]
	rep := &benchReport{Tape: f.tapePath, TapeID: rec.Meta.TapeID, Steps: a.runs[0].Steps, N: f.n, Warmup: f.warmup,
		Speed: f.speed, Seed: f.seed, A: benchSideJSON{a.spec, a.runs}, B: benchSideJSON{b.spec, b.runs}}
	summary := func(s stats.Summary) benchSummaryJSON {
		return benchSummaryJSON{N: s.N, Mean: benchFloat(s.Mean), StdDev: benchFloat(s.StdDev), CI: [2]benchFloat{benchFloat(s.CI.Lo), benchFloat(s.CI.Hi)}}
	}
	seen := map[string]bool{}
	note := func(n string) {
		if !seen[n] {
			seen[n] = true
			rep.Notes = append(rep.Notes, n)
		}
	}
	for _, m := range benchMetrics {
		va, vb := benchValues(a.runs, m), benchValues(b.runs, m)
		c := stats.Compare(va, vb, m.dir, stats.Options{Seed: f.seed})
		better := "lower"
		if m.dir == stats.HigherIsBetter {
			better = "higher"
		}
		notes := slices.Concat(c.A.Notes, c.Notes)
		for _, n := range notes {
			note(n)
		}
		rep.Metrics = append(rep.Metrics, benchMetricJSON{Name: m.name, Better: better, A: summary(c.A), B: summary(c.B),
			Diff: benchFloat(c.Diff), DiffCI: [2]benchFloat{benchFloat(c.DiffCI.Lo), benchFloat(c.DiffCI.Hi)}, RelDiff: benchFloat(c.RelDiff),
			CohensD: benchFloat(c.CohensD), Verdict: c.Verdict, Regressed: c.Verdict == stats.Regressed, Notes: notes})
		rep.Regressed = rep.Regressed || c.Verdict == stats.Regressed
	}
	for _, s := range sides {
		if s.base.Scheme == sandbox.SchemeDocker {
			note(fmt.Sprintf("%s (%s) reuses one container: its runs are not independent", s.label, s.spec))
		}
		identical := 0
		for _, r := range s.runs {
			if r.Identical {
				identical++
			}
		}
		if identical < len(s.runs) {
			note(fmt.Sprintf("%s: %d of %d replays differ from the recording (tapebox compare); their times are still measured", s.label, len(s.runs)-identical, len(s.runs)))
		}
	}
	return rep
}

func benchValues(runs []*benchRun, m benchMetric) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = m.value(r)
	}
	return out
}

func (rep *benchReport) regressedNames() []string {
	var out []string
	for _, m := range rep.Metrics {
		if m.Regressed {
			out = append(out, m.Name)
		}
	}
	return out
}

func (rep *benchReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "tape %s: %d steps; %d runs on each sandbox", rep.Tape, rep.Steps, rep.N)
	if rep.Warmup > 0 {
		fmt.Fprintf(w, " after %d warm-up", rep.Warmup)
	}
	fmt.Fprintf(w, ", speed %g\nA: %s\nB: %s\n\n", rep.Speed, rep.A.Spec, rep.B.Spec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "metric\tA mean\tA sd\tA 95% CI\tB mean\tB sd\tB 95% CI\tB-A\td\tB regressed\t\n")
	for i, m := range rep.Metrics {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", benchMetrics[i].label,
			benchNum(m.A.Mean), benchNum(m.A.StdDev), benchInterval(m.A.CI), benchNum(m.B.Mean), benchNum(m.B.StdDev), benchInterval(m.B.CI),
			benchRelDiff(m.Diff, m.RelDiff), benchSigned(m.CohensD), benchVerdict(m.Verdict))
	}
	tw.Flush()
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
	}
}

// benchNum prints a value with fewer decimals the larger it is; n/a for an undefined one.
func benchNum(x benchFloat) string {
	f := float64(x)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "n/a"
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	case math.Abs(f) >= 1:
		return strconv.FormatFloat(f, 'f', 2, 64)
	default:
		return strconv.FormatFloat(f, 'f', 4, 64)
	}
}

func benchSigned(x benchFloat) string {
	s := benchNum(x)
	if f := float64(x); !math.IsNaN(f) && f >= 0 {
		s = "+" + s
	}
	return s
}

func benchInterval(ci [2]benchFloat) string {
	if math.IsNaN(float64(ci[0])) {
		return "n/a"
	}
	return "[" + benchNum(ci[0]) + ", " + benchNum(ci[1]) + "]"
}

func benchRelDiff(d, rel benchFloat) string {
	s := benchSigned(d)
	if r := float64(rel); !math.IsNaN(r) && !math.IsInf(r, 0) {
		s += fmt.Sprintf(" (%+.1f%%)", 100*r)
	}
	return s
}

func benchVerdict(v stats.Verdict) string {
	switch v {
	case stats.Regressed:
		return "yes"
	case stats.Improved:
		return "no (improved)"
	case stats.Undefined:
		return "n/a"
	}
	return "no"
}
