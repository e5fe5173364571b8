#!/bin/sh
# Runs Codex CLI against the gateway tapebox record starts (or a simulator): Codex ignores
# OPENAI_BASE_URL for its built-in provider, and the gateway's port is known only inside
# tapebox record, so this writes $CODEX_HOME/config.toml from $CODEX_HOME/config.toml.in with
# @BASE_URL@ replaced by $TAPEBOX_GATEWAY_URL/v1, then runs the command line it is given.
#
# Usage: TAPEBOX_GATEWAY_URL=http://127.0.0.1:PORT CODEX_HOME=DIR codex-gateway.sh CODEX ARGS...
set -eu
: "${TAPEBOX_GATEWAY_URL:?set by tapebox record}"
: "${CODEX_HOME:?}"
sed "s|@BASE_URL@|${TAPEBOX_GATEWAY_URL}/v1|" "$CODEX_HOME/config.toml.in" >"$CODEX_HOME/config.toml"
exec "$@"
