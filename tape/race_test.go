//go:build race

package tape

// raceDetector is on: the tests that repeat a check many times sample instead.
const raceDetector = true
