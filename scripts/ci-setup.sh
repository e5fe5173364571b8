#!/usr/bin/env bash
# Prepares a Debian machine to build and test TapeBox, as root, idempotently:
#
#   1. apt packages: docker.io (the Docker engine), debootstrap, busybox-static, bash-static,
#      bubblewrap (bwrap, which isolates local:DIR sandboxes), chromium (the viewer's browser
#      tests) (only those not installed yet;
#      apt-get update only when something is missing)
#   2. dockerd in the background (log: $TAPEBOX_DOCKERD_LOG), unless an engine already answers;
#      waits up to $TAPEBOX_DOCKERD_WAIT seconds for it
#   3. the test images, from Debian packages (no registry needed): scripts/sandbox-image.sh
#   4. Go modules: go mod download
#   5. the real harnesses' npm packages, when harnesses/package.json exists:
#      npm ci (npm install when there is no lockfile)
#   6. playwright-core for the viewer's browser tests: npm ci in viewer/browsertest; DuckDB
#      (@duckdb/node-api), the independent Parquet reader of the dataset tests: npm ci in
#      dataset/duckdbtest
#   7. the OpenTelemetry Collector of the OTLP tests, built from the module proxy once per
#      version: scripts/otelcol.sh
#
# Run it again at any time: what is done already is skipped.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DOCKERD_LOG=${TAPEBOX_DOCKERD_LOG:-/var/log/tapebox-dockerd.log}
DOCKERD_WAIT=${TAPEBOX_DOCKERD_WAIT:-60}

log() { echo "ci-setup: $*" >&2; }
die() {
	echo "ci-setup: error: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts dockerd): sudo $0"

install_packages() {
	local want=(docker.io debootstrap busybox-static bash-static bubblewrap chromium ripgrep) missing=() pkg
	for pkg in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		log "packages present: ${want[*]}"
		return
	fi
	log "apt-get install ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed"
	# Install what this apt knows of; bash-static is optional (the tiny image falls back to busybox sh).
	local available=()
	for pkg in "${missing[@]}"; do
		if apt-cache show "$pkg" >/dev/null 2>&1; then
			available+=("$pkg")
		elif [ "$pkg" = bash-static ]; then
			log "bash-static not available from apt; skipped"
		else
			die "package $pkg is not available from apt; check /etc/apt/sources.list*"
		fi
	done
	[ ${#available[@]} -eq 0 ] && return
	apt-get install -y -q "${available[@]}" >/dev/null ||
		die "apt-get install ${available[*]} failed"
}

docker_answers() {
	docker version >/dev/null 2>&1
}

start_dockerd() {
	if docker_answers; then
		log "Docker engine answers"
		return
	fi
	command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
	if [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] && ! pidof dockerd >/dev/null; then
		# A socket left by a dockerd that is gone would make the new one fail to listen.
		rm -f /var/run/docker.sock
	fi
	if ! pidof dockerd >/dev/null; then
		log "starting dockerd (log: $DOCKERD_LOG)"
		mkdir -p "$(dirname "$DOCKERD_LOG")"
		# setsid: dockerd outlives this script and does not get its signals.
		setsid dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
	else
		log "dockerd is running but does not answer yet; waiting"
	fi
	local i
	for ((i = 0; i < DOCKERD_WAIT; i++)); do
		if docker_answers; then
			log "Docker engine up after ${i} s: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
			return
		fi
		sleep 1
	done
	echo "---- last 40 lines of $DOCKERD_LOG ----" >&2
	tail -n 40 "$DOCKERD_LOG" >&2 || true
	die "the Docker engine did not answer within ${DOCKERD_WAIT} s (log above); check that this machine can run dockerd (cgroups, iptables, overlayfs), or start it yourself and rerun"
}

install_packages
start_dockerd
"$ROOT/scripts/sandbox-image.sh"

if command -v go >/dev/null; then
	log "go mod download"
	(cd "$ROOT" && go mod download) || die "go mod download failed; check the Go module proxy (GOPROXY=$(go env GOPROXY))"
else
	die "go not found; install Go 1.26 (https://go.dev/dl/) and put it on PATH"
fi

if [ -f "$ROOT/harnesses/package.json" ]; then
	command -v npm >/dev/null || die "npm not found; harnesses/package.json needs Node.js and npm"
	if [ -f "$ROOT/harnesses/package-lock.json" ]; then
		log "npm ci in harnesses/"
		(cd "$ROOT/harnesses" && npm ci --no-audit --no-fund) || die "npm ci in harnesses/ failed"
	else
		log "npm install in harnesses/ (no lockfile)"
		(cd "$ROOT/harnesses" && npm install --no-audit --no-fund) || die "npm install in harnesses/ failed"
	fi
fi
if [ -f "$ROOT/viewer/browsertest/package-lock.json" ]; then
	command -v npm >/dev/null || die "npm not found; viewer/browsertest needs Node.js and npm"
	if [ -f "$ROOT/viewer/browsertest/node_modules/playwright-core/package.json" ]; then
		log "playwright-core present in viewer/browsertest/"
	else
		log "npm ci in viewer/browsertest/"
		(cd "$ROOT/viewer/browsertest" && npm ci --no-audit --no-fund) || die "npm ci in viewer/browsertest/ failed"
	fi
fi
if [ -f "$ROOT/dataset/duckdbtest/package-lock.json" ]; then
	command -v npm >/dev/null || die "npm not found; dataset/duckdbtest needs Node.js and npm"
	if [ -f "$ROOT/dataset/duckdbtest/node_modules/@duckdb/node-api/package.json" ]; then
		log "@duckdb/node-api present in dataset/duckdbtest/"
	else
		log "npm ci in dataset/duckdbtest/"
		(cd "$ROOT/dataset/duckdbtest" && npm ci --no-audit --no-fund) || die "npm ci in dataset/duckdbtest/ failed"
	fi
fi
# The OpenTelemetry Collector the interop tests send spans to, built once per version.
log "OpenTelemetry Collector for the OTLP tests (scripts/otelcol.sh)"
"$ROOT/scripts/otelcol.sh" >/dev/null || die "building the OpenTelemetry Collector (test/otelcol) failed; check the Go module proxy"
log "done"
