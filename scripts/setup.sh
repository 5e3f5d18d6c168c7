#!/usr/bin/env bash
# Installs everything landstrip-tray needs on Debian 12, idempotently.
#   scripts/setup.sh          what building and running the app needs
#   scripts/setup.sh --test   plus what the test suite needs (Xvfb, D-Bus mock,
#                             WebKitWebDriver, tauri-driver, the real landstrip binaries,
#                             the Tauri CLI and desktop-file-utils for the package test,
#                             Chromium and chromedriver for the phone page)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

# The landstrip releases the tests run against, from the npm registry.
LANDSTRIP_VERSIONS=(0.19.2 0.18.27)
TAURI_DRIVER_VERSION=2.1.0

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

build_pkgs=(build-essential pkg-config curl ca-certificates libssl-dev
  libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev)
# git and python3-venv: the prompts bench's agent workload (tests/benches/workload) runs them.
test_pkgs=(xvfb xauth dbus dbus-x11 python3-dbusmock webkit2gtk-driver xdotool tmux
  desktop-file-utils git python3-venv)
# The Wayland desktops the suite runs the app on (tests/src/desktop.rs), headless: sway
# with grim and wtype; GNOME Shell 43 with gjs (its notification service), Debian's
# AppIndicator extension; python3-gi and GTK's
# introspection data for the "other application" window the tests put the prompt over.
test_pkgs+=(sway grim wtype gnome-shell gjs gnome-shell-extension-appindicator
  python3-gi gir1.2-gtk-3.0)
# Remote machines over SSH (tests/tests/remote_ssh.rs): Debian's sshd, started by the
# test on a loopback port, and the client with ssh-keygen.
test_pkgs+=(openssh-server openssh-client)

# The phone page's tests (tests/tests/web.rs): headless Chromium over chromedriver, and
# libfaketime to move the app's wall clock past a pairing token's ten minutes.
test_pkgs+=(chromium chromium-driver faketime)

pkgs=("${build_pkgs[@]}")
((want_test)) && pkgs+=("${test_pkgs[@]}")
# npm fetches the landstrip binaries; any npm will do (Node may come from elsewhere).
((want_test)) && ! command -v npm >/dev/null 2>&1 && pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Rust: Debian 12's rustc is too old for Tauri 2; use rustup's stable toolchain.
if ! command -v cargo >/dev/null 2>&1; then
  [[ -x "$HOME/.cargo/bin/cargo" ]] || curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component clippy,rustfmt
  export PATH="$HOME/.cargo/bin:$PATH"
fi

((want_test)) || exit 0

