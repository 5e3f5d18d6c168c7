#!/usr/bin/env bash
# Installs the Tauri CLI that scripts/package.sh bundles with, if it is not there yet, and
# prints the path of its `tauri` command. It comes from the npm registry (prebuilt), pinned
# by packaging/tauri-cli's lockfile with its integrity hashes to the tauri crate's
# version, into the tools directory ($LANDSTRIP_TRAY_TOOLS, default .tools), not globally.
set -euo pipefail
cd "$(dirname "$0")/.."

src=packaging/tauri-cli
dest="${LANDSTRIP_TRAY_TOOLS:-$PWD/.tools}/tauri-cli"
hash=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$dest/.installed" 2>/dev/null)" != "$hash" ]]; then
  command -v npm >/dev/null 2>&1 ||
    { echo "tauri-cli: npm is needed to fetch the Tauri CLI: apt-get install npm" >&2; exit 1; }
  echo "tauri-cli: installing @tauri-apps/cli from the npm registry into $dest" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  # No install scripts: the CLI finds its platform's prebuilt binding package at run time.
  (cd "$dest" && npm ci --silent --no-audit --no-fund --ignore-scripts)
  echo "$hash" >"$dest/.installed"
fi
tauri="$(cd "$dest" && pwd)/node_modules/.bin/tauri"
"$tauri" --version >/dev/null ||
  { echo "tauri-cli: $tauri does not run; remove $dest and run again" >&2; exit 1; }

# The CLI and the tauri crate must agree on major.minor (the bundler reads the crate's
# config); the lockfile says which crate is built.
crate=$(awk '/^name = "tauri"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
cli=$("$tauri" --version | awk '{ print $2 }')
if [[ "${crate%.*}" != "${cli%.*}" ]]; then
  echo "tauri-cli: the Tauri CLI is $cli but the tauri crate is $crate: pin @tauri-apps/cli $crate in $src" >&2
  exit 1
fi
echo "$tauri"
