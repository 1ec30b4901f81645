# Shared by the D-Bus tests (sourced): a private system-like bus started by
# the test, and the real mthpd on a fake host tree (LD_PRELOAD fakesysfs).
# Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/fakehost.sh"

for tool in dbus-daemon dbus-send busctl setpriv python3; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
# writes are for root only, and the non-root checks switch to uid 65534
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the daemon lets only uid 0 write)"; exit 77; }

fakehost_setup mthpd-dbus
chmod 755 "$T" # uid 65534 must reach the bus socket
MONITOR_PID=""
OBJ=(org.mthpd.mthpd1 /org/mthpd/mthpd1 org.mthpd.Manager1)

fakehost_cleanup_hook() { [ -n "$MONITOR_PID" ] && kill "$MONITOR_PID" 2>/dev/null || true; }

on_bus() { # is the name owned?
        busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s \
                org.mthpd.mthpd1 2>/dev/null | grep -qx "b true"
}

call() { busctl call "${OBJ[@]}" "$@"; }                  # call METHOD [SIGNATURE ARGS...]
call_json() { busctl --json=short call "${OBJ[@]}" "$@"; }
prop() { busctl get-property "${OBJ[@]}" "$1" | cut -d' ' -f2- | tr -d '"'; }

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
