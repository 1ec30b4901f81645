#!/bin/bash
# SPDX-License-Identifier: MIT
# realkernel-faults: fault injection on the real THP sysfs (suite realkernel).
# What the other real-kernel tests do not cover:
#  1. a real journal, written by mthpd on this host and left by kill -9, cut
#     at every line boundary and inside every line: 'mthpctl restore' never
#     writes a value the whole journal does not hold for that knob, refuses
#     any cut inside a line naming file and line, and the whole journal puts
#     every knob back;
#  2. a journal original the kernel does not offer: refused, nothing written;
#  3. a restore the kernel refuses with EINVAL (per-size shmem 'inherit'
#     while the global shmem_enabled is 'force'): reported, journal kept,
#     done once the conflict is gone;
#  4. a running mthpd whose writes the kernel refuses by that same rule
#     (EINVAL mid-run): it keeps running, logs each knob once, and its
#     SIGTERM restores everything.
# Exit 77 without root or writable THP sysfs. Holds /tmp/mthpd-realkernel.lock.
#
# Usage: realkernel-faults.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
# shellcheck disable=SC2034 # WORKLOAD is lib.sh's (rk_workloads)
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
# shellcheck source-path=SCRIPTDIR source=../realkernel/lib.sh
. "$(dirname "$0")/../realkernel/lib.sh"
rk_init realkernel-faults

FAST=$RK_TMP/fast.conf
rk_config "$FAST" AnonSizes=16K-64K ShmemSizes=16K-64K
STATE=$(rk_state_dir)
J=$STATE/restore.journal

# --- 1. a real journal, cut -----------------------------------------------
LOG=$RK_TMP/raise.log
rk_workloads 10
"$MTHPD" -c "$FAST" --state-dir "$STATE" --no-bus 2>"$LOG" &
pid=$!
rk_track "$pid"
rk_wait_for "$LOG" '^mthpd: set .*64K/shmem' 10 "$pid" || rk_fail "mthpd did not raise 64K/shmem in 10s"
sleep 0.3
rk_stop "$pid" KILL
rk_workloads_stop
[[ -s $J ]] || rk_die "no journal after kill -9; log: $(cat "$LOG")"
cp "$J" "$RK_TMP/real.journal"
rk_snapshot >"$RK_TMP/written"
n_knobs=$(grep -c '^\[knob ' "$J")
rk_log "real journal: $(wc -c <"$J") bytes, $n_knobs knobs"

# originals by path, from the whole journal
declare -A ORIG=()
while IFS='=' read -r k v; do
        case $k in path) p=$v ;; original) ORIG[$p]=$v ;; esac
done <"$RK_TMP/real.journal"

size=$(wc -c <"$RK_TMP/real.journal")
offsets=$(awk '{ n += length($0) + 1; print n; print n - 3 }' "$RK_TMP/real.journal" | awk '$1 > 0' | sort -n -u)
n_cut=0 n_ok=0 n_refused=0
for off in 0 $offsets; do
        ((off <= size)) || continue
        rk_restore_to "$RK_TMP/written" || rk_die "cannot put the written values back"
        head -c "$off" "$RK_TMP/real.journal" >"$J"
        out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1)
        rc=$?
        n_cut=$((n_cut + 1))
        ((rc < 128)) || rk_fail "cut at $off: mthpctl crashed ($rc)"
        # every knob: as written, or at its journaled original
        while read -r f v; do
                cur=$(rk_get "$f")
                [[ $cur == "$v" ]] && continue
                [[ -n ${ORIG[$f]:-} && $cur == "${ORIG[$f]}" ]] ||
                        rk_fail "cut at $off: $(rk_id "$f") is '$cur': neither mthpd's '$v' nor a journaled original"
        done <"$RK_TMP/written"
        # $(...) drops a trailing newline: empty iff the cut ends a line
        if ((off == 0)) || [[ -n $(tail -c 1 "$J") ]]; then
                [[ $rc != 0 ]] || rk_fail "cut at $off (inside a line): mthpctl restore succeeded: $out"
                grep -Eq "$J(:[0-9]+)?: " <<<"$out" || rk_fail "cut at $off: refusal does not name file and line: $out"
                rk_diff "$RK_TMP/written" >/dev/null || rk_fail "cut at $off (inside a line): a knob was written"
        fi
        ((rc == 0)) && n_ok=$((n_ok + 1)) || n_refused=$((n_refused + 1))
        rm -f "$J"
done
rk_log "ok: $n_cut cuts of a $size-byte journal: $n_ok restored what was intact, $n_refused refused"
rk_restore_to "$RK_TMP/written" || rk_die "cannot put the written values back"
cp "$RK_TMP/real.journal" "$J"
"$MTHPCTL" --state-dir "$STATE" restore >/dev/null 2>&1 || rk_fail "the whole journal: mthpctl restore failed"
rk_check_all "the whole real journal after all the cuts"

# --- 2. an original the kernel does not offer -------------------------------
K64=$THP/hugepages-64kB/shmem_enabled
[[ -e $K64 ]] || rk_skip "no 64K shmem knob"
was=$(rk_get "$K64")
other=never; [[ $was == never ]] && other=advise
rk_set "$K64" "$other" || rk_die "cannot set $K64 to $other: $RK_SET_ERR"
printf '[journal]\nroot=/\n\n[knob 64K/shmem]\npath=%s\noriginal=sometimes\nwritten=%s\nprevious=%s\nstate=managed\n' \
        "$K64" "$other" "$other" >"$J"
