#!/usr/bin/env bash
# Stage the sandbox image's layout into a folder (the Docker build context of image/Dockerfile):
# the static guilds-* helpers at /usr/local/bin (not guilds-sandboxd, bubblewrap's exec server),
# the pinned engines at /opt/guilds/tools, the system git configuration, /home/agent and /run/guilds.
# usage: image/stage.sh <rootfs folder>   (helpers from $GUILDS_BIN_DIR, default ./bin)
set -euo pipefail
root=${1:?usage: image/stage.sh <rootfs folder>}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
bin=${GUILDS_BIN_DIR:-$repo/bin}
tools=$repo/tools/node_modules

shopt -s nullglob
helpers=()
for h in "$bin"/guilds-*; do
  # guilds-sandboxd is the bubblewrap sandbox's exec server; in a container the container
  # runtime's own exec replaces it, so the image does not carry it.
  [ "$(basename "$h")" = guilds-sandboxd ] || helpers+=("$h")
done
[ ${#helpers[@]} -gt 0 ] || { echo "stage: no guilds-* helpers in $bin: run \`make build\`" >&2; exit 1; }
[ -d "$tools/playwright-core" ] && [ -d "$tools/@ast-grep" ] || { echo "stage: $tools lacks ast-grep or playwright-core: run \`make setup\`" >&2; exit 1; }

rm -rf "$root"
mkdir -p "$root/usr/local/bin" "$root/opt/guilds/tools" "$root/etc" "$root/home/agent" "$root/run/guilds/requests"
for h in "${helpers[@]}"; do
  install -m 0755 "$h" "$root/usr/local/bin/$(basename "$h")"
done
# Hard links when the folder is on the same file system (quick), a copy otherwise.
cp -al "$tools" "$root/opt/guilds/tools/node_modules" 2>/dev/null || cp -a "$tools" "$root/opt/guilds/tools/node_modules"
install -m 0644 "$here/gitconfig" "$root/etc/gitconfig"
echo "staged the sandbox image into $root"
