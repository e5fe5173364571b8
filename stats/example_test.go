package stats_test

import (
	"fmt"

	"github.com/tapebox/tapebox/stats"
)

func ExampleCompare() {
	a := []float64{101, 99, 103, 98, 100}   // wall ms of five replays on sandbox A
	b := []float64{121, 119, 125, 118, 122} // ... and on sandbox B
	c := stats.Compare(a, b, stats.LowerIsBetter, stats.Options{})
	fmt.Printf("A %.1f ± %.2f, B %.1f ± %.2f\n", c.A.Mean, c.A.StdDev, c.B.Mean, c.B.StdDev)
	fmt.Printf("B - A = %.1f (%+.0f %%), d = %.1f: %s\n", c.Diff, 100*c.RelDiff, c.CohensD, c.Verdict)

	one := stats.Summarize([]float64{42}, stats.Options{})
	fmt.Println(one.StdDev, one.CI, one.Notes[0])
	// Output:
	// A 100.2 ± 1.92, B 121.0 ± 2.74
	// B - A = 20.8 (+21 %), d = 8.8: regressed
	// NaN [n/a] n=1: standard deviation and confidence interval are undefined; measure more than once
}
