#!/usr/bin/env bash
# Builds TapeBox's test images from Debian packages, with no container registry:
#
#   tapebox/sandbox:bookworm  debootstrap --variant=minbase bookworm + docker import (about a minute;
#                             bash, coreutils, grep, findutils ... and no Python)
#   tapebox/tiny:latest       busybox-static (+ bash-static when installed) in a few seconds, for
#                             fast tests
#
# An image that already exists is kept (set TAPEBOX_REBUILD=1 to rebuild both).
# Needs root, a running Docker engine, debootstrap and busybox-static (scripts/ci-setup.sh
# installs them).
#
# Environment:
#   TAPEBOX_DEBIAN_MIRROR  the Debian mirror for debootstrap; default: the one apt uses
#                          (/etc/apt/sources.list.d/*.sources or *.list, /etc/apt/sources.list)
#   TAPEBOX_IMAGES         which images to build: "sandbox tiny" (default), or one of them
#   TAPEBOX_REBUILD=1      rebuild images that already exist
set -euo pipefail

SANDBOX_IMAGE=tapebox/sandbox:bookworm
TINY_IMAGE=tapebox/tiny:latest
SUITE=bookworm
IMAGES=${TAPEBOX_IMAGES:-sandbox tiny}
PATH_ENV='ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

log() { echo "sandbox-image: $*" >&2; }
die() {
	echo "sandbox-image: error: $*" >&2
	exit 1
}

need() {
	command -v "$1" >/dev/null 2>&1 || die "$1 not found; $2"
}

image_exists() {
	docker image inspect "$1" >/dev/null 2>&1
}

# skip_existing IMAGE: returns 0 (skip) when IMAGE exists and no rebuild was asked for.
skip_existing() {
	if [ "${TAPEBOX_REBUILD:-0}" != 1 ] && image_exists "$1"; then
		log "$1 exists; skipped (TAPEBOX_REBUILD=1 rebuilds it)"
		return 0
	fi
	return 1
}

# debian_mirror prints the Debian archive apt uses for $SUITE (not the security archive).
debian_mirror() {
	if [ -n "${TAPEBOX_DEBIAN_MIRROR:-}" ]; then
		echo "$TAPEBOX_DEBIAN_MIRROR"
		return
	fi
	local f uri
	# deb822 sources: the URIs of a stanza whose Suites has "$SUITE" itself.
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		uri=$(awk -v suite="$SUITE" '
			/^[[:space:]]*$/ { if (uris != "" && hit) { print uris; exit } uris = ""; hit = 0; next }
			/^URIs:/ { uris = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) hit = 1 }
			END { if (uris != "" && hit) print uris }
		' "$f" | head -n1)
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
	# One-line sources: "deb [options] URI SUITE COMPONENTS".
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk -v suite="$SUITE" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
				if ($(i + 1) == suite) { print $i; exit }
			}
		' "$f")
		if [ -n "$uri" ]; then
			echo "$uri"
			return
		fi
	done
	echo "http://deb.debian.org/debian"
}

build_sandbox() {
	skip_existing "$SANDBOX_IMAGE" && return 0
	need debootstrap "install it: apt-get install -y debootstrap (or run scripts/ci-setup.sh)"
	[ "$(id -u)" = 0 ] || die "debootstrap needs root; run as root (sudo $0)"
	local mirror root started
	mirror=$(debian_mirror)
	root=$(mktemp -d "${TMPDIR:-/var/tmp}/tapebox-rootfs.XXXXXX")
	# shellcheck disable=SC2064 # expand $root now
	trap "rm -rf '$root'" EXIT
	started=$(date +%s)
	log "debootstrap --variant=minbase $SUITE from $mirror (about a minute)"
	if ! debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1; then
		tail -n 30 "$root.log" >&2
		rm -f "$root.log"
		die "debootstrap $SUITE from $mirror failed (log above); set TAPEBOX_DEBIAN_MIRROR to a reachable Debian mirror"
	fi
	rm -f "$root.log"
	# Keep the image lean: apt lists and caches are not needed to run tools.
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/tmp/*
	if [ -e "$root/usr/bin/python3" ]; then
		die "the $SUITE minbase root unexpectedly contains Python; the sandbox image must not"
	fi
	import_root "$root" "$SANDBOX_IMAGE" tapebox-sandbox /bin/bash "tapebox: debootstrap --variant=minbase $SUITE"
	log "$SANDBOX_IMAGE built in $(($(date +%s) - started)) s"
}

build_tiny() {
	skip_existing "$TINY_IMAGE" && return 0
	local busybox bash root applet
	busybox=$(command -v busybox || true)
	[ -n "$busybox" ] || die "busybox not found; install it: apt-get install -y busybox-static"
	if ! file_is_static "$busybox"; then
		die "$busybox is not statically linked; install busybox-static (apt-get install -y busybox-static)"
	fi
	root=$(mktemp -d "${TMPDIR:-/var/tmp}/tapebox-tiny.XXXXXX")
	# shellcheck disable=SC2064 # expand $root now
	trap "rm -rf '$root'" EXIT
	mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,tmp,root,app}
	chmod 1777 "$root/tmp"
	cp "$busybox" "$root/bin/busybox"
	for applet in $("$busybox" --list); do
		[ "$applet" = busybox ] && continue
		ln -sf busybox "$root/bin/$applet"
	done
	bash=$(command -v bash-static || true)
	if [ -n "$bash" ]; then
		rm -f "$root/bin/bash"
		cp "$bash" "$root/bin/bash"
	else
		log "bash-static not installed; $TINY_IMAGE has busybox sh only"
	fi
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	import_root "$root" "$TINY_IMAGE" tapebox-tiny /bin/sh "tapebox: busybox-static tiny image"
	log "$TINY_IMAGE built"
}

# import_root ROOT IMAGE TITLE SHELL MESSAGE: docker import the tree ROOT as IMAGE (labelled
# TITLE, running SHELL by default, MESSAGE as its history), then remove ROOT and the EXIT
# trap that would have.
import_root() {
	log "docker import -> $2"
	tar -C "$1" -c . | docker import \
		-c "$PATH_ENV" -c "CMD [\"$4\"]" \
		-c "LABEL org.opencontainers.image.title=$3" \
		-m "$5" \
		- "$2" >/dev/null ||
		die "docker import of $2 failed"
	rm -rf "$1"
	trap - EXIT
}

# file_is_static PATH: no ELF interpreter (PT_INTERP) means statically linked.
file_is_static() {
	! LC_ALL=C grep -aq '/ld-linux' "$1"
}

need docker "install the Docker engine: apt-get install -y docker.io (or run scripts/ci-setup.sh)"
docker version >/dev/null 2>&1 ||
	die "no Docker engine answers at ${DOCKER_HOST:-/var/run/docker.sock}; start one (dockerd &, or scripts/ci-setup.sh)"

for image in $IMAGES; do
	case $image in
	sandbox) build_sandbox ;;
	tiny) build_tiny ;;
	*) die "unknown image \"$image\" in TAPEBOX_IMAGES; use sandbox and/or tiny" ;;
	esac
done
