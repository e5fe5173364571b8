#!/bin/sh
# Builds the OpenTelemetry Collector that the interop tests send OTLP spans to (OTLP receiver,
# file exporter; test/otelcol, its own Go module) from the Go module proxy, once per version,
# and prints the binary's path. The cache key is the digest of test/otelcol's go.mod, go.sum
# and main.go, so a version bump builds a new one.
#
#   scripts/otelcol.sh            # build if needed, print the path
#   TAPEBOX_OTELCOL=$(scripts/otelcol.sh) go test ./test/e2e -run OTLP
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SRC="$ROOT/test/otelcol"
command -v go >/dev/null || { echo "otelcol.sh: go not found" >&2; exit 1; }
VERSION=$(sed -n 's/.*go.opentelemetry.io\/collector\/otelcol \(v[^ ]*\).*/\1/p' "$SRC/go.mod" | head -1)
KEY=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/tapebox/otelcol-$VERSION-$KEY
BIN=$CACHE/otelcol
if [ ! -x "$BIN" ]; then
	mkdir -p "$CACHE"
	echo "otelcol.sh: building the OpenTelemetry Collector $VERSION (test/otelcol) into $CACHE" >&2
	(cd "$SRC" && CGO_ENABLED=0 go build -trimpath -o "$BIN.tmp" .) >&2
	mv "$BIN.tmp" "$BIN"
fi
echo "$BIN"
