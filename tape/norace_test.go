//go:build !race

package tape

// raceDetector is off (see race_test.go).
const raceDetector = false