out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1)
rc=$?
[[ $rc != 0 ]] || rk_fail "bad original: mthpctl restore succeeded: $out"
grep -q "original 'sometimes'.*not offer" <<<"$out" || rk_fail "bad original: no clear message: $out"
[[ $(rk_get "$K64") == "$other" ]] || rk_fail "bad original: $K64 changed to $(rk_get "$K64")"
[[ -e $J ]] || rk_fail "bad original: the journal is gone"
rk_log "ok: an original the kernel does not offer is refused: $(grep sometimes <<<"$out" | head -1)"
rm -f "$J"
rk_restore_to "$RK_SAVED" || rk_fail "restore to saved"

# --- 3 and 4 need global shmem 'force' (no non-PMD size may inherit) --------
G=$THP/shmem_enabled
if ! rk_values "$G" | grep -qx force; then
        # checks 1 and 2 ran; without 3 and 4 the test did not do its job
        rk_skip "no 'force' in $G: the EINVAL checks (3, 4) cannot run on this kernel"
fi
force_global() { # every non-PMD shmem knob off inherit, then global force
        local f
        for f in "$THP"/hugepages-*kB/shmem_enabled; do
                [[ $f == */hugepages-$(rk_pmd_kb)kB/* ]] && continue
                [[ $(rk_get "$f") == inherit ]] && { rk_set "$f" never || return 1; }
        done
        rk_set "$G" force
}
rk_set "$K64" never || rk_die "$K64 never: $RK_SET_ERR"
force_global || rk_die "cannot set global shmem force: $RK_SET_ERR"
# 3. restore 'inherit' while global is force: the kernel says EINVAL
printf '[journal]\nroot=/\n\n[knob 64K/shmem]\npath=%s\noriginal=inherit\nwritten=never\nprevious=never\nstate=managed\n' \
        "$K64" >"$J"
out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1)
rc=$?
[[ $rc != 0 ]] || rk_fail "EINVAL restore: mthpctl restore succeeded: $out"
grep -q "EINVAL\|rejected" <<<"$out" || rk_fail "EINVAL restore: the error is not named: $out"
[[ $(rk_get "$K64") == never ]] || rk_fail "EINVAL restore: $K64 is $(rk_get "$K64")"
grep -q "original=inherit" "$J" 2>/dev/null || rk_fail "EINVAL restore: the journal lost the original"
rk_log "ok: a restore the kernel refuses keeps the journal: $(grep -i 'einval\|rejected' <<<"$out" | head -1)"
rk_set "$G" never || rk_die "global shmem never: $RK_SET_ERR"
out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1) || rk_fail "after the conflict: mthpctl restore failed: $out"
[[ $(rk_get "$K64") == inherit ]] || rk_fail "after the conflict: $K64 is $(rk_get "$K64"), not inherit"
rk_log "ok: once the conflict is gone the kept journal restores 'inherit'"

# 4. mthpd raises 64K/shmem from 'inherit'; then another writer sets global
# shmem 'force', so the kernel refuses the restore at SIGTERM with EINVAL:
# mthpd must say so, exit 1 and keep the original in the journal.
rk_restore_to "$RK_SAVED" || rk_fail "restore to saved"
rk_set "$K64" inherit || rk_die "$K64 inherit: $RK_SET_ERR"
LOG=$RK_TMP/einval.log
rk_workloads 10
"$MTHPD" -c "$FAST" --state-dir "$STATE" --no-bus 2>"$LOG" &
pid=$!
rk_track "$pid"
rk_wait_for "$LOG" '^mthpd: set 64K/shmem: inherit -> ' 10 "$pid" || rk_fail "mthpd did not raise 64K/shmem"
force_global || rk_fail "cannot set global shmem force under mthpd: $RK_SET_ERR"
sleep 1
rk_alive "$pid" || rk_fail "mthpd died with global shmem force"
rk_stop "$pid" TERM 10
rc=$RK_STOP_RC
rk_workloads_stop
rk_log "mthpd's SIGTERM with global force: exit $rc; $(grep -c 'restore 64K/shmem' "$LOG") restore error line(s)"
[[ $rc == 1 ]] || rk_fail "SIGTERM with an unrestorable knob: exit $rc, expected 1"
grep -q "original=inherit" "$J" 2>/dev/null || rk_fail "unrestorable at SIGTERM: the journal lost 64K/shmem's original"
rk_set "$G" never || rk_die "global shmem never: $RK_SET_ERR"
"$MTHPCTL" --state-dir "$STATE" restore >/dev/null 2>&1 || rk_fail "mthpctl restore after the conflict"
[[ $(rk_get "$K64") == inherit ]] || rk_fail "64K/shmem is $(rk_get "$K64") after the restore, not inherit"
rk_log "ok: a knob the kernel will not restore at SIGTERM stays journaled; mthpctl restore finishes once it can"
rk_restore_to "$RK_SAVED" || rk_fail "restore to saved"
rk_check_all "end"
