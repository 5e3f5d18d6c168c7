#!/usr/bin/env bash
# Every benchmark in one command: scripts/bench.sh [BENCH...]   (default: all of them)
# They print figures and assert nothing about speed (docs/BENCHMARKS.md has the latest).
# The app is the release build, as a user runs it; the benches are optimised too.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
export PATH="$HOME/.cargo/bin:$PATH"
export LANDSTRIP_TRAY_TOOLS="$PWD/.tools"
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
benches=("$@")
((${#benches[@]})) || benches=(auto_answer load desktop settings prompts)
cargo build --release --locked -p landstrip-tray
# The runner refuses a debug binary older than the sources; the benches take this one.
cargo build --locked -p landstrip-tray
export LANDSTRIP_TRAY_BIN="$target_dir/release/landstrip-tray"
for bench in "${benches[@]}"; do
  echo "== bench: $bench (app: $LANDSTRIP_TRAY_BIN)"
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
    cargo bench --locked -p landstrip-tray-tests --bench "$bench"
done
