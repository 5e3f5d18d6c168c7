#!/usr/bin/env bash
# The whole test suite: set-up, format and lint checks, then every test under a virtual
# X display and a private D-Bus session bus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
export PATH="$HOME/.cargo/bin:$PATH"
export LANDSTRIP_TRAY_TOOLS="$PWD/.tools"
node --test ui/settings/ ui/welcome/ ui/prompt/
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build -p landstrip-tray --locked
# Bounded as a whole: every wait inside the tests is bounded too, but a hang nobody
# thought of must still end the run (SIGTERM, then SIGKILL 30 s later; exit status 124).
# The package test builds the release binary (scripts/package.sh), cold on a new machine.
timeout --kill-after=30s "${LANDSTRIP_TRAY_TEST_TIMEOUT:-55m}" \
  xvfb-run -a dbus-run-session -- cargo test --workspace --locked
