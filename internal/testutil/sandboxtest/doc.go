// Package sandboxtest holds the test helpers the sandbox backends' tests share: the fake and
// the real executor binaries, a line round trip over a session, waiting for a session's end,
// a log collector and latency percentiles for benchmarks.
package sandboxtest
