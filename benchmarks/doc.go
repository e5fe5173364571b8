// Package benchmarks measures TapeBox against its baselines, side by side in one run, as
// the performance targets (README) name them. It holds only benchmarks:
//
//	go test -run '^$' -bench . ./benchmarks         # or: make bench (scripts/bench.sh)
//
// Each benchmark's sub-benchmarks put the baseline and TapeBox next to each other, so
// that benchstat shows them in one table:
//
//	BenchmarkExecRoundTrip    a Noop tool call: docker-cli-per-call, docker-exec-per-call,
//	                          exec-stream-floor, tapebox-session; local-pipes-floor, tapebox-local
//	BenchmarkSandboxReady     docker-create-start(-nonet) vs tapebox-sandbox-ready
//	BenchmarkGateway          direct vs gateway, non-stream call and first byte of a stream
//	BenchmarkControllerStep   a 1000-step Noop tape at --speed 0, local and Docker
//	BenchmarkReplayCorpus     testdata/replay/*.json and a miniagent recording, per runtime
//	BenchmarkDatasetExport    encoding/json decoding vs Parquet (and Arrow) export, MB/s
//	BenchmarkSchemaValidate   encoding/json decoding vs schema validation, MB/s
//	BenchmarkMemory           a gateway process's growth for 100 MB bodies; inspect and
//	                          compare peak RSS on a 200 MB tape
//
// Docker benchmarks skip when no engine answers or tapebox/sandbox:bookworm is missing
// (make sandbox-image), unless TAPEBOX_REQUIRE_DOCKER=1; runsc runs only when docker info
// lists it. A replay that fails or differs from its recording fails its benchmark with the
// reason and reports no time.
package benchmarks
