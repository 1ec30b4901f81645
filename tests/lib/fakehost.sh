# shellcheck shell=bash
# Shared by the shell tests that run the real mthpd on a fake host tree
# (sourced): a temp dir removed on exit, fail/ok, polling, the fake host's
# knobs and counters, mthpd under the fakesysfs preload, a private dbus-daemon.
# Call fakehost_setup NAME first; define fakehost_cleanup_hook to stop more on exit.
# Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail

NOBODY=65534
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

fakehost_setup() { # fakehost_setup NAME: $T (/tmp/NAME.XXXXXX, removed on exit), $ROOT, $STATE, $LOG
        T=$(mktemp -d "/tmp/$1.XXXXXX")
        ROOT=$T/root STATE=$T/state LOG=$T/mthpd.log
        PID="" BUS_PID="" NOBODY_DIR=""
        trap fakehost_cleanup EXIT
}
fakehost_cleanup() {
        [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null || true
        if declare -F fakehost_cleanup_hook >/dev/null; then fakehost_cleanup_hook; fi
        [ -n "$BUS_PID" ] && kill "$BUS_PID" 2>/dev/null || true
        [ -z "$NOBODY_DIR" ] || rm -rf "$NOBODY_DIR"
        rm -rf "$T"
}

fail() { echo "FAIL: $*" >&2; [ -s "$LOG" ] && sed 's/^/  log: /' "$LOG" | tail -30 >&2; exit 1; }
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

as_nobody() { setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups "$@"; }
# nobody_copy VAR FILE: set VAR to the path of a copy of FILE that uid 65534
# can reach. The build tree may sit where it cannot (a clone under /root,
# mode 0700 on Debian): what it runs or preloads is copied to a 0755
# directory, removed on exit.
nobody_copy() {
        if [ -z "$NOBODY_DIR" ]; then
                NOBODY_DIR=$(mktemp -d /tmp/mthpd-nobody.XXXXXX)
                chmod 755 "$NOBODY_DIR"
        fi
        { cp "$2" "$NOBODY_DIR/" && chmod a+rx "$NOBODY_DIR/${2##*/}"; } || fail "cannot copy $2 for uid $NOBODY"
        printf -v "$1" '%s' "$NOBODY_DIR/${2##*/}"
}

fast_conf() { # fast_conf FILE LOWER_TICKS: ticks of 100ms, quick to raise and confirm
        # ShmemAlign=no: these tests count the writes of raises and errors;
        # the idle advise of the top shmem size is shmem-align's test
        cat > "$1" <<CONF
[Daemon]
Interval=100ms
[Engine]
RaiseFaultRate=1000
LowerFaultRate=10
LowerTicks=$2
ConfirmTicks=1
DwellTicks=0
ShmemAlign=no
CONF
}

bump_faults() { # bump_faults N: N ticks' worth of heavy faulting (both kinds), 50ms apart
        for _ in $(seq "$1"); do
                # the kernel would count mTHP allocations at the enabled sizes too:
                # without them mthpd's probe-then-verify takes each raise back
                "$FAKEHOST" bump "$ROOT" --pgfault 20000 \
                        --size 16 --stat anon_fault_alloc --add 50 --size 16 --stat shmem_alloc --add 50 \
                        --size 32 --stat anon_fault_alloc --add 50 --size 32 --stat shmem_alloc --add 50 \
                        --size 64 --stat anon_fault_alloc --add 50 --size 64 --stat shmem_alloc --add 50
                sleep 0.05
        done
}

start_mthpd() { # start_mthpd ARGS...: the real mthpd on the fake host, in the background
        : > "$LOG"
        LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$ROOT" --state-dir "$STATE" "$@" 2>"$LOG" &
        PID=$!
}
# shellcheck disable=SC2034 # RC is the caller's
stop_mthpd() { # stop_mthpd SIGNAL: signal mthpd and collect its exit code in RC
        kill -"$1" "$PID"
        RC=0; wait "$PID" || RC=$?
        PID=""
}

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

# start_open_bus: a private dbus-daemon that lets everyone own and call
# everything (skips the test, exit 77, without dbus-daemon): the access
# checks under test are mthpd's own (it checks the caller's UID), not the
# bus policy's.
start_open_bus() {
        command -v dbus-daemon >/dev/null || { echo "SKIP: dbus-daemon is not installed"; exit 77; }
        start_bus '<policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_type="method_call"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>' 2>/dev/null || fail "dbus-daemon: $(cat "$T/bus.err")"
}
