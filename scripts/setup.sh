#!/usr/bin/env bash
# Installs everything landstrip-tray needs on Debian 12, idempotently.
#   scripts/setup.sh          what building and running the app needs
#   scripts/setup.sh --test   plus what the test suite needs (Xvfb, D-Bus mock,
#                             WebKitWebDriver, tauri-driver, the real landstrip binaries)
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
test_pkgs=(xvfb xauth dbus dbus-x11 python3-dbusmock webkit2gtk-driver xdotool)

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

if ! command -v tauri-driver >/dev/null 2>&1 && [[ ! -x "$HOME/.cargo/bin/tauri-driver" ]]; then
  echo "setup: installing tauri-driver $TAURI_DRIVER_VERSION"
  cargo install --locked --quiet tauri-driver --version "$TAURI_DRIVER_VERSION"
fi
