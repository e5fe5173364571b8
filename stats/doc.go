// Package stats summarizes repeated measurements and compares two sets of them: mean,
// sample standard deviation, a seeded (deterministic) bootstrap confidence interval of the
// mean, Cohen's d, and a verdict on whether B regressed against A.
//
// Undefined values are NaN, never zero, and come with a note saying why: the standard
// deviation and every interval of a single run, Cohen's d when there is no spread at all.
// tapebox bench prints them as "n/a".
//
//	a := []float64{101, 99, 103, 98, 100}  // wall ms of five replays on sandbox A
//	b := []float64{121, 119, 125, 118, 122} // ... and on sandbox B
//	c := stats.Compare(a, b, stats.LowerIsBetter, stats.Options{})
//	fmt.Println(c.Verdict) // regressed (see ExampleCompare)
package stats
