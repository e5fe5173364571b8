#!/usr/bin/env bash
# Runs the side-by-side benchmark suite (benchmarks/: TapeBox next to its baselines) and
# writes the results:
#
#   bench-out/bench.txt       go test -bench output, benchstat's input format (with the
#                             machine and its load average before and after)
#   bench-out/benchstat.txt   benchstat's summary, when benchstat is on PATH
#                             (go install golang.org/x/perf/cmd/benchstat@latest)
#
# Usage: scripts/bench.sh [go test flags...]   e.g. scripts/bench.sh -bench 'ExecRoundTrip|Gateway'
#
# Environment:
#   COUNT                   runs of each benchmark (-count; default 6, the fewest benchstat gives a
#                           confidence interval for: about 6 minutes on 2 cores)
#   BENCH                   the -bench pattern (default .)
#   OUT                     the output directory (default bench-out)
#   GO                      the Go command (default go)
#   TAPEBOX_REQUIRE_DOCKER  1 turns a missing Docker engine or sandbox image into a failure
#                           instead of skipped Docker benchmarks (make sandbox-image builds it)
#   TAPEBOX_BENCH_DUCKDB    a directory whose node_modules holds @duckdb/node-api: adds the
#                           DuckDB peer to the dataset export benchmark
set -euo pipefail

cd "$(dirname "$0")/.."
COUNT=${COUNT:-6}
BENCH=${BENCH:-.}
OUT=${OUT:-bench-out}
GO=${GO:-go}

mkdir -p "$OUT"
txt=$OUT/bench.txt
{
	echo "# TapeBox benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# machine: $(uname -srm), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	if command -v docker >/dev/null; then
		echo "# docker: $(docker version --format '{{.Server.Version}}' 2>/dev/null || echo 'no engine'), runtimes: $(docker info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null)"
	fi
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$txt"

# -v keeps the skip messages (no Docker, no runsc, no DuckDB) in the output; benchstat
# ignores every line that is not a result.
status=0
"$GO" test -run '^$' -bench "$BENCH" -count "$COUNT" -timeout 60m -v "$@" ./benchmarks | grep -v '^=== ' | tee -a "$txt" || status=$?
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$txt"
if [ "$status" -ne 0 ]; then
	echo "bench: go test failed (exit $status); partial results in $txt" >&2
	exit "$status"
fi

if command -v benchstat >/dev/null; then
	benchstat "$txt" | tee "$OUT/benchstat.txt"
else
	echo "bench: benchstat not on PATH (go install golang.org/x/perf/cmd/benchstat@latest); raw results in $txt" >&2
fi
echo "bench: results in $txt" >&2
