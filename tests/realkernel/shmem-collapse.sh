#!/bin/bash
# SPDX-License-Identifier: MIT
# shmem-collapse: shmem held at 4K after mthpd's 2M raise is repaired with
# MADV_COLLAPSE. will-it-scale's page_fault3 shape (a tmpfs file in
# /dev/shm, unlinked, mapped at a 2M-aligned address, every page written,
# unmapped, in a loop) fills its page cache at 4K before mthpd starts; the
# faults that follow map those 4K folios whatever the knobs say
# (docs/shmem.md). mthpd raises 2M for shmem, its probe sees the mapping's
# pages in 4K folios, and it collapses the aligned blocks
# (process_madvise MADV_COLLAPSE, within CollapseBudget=): the workload's
# mapping must then show PMD-mapped shmem (smaps ShmemPmdMapped) within a
# few seconds, the log must name the collapse, and the tick's explanation
# must say "repaired by MADV_COLLAPSE: N MiB". Before mthpd the workload's
# mapping holds no PMD (checked: otherwise nothing is judged). Skipped, with
# the reason, when the host holds every raise back or mthpd's density
# sampler does not reach the workload.
#
# With "unit" (the shmem-collapse-unit test): mthpd holds only the
# capabilities the systemd unit leaves it (its CapabilityBoundingSet=,
# through setpriv, as users run it). Without CAP_SYS_ADMIN pagemap shows no
# PFNs, so kpageflags cannot tell mthpd the workload's folio sizes; the
# repair must still start (its probe asks PAGEMAP_SCAN which pages are
# PMD-mapped), and explain must say "was not mapped by 2M folios", never
# "4K folios". Before the PMD probe the repair never started under these
# capabilities (5 of 5 pgbench runs with mthp-bench --mthpd-caps unit; this
# test: no collapse in 30 s). Skipped, saying why, without setpriv.
#
# With "512k" (the shmem-collapse-512k test): the workload is
# MAP_SHARED|MAP_ANONYMOUS memory (wis-file-fault --anon: every page
# written, then MADV_DONTNEED, in a loop) whose memory was filled while
# 512K shmem was on, as PostgreSQL's buffer pool is when mthpd's first
# raise is the 512K probe: 512K folios, none mapped by a PMD. mthpd runs
# as root, with PFNs. Its probe must still see the mapping as not mapped by
# 2M folios and repair it. Before the probe asked PAGEMAP_SCAN wherever the
# mapping is PMD-aligned, kpageflags counted a 512K folio as large, the
# repair never started, and a root mthpd left 19% of pgbench -S's buffer
# pool below 2M for the whole run (0.72x the every-size-always tps).
#
# Usage: shmem-collapse.sh MTHPD MTHPCTL WORKLOAD WIS_FILE_FAULT [unit|512k]
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3 WIS=$4 MODE=${5:-root}
. "$(dirname "$0")/lib.sh"
case $MODE in
unit) rk_init shmem-collapse-unit ;;
root) rk_init shmem-collapse ;;
512k) rk_init shmem-collapse-512k ;;
*) echo "shmem-collapse.sh: the fifth argument is 'unit', '512k' or none, not '$MODE'" >&2; exit 2 ;;
esac
[[ $(rk_pmd_kb) == 2048 ]] || rk_skip "PMD size is not 2M"
rk_need_pagemap_scan
# what explain says the repaired segment was: the probe of a 2M-aligned
# mapping asks which pages are PMD-mapped, PFNs or not
was="was not mapped by 2M folios"
[[ -x $WIS ]] || rk_die "wis-file-fault is not an executable: '$WIS'"
[[ -d /dev/shm && -w /dev/shm ]] || rk_skip "no writable /dev/shm"
if [[ $MODE == unit ]]; then
        command -v setpriv >/dev/null || rk_skip "setpriv (util-linux) not installed: cannot drop mthpd to the unit's capabilities"
        unit=$(dirname "$0")/../../systemd/mthpd.service.in
        # exactly one line (later CapabilityBoundingSet= lines would add to it)
        (($(grep -c '^CapabilityBoundingSet=' "$unit") == 1)) || rk_die "$unit: not exactly one CapabilityBoundingSet= line"
        caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr '[:upper:]' '[:lower:]' | sed 's/cap_//g; s/^ *//; s/ *$//; s/ \+/,+/g')
        [[ -n $caps ]] || rk_die "$unit: no CapabilityBoundingSet= line"
        [[ $caps != *sys_admin* ]] || rk_skip "the unit grants CAP_SYS_ADMIN: pagemap shows PFNs, nothing here to judge"
        run=(setpriv --bounding-set "-all,+$caps" --inh-caps -all --)
