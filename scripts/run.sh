#!/usr/bin/env bash
# Starts the orchestrator in the foreground on its embedded PostgreSQL (under .data/ unless
# DATABASE_URL is set), generating and keeping the operator token when none is configured.
# Ctrl-C stops the orchestrator, which stops its PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=bin/orchestrator
[ -x "$bin" ] || { echo "run: $bin is missing; run \`make build\` (make run does it)" >&2; exit 1; }

# dotenv KEY: the value of KEY in ./.env, if any (the orchestrator itself reads .env the same way;
# the environment wins).
dotenv() { [ -f .env ] && sed -n -E "s/^[[:space:]]*(export[[:space:]]+)?$1=[\"']?([^\"'#]*)[\"']?.*/\2/p" .env | tail -n 1 || true; }

export GUILDS_DATA_DIR="${GUILDS_DATA_DIR:-$(dotenv GUILDS_DATA_DIR)}"
GUILDS_DATA_DIR="${GUILDS_DATA_DIR:-.data}"
mkdir -p "$GUILDS_DATA_DIR"
chmod 755 "$GUILDS_DATA_DIR" # the embedded cluster runs as the postgres user and lives inside it

token="${GUILDS_ADMIN_TOKEN:-$(dotenv GUILDS_ADMIN_TOKEN)}"
if [ -z "$token" ]; then
  tokfile="$GUILDS_DATA_DIR/admin-token"
  if [ ! -s "$tokfile" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=\n' | head -c 40 >"$tokfile")
    echo "run: generated an operator token in $tokfile (kept for the next runs)"
  fi
  token="$(cat "$tokfile")"
fi
export GUILDS_ADMIN_TOKEN="$token"

# GUILDS_SECRET_KEY (which encrypts stored credentials), when unset, is generated and kept by the
# orchestrator itself in $GUILDS_DATA_DIR/secret-key; GET /api/instance says where it came from.

listen="${GUILDS_LISTEN:-$(dotenv GUILDS_LISTEN)}"
listen="${listen:-127.0.0.1:8080}"
export GUILDS_LISTEN="$listen"

# The host's Go, when present, is bound read-only into every sandbox (GUILDS_SANDBOX_BIND), so an
# agent can build and test Go code; a GUILDS_SANDBOX_BIND of the environment or .env wins.
bind="${GUILDS_SANDBOX_BIND:-$(dotenv GUILDS_SANDBOX_BIND)}"
if [ -z "$bind" ] && command -v go >/dev/null 2>&1; then
  bind="$(go env GOROOT 2>/dev/null || true)"
fi
[ -n "$bind" ] && export GUILDS_SANDBOX_BIND="$bind"

db="embedded PostgreSQL in $GUILDS_DATA_DIR/postgres"
[ -n "${DATABASE_URL:-$(dotenv DATABASE_URL)}" ] && db="DATABASE_URL"
cat <<MSG

  guilds orchestrator
  address:  http://$listen    (the operator app at /, the API under /api, its OpenAPI at /api/openapi.json)
  bootstrap token: $token     (the instance admin's: keep it for scripts and the first account)
  database: $db
  sandbox toolchains: ${GUILDS_SANDBOX_BIND:-none}    (GUILDS_SANDBOX_BIND, read-only in every sandbox)
  first account (in another terminal, once it listens; asks for a password of 12+ characters):
            bin/orchestrator accounts create --admin --email you@example.com --name "Your Name"
  then sign in at http://$listen/ with that email and password.
  try:      curl -H 'Authorization: Bearer $token' http://$listen/api/instance
  Ctrl-C stops it (and its PostgreSQL). Operational logs (JSON) follow.

MSG
exec "$bin" serve
