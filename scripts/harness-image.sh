#!/usr/bin/env bash
# Builds tapebox/harnesses:bookworm, an image for sandboxed forks of Gemini CLI and OpenCode
# (tapebox fork --sandbox docker-image:tapebox/harnesses:bookworm -- gemini ... | opencode run ...),
# FROM tapebox/sandbox:bookworm (make sandbox-image), with no registry and no network:
#
#   /usr/local/bin/node      this machine's node (20 or later: Gemini CLI needs it; both are
#                            Debian bookworm, so its libraries are there)
#   /usr/local/bin/gemini    Gemini CLI from harnesses/node_modules/@google/gemini-cli (its bundle)
#   /usr/local/bin/opencode  OpenCode's binary from harnesses/node_modules/opencode-linux-<arch>
#
# and the set-up tapebox record makes on this machine, which a container does not get:
#
#   GEMINI_CLI_HOME=/opt/tapebox/gemini   .gemini/settings.json selects the API key as the auth
#                                         method (Gemini CLI refuses GOOGLE_GEMINI_BASE_URL in
#                                         headless mode without it); writable by anyone
#   OPENCODE_CONFIG=/opt/tapebox/opencode.json  the anthropic and openai providers' baseURL is
#                                         {env:TAPEBOX_GATEWAY_URL}/v1, the fork's URL
#   XDG_*_HOME under /tmp                 OpenCode's database and caches (the fork runs as
#                                         nobody, whose home does not exist)
#   OPENCODE_DISABLE_* , npm offline      no update check, models.dev fetch or downloads
#
# No API key is in the image: the fork passes its --env variables to the container
# (tapebox fork --sandbox ... --env GEMINI_API_KEY --env ANTHROPIC_API_KEY ...).
#
# An image built from the same inputs (harness, node and base image versions, this script) is
# kept (TAPEBOX_REBUILD=1 rebuilds it anyway).
#
# Environment:
#   TAPEBOX_HARNESS_IMAGE  the image's name (default tapebox/harnesses:bookworm)
#   TAPEBOX_REBUILD=1      rebuild it when it exists
set -euo pipefail

IMAGE=${TAPEBOX_HARNESS_IMAGE:-tapebox/harnesses:bookworm}
BASE=tapebox/sandbox:bookworm
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NM=$ROOT/harnesses/node_modules

log() { echo "harness-image: $*" >&2; }
die() {
	echo "harness-image: error: $*" >&2
	exit 1
}

command -v docker >/dev/null 2>&1 || die "docker not found: install the Docker engine (scripts/ci-setup.sh)"
docker version >/dev/null 2>&1 || die "no Docker engine answers at ${DOCKER_HOST:-/var/run/docker.sock}"
docker image inspect "$BASE" >/dev/null 2>&1 || die "$BASE is missing: make sandbox-image builds it"
node=$(command -v node || true)
[ -n "$node" ] || die "node not found on this machine: install Node.js 20 or later"
major=$("$node" -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || die "node $("$node" --version) is too old for Gemini CLI: want 20 or later"
gemini=$NM/@google/gemini-cli
[ -f "$gemini/bundle/gemini.js" ] || die "Gemini CLI is not in $NM: run npm ci in harnesses/"
case $(uname -m) in
x86_64) arch=x64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "no OpenCode binary for $(uname -m)" ;;
esac
opencode=$NM/opencode-linux-$arch/bin/opencode
[ -x "$opencode" ] || die "OpenCode is not in $NM (opencode-linux-$arch): run npm ci in harnesses/"

# The image is built once per set of its inputs: the harnesses' versions, node's, this
# script and the base image.
key=$( {
	"$node" --version
	"$node" -p "require('$gemini/package.json').version"
	sha256sum "$opencode" "$0" | cut -d' ' -f1
	docker image inspect --format '{{.Id}}' "$BASE"
} | sha256sum | cut -c1-16)
have=$(docker image inspect --format '{{index .Config.Labels "org.tapebox.harness-key"}}' "$IMAGE" 2>/dev/null || true)
if [ "${TAPEBOX_REBUILD:-0}" != 1 ] && [ "$have" = "$key" ]; then
	log "$IMAGE is up to date ($key); skipped (TAPEBOX_REBUILD=1 rebuilds it)"
	exit 0
fi

ctx=$(mktemp -d "${TMPDIR:-/var/tmp}/tapebox-harness-image.XXXXXX")
trap 'rm -rf "$ctx"' EXIT
cp "$node" "$ctx/node"
cp -r "$gemini" "$ctx/gemini-cli"
cp "$opencode" "$ctx/opencode"
printf '#!/bin/sh\nexec /usr/local/bin/node --no-warnings=DEP0040 /opt/gemini-cli/bundle/gemini.js "$@"\n' >"$ctx/gemini"
printf '%s\n' '{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"ide":{"enabled":false}}' >"$ctx/settings.json"
printf '%s\n' '{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled","provider":{"anthropic":{"options":{"baseURL":"{env:TAPEBOX_GATEWAY_URL}/v1"}},"openai":{"options":{"baseURL":"{env:TAPEBOX_GATEWAY_URL}/v1"}}}}' >"$ctx/opencode.json"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY node gemini opencode /usr/local/bin/
COPY gemini-cli /opt/gemini-cli
COPY settings.json /opt/tapebox/gemini/.gemini/settings.json
COPY opencode.json /opt/tapebox/opencode.json
RUN chmod 0755 /usr/local/bin/node /usr/local/bin/gemini /usr/local/bin/opencode \
 && chmod -R a+rX /opt/gemini-cli /opt/tapebox && chmod -R a+rwX /opt/tapebox/gemini
ENV GEMINI_CLI_HOME=/opt/tapebox/gemini GEMINI_CLI_TRUST_WORKSPACE=true GEMINI_CLI_NO_RELAUNCH=true \
    OPENCODE_CONFIG=/opt/tapebox/opencode.json OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 \
    OPENCODE_DISABLE_LSP_DOWNLOAD=1 OPENCODE_DISABLE_SHARE=1 npm_config_offline=true \
    XDG_DATA_HOME=/tmp/xdg/data XDG_CONFIG_HOME=/tmp/xdg/config XDG_CACHE_HOME=/tmp/xdg/cache XDG_STATE_HOME=/tmp/xdg/state
LABEL org.opencontainers.image.title=tapebox-harnesses org.tapebox.harness-key=$key
DOCKERFILE
log "docker build -> $IMAGE (Gemini CLI $("$node" -p "require('$gemini/package.json').version"), OpenCode $("$opencode" --version 2>/dev/null || echo '?'), node $("$node" --version))"
docker build -q -t "$IMAGE" "$ctx" >/dev/null || die "docker build of $IMAGE failed"
log "$IMAGE built"
