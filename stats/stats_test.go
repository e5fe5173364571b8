package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const eps = 1e-9

func TestMeanStdDev(t *testing.T) {
	tests := []struct {
		name     string
		xs       []float64
		mean, sd float64 // NaN: undefined
	}{
		// Sum 40 / 8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32; 32/7 = 4.571428...
		{"textbook", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		// Squared deviations 0.25+0.25 over n-1 = 1: 0.5.
		{"two", []float64{1, 2}, 1.5, math.Sqrt(0.5)},
		{"constant", []float64{3, 3, 3}, 3, 0},
		{"one value", []float64{7}, 7, math.NaN()},
		{"none", nil, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloat(t, tt.mean, Mean(tt.xs), "mean")
			assertFloat(t, tt.sd, StdDev(tt.xs), "sd")
		})
	}
}

func TestQuantile(t *testing.T) {
	sorted := []float64{1, 2, 3, 4}
	tests := []struct{ p, want float64 }{
		{0, 1}, {1, 4}, {0.5, 2.5}, // h = 3*0.5 = 1.5: halfway between 2 and 3
		{0.25, 1.75}, // h = 0.75
		{0.975, 3.925},
		{-1, 1}, {2, 4},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, Quantile(sorted, tt.p), eps, "p=%v", tt.p)
	}
	assert.True(t, math.IsNaN(Quantile(nil, 0.5)))
}

func TestCohensD(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want float64
	}{
		// Means 3 and 5, both variances 2.5: d = 2 / sqrt(2.5).
		{"equal spread", []float64{1, 2, 3, 4, 5}, []float64{3, 4, 5, 6, 7}, 2 / math.Sqrt(2.5)},
		{"sign follows b", []float64{3, 4, 5, 6, 7}, []float64{1, 2, 3, 4, 5}, -2 / math.Sqrt(2.5)},
		// a: mean 2, var 1; b: mean 5, var 20/3; pooled var (2*1 + 3*20/3) / 5 = 4.4.
		{"unequal n", []float64{1, 2, 3}, []float64{2, 4, 6, 8}, 3 / math.Sqrt(4.4)},
		// Only b has spread: pooled var (0 + 1*0.5) / 1.
		{"one value in a", []float64{0}, []float64{1, 2}, 1.5 / math.Sqrt(0.5)},
		{"n=1 each", []float64{1}, []float64{2}, math.NaN()},
		{"no spread", []float64{1, 1}, []float64{2, 2}, math.NaN()},
		{"empty", nil, []float64{1, 2}, math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFloat(t, tt.want, CohensD(tt.a, tt.b), "d")
		})
	}
}

func TestBootstrapMeanCI(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want Interval
	}{
		// Every resample of a constant sample has the same mean.
		{"constant", []float64{4, 4, 4}, Interval{4, 4}},
		// Resample means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4: the 2.5 % quantile is 0
		// and the 97.5 % one is 1.
		{"zero one", []float64{0, 1}, Interval{0, 1}},
		// Means 0, 1, 2, 3 (the count of 3s drawn) with probabilities 8/27, 12/27, 6/27,
		// 1/27: P(mean < 3) = 26/27 < 0.975, so the upper bound is 3.
		{"skewed", []float64{0, 0, 3}, Interval{0, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BootstrapMeanCI(tt.xs, Options{})
			assert.InDelta(t, tt.want.Lo, got.Lo, eps)
			assert.InDelta(t, tt.want.Hi, got.Hi, eps)
		})
	}
	t.Run("undefined for n<2", func(t *testing.T) {
		for _, xs := range [][]float64{nil, {5}} {
			ci := BootstrapMeanCI(xs, Options{})
			assert.False(t, ci.Defined())
			assert.True(t, math.IsNaN(ci.Lo) && math.IsNaN(ci.Hi))
		}
	})
	t.Run("normal approximation", func(t *testing.T) {
		// 0..99: mean 49.5, population sd sqrt((100^2-1)/12); the percentile interval is close
		// to mean ± 1.96·sd/sqrt(n) = [43.84, 55.16].
		xs := make([]float64, 100)
		for i := range xs {
			xs[i] = float64(i)
		}
		half := 1.96 * math.Sqrt((100*100-1)/12.0) / 10
		ci := BootstrapMeanCI(xs, Options{})
		assert.InDelta(t, 49.5-half, ci.Lo, 0.5)
		assert.InDelta(t, 49.5+half, ci.Hi, 0.5)
		// A 50 % interval is narrower: ±0.674 standard errors.
		ci50 := BootstrapMeanCI(xs, Options{Level: 0.5})
		assert.InDelta(t, 49.5-0.674*half/1.96, ci50.Lo, 0.3)
	})
	t.Run("seeded", func(t *testing.T) {
		xs := []float64{3.1, 9.4, 2.7, 5.5, 8.8, 1.2}
		a := BootstrapMeanCI(xs, Options{Seed: 7})
		b := BootstrapMeanCI(xs, Options{Seed: 7})
		c := BootstrapMeanCI(xs, Options{Seed: 8, Resamples: 999})
		assert.Equal(t, a, b, "same seed, same interval")
		assert.NotEqual(t, a, c, "another seed gives another interval")
		assert.Equal(t, BootstrapMeanCI(xs, Options{}), BootstrapMeanCI(xs, Options{Seed: DefaultSeed, Resamples: DefaultResamples, Level: DefaultLevel}))
		assert.True(t, a.Contains(Mean(xs)))
	})
}

