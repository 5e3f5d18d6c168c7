#!/usr/bin/env bash
# Builds and runs the app: scripts/run.sh [--project DIR]...
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PATH"
exec cargo run --release --locked -p landstrip-tray -- "$@"
