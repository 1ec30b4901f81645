# Shared by the D-Bus tests (sourced): a private system-like bus started by
# the test, and the real mthpd on a fake host tree (LD_PRELOAD fakesysfs).
# Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail

for tool in dbus-daemon dbus-send busctl setpriv python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
# writes are for root only, and the non-root checks switch to uid 65534
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the daemon lets only uid 0 write)"; exit 77; }

T=$(mktemp -d /tmp/mthpd-dbus.XXXXXX)
chmod 755 "$T" # uid 65534 must reach the bus socket
ROOT=$T/root STATE=$T/state LOG=$T/mthpd.log
PID="" BUS_PID="" MONITOR_PID=""
NOBODY=65534
OBJ=(org.mthpd.mthpd1 /org/mthpd/mthpd1 org.mthpd.Manager1)

cleanup() {
        [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true
        [ -n "$MONITOR_PID" ] && kill "$MONITOR_PID" 2>/dev/null || true
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null || true
        rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; [ -f "$LOG" ] && sed 's/^/  log: /' "$LOG" | tail -30 >&2; exit 1; }
ok() { echo "ok - $*"; }

wait_for() { # wait_for SECONDS CMD...: poll until CMD succeeds
        local until=$((SECONDS + $1)); shift
        while ! "$@" 2>/dev/null; do
                [ $SECONDS -lt $until ] || return 1
                sleep 0.05
        done
}

knob() { "$FAKEHOST" read "$ROOT" "/sys/kernel/mm/transparent_hugepage/$1"; }
knob_is() { [ "$(knob "$1")" = "$2" ]; }

start_bus() { # start_bus POLICY...: a dbus-daemon on $T/bus whose configuration holds POLICY (XML)
        cat > "$T/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$T/bus</listen>
  <auth>EXTERNAL</auth>
  $*
</busconfig>
EOF
        dbus-daemon --config-file="$T/bus.conf" --fork --print-address=3 --print-pid=4 \
                3>"$T/bus.address" 4>"$T/bus.pid" 2>"$T/bus.err" ||
                { cat "$T/bus.err" >&2; return 1; }
        BUS_PID=$(cat "$T/bus.pid")
        DBUS_SYSTEM_BUS_ADDRESS=$(cat "$T/bus.address")
        export DBUS_SYSTEM_BUS_ADDRESS
}

start_mthpd() { # start_mthpd ARGS...: mthpd on the fake host, in the background
        : > "$LOG"
        LD_PRELOAD="$FAKESYSFS" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                "$MTHPD" --root "$ROOT" --state-dir "$STATE" "$@" 2>"$LOG" &
        PID=$!
}
stop_mthpd() { # stop_mthpd SIGNAL: signal mthpd and collect its exit code in RC
        kill -"$1" "$PID"
        RC=0; wait "$PID" || RC=$?
        PID=""
}

on_bus() { # is the name owned?
        busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s \
                org.mthpd.mthpd1 2>/dev/null | grep -qx "b true"
}

call() { busctl call "${OBJ[@]}" "$@"; }                  # call METHOD [SIGNATURE ARGS...]
call_json() { busctl --json=short call "${OBJ[@]}" "$@"; }
prop() { busctl get-property "${OBJ[@]}" "$1" | cut -d' ' -f2- | tr -d '"'; }
as_nobody() { setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

# call_error [--nobody] METHOD ARGS...: call with dbus-send (ARGS like
# string:64K/anon uint64:0), as uid 65534 with --nobody, and print the error
# reply as "NAME: message"; fails if the call succeeded. Not busctl: it shows
# AccessDenied as "Access denied", whatever the message says.
call_error() {
        local as=() out
        if [ "$1" = --nobody ]; then
                as=(setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups)
                shift
        fi
        if out=$("${as[@]}" dbus-send --system --print-reply --dest=org.mthpd.mthpd1 /org/mthpd/mthpd1 \
                "org.mthpd.Manager1.$1" "${@:2}" 2>&1); then
                echo "unexpected success: $out"
                return 1
        fi
        sed '1s/^Error //' <<<"$out"
}