func TestBootstrapDiffCI(t *testing.T) {
	// a is constant, so the differences are b's resample means minus 0.
	got := BootstrapDiffCI([]float64{0, 0}, []float64{1, 2}, Options{})
	assert.InDelta(t, 1, got.Lo, eps)
	assert.InDelta(t, 2, got.Hi, eps)
	assert.False(t, BootstrapDiffCI([]float64{1}, []float64{1, 2}, Options{}).Defined())
	assert.False(t, BootstrapDiffCI([]float64{1, 2}, nil, Options{}).Defined())
}

func TestCompare(t *testing.T) {
	fast := []float64{100, 101, 99, 100, 102, 98}
	slow := []float64{120, 121, 119, 122, 118, 120}
	same := []float64{99, 101, 100, 102, 98, 100}
	tests := []struct {
		name string
		a, b []float64
		dir  Direction
		want Verdict
	}{
		{"slower is a regression", fast, slow, LowerIsBetter, Regressed},
		{"faster is an improvement", slow, fast, LowerIsBetter, Improved},
		{"lower throughput is a regression", slow, fast, HigherIsBetter, Regressed},
		{"higher throughput is an improvement", fast, slow, HigherIsBetter, Improved},
		{"overlap", fast, same, LowerIsBetter, NoChange},
		{"interval touching 0 is no change", []float64{0, 0}, []float64{0, 1}, LowerIsBetter, NoChange},
		{"n=1", []float64{100}, []float64{200}, LowerIsBetter, Undefined},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(tt.a, tt.b, tt.dir, Options{})
			assert.Equal(t, tt.want, c.Verdict)
			assert.InDelta(t, Mean(tt.b)-Mean(tt.a), c.Diff, eps)
			if c.Verdict == Undefined {
				assert.NotEmpty(t, c.Notes)
			}
		})
	}
	t.Run("values", func(t *testing.T) {
		c := Compare([]float64{1, 2, 3, 4, 5}, []float64{3, 4, 5, 6, 7}, LowerIsBetter, Options{})
		assert.InDelta(t, 3, c.A.Mean, eps)
		assert.InDelta(t, 5, c.B.Mean, eps)
		assert.InDelta(t, math.Sqrt(2.5), c.A.StdDev, eps)
		assert.InDelta(t, 2, c.Diff, eps)
		assert.InDelta(t, 2.0/3, c.RelDiff, eps)
		assert.InDelta(t, 2/math.Sqrt(2.5), c.CohensD, eps)
		assert.True(t, c.DiffCI.Contains(2))
		assert.True(t, c.A.CI.Contains(3) && c.B.CI.Contains(5))
	})
	t.Run("n=1 is NaN with notes, not zeros", func(t *testing.T) {
		c := Compare([]float64{100}, []float64{200}, LowerIsBetter, Options{})
		require.Equal(t, 1, c.A.N)
		assert.InDelta(t, 100, c.A.Mean, eps)
		for name, v := range map[string]float64{"sd A": c.A.StdDev, "ci A": c.A.CI.Lo, "sd B": c.B.StdDev,
			"diff ci": c.DiffCI.Hi, "d": c.CohensD} {
			assert.True(t, math.IsNaN(v), "%s = %v, want NaN", name, v)
		}
		assert.Contains(t, c.A.Notes[0], "n=1")
		assert.Contains(t, c.Notes[len(c.Notes)-1], "fewer than two")
	})
	t.Run("zero baseline", func(t *testing.T) {
		c := Compare([]float64{0, 0}, []float64{1, 1}, LowerIsBetter, Options{})
		assert.True(t, math.IsNaN(c.RelDiff))
		assert.True(t, math.IsNaN(c.CohensD))
		assert.Equal(t, Regressed, c.Verdict, "a constant shift with no noise is a real difference")
		assert.Contains(t, c.Notes, "no spread in either group: Cohen's d is undefined")
	})
}

func assertFloat(t *testing.T, want, got float64, what string) {
	t.Helper()
	if math.IsNaN(want) {
		assert.True(t, math.IsNaN(got), "%s = %v, want NaN", what, got)
		return
	}
	assert.InDelta(t, want, got, eps, what)
}

func BenchmarkCompare(b *testing.B) {
	xs := []float64{100, 101, 99, 100, 102, 98, 97, 103, 100, 101}
	ys := []float64{110, 111, 109, 112, 108, 110, 107, 113, 110, 111}
	for b.Loop() {
		Compare(xs, ys, LowerIsBetter, Options{})
	}
}
