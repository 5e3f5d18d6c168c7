#!/usr/bin/env bash
# Regenerates the prompt dialog screenshots in docs/ (dialog-<kind>-<light|dark>.png: write,
# read, network, sensitive and their second steps; chain, chain-full and limits for a
# forking `npm ci` with the session limited; after-secret, a connect after a secret read):
# the real app under Xvfb, driven through tauri-driver while real landstrip runs wait for it
# (the ignored `screenshots` tests in tests/tests/dialog.rs and dialog_after_secret.rs). Dark is GTK_THEME=Adwaita:dark,
# which WebKitGTK reports to the page as prefers-color-scheme: dark.
#   scripts/dialog-screenshots.sh [OUT_DIR]    (default: docs/)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export LANDSTRIP_TRAY_TOOLS="$PWD/.tools"
out="${1:-docs}"
mkdir -p "$out"
export LANDSTRIP_TRAY_SCREENSHOTS="$(cd "$out" && pwd)"
cargo build -p landstrip-tray --locked
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
  cargo test -p landstrip-tray-tests --test dialog --locked -- --ignored --exact screenshots
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
  cargo test -p landstrip-tray-tests --test dialog_after_secret --locked -- --ignored --exact screenshots
# A remote machine's request (sshd and a second user, as tests/tests/remote_ssh.rs: root).
xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
  cargo test -p landstrip-tray-tests --test remote_ssh --locked -- --ignored --exact screenshots
ls -1 "$LANDSTRIP_TRAY_SCREENSHOTS"/dialog-*.png
