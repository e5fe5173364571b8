package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Defaults of Options.
const (
	DefaultResamples = 10000
	DefaultLevel     = 0.95
	DefaultSeed      = 1
)

// Options tune the bootstrap. The zero value means the defaults: 10000 resamples, a 95 %
// interval, seed 1. The same data and options always give the same intervals.
type Options struct {
	// Resamples is the number of bootstrap resamples.
	Resamples int
	// Level is the interval's confidence level, between 0 and 1.
	Level float64
	// Seed seeds the bootstrap's random source; 0 means DefaultSeed.
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.Resamples <= 0 {
		o.Resamples = DefaultResamples
	}
	if o.Level <= 0 || o.Level >= 1 {
		o.Level = DefaultLevel
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	return o
}

// rng returns the bootstrap's random source for a seed. The second PCG word is fixed so that
// a seed alone names the stream.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Interval is a confidence interval; both bounds are NaN when it is undefined.
type Interval struct {
	Lo, Hi float64
}

// Defined reports whether both bounds are numbers.
func (i Interval) Defined() bool { return !math.IsNaN(i.Lo) && !math.IsNaN(i.Hi) }

// Contains reports whether x lies within the interval (bounds included); false when the
// interval is undefined.
func (i Interval) Contains(x float64) bool { return i.Defined() && i.Lo <= x && x <= i.Hi }

func (i Interval) String() string {
	if !i.Defined() {
		return "[n/a]"
	}
	return fmt.Sprintf("[%g, %g]", i.Lo, i.Hi)
}

var undefined = Interval{Lo: math.NaN(), Hi: math.NaN()}

// Mean returns the arithmetic mean of xs, NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// variance is the sample variance (n-1 in the denominator), NaN for fewer than two values.
func variance(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(xs)-1)
}

// StdDev returns the sample standard deviation of xs (n-1 in the denominator), NaN for fewer
// than two values: one run says nothing about spread.
func StdDev(xs []float64) float64 { return math.Sqrt(variance(xs)) }

// BootstrapMeanCI returns the percentile bootstrap confidence interval of the mean of xs:
// Options.Resamples resamples of len(xs) values drawn with replacement, seeded, and the
// (1-Level)/2 and (1+Level)/2 quantiles of their means (linear interpolation between order
// statistics). It is undefined (NaN) for fewer than two values.
func BootstrapMeanCI(xs []float64, opts Options) Interval {
	if len(xs) < 2 {
		return undefined
	}
	opts = opts.withDefaults()
	r := rng(opts.Seed)
	means := make([]float64, opts.Resamples)
	for i := range means {
		means[i] = resampleMean(r, xs)
	}
	return percentiles(means, opts.Level)
}

// BootstrapDiffCI returns the percentile bootstrap confidence interval of mean(b) - mean(a),
// resampling each group on its own. It is undefined (NaN) when either group has fewer than
// two values.
func BootstrapDiffCI(a, b []float64, opts Options) Interval {
	if len(a) < 2 || len(b) < 2 {
		return undefined
	}
	opts = opts.withDefaults()
	r := rng(opts.Seed)
	diffs := make([]float64, opts.Resamples)
	for i := range diffs {
		ma := resampleMean(r, a)
		diffs[i] = resampleMean(r, b) - ma
	}
	return percentiles(diffs, opts.Level)
}

func resampleMean(r *rand.Rand, xs []float64) float64 {
	sum := 0.0
	for range xs {
		sum += xs[r.IntN(len(xs))]
	}
	return sum / float64(len(xs))
}

// percentiles sorts xs in place and returns its central interval at level.
func percentiles(xs []float64, level float64) Interval {
	slices.Sort(xs)
	alpha := (1 - level) / 2
	return Interval{Lo: Quantile(xs, alpha), Hi: Quantile(xs, 1-alpha)}
}

// Quantile returns the p-quantile (0 <= p <= 1) of sorted values by linear interpolation
// between order statistics (Hyndman and Fan's type 7, the default of R and NumPy). NaN for no
// values.
func Quantile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	p = min(max(p, 0), 1)
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// CohensD returns Cohen's d of b against a: (mean(b) - mean(a)) / pooled standard deviation,
// where the pooled variance is ((na-1)·var(a) + (nb-1)·var(b)) / (na+nb-2). It is positive
// when b's values are larger. NaN when it is undefined: na+nb < 3, or no spread at all (the
// pooled deviation is 0).
func CohensD(a, b []float64) float64 {
	na, nb := len(a), len(b)
	if na == 0 || nb == 0 || na+nb < 3 {
		return math.NaN()
	}
	ss := 0.0
	if na > 1 {
		ss += float64(na-1) * variance(a)
	}
	if nb > 1 {
		ss += float64(nb-1) * variance(b)
	}
	sd := math.Sqrt(ss / float64(na+nb-2))
	if sd == 0 {
		return math.NaN()
	}
	return (Mean(b) - Mean(a)) / sd
}

