//go:build race

package gateway_test

// raceDetector is on: encoding/json runs about ten times slower, so the tests send
// smaller bodies where only the size changes.
const raceDetector = true
