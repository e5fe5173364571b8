//go:build race

package schema

// raceEnabled: the race detector makes byte-scanning tests about ten times slower and
// hungrier, so they scale down under it.
const raceEnabled = true
