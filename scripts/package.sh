#!/usr/bin/env bash
# Builds the Debian package with the Tauri bundler: scripts/package.sh [--debug]
#   (no option)  a release build (`cargo build --release`, the one scripts/run.sh runs),
#                bundled: the package to install or hand out
#   --debug      bundles the dev-profile binary that `cargo build -p landstrip-tray` already
#                made, without building anything (the test suite's package: no second build)
# The .deb holds the binary, the desktop entry, the hicolor icons and the scalable SVG.
# The last line printed is the .deb's absolute path.
#
# Only the .deb: tauri.conf.json also configures an AppImage, but its bundler downloads
# its own tools while it runs, which machines without general internet access cannot do.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "usage: scripts/package.sh [--debug]" >&2; exit 2 ;;
esac
started=$SECONDS

# The Tauri CLI from the npm registry, pinned to the tauri crate's version.
tauri=$(scripts/tauri-cli.sh)

target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')
binary="$target_dir/$profile/landstrip-tray"
if [[ $profile == release ]]; then
  # The build scripts/run.sh makes. It has custom-protocol (src-tauri/Cargo.toml), the
  # one feature `tauri build` would add, so what is bundled is what `tauri build` ships.
  cargo build --release --locked -p landstrip-tray >&2
elif [[ ! -x "$binary" ]]; then
  echo "package: $binary is missing: run \`cargo build -p landstrip-tray\` first" >&2
  exit 1
fi

bundle_dir="$target_dir/$profile/bundle/deb"
rm -f "$bundle_dir"/*.deb
flags=(--bundles deb --ci)
[[ $profile == debug ]] && flags+=(--debug)
# Binary patching would rewrite the built binary in place (a marker the updater reads,
# which this app does not use): the binary cargo made stays the one tested.
(cd src-tauri && "$tauri" bundle "${flags[@]}" --no-binary-patching) >&2

debs=("$bundle_dir"/*.deb)
if [[ ${#debs[@]} -ne 1 || ! -f "${debs[0]}" ]]; then
  echo "package: expected one .deb in $bundle_dir, found: ${debs[*]}" >&2
  exit 1
fi
deb=$(realpath "${debs[0]}")
echo "package: $(du -h "$deb" | cut -f1) in $((SECONDS - started)) s ($profile build)" >&2
echo "$deb"
