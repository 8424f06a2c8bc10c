#!/usr/bin/env bash
# Installs what this machine lacks to build, test and run guilds; quick when nothing is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have() { command -v "$1" >/dev/null 2>&1; }
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

have rg        || need+=(ripgrep)
have bwrap     || need+=(bubblewrap)
# The sandboxes' own network (slirp4netns) and the rule that keeps it off the host's addresses (nft).
have slirp4netns || need+=(slirp4netns)
[ -x /usr/sbin/nft ] || need+=(nftables)
have chromium  || need+=(chromium)
have ctags     || need+=(universal-ctags)
have git       || need+=(git)
# The sandbox sees only /usr, so the system python3 and node must be there, not just on PATH.
[ -x /usr/bin/python3 ] || need+=(python3)
have gcc       || need+=(gcc libc6-dev)
[ -x /usr/bin/node ]    || need+=(nodejs)
have npm       || need+=(npm)
have curl      || need+=(curl)
have hyperfine || need+=(hyperfine)
[ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] || need+=(postgresql postgresql-contrib)

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# Pinned engines (ast-grep, the Playwright driver) in the project-local tools folder.
if ! cmp -s tools/package.json tools/node_modules/.installed 2>/dev/null; then
  echo "setup: installing pinned engines into tools/node_modules"
  (cd tools && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tools/package.json tools/node_modules/.installed
fi

# Test-only chain engines (anvil, solc) for the Wallet adapter's tests, outside the sandbox's tools.
if ! cmp -s tools/chain/package.json tools/chain/node_modules/.installed 2>/dev/null; then
  echo "setup: installing the test chain engines into tools/chain/node_modules"
  (cd tools/chain && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tools/chain/package.json tools/chain/node_modules/.installed
fi

# Test-only OpenID Connect provider (npm oidc-provider) for the single sign-on tests.
if ! cmp -s tools/oidc/package.json tools/oidc/node_modules/.installed 2>/dev/null; then
  echo "setup: installing the test OpenID provider into tools/oidc/node_modules"
  (cd tools/oidc && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tools/oidc/package.json tools/oidc/node_modules/.installed
fi

# Test-only accessibility engine (npm axe-core) the operator app's browser tests run in each page.
if ! cmp -s tools/axe/package.json tools/axe/node_modules/.installed 2>/dev/null; then
  echo "setup: installing the test accessibility engine into tools/axe/node_modules"
  (cd tools/axe && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tools/axe/package.json tools/axe/node_modules/.installed
fi

# Test-only official TypeScript MCP SDK (npm @modelcontextprotocol/sdk), the MCP front door's
# client that nobody here wrote.
if ! cmp -s tools/mcpsdk/package.json tools/mcpsdk/node_modules/.installed 2>/dev/null; then
  echo "setup: installing the MCP TypeScript SDK into tools/mcpsdk/node_modules"
  (cd tools/mcpsdk && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp tools/mcpsdk/package.json tools/mcpsdk/node_modules/.installed
fi

# Go modules, so builds and tests start warm; the stamp lives in the data folder (GUILDS_DATA_DIR
# from the environment or .env, as make run reads it; default .data).
dotenv() { [ -f .env ] && sed -n -E "s/^[[:space:]]*(export[[:space:]]+)?$1=[\"']?([^\"'#]*)[\"']?.*/\2/p" .env | tail -n 1 || true; }
data="${GUILDS_DATA_DIR:-$(dotenv GUILDS_DATA_DIR)}"
data="${data:-.data}"
stamp="$data/.gomod-ok"
if [ ! -f "$stamp" ] || [ -n "$(find . -name go.sum -newer "$stamp" -print -quit)" ]; then
  for m in $(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p'); do (cd "$m" && go mod download); done
  mkdir -p "$data" && touch "$stamp"
fi
