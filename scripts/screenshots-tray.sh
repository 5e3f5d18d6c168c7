#!/usr/bin/env bash
# Regenerates the README's tray screenshots in docs/:
#   tray-idle.png     the icon with nothing waiting
#   tray-pending.png  the icon with one request waiting
#   tray-paused.png   the icon while prompts are paused
#   tray-menu.png     the open menu (one request waiting, Projects submenu open)
#
# Runs the debug build under Xvfb and a private D-Bus session bus, with Xfce's panel as
# the StatusNotifierItem host and private HOME/XDG_* directories. Needs the Debian
# packages xvfb xauth dbus xfce4-panel xdotool imagemagick (x11-utils for xwininfo).
#   scripts/screenshots-tray.sh [OUT_DIR]     (default: docs)
# SHOTS_KEEP=1 keeps the work directory (logs, full-screen shots); it is always kept on
# failure.
set -euo pipefail

if [[ "${1:-}" != "--inner" ]]; then
  self=$(realpath "$0")
  out=$(realpath -m "${1:-$(dirname "$self")/../docs}")
  cd "$(dirname "$self")/.."
  mkdir -p "$out"
  export PATH="$HOME/.cargo/bin:$PATH"
  target=${CARGO_TARGET_DIR:-$PWD/target}
  app="$target/debug/landstrip-tray"
  # cargo waits for a build running in the same target directory by itself.
  CARGO_TARGET_DIR="$target" cargo build -p landstrip-tray --locked
  work=$(mktemp -d -t landstrip-tray-shots.XXXXXX)
  demo=
  # The work directory is kept when something fails, for its logs and full-screen shots.
  finish() {
    local rc=$?
    [[ -n "$demo" ]] && rm -rf "$demo"
    if ((rc)) || [[ -n "${SHOTS_KEEP:-}" ]]; then echo "screenshots-tray: kept $work" >&2; else rm -rf "$work"; fi
  }
  trap finish EXIT
  mkdir -p "$work"/{home,config,data,cache,state,runtime}
  chmod 700 "$work/runtime"
  # The Projects submenu shows the project's full path: a short, stable one when free.
  if mkdir /tmp/landstrip-demo 2>/dev/null; then
    demo=/tmp/landstrip-demo
    project="$demo/my-project"
  else
    project="$work/my-project"
  fi
  mkdir "$project"
  # Set before the bus starts: D-Bus-activated services (xfconfd) inherit the bus's
  # environment, so they read the panel configuration from here.
  export HOME="$work/home" XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" \
    XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state" \
    XDG_RUNTIME_DIR="$work/runtime" GTK_THEME=Adwaita NO_AT_BRIDGE=1
  export SHOTS_APP="$app" SHOTS_OUT="$out" SHOTS_WORK="$work" SHOTS_PROJECT="$project"
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- "$self" --inner
  exit
fi

# ---- inside Xvfb and the session bus ----
app=$SHOTS_APP out=$SHOTS_OUT work=$SHOTS_WORK project=$SHOTS_PROJECT
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

log() { echo "screenshots-tray: $*" >&2; }
die() { log "$*"; exit 1; }

