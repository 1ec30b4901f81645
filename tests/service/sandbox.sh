#!/bin/bash
# mthpd under the sandbox of mthpd.service, without systemd (PID 1 here is
# not systemd): the unit's CapabilityBoundingSet= and NoNewPrivileges= applied
# with setpriv, everything it does traced with strace, and the trace checked
# by trace-check.py against the unit's SystemCallFilter= and ReadWritePaths=
# and for EPERM. The mount sandbox (ProtectSystem=strict, ...) is not
# reproduced; the trace shows mthpd writes only where the unit lets it.
#   sandbox.sh fake  the fake host, managing: raises a knob, reloads, stops
#                    and restores (suite service)
#   sandbox.sh real  the real host, --dry-run (writes no knob), with a
#                    workload of another user to sample (suite realkernel)
# Root only (setpriv needs CAP_SETPCAP), else skipped.
# Env: MTHPD, FAKEHOST, FAKESYSFS, WORKLOAD, UNIT (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"
MODE=$1
CHECK=$(dirname "$0")/trace-check.py

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for setpriv --bounding-set"; exit 77; }
for t in strace setpriv systemd-analyze python3; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
# the trace is of the production binary: a sanitizer runtime makes calls of
# its own (LeakSanitizer ptraces its threads, which strace already does)
case "$(ldd "$MTHPD")" in *libasan* | *libtsan*) echo "SKIP: $MTHPD is built with a sanitizer"; exit 77 ;; esac
THP=/sys/kernel/mm/transparent_hugepage
if [ "$MODE" = real ] && [ ! -r "$THP/enabled" ]; then echo "SKIP: no $THP"; exit 77; fi

# CapabilityBoundingSet=CAP_A CAP_B -> -all,+a,+b
CAPS=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_/+/p' | paste -sd, -)
[ -n "$CAPS" ] || { echo "FAIL: no CapabilityBoundingSet= in $UNIT" >&2; exit 1; }
grep -q '^NoNewPrivileges=yes' "$UNIT" || { echo "FAIL: $UNIT lacks NoNewPrivileges=yes" >&2; exit 1; }
echo "bounding set: $CAPS"

fakehost_setup "mthpd-sandbox-$MODE"
WPID=""
SPID=""
fakehost_cleanup_hook() {
        [ -n "$WPID" ] && kill "$WPID" 2>/dev/null
        [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
        true
}
mkdir "$STATE"

sandboxed() { # sandboxed ENV... -- ARGS: mthpd traced, as the unit would run it; $PID is mthpd
        local envs=()
        while [ "$1" != -- ]; do envs+=("$1"); shift; done
        shift
        : > "$LOG"
        strace -f -y -qq -o "$T/trace" setpriv --bounding-set "-all,$CAPS" --inh-caps -all --no-new-privs \
                env "${envs[@]}" "$MTHPD" "$@" 2>"$LOG" &
        STRACE=$!
        # mthpd is strace's child once setpriv and env have exec'd into it
        wait_for 5 mthpd_started || fail "mthpd did not start under strace"
}
mthpd_started() {
        PID=$(ps -o pid= --ppid "$STRACE" | tr -d ' ')
        [ -n "$PID" ] && [ "$(readlink "/proc/$PID/exe")" = "$(readlink -f "$MTHPD")" ]
}
stop_sandboxed() { # stop_sandboxed SIGNAL: RC is mthpd's exit code (strace passes it on)
        kill -"$1" "$PID"
        RC=0; wait "$STRACE" || RC=$?
        PID=""
}

if [ "$MODE" = fake ]; then
        "$FAKEHOST" create "$ROOT"
        fast_conf "$T/fast.conf" 100
        sandboxed "LD_PRELOAD=$FAKESYSFS" -- --root "$ROOT" --state-dir "$STATE" --no-bus -c "$T/fast.conf"
        bump_faults 30 &
        BUMP=$!
        wait_for 10 knob_is hugepages-16kB/enabled always || fail "16K anon never raised under the sandbox"
        wait "$BUMP"
        ok "raises a knob with the unit's capabilities"
        kill -HUP "$PID"
        wait_for 5 grep -q "reloaded" "$LOG" || fail "SIGHUP did not reload"
        stop_sandboxed TERM
        [ "$RC" = 0 ] || fail "exit code $RC after SIGTERM"
        knob_is hugepages-16kB/enabled never || fail "16K anon not restored"
        ok "reloads, stops and restores"
        python3 "$CHECK" "$T/trace" --exec "$MTHPD" --unit "$UNIT" \
                --write-under "$STATE" --write-under "$ROOT$THP" --write-under "$ROOT/.mthp-fakehost.d$THP" || fail "the trace breaks the sandbox"
else
        # dense faulters of another user: density sampling reads their
        # pagemap and memory, taskstats asks for their delays; the shmem one
        # (MAP_SHARED|MAP_ANONYMOUS, a database's buffer pool) has its
        # segment's page cache read through map_files (fstat, cachestat,
        # mincore): a host without such a process never checked those calls
        setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups "$WORKLOAD" --kind anon --pattern dense --size 64M --seconds 10 >/dev/null &
        WPID=$!
        setpriv --reuid="$NOBODY" --regid="$NOBODY" --clear-groups "$WORKLOAD" --kind shmem --pattern dense --size 64M --seconds 10 >/dev/null &
        SPID=$!
        printf '[Daemon]\nInterval=200ms\n' > "$T/conf"
        BEFORE=$(grep -r . "$THP" 2>/dev/null | grep -v /stats/ || true)
        sandboxed -- --dry-run --no-bus --state-dir "$STATE" -c "$T/conf" -v
        sleep 4
        stop_sandboxed TERM
        [ "$RC" = 0 ] || fail "exit code $RC after SIGTERM"
        grep -q "observing: deciding and explaining without writing" "$LOG" || fail "mthpd did not start its loop"
        [ "$BEFORE" = "$(grep -r . "$THP" 2>/dev/null | grep -v /stats/ || true)" ] ||
                echo "note: THP knobs changed during the run (another writer; --dry-run writes none)"
        ok "runs on the real host with the unit's capabilities"
        python3 "$CHECK" "$T/trace" --exec "$MTHPD" --unit "$UNIT" --write-under "$STATE" \
                --sampled-pid "$WPID" --sampled-pid "$SPID" --shmem-pid "$SPID" --refusable cachestat || fail "the trace breaks the sandbox"
fi
ok "the trace stays inside the sandbox of mthpd.service"
