#!/bin/bash
# SPDX-License-Identifier: MIT
# shmem-align (issue 12, ShmemAlign=): shared anonymous memory mapped while
# mthpd is idle must be aligned for a later raise. PostgreSQL maps its
# shared buffers at start, before any demand; the kernel aligns a
# MAP_SHARED|MAP_ANONYMOUS mapping only for the largest shmem size enabled
# when it is mapped (measured on 6.18: 4K-8K-aligned under the boot state,
# 2M-aligned under 2M/shmem advise), and a raise after that reaches only
# folios up to the address's alignment. mthpd sets the top shmem size to
# advise while idle (only memory a program madvises gets 2M from it).
#
# Three 64 MiB segments are mapped (not touched) while mthpd is idle: each
# must be 2M-aligned. Then a shmem workload makes mthpd raise every shmem
# size; the first segment, touched only now, must be PMD-mapped
# (ShmemPmdMapped) with its pages in large folios. mthpctl explain 2M must
# say why the size is at advise, and every knob must be back at the end.
#
# Usage: shmem-align.sh MTHPD MTHPCTL WORKLOAD SHM_FOLIOS
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3 SHM_FOLIOS=$4
. "$(dirname "$0")/lib.sh"
rk_init shmem-align
[[ -x $SHM_FOLIOS ]] || rk_die "SHM_FOLIOS is not an executable: '$SHM_FOLIOS'"
[[ $(rk_pmd_kb) == 2048 ]] || rk_skip "PMD size is not 2M"
K2M=$THP/hugepages-2048kB/shmem_enabled
[[ -e $K2M ]] || rk_skip "no per-size shmem knob for 2M on this kernel"
grep -qw advise "$K2M" || rk_skip "$K2M does not accept advise"

# the boot state for shmem: every size off, 2M inherit of a global never
while read -r f; do
        case $f in
        */hugepages-2048kB/shmem_enabled) rk_set "$f" inherit || rk_die "writing inherit to $f: $RK_SET_ERR" ;;
        */hugepages-*kB/shmem_enabled) rk_set "$f" never || rk_die "writing never to $f: $RK_SET_ERR" ;;
        esac
done < <(rk_knob_files)
rk_set "$THP/shmem_enabled" never || rk_die "writing never to $THP/shmem_enabled: $RK_SET_ERR"

# idle first: a raise out of reach (this host's background shmem faults
# would otherwise raise 2M to always, which aligns too); then, reloaded
# (SIGHUP), a blind climb (no density) to 2M on any demand. ShmemAlign= at
# its default in both. RaiseFaultTime=0: otherwise a raise is in reach at
# this host's fault cost (about 2,200 pages/s).
CONF=$RK_TMP/mthpd.conf
rk_config "$CONF" RaiseFaultRate=1000000000000 RaiseFaultTime=0
grep -q ShmemAlign "$CONF" && rk_die "the test's config sets ShmemAlign=: the default is under test"
LOG=$RK_TMP/mthpd.log
STATE=$(rk_state_dir)
"$MTHPD" -v -c "$CONF" --state-dir "$STATE" --no-bus 2>"$LOG" 9>&- &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
rk_wait_for "$LOG" '2M/shmem: [a-z_]+ -> advise' 5 $MPID ||
        rk_fail "mthpd did not set 2M/shmem to advise while idle"$'\n'"$(grep -E '2M/shmem' "$LOG" | tail -3)"
grep -m1 -E '2M/shmem: [a-z_]+ -> advise' "$LOG" | cut -c1-400 | sed 's/^/  /'
"$MTHPCTL" --state-dir "$STATE" explain 2M >"$RK_TMP/explain.txt" 2>&1
grep -q "2M-aligned, so a raise reaches it" "$RK_TMP/explain.txt" ||
        rk_fail "mthpctl explain 2M does not say why 2M/shmem is at advise"$'\n'"$(head -5 "$RK_TMP/explain.txt")"

[[ $(rk_get "$K2M") == advise ]] || rk_fail "2M/shmem is '$(rk_get "$K2M")' while idle, not advise"
# three segments mapped now, each waiting (late) for a line before touching
declare -a FD SP
for i in 0 1 2; do
        mkfifo "$RK_TMP/go.$i"
        "$SHM_FOLIOS" anon 64 late <"$RK_TMP/go.$i" >"$RK_TMP/seg$i.out" 2>"$RK_TMP/seg$i.err" 9>&- &
        SP[i]=$!
        rk_track ${SP[i]}
        exec {fd}>"$RK_TMP/go.$i"
        FD[i]=$fd
done
for i in 0 1 2; do
        rk_wait_for "$RK_TMP/seg$i.err" 'mapped at 0x[0-9a-f]+; waiting' 10 ${SP[i]} ||
                rk_die "segment $i: shm-folios did not map: $(cat "$RK_TMP/seg$i.err")"
        addr=$(sed -n 's/.*mapped at \(0x[0-9a-f]*\);.*/\1/p' "$RK_TMP/seg$i.err")
        if (((addr % (2048 * 1024)) == 0)); then
                rk_log "segment $i mapped while idle at $addr: 2M-aligned"
        else
                al=4096
                while (((addr % (al * 2)) == 0)); do al=$((al * 2)); done
                rk_fail "segment $i mapped while idle at $addr: only $((al / 1024))K-aligned"
        fi
done

[[ $(rk_get "$K2M") == advise ]] || rk_fail "2M/shmem is '$(rk_get "$K2M")' after the mappings, not advise"

# demand: mthpd raises every shmem size (one a tick, up to 2M)
rk_config "$CONF"
kill -HUP $MPID
rk_wait_for "$LOG" 'reloaded .*mthpd.conf' 5 $MPID || rk_die "mthpd did not reload its configuration"
"$WORKLOAD" --kind shmem --pattern dense --size 64M --seconds 30 -q >/dev/null 2>&1 9>&- &
WPID=$!
rk_track $WPID
rk_wait_for "$LOG" '2M/shmem: advise -> always' 20 $MPID ||
        rk_die "mthpd did not raise 2M/shmem within 20 s"$'\n'"$(grep -E 'shmem' "$LOG" | grep -v debug | tail -5)"
rk_stop $WPID TERM 5
# the first segment is touched only now
echo go >&"${FD[0]}"
for ((t = 0; t < 100; t++)); do rk_alive ${SP[0]} || break; sleep 0.05; done
out=$(cat "$RK_TMP/seg0.out")
rk_log "segment 0 touched after the raise: $out"
pmd=$(sed -n 's/.* ShmemPmdMapped=\([0-9]*\)K.*/\1/p' <<<"$out")
inl=$(sed -n 's/.* in_large=\([0-9]*\).*/\1/p' <<<"$out")
[[ -n $pmd && -n $inl ]] || rk_die "no report from shm-folios: $out $(cat "$RK_TMP/seg0.err")"
((pmd > 0)) || rk_fail "segment 0 is not PMD-mapped after the 2M raise (ShmemPmdMapped=${pmd}K)"
((inl > 0)) || rk_fail "none of segment 0's pages is in a large folio after the raise"
for i in 1 2; do
        exec {FD[i]}>&-
        rk_stop ${SP[i]} TERM 2
done
exec {FD[0]}>&-
rk_stop $MPID TERM 10
rk_check_all "after mthpd stopped"
exit 0