else
        [[ -r /proc/kpageflags ]] || rk_skip "/proc/kpageflags is not readable: mthpd would run without PFNs here, and root with them is the case judged"
        run=()
fi
# every size starts off: the workload's page cache is filled at 4K (512k:
# at 512K, that knob alone on while it fills)
rk_sizes_never
k512=$THP/hugepages-512kB
if [[ $MODE == 512k ]]; then
        [[ -w $k512/shmem_enabled && -r $k512/stats/shmem_alloc ]] || rk_skip "no 512K shmem knob or its shmem_alloc counter here"
        rk_set "$k512/shmem_enabled" always || rk_die "writing always to $k512/shmem_enabled: $RK_SET_ERR"
        alloc0=$(cat "$k512/stats/shmem_alloc")
        wl_args=(--anon)
else
        wl_args=()
fi

# ShmemSizes=2M: the repair is for the PMD size; AnonSizes=16K: anon's climb
# is not judged here; density on; VerifyTicks=50 (5 s of 100 ms ticks):
# after the repair the workload's faults map folios the collapse made, not
# new shmem allocations, and the raise must stand while it runs
rk_config "$RK_TMP/mthpd.conf" AnonSizes=16K ShmemSizes=2M VerifyTicks=3 MinProcessFaultRate=100

# the most of N samples 100 ms apart (rk_shm_pmd_kb)
pmd_max() {
        local i v m=0
        for ((i = 0; i < $2; i++)); do
                v=$(rk_shm_pmd_kb "$1")
                ((v > m)) && m=$v
                sleep 0.1
        done
        echo "$m"
}

log=$RK_TMP/mthpd.log
# 9>&-: the workload must not hold the real-kernel lock
"$WIS" --shape 3 "${wl_args[@]}" --tasks 1 --size 64 --seconds 60 --align 2M >"$RK_TMP/wis.out" 2>"$RK_TMP/wis.err" 9>&- &
wl=$!
rk_track $wl
sleep 1 # the page cache fills in its first ~0.1 s
kid=$(pgrep -P $wl | head -1)
[[ -n $kid ]] || rk_die "wis-file-fault started no task"$'\n'"$(cat "$RK_TMP/wis.err")"
rk_track "$kid"
if [[ $MODE == 512k ]]; then
        # its memory is in 512K folios now; mthpd starts from every size off
        made=$(($(cat "$k512/stats/shmem_alloc") - alloc0))
        rk_set "$k512/shmem_enabled" never || rk_die "writing never to $k512/shmem_enabled: $RK_SET_ERR"
        ((made >= 100)) || rk_skip "the host made $made 512K shmem folios while the workload filled its 64 MiB, not the 128 this test needs (at least 100)"
        rk_log "the host made $made 512K shmem folios while the workload filled its 64 MiB"
fi
before=$(pmd_max "$kid" 10)
[[ $before == 0 ]] || rk_skip "the workload's mapping is PMD-mapped before mthpd runs (ShmemPmdMapped $before kB): the small folios this test needs were not made"
rk_log "before mthpd: ShmemPmdMapped 0 kB in 10 samples; $(tail -1 "$RK_TMP/wis.err")"

