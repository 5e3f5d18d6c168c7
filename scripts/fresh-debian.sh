#!/usr/bin/env bash
# Tries the README's commands as a new user on a fresh Debian 12 would: debootstraps a
# minimal bookworm into DIR, clones this checkout's HEAD into it and runs there
#   scripts/test.sh                 (always)
#   scripts/run.sh --version        (with --run: the release build the run command makes,
#                                    then the app it starts, serving a project)
#
#   scripts/fresh-debian.sh [--run | --run-only] [--host-rust] [DIR]
#                                               (as root; DIR: /var/tmp/fresh-debian)
#
# --run-only skips the test command, so that the run command is tried on a system where
# nothing but its own set-up has been installed (the test command's set-up installs more).
#
# --host-rust copies this machine's rustup toolchain into the new system instead of letting
# setup.sh fetch rustup, for machines that reach the package registries but not
# static.rust-lang.org. Everything else comes from Debian's and npm's registries and
# crates.io, as setup.sh fetches it. The new system is kept for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

run=0 test=1 host_rust=0 dir=/var/tmp/fresh-debian
for arg in "$@"; do
  case "$arg" in
    --run) run=1 ;;
    --run-only) run=1 test=0 ;;
    --host-rust) host_rust=1 ;;
    -*) echo "usage: $0 [--run | --run-only] [--host-rust] [DIR]" >&2; exit 2 ;;
    *) dir=$arg ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "fresh-debian: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap

root="$dir/root"
if [[ ! -x "$root/usr/bin/apt-get" ]]; then
  echo "fresh-debian: debootstrap bookworm into $root"
  mkdir -p "$dir"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
fi
for m in proc sys dev; do
  mountpoint -q "$root/$m" || case $m in
    proc) mount -t proc proc "$root/proc" ;;
    *) mount --rbind "/$m" "$root/$m" ;;
  esac
done
# Terminals (the launcher's Ctrl-C test opens one): /dev/pts is not always carried along.
mountpoint -q "$root/dev/pts" || mount --bind /dev/pts "$root/dev/pts"
# Lazily (a process the checks started may still be ending) and never failing the script
# (set -e holds inside the trap too).
trap 'umount -R -l "$root/dev" "$root/sys" 2>/dev/null || true; umount -l "$root/proc" 2>/dev/null || true' EXIT
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The machine's own extra certificate authorities (an egress proxy's), which any machine
# here carries: without them the new system reaches no registry over TLS.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" /bin/bash -c 'command -v update-ca-certificates >/dev/null ||
    { apt-get update -q && apt-get install -y -q ca-certificates; }; update-ca-certificates >/dev/null'
fi

if ((host_rust)); then
  toolchain=$(rustup show active-toolchain | cut -d' ' -f1)
  mkdir -p "$root/root/.rustup/toolchains" "$root/root/.cargo/bin"
  cp -a "$HOME/.rustup/toolchains/$toolchain" "$root/root/.rustup/toolchains/"
  printf 'version = "12"\ndefault_toolchain = "%s"\nprofile = "minimal"\n' "$toolchain" \
    >"$root/root/.rustup/settings.toml"
  for b in cargo cargo-clippy cargo-fmt clippy-driver rustc rustdoc rustfmt rustup; do
    cp -a "$HOME/.cargo/bin/$b" "$root/root/.cargo/bin/"
  done
fi

# Commands in the new system get a new user's environment, not this shell's (a
# CARGO_TARGET_DIR or LANDSTRIP_TRAY_TOOLS here would change where things go there).
in_new_system() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# The clone a new user makes (git comes from Debian, as it would for them).
git bundle create "$root/tmp/landstrip-tray.bundle" HEAD
in_new_system TEST="$test" /bin/bash -lc '
  set -euo pipefail
  command -v git >/dev/null || { apt-get update -q && apt-get install -y -q git ca-certificates; }
  rm -rf /root/landstrip-tray
  git clone -q /tmp/landstrip-tray.bundle /root/landstrip-tray
  cd /root/landstrip-tray
  if [[ $TEST == 1 ]]; then
    echo "fresh-debian: scripts/test.sh in $(cat /etc/debian_version) at $(git rev-parse --short HEAD)"
    scripts/test.sh
  fi
'
if ((run)); then
  in_new_system /bin/bash -lc 'cd /root/landstrip-tray &&
    echo "fresh-debian: scripts/run.sh in $(cat /etc/debian_version) at $(git rev-parse --short HEAD)" &&
    scripts/run.sh --version'
  # Then the app itself, as the run command starts it, on a virtual display (installed only
  # now, after the build, so that it cannot stand in for anything run.sh should install):
  # it must come up and serve a project, which the control command reports.
  in_new_system /bin/bash -lc '
    set -euo pipefail
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q xvfb xauth dbus >/dev/null
    cd /root/landstrip-tray
    mkdir -p /tmp/fresh-project
    xvfb-run -a dbus-run-session -- scripts/run.sh --project /tmp/fresh-project &
    runner=$!
    # By its process name (a pattern on the command line would match this shell too), and
    # then until xvfb-run has taken its display and bus down.
    trap "pkill -x landstrip-tray || true; wait $runner || true" EXIT
    app=target/release/landstrip-tray
    for _ in $(seq 120); do $app ctl projects 2>/dev/null | grep -q /tmp/fresh-project && break; sleep 1; done
    $app ctl status
    $app ctl projects | grep /tmp/fresh-project
  '
fi
echo "fresh-debian: the README's commands worked in $root"