# Polls `$@` every 0.2 s for up to $1 seconds.
wait_for() {
  local secs=$1 i
  shift
  for ((i = 0; i < secs * 5; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

# A minimal panel: one 32 px panel along the top with an empty stretch and the
# notification area (whose systray plugin also hosts StatusNotifierItems). A config file
# in place keeps the panel from asking which layout to start with.
panel_xml="$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml"
mkdir -p "$(dirname "$panel_xml")"
cat >"$panel_xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-panel" version="1.0">
  <property name="configver" type="int" value="2"/>
  <property name="panels" type="array">
    <value type="int" value="1"/>
    <property name="panel-1" type="empty">
      <property name="position" type="string" value="p=6;x=0;y=0"/>
      <property name="length" type="uint" value="100"/>
      <property name="position-locked" type="bool" value="true"/>
      <property name="size" type="uint" value="32"/>
      <property name="icon-size" type="uint" value="24"/>
      <property name="plugin-ids" type="array">
        <value type="int" value="1"/>
        <value type="int" value="2"/>
      </property>
    </property>
  </property>
  <property name="plugins" type="empty">
    <property name="plugin-1" type="string" value="separator">
      <property name="expand" type="bool" value="true"/>
      <property name="style" type="uint" value="0"/>
    </property>
    <property name="plugin-2" type="string" value="systray">
      <property name="square-icons" type="bool" value="true"/>
      <property name="menu-is-primary" type="bool" value="true"/>
    </property>
  </property>
</channel>
EOF

xfce4-panel --disable-wm-check >"$work/panel.log" 2>&1 &
pids+=($!)
watcher_up() {
  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.kde.StatusNotifierWatcher | grep -q 'true'
}
wait_for 20 watcher_up || { cat "$work/panel.log" >&2; die "no StatusNotifierWatcher on the bus"; }
panel=$(xdotool search --sync --onlyvisible --class xfce4-panel | head -n1)
# A desktop-like background instead of Xvfb's black.
# (display sets the root window's background and exits 1 though it worked.)
convert -size 64x64 xc:'#4c566a' "$work/background.png"
display -window root "$work/background.png" || true

"$app" --project "$project" >"$work/app.log" 2>&1 &
pids+=($!)
wait_for 20 test -S "$XDG_RUNTIME_DIR/landstrip-tray/control.sock" ||
  { cat "$work/app.log" >&2; die "the app did not start"; }
sleep 2 # the icon registers with the watcher and the panel draws it

shot() { import -window root "$1"; }

# The tray item's box: what differs from the panel background in the panel's right end.
eval "$(xwininfo -id "$panel" | awk '/Absolute upper-left X/{print "px="$NF}
  /Absolute upper-left Y/{print "py="$NF} /Width/{print "pw="$NF} /Height/{print "ph="$NF}')"
shot "$work/idle-full.png"
# (The panel's last row is a border line: left out.)
bbox=$(convert "$work/idle-full.png" -crop "200x$((ph - 2))+$((px + pw - 200))+${py}" +repage \
  -fuzz 10% -trim -format '%w %h %X %Y' info:)
read -r iw ih ix iy <<<"$bbox"
ix=$((px + pw - 200 + ${ix#+})) iy=$((py + ${iy#+}))
log "panel ${pw}x${ph}+${px}+${py}; tray item ${iw}x${ih}+${ix}+${iy}"
((iw > 4 && iw < 100)) || die "no tray icon found in the panel (see $work/idle-full.png)"
icon_x=$((ix + iw / 2)) icon_y=$((iy + ih / 2))

# The panel's right end, where the icon sits.
icon_crop() { convert "$1" -crop "160x${ph}+$((px + pw - 160))+${py}" +repage "$2"; }
icon_crop "$work/idle-full.png" "$out/tray-idle.png"

# One request waiting: a launcher-like client sends a query and keeps the line open.
python3 - "$XDG_RUNTIME_DIR" >"$work/client.log" 2>&1 <<'EOF' &
import glob, json, socket, sys, time
for _ in range(100):
    files = glob.glob(sys.argv[1] + "/opencode-landstrip/port-*.json")
    if files:
        break
    time.sleep(0.1)
port = json.load(open(files[0]))["port"]
s = socket.create_connection(("127.0.0.1", port))
s.sendall((json.dumps({
    "kind": "filesystem", "state": "query", "query_id": "1", "operation": "write",
    "path": "/home/dev/notes/todo.txt", "reason": "allow_miss",
    "process": {"pid": 1, "exe": "/usr/bin/python3", "cwd": "/tmp"},
}) + "\n").encode())
print(s.recv(4096), flush=True)
time.sleep(3600)
EOF
pids+=($!)
pending_up() { "$app" ctl pending | grep -q .; }
wait_for 20 pending_up || { cat "$work/client.log" >&2; die "no request pending"; }
# The prompt dialog opens too (centred, always on top): taken off the screen, as it would
# cover the menu's Projects submenu.
app_windows() { xdotool search --onlyvisible --pid "${pids[1]}" 2>/dev/null; }
wait_for 30 app_windows || log "the prompt dialog did not open"
sleep 1
for w in $(app_windows); do
  xdotool windowunmap "$w" || true
done
sleep 0.5
shot "$work/pending-full.png"
icon_crop "$work/pending-full.png" "$out/tray-pending.png"

# The menu: a click on the icon, then down to Projects and open its submenu.
before=$(xdotool search --onlyvisible --name '' 2>/dev/null | sort)
new_windows() { comm -13 <(echo "$before") <(xdotool search --onlyvisible --name '' 2>/dev/null | sort); }
menu_open() { [[ -n "$(new_windows)" ]]; }
xdotool mousemove "$icon_x" "$icon_y" click 1
wait_for 10 menu_open || die "no menu opened"
sleep 0.5
xdotool key Down Down Right
sleep 1
shot "$work/menu-full.png"
# Everything mapped since the click (menu and submenu), with a margin, plus the icon.
left=$icon_x maxb=0
for w in $(new_windows); do
  eval "$(xwininfo -id "$w" | awk '/Absolute upper-left X/{print "wx="$NF}
    /Absolute upper-left Y/{print "wy="$NF} /Width/{print "ww="$NF} /Height/{print "wh="$NF}')"
  ((ww > 1 && wx >= 0 && wy >= 0)) || continue # GTK's helper and shadow windows
  log "menu window $w: ${ww}x${wh}+${wx}+${wy}"
  ((wx < left)) && left=$wx
  bottom=$((wy + wh))
  ((bottom > maxb)) && maxb=$bottom
done
((maxb > 0)) || die "no menu window found"
left=$((left > 16 ? left - 16 : 0))
convert "$work/menu-full.png" -crop "$((px + pw - left))x$((maxb + 16 - py))+${left}+${py}" \
  +repage "$out/tray-menu.png"
xdotool key Escape Escape Escape

# Paused.
"$app" ctl pause >/dev/null
sleep 1.5
shot "$work/paused-full.png"
icon_crop "$work/paused-full.png" "$out/tray-paused.png"
log "wrote $out/tray-{idle,pending,paused,menu}.png"
