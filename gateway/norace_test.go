//go:build !race

package gateway_test

// raceDetector is off (see race_test.go).
const raceDetector = false
