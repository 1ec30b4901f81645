#!/bin/bash
# A kernel without per-size mTHP knobs (the fake 6.1 tree: Debian 12's stock
# kernel has no hugepages-<N>kB directories, only the global knobs): mthpd
# warns once, naming the kernel and the kernels that have the knobs, and
# exits 0 without a state directory, journal or write, in manage and in
# observe mode alike (a unit started at install is then neither failed nor
# restarted).
# Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"
fakehost_setup mthpd-no-mthp
"$FAKEHOST" create "$ROOT" --kernel 6.1
[ ! -e "$ROOT/sys/kernel/mm/transparent_hugepage/hugepages-2048kB" ] || fail "the 6.1 tree has per-size directories"
FAST=$T/fast.conf
fast_conf "$FAST" 100
before=$(cd "$ROOT/sys/kernel/mm/transparent_hugepage" && cat enabled defrag shmem_enabled khugepaged/max_ptes_none)
for mode in manage observe; do
        rc=0
        LD_PRELOAD="$FAKESYSFS" timeout 20 "$MTHPD" --root "$ROOT" --state-dir "$STATE" --no-bus --mode "$mode" \
                -c "$FAST" 2>"$LOG" || rc=$?
        [ "$rc" = 0 ] || fail "--mode $mode: exit status $rc, not 0"
        grep -q "warning: kernel 6.1.0-28-amd64 has no per-size mTHP knobs" "$LOG" ||
                fail "--mode $mode: no warning naming the kernel"
        grep -q "Linux 6.8 or later" "$LOG" || fail "--mode $mode: the warning does not name the kernel needed"
        grep -q "Debian 13 (6.12)" "$LOG" || fail "--mode $mode: the warning names no kernel that works"
        grep -q "managing mTHP knobs\|observing: deciding" "$LOG" && fail "--mode $mode: says it manages"
        [ ! -e "$STATE/restore.journal" ] || fail "--mode $mode: a journal"
        after=$(cd "$ROOT/sys/kernel/mm/transparent_hugepage" && cat enabled defrag shmem_enabled khugepaged/max_ptes_none)
        [ "$before" = "$after" ] || fail "--mode $mode: a global knob changed"
done
ok "a kernel without mTHP: one warning naming it and the kernels that work, exit 0, nothing written"
