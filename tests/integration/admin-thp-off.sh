#!/bin/bash
# The administrator's THP off on a fake host: transparent_hugepage=never on
# the kernel command line (or global enabled never at mthpd's start) holds
# anon at 4K however hard the host faults: no size knob is written, and
# mthpd's log, mthpctl status and explain name the reason (rule hold-admin).
# [Daemon] OverrideThpOff=yes lets mthpd raise sizes all the same.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"
fakehost_setup mthpd-thp-off
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"   # status and explain read the status file
"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 100
ctl() { "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 "$@"; }
no_size_raised() {
        for s in 16 32 64; do
                [ "$(knob hugepages-${s}kB/enabled)" = never ] || fail "$1: ${s}K anon raised to $(knob hugepages-${s}kB/enabled)"
        done
}

# 1. transparent_hugepage=never: a dense-faulting host, no size knob written
printf 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro transparent_hugepage=never quiet\n' > "$ROOT/proc/cmdline"
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/enabled never
LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$ROOT" --state-dir "$STATE" --once -c "$FAST" 2>"$LOG" || fail "--once exited $?"
no_size_raised "--once"
start_mthpd -c "$FAST"
bump_faults 30
no_size_raised "managing"
grep -q "THP off by the administrator (the kernel command line: transparent_hugepage=never): mthpd holds anon at 4K" \
        "$LOG" || fail "the start does not say it respects the command line"
grep -q "set 16K/anon" "$LOG" && fail "mthpd set a size"
ctl status > "$T/st" || fail "status"
grep -q "THP off by the administrator (the kernel command line: transparent_hugepage=never)" "$T/st" ||
        { cat "$T/st"; fail "status does not say why anon is held"; }
ctl --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)["thp_off"]
assert d == {"anon": "the kernel command line: transparent_hugepage=never", "shmem": None}, d
' || fail "status --json: thp_off"
ctl explain 64K > "$T/ex" || fail "explain"
grep -q "THP off by the administrator (the kernel command line: transparent_hugepage=never): holding anon at 4K" "$T/ex" ||
        { cat "$T/ex"; fail "explain does not name the command line"; }
stop_mthpd TERM
[ "$RC" = 0 ] || fail "SIGTERM exit code $RC"
ok "transparent_hugepage=never: a faulting host gets no size raised; the log, status and explain say why"

# 2. no parameter, but global enabled never at the start: the same
printf 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet\n' > "$ROOT/proc/cmdline"
start_mthpd -c "$FAST"
bump_faults 30
no_size_raised "global never"
grep -q "THP off by the administrator (global/enabled was never when mthpd started)" "$LOG" ||
        fail "the start does not name the global never"
stop_mthpd TERM
ok "global enabled never at the start holds anon at 4K"

# 3. OverrideThpOff=yes: the configuration says raise anyway
printf 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro transparent_hugepage=never quiet\n' > "$ROOT/proc/cmdline"
cp "$FAST" "$T/override.conf"
sed -i 's/^\[Daemon\]$/[Daemon]\nOverrideThpOff=yes/' "$T/override.conf"
grep -q "^OverrideThpOff=yes" "$T/override.conf" || printf '[Daemon]\nOverrideThpOff=yes\n' >> "$T/override.conf"
start_mthpd -c "$T/override.conf"
bump_faults 30 &
BUMP=$!
wait_for 5 knob_is hugepages-64kB/enabled always || fail "OverrideThpOff=yes: 64K anon never raised"
wait "$BUMP"
grep -q "but OverrideThpOff=yes" "$LOG" || fail "the start does not say it overrides"
stop_mthpd TERM
no_size_raised "restored after the override"
ok "OverrideThpOff=yes raises sizes over the command line's never"
echo "all THP-off checks passed"