# -v: every tick's reason, with the status of each size
"${run[@]}" "$MTHPD" -v -c "$RK_TMP/mthpd.conf" --state-dir "$(rk_state_dir)" --no-bus 2>"$log" 9>&- &
mpid=$!
rk_track $mpid
rk_wait_for "$log" 'managing mTHP knobs every' 10 $mpid || rk_die "mthpd did not start"$'\n'"$(cat "$log")"
if [[ $MODE == unit ]]; then
        # the capabilities it runs with: the unit's, CAP_SYS_ADMIN (21) not among them
        capeff=$(awk '/^CapEff:/ { print $2 }' "/proc/$mpid/status" 2>/dev/null)
        [[ $capeff =~ ^[0-9a-f]+$ ]] || rk_die "cannot read mthpd's CapEff (pid $mpid gone?)"$'\n'"$(cat "$log")"
        (((0x$capeff >> 21) & 1)) && rk_die "mthpd runs with CAP_SYS_ADMIN (CapEff $capeff): setpriv did not drop it"
        rk_log "mthpd (pid $mpid) runs with CapEff $capeff (bounding set +$caps)"
fi
t0=$(rk_now_ms)
rk_wait_shm_collapse "$log" $mpid "$kid" wis-file-fault 64 30
t1=$(rk_now_ms)
grep -E "collapsed [0-9]+ region\\(s\\).*shmem" "$log" | head -3 | cut -c1-400 | sed 's/^/    /'
# the repaired page cache is mapped by PMD on the loop's next faults
after=0
for ((i = 0; i < 50 && after < 32768; i++)); do
        v=$(pmd_max "$kid" 2)
        ((v > after)) && after=$v
done
t2=$(rk_now_ms)
rk_log "after mthpd: ShmemPmdMapped up to $after kB; the first collapse $((t1 - t0)) ms after mthpd started; $(tail -1 "$RK_TMP/wis.err")"
((after >= 32768)) || rk_fail "the workload's 64 MiB mapping is not PMD-mapped after the collapse (ShmemPmdMapped at most $after kB, want >= 32768)"
# explain: the repaired mapping is said, not "can repair", by the probe
# mthpd has
rk_wait_for "$log" "2M/shmem: .*in use; pid $kid \\(wis-file-fault\\)'s 64 MiB segment at 0x[0-9a-f]+ $was .*repaired by MADV_COLLAPSE: [0-9]+ MiB" 10 $mpid ||
        rk_fail "no tick said '2M shmem in use; ... $was ... repaired by MADV_COLLAPSE: N MiB'"
# without PFNs mthpd cannot see folio sizes, nor can the PMD probe: never
# "4K folios" (512k: they are not)
if [[ $was == "was not mapped by 2M folios" ]] && grep -qE "pid $kid \\(wis-file-fault\\)'s 64 MiB segment at 0x[0-9a-f]+ (holds|was held at) 4K folios" "$log"; then
        rk_fail "explain claims 4K folios though mthpd's probe cannot see folio sizes below 2M:"
        grep -m1 -oE "pid $kid \\(wis-file-fault\\)'s 64 MiB segment [^;]*4K folios[^;]*" "$log" | sed 's/^/    /'
fi
said=$(grep -m1 -oE "2M in use; pid $kid .*repaired by MADV_COLLAPSE: [0-9]+ MiB \\([^)]*\\)" "$log")
rk_log "explained: ${said:-(not found in that form)}" | cut -c1-600
t3=$(rk_now_ms)
rk_log "collapsed by then: $(grep -cE 'collapsed [0-9]+ region.*shmem' "$log") passes, $(grep -oE 'region\(s\), [0-9]+ MiB, of pid [0-9]+ \(wis-file-fault\)' "$log" | awk '{ s += $2 } END { print s + 0 }') MiB; ShmemPmdMapped reached $after kB $((t2 - t0)) ms after mthpd started, explained after $((t3 - t0)) ms"
rk_log "workload iterations/s by second: $(grep -oE 'iterations/s=[0-9]+' "$RK_TMP/wis.err" | cut -d= -f2 | tr '\n' ' ')"
rk_stop $mpid TERM 10
rk_stop $wl TERM 5 # its task dies with it (PR_SET_PDEATHSIG)
rk_stop "$kid" KILL 2
exit 0