// Summary describes one set of measurements.
type Summary struct {
	// N is the number of values.
	N int
	// Mean and StdDev (sample) of the values; StdDev is NaN for one value, both for none.
	Mean, StdDev float64
	// CI is the bootstrap confidence interval of the mean; undefined for fewer than two
	// values.
	CI Interval
	// Notes say why a value is undefined.
	Notes []string
}

// Summarize returns the mean, standard deviation and bootstrap interval of xs.
func Summarize(xs []float64, opts Options) Summary {
	s := Summary{N: len(xs), Mean: Mean(xs), StdDev: StdDev(xs), CI: BootstrapMeanCI(xs, opts)}
	switch len(xs) {
	case 0:
		s.Notes = append(s.Notes, "no values: every statistic is undefined")
	case 1:
		s.Notes = append(s.Notes, "n=1: standard deviation and confidence interval are undefined; measure more than once")
	}
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s.Notes = append(s.Notes, "some values are not finite numbers")
			break
		}
	}
	return s
}

// Direction says which way a metric gets worse.
type Direction int

const (
	// LowerIsBetter: durations, overheads, memory. B regressed when its mean is higher.
	LowerIsBetter Direction = iota
	// HigherIsBetter: throughputs. B regressed when its mean is lower.
	HigherIsBetter
)

func (d Direction) String() string {
	if d == HigherIsBetter {
		return "higher is better"
	}
	return "lower is better"
}

// Verdict is the outcome of a comparison.
type Verdict string

// Verdicts of Compare.
const (
	// Regressed: the confidence interval of mean(B) - mean(A) lies entirely on the bad side
	// of 0.
	Regressed Verdict = "regressed"
	// Improved: it lies entirely on the good side of 0.
	Improved Verdict = "improved"
	// NoChange: it contains 0; the data do not show a difference at this level.
	NoChange Verdict = "no change"
	// Undefined: there is no interval (a group has fewer than two values).
	Undefined Verdict = "undefined"
)

// Comparison compares B against A.
type Comparison struct {
	A, B Summary
	// Direction is the metric's good direction.
	Direction Direction
	// Diff is mean(B) - mean(A); DiffCI its bootstrap confidence interval.
	Diff   float64
	DiffCI Interval
	// RelDiff is Diff / mean(A) (0.1 = B is 10 % above A); NaN when mean(A) is 0.
	RelDiff float64
	// CohensD is Cohen's d of B against A (positive when B's values are larger).
	CohensD float64
	// Verdict says whether B regressed: see Verdict.
	Verdict Verdict
	// Notes say why a value is undefined.
	Notes []string
}

// Compare summarizes a and b and decides whether b regressed against a: it did when the
// bootstrap confidence interval of mean(b) - mean(a) excludes 0 on the bad side for dir (above
// 0 when lower is better, below 0 when higher is better). The interval, and so the verdict,
// is undefined when either side has fewer than two values.
func Compare(a, b []float64, dir Direction, opts Options) Comparison {
	c := Comparison{A: Summarize(a, opts), B: Summarize(b, opts), Direction: dir}
	c.Diff = c.B.Mean - c.A.Mean
	c.DiffCI = BootstrapDiffCI(a, b, opts)
	c.RelDiff = math.NaN()
	if c.A.Mean != 0 {
		c.RelDiff = c.Diff / c.A.Mean
	}
	c.CohensD = CohensD(a, b)
	if math.IsNaN(c.CohensD) && len(a)+len(b) >= 3 && len(a) > 0 && len(b) > 0 {
		c.Notes = append(c.Notes, "no spread in either group: Cohen's d is undefined")
	}
	switch {
	case !c.DiffCI.Defined():
		c.Verdict = Undefined
		c.Notes = append(c.Notes, "a group has fewer than two values: the interval of the difference and the verdict are undefined")
	case dir == LowerIsBetter && c.DiffCI.Lo > 0, dir == HigherIsBetter && c.DiffCI.Hi < 0:
		c.Verdict = Regressed
	case dir == LowerIsBetter && c.DiffCI.Hi < 0, dir == HigherIsBetter && c.DiffCI.Lo > 0:
		c.Verdict = Improved
	default:
		c.Verdict = NoChange
	}
	return c
}
