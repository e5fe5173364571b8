#!/usr/bin/env bash
# Export throughput and peak memory of `tapebox dataset export` against DuckDB's
# read_json -> Parquet (zstd, 2 threads) on the same generated corpus, side by side, plus
# `tapebox dataset import` on the result. Runs alternate between the tools (RUNS rounds)
# so that both see the same machine; the table shows every run and the median.
#
#   dataset/bench/compare.sh [CORPUS_DIR] [TAPES]
#
# CORPUS_DIR is generated (dataset.GenerateCorpus, seed 1, 25 steps on average) when it
# does not exist; 250 tapes make about 1.1 GB. DuckDB's Node package is installed into
# DUCKDB_DIR (default /tmp/duck), outside the repository. Needs go, node, npm and GNU time.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
corpus=${1:-/tmp/tapebox-corpus}
tapes=${2:-250}
runs=${RUNS:-3}
duckdir=${DUCKDB_DIR:-/tmp/duck}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/tapebox" ./cmd/tapebox && go build -o "$work/gencorpus" ./dataset/bench/gencorpus)
if [ ! -d "$corpus" ]; then
	"$work/gencorpus" -n "$tapes" "$corpus"
fi
if [ ! -d "$duckdir/node_modules/@duckdb/node-api" ]; then
	mkdir -p "$duckdir"
	(cd "$duckdir" && { [ -f package.json ] || npm init -y >/dev/null; } && npm install --no-audit --no-fund @duckdb/node-api >/dev/null)
fi
cp "$root/dataset/bench/duckdb.mjs" "$duckdir/duckdb.mjs"

bytes=$(find "$corpus" -maxdepth 1 -name '*.json' -printf '%s\n' | awk '{s+=$1} END {print s}')
files=$(find "$corpus" -maxdepth 1 -name '*.json' | wc -l)
cat "$corpus"/*.json >/dev/null # the page cache holds the corpus for every run

# measure NAME CMD...: runs CMD under GNU time and appends "name wall cpu rss_mb" to results.
measure() {
	local name=$1
	shift
	/usr/bin/time -v "$@" >"$work/out" 2>"$work/time" || { cat "$work/out" "$work/time" >&2; exit 1; }
	awk -v name="$name" '
		/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); wall = (n == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2] }
		/User time/ { cpu += $NF }
		/System time/ { cpu += $NF }
		/Maximum resident set size/ { rss = $NF / 1024 }
		END { printf "%s %.2f %.2f %.0f\n", name, wall, cpu, rss }' "$work/time" >>"$work/results"
}

for r in $(seq "$runs"); do
	rm -rf "$work/ds" "$work/back" "$work/duck.parquet"
	measure "tapebox-export" "$work/tapebox" dataset export --out "$work/ds" "$corpus"
	measure "duckdb-export" node "$duckdir/duckdb.mjs" "$corpus" "$work/duck.parquet" 2
	measure "tapebox-import" "$work/tapebox" dataset import "$work/ds" --out "$work/back"
	test "$(find "$work/back" -name '*.json' | wc -l)" -eq "$files"
done
"$work/tapebox" dataset validate "$work/ds" >/dev/null

ours=$(du -sb "$work/ds/data" | cut -f1)
theirs=$(stat -c %s "$work/duck.parquet")
echo "corpus: $files tapes, $(awk -v b="$bytes" 'BEGIN {printf "%.1f MB", b/1e6}') of tape JSON; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "output: tapebox $(awk -v b="$ours" 'BEGIN {printf "%.1f MB", b/1e6}') (tapes + steps tables), duckdb $(awk -v b="$theirs" 'BEGIN {printf "%.1f MB", b/1e6}')"
echo
printf "%-16s %8s %10s %8s %10s\n" "run" "wall s" "MB/s" "CPU s" "peak RSS"
awk -v b="$bytes" '{ printf "%-16s %8.2f %10.1f %8.2f %7d MB\n", $1, $2, b/1e6/$2, $3, $4 }' "$work/results"
echo
echo "median of $runs runs:"
for name in tapebox-export duckdb-export tapebox-import; do
	grep "^$name " "$work/results" | sort -k2 -n | awk -v b="$bytes" -v n="$runs" '
		NR == int((n + 1) / 2) { printf "%-16s %8.2f %10.1f %8.2f %7d MB\n", $1, $2, b/1e6/$2, $3, $4 }'
done