# The real landstrip binaries, as the npm registry ships them.
for v in "${LANDSTRIP_VERSIONS[@]}"; do
  dest=".tools/landstrip/$v"
  if [[ ! -x "$dest/landstrip" ]]; then
    echo "setup: fetching landstrip $v from the npm registry"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "@landstrip/landstrip-linux-x64@$v" >/dev/null)
    mkdir -p "$dest"
    tar -xzf "$tmp"/*.tgz -C "$tmp"
    install -m 0755 "$tmp/package/bin/landstrip" "$dest/landstrip"
    rm -rf "$tmp"
  fi
  "$dest/landstrip" --version >/dev/null
done

# The npm that runs the installs below, pinned: Debian 12's own npm (9.2) refuses the
# alias in tests/plugin's `overrides` ("Invalid comparator"). npm 10.9 still runs on
# Debian's Node.js 18, and it comes from the npm registry like everything else here.
NPM_VERSION=10.9.4
npm_dir="${LANDSTRIP_TRAY_TOOLS:-.tools}/npm"
if [[ "$("$npm_dir/node_modules/.bin/npm" --version 2>/dev/null)" != "$NPM_VERSION" ]]; then
  echo "setup: installing npm $NPM_VERSION from the npm registry into $npm_dir"
  mkdir -p "$npm_dir"
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" "npm@$NPM_VERSION"
fi
pinned_npm="$(cd "$npm_dir" && pwd)/node_modules/.bin/npm"

# The real opencode-landstrip plugin (and tsx to run its TypeScript), pinned by
# tests/plugin/package-lock.json; the tests run it to build landstrip policies.
plugin_src=tests/plugin
plugin_dest="${LANDSTRIP_TRAY_TOOLS:-.tools}/plugin"
plugin_hash=$(cat "$plugin_src/package.json" "$plugin_src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$plugin_dest/.installed" 2>/dev/null)" != "$plugin_hash" ]]; then
  echo "setup: installing opencode-landstrip and tsx from the npm registry into $plugin_dest"
  rm -rf "$plugin_dest"
  mkdir -p "$plugin_dest"
  cp "$plugin_src/package.json" "$plugin_src/package-lock.json" "$plugin_dest/"
  # Not `npm ci`: this registry serves no other platform's optional binaries, so the lock
  # lacks them and ci calls it out of sync. `npm install --no-save` follows the lock (and
  # its integrity hashes) without rewriting it. No install scripts: nothing here needs one.
  (cd "$plugin_dest" && "$pinned_npm" install --silent --no-save --no-audit --no-fund --ignore-scripts)
  # The pins that matter, checked where npm put them (directory, then name@version).
  plugin_modules=$(cd "$plugin_dest" && pwd)/node_modules
  for pin in "opencode-landstrip opencode-landstrip@0.19.1" "tsx tsx@4.23.15" \
    "@landstrip/landstrip-api @landstrip/landstrip@0.18.38" \
    "@landstrip/landstrip-linux-x64 @landstrip/landstrip-linux-x64@0.19.2"; do
    read -r dir want <<<"$pin"
    got=$(node -p 'const m = require(process.argv[1]); m.name + "@" + m.version' \
      "$plugin_modules/$dir/package.json" 2>/dev/null || true)
    [[ "$got" == "$want" ]] || { echo "setup: $plugin_dest has $dir as '$got', not $want" >&2; exit 1; }
  done
  echo "$plugin_hash" >"$plugin_dest/.installed"
fi
[[ -f "$plugin_dest/node_modules/opencode-landstrip/index.ts" && -x "$plugin_dest/node_modules/.bin/tsx" ]] ||
  { echo "setup: $plugin_dest is incomplete; remove it and run again" >&2; exit 1; }

# The real opencode TUI (tests/tests/opencode_tui.rs), pinned by tests/opencode: the
# opencode-ai package and its linux-x64 binary package, and, in config/, the
# @opencode-ai/plugin dependency opencode installs into every config directory that
# lists plugins (with the lockfile opencode writes, so it has nothing to fetch).
opencode_src=tests/opencode
opencode_dest="${LANDSTRIP_TRAY_TOOLS:-.tools}/opencode"
opencode_hash=$(cat "$opencode_src/package.json" "$opencode_src/package-lock.json" \
  "$opencode_src/config/package.json" "$opencode_src/config/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$opencode_dest/.installed" 2>/dev/null)" != "$opencode_hash" ]]; then
  echo "setup: installing opencode 1.18.33 from the npm registry into $opencode_dest"
  rm -rf "$opencode_dest"
  mkdir -p "$opencode_dest/config"
  cp "$opencode_src/package.json" "$opencode_src/package-lock.json" "$opencode_dest/"
  cp "$opencode_src/config/package.json" "$opencode_src/config/package-lock.json" "$opencode_dest/config/"
  # No install scripts: opencode-ai's only links the platform binary, used directly here.
  (cd "$opencode_dest" && "$pinned_npm" install --silent --no-save --no-audit --no-fund --ignore-scripts)
  (cd "$opencode_dest/config" && "$pinned_npm" install --silent --no-save --no-audit --no-fund --ignore-scripts)
  opencode_modules=$(cd "$opencode_dest" && pwd)/node_modules
  for pin in "$opencode_modules/opencode-ai opencode-ai@1.18.33" \
    "$opencode_modules/opencode-linux-x64 opencode-linux-x64@1.18.33" \
    "$opencode_dest/config/node_modules/@opencode-ai/plugin @opencode-ai/plugin@1.18.33"; do
    read -r dir want <<<"$pin"
    got=$(node -p 'const m = require(process.argv[1]); m.name + "@" + m.version' \
      "$(cd "$dir" && pwd)/package.json" 2>/dev/null || true)
    [[ "$got" == "$want" ]] || { echo "setup: $dir is '$got', not $want" >&2; exit 1; }
  done
  echo "$opencode_hash" >"$opencode_dest/.installed"
fi
"$opencode_dest/node_modules/opencode-linux-x64/bin/opencode" --version >/dev/null ||
  { echo "setup: $opencode_dest/node_modules/opencode-linux-x64/bin/opencode does not run" >&2; exit 1; }

# The Tauri CLI scripts/package.sh bundles with (tests/tests/package.rs builds a .deb).
scripts/tauri-cli.sh >/dev/null

if ! command -v tauri-driver >/dev/null 2>&1 && [[ ! -x "$HOME/.cargo/bin/tauri-driver" ]]; then
  echo "setup: installing tauri-driver $TAURI_DRIVER_VERSION"
  cargo install --locked --quiet tauri-driver --version "$TAURI_DRIVER_VERSION"
fi
