//go:build race

package dataset

// raceEnabled scales the largest tests down under the race detector, which runs them
// ten times slower.
const raceEnabled = true
