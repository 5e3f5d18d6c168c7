#!/usr/bin/env bash
# The whole test suite: set-up, format and lint checks, then every test under a virtual
# X display and a private D-Bus session bus.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
export PATH="$HOME/.cargo/bin:$PATH"
export LANDSTRIP_TRAY_TOOLS="$PWD/.tools"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build -p landstrip-tray --locked
xvfb-run -a dbus-run-session -- cargo test --workspace --locked
