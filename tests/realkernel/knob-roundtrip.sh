#!/bin/bash
# SPDX-License-Identifier: MIT
# knob-roundtrip: every THP selection knob of the running kernel, every value
# it offers, written and read back; the kernel's refusals are EINVAL and the
# ones DESIGN.md §2 names (shmem 'inherit' vs global 'force') are exact; then
# mthpd's own write path (--once) and 'mthpctl restore' for every size.
#
# Usage: knob-roundtrip.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init knob-roundtrip
command -v jq >/dev/null || rk_skip "jq is not installed (.ci/setup installs it)"

PMD_KB=$(rk_pmd_kb)
GSHMEM=$THP/shmem_enabled
declare -A SEEN_REFUSAL=()
N_WRITES=0 N_REFUSED=0

is_nonpmd_shmem() { [[ $1 == */hugepages-*kB/shmem_enabled && $1 != */hugepages-${PMD_KB}kB/* ]]; }
any_nonpmd_shmem_inherits() {
        local f
        for f in "$THP"/hugepages-*kB/shmem_enabled; do
                is_nonpmd_shmem "$f" && [[ $(rk_get "$f") == inherit ]] && return 0
        done
        return 1
}
# Would the kernel refuse VALUE for FILE in the current state?
# (mm/huge_memory.c, mm/shmem.c in 6.18)
expect_refusal() {
        local f=$1 v=$2
        if is_nonpmd_shmem "$f" && [[ $v == inherit && $(rk_get "$GSHMEM") == force ]]; then
                echo "per-size shmem 'inherit' while global shmem_enabled is 'force'"
                return 0
        fi
        if [[ $f == "$GSHMEM" && $v == force ]] && any_nonpmd_shmem_inherits; then
                echo "global shmem 'force' while a non-PMD size has shmem 'inherit'"
                return 0
        fi
        return 1
}

# write_expect FILE VALUE ok|einval WHY: one write and its outcome.
write_expect() {
        local f=$1 v=$2 want=$3 why=${4:-} before after id
        id=$(rk_id "$f")
        before=$(rk_get "$f")
        N_WRITES=$((N_WRITES + 1))
        if rk_set "$f" "$v"; then
                after=$(rk_get "$f")
                if [[ $want == einval ]]; then
                        rk_fail "$id: '$v' was accepted, expected EINVAL ($why); reads '$after'"
                elif [[ $after != "$v" ]]; then
                        rk_fail "$id: wrote '$v', reads back '$after'"
                fi
                return 0
        fi
        N_REFUSED=$((N_REFUSED + 1))
        after=$(rk_get "$f")
        if [[ $RK_SET_ERR != "Invalid argument" ]]; then
                rk_fail "$id: '$v' refused with '$RK_SET_ERR', expected EINVAL-shaped 'Invalid argument'"
        elif [[ $want == ok ]]; then
                rk_fail "$id: '$v' refused (EINVAL) though the file offers it and no rule forbids it"
        fi
        [[ $after == "$before" ]] || rk_fail "$id: a refused write changed the value '$before' -> '$after'"
        [[ $want == einval ]] && SEEN_REFUSAL["$why"]=1
        return 1
}

echo "== 1. layout"
[[ -e $THP/hugepages-8kB && ! -e $THP/hugepages-8kB/enabled ]] &&
        rk_log "ok: 8K has shmem_enabled and no anon 'enabled' (orders 2.. for anon)"
[[ -e $THP/hugepages-8kB/enabled ]] && rk_fail "8K has an anon 'enabled' knob; DESIGN.md §2 says it must not"
[[ -e $THP/hugepages-${PMD_KB}kB/enabled ]] || rk_fail "no knob for the PMD size ${PMD_KB}kB"
# mthpctl's view (probe + knob parser) must match the files themselves.
JSON=$RK_TMP/status.json
if "$MTHPCTL" --state-dir "$(rk_state_dir)" --json --sample 0 status >"$JSON"; then
        n_files=$(rk_knob_files | wc -l)
        # plus the THP shrinker's numbers where present (the safety net under 2M)
        n_num=0
        for f in khugepaged/max_ptes_none shrink_underused; do
                [[ -e $THP/$f ]] && n_num=$((n_num + 1))
                [[ $f == khugepaged/max_ptes_none ]] && ls "$THP"/hugepages-*kB/stats/collapse_* >/dev/null 2>&1 &&
                        n_num=$((n_num - 1)) # left alone on kernels with mTHP collapse
        done
        n_files=$((n_files + n_num))
        n_json=$(jq '.knobs | length' "$JSON")
        [[ $n_files == "$n_json" ]] || rk_fail "mthpctl status lists $n_json knobs, sysfs has $n_files"
        for id in khugepaged/max_ptes_none global/shrink_underused; do
                f=$THP/${id#global/}
                jv=$(jq -r --arg id "$id" '.knobs[] | select(.id==$id) | .value' "$JSON")
                [[ -z $jv || $jv == "$(cat "$f")" ]] || rk_fail "mthpctl status $id: value '$jv'; file: $(cat "$f")"
        done
        bad=0
        while read -r f; do
                id=$(rk_id "$f")
                jv=$(jq -r --arg id "$id" '.knobs[] | select(.id==$id) | .value' "$JSON")
                ja=$(jq -r --arg id "$id" '.knobs[] | select(.id==$id) | .accepts | join(" ")' "$JSON")
                if [[ $jv != "$(rk_get "$f")" || $ja != "$(rk_values "$f" | paste -sd' ' -)" ]]; then
                        rk_fail "mthpctl status $id: value '$jv' accepts '$ja'; file: $(cat "$f")"
                        bad=1
                fi
        done < <(rk_knob_files)
        ((bad)) || rk_log "ok: mthpctl status --json shows all $n_json knobs with the file's value and accepted values"
else
        rk_fail "mthpctl status --json failed"
fi

echo "== 2. exhaustive sweep: every knob x every value it offers, plus a bogus one"
while read -r f; do
        orig=$(rk_get "$f")
        vals=$(rk_values "$f" | paste -sd' ' -)
        for v in $vals; do
                if why=$(expect_refusal "$f" "$v"); then
                        write_expect "$f" "$v" einval "$why"
                else
                        write_expect "$f" "$v" ok
                fi
        done
        write_expect "$f" "bogus-value" einval "not a value the file offers"
        rk_set "$f" "$orig" || rk_fail "$(rk_id "$f"): cannot write back its value '$orig': $RK_SET_ERR"
        [[ $(rk_get "$f") == "$orig" ]] || rk_fail "$(rk_id "$f"): reads '$(rk_get "$f")' after restoring '$orig'"
        rk_log "$(rk_id "$f"): $vals: written and read back; restored '$orig'"
done < <(rk_knob_files)
rk_check_all "after the sweep"

echo "== 3. shmem 'inherit' vs global shmem_enabled 'force'"
# 3a: with no non-PMD size inheriting, global 'force' is accepted; then
# every non-PMD size refuses 'inherit' and keeps its value, the PMD size
# accepts it, and the other values stay writable.
for f in "$THP"/hugepages-*kB/shmem_enabled; do
        is_nonpmd_shmem "$f" && rk_set "$f" never
done
write_expect "$GSHMEM" force ok
if [[ $(rk_get "$GSHMEM") == force ]]; then
        for f in $(rk_knob_files | grep '/shmem_enabled$' | grep hugepages-); do
                if is_nonpmd_shmem "$f"; then
                        write_expect "$f" inherit einval "per-size shmem 'inherit' while global shmem_enabled is 'force'"
                        [[ $(rk_get "$f") == never ]] || rk_fail "$(rk_id "$f"): not 'never' after the refused 'inherit'"
                        write_expect "$f" always ok && write_expect "$f" never ok
                else
                        write_expect "$f" inherit ok
                fi
        done
        rk_log "ok: under global 'force' the non-PMD sizes refuse 'inherit' with EINVAL, $(rk_id "$THP/hugepages-${PMD_KB}kB/x" | cut -d/ -f1) accepts it"
fi
# 3b: a non-PMD size inheriting makes global 'force' fail.
write_expect "$GSHMEM" never ok
SMALL=$(rk_knob_files | grep '/shmem_enabled$' | grep hugepages- | head -1)
if write_expect "$SMALL" inherit ok; then
        write_expect "$GSHMEM" force einval "global shmem 'force' while a non-PMD size has shmem 'inherit'"
        [[ $(rk_get "$GSHMEM") == never ]] || rk_fail "global/shmem_enabled changed by a refused 'force'"
        rk_log "ok: global 'force' refused with EINVAL while $(rk_id "$SMALL") inherits"
fi
rk_restore_to "$RK_SAVED" || rk_fail "cannot put the saved values back after the force/inherit test"
rk_check_all "after the force/inherit test"
for why in "per-size shmem 'inherit' while global shmem_enabled is 'force'" \
        "global shmem 'force' while a non-PMD size has shmem 'inherit'"; do
        [[ -n ${SEEN_REFUSAL[$why]:-} ]] || rk_fail "the case '$why' was not exercised"
done
rk_log "measured: $N_WRITES writes, $N_REFUSED refused (all EINVAL)"

echo "== 4. mthpd --once writes each size, 'mthpctl restore' puts the admin's values back"
# Before each size, set non-default "admin" values on that size, so restore
# has to return something other than the kernel default.
ANON_ORIG=(madvise never inherit)
SHMEM_ORIG=(advise within_size never inherit)
# under global 'force' the kernel refuses per-size shmem 'inherit' (section 3)
[[ $(rk_get "$GSHMEM") == force ]] && SHMEM_ORIG=(advise within_size never)
rk_workloads 120
sleep 0.3
i=0 n_sizes=0 n_restored=0
for d in $(ls -d "$THP"/hugepages-*kB | sort -t- -k2 -n); do
        kb=${d##*/hugepages-}; kb=${kb%kB}
        size=$(rk_id "$d/enabled"); size=${size%/*}
        knobs=()
        [[ -e $d/enabled ]] && knobs+=("$d/enabled")
        [[ -e $d/shmem_enabled ]] && knobs+=("$d/shmem_enabled")
        for f in "${knobs[@]}"; do
                if [[ $f == */enabled ]]; then v=${ANON_ORIG[i % ${#ANON_ORIG[@]}]}; else v=${SHMEM_ORIG[i % ${#SHMEM_ORIG[@]}]}; fi
                rk_set "$f" "$v" || rk_fail "$(rk_id "$f"): cannot preset '$v': $RK_SET_ERR"
        done
        i=$((i + 1))
        PRE=$RK_TMP/pre-$size
        rk_snapshot >"$PRE"
        STATE=$(rk_state_dir)
        CONF=$RK_TMP/once-$size.conf
        rk_config "$CONF" AnonSizes="$size" ShmemSizes="$size"
        LOG=$RK_TMP/once-$size.log
        t0=$(rk_now_ms)
        timeout 30 "$MTHPD" --once -c "$CONF" --state-dir "$STATE" 2>"$LOG"
        rc=$? t1=$(rk_now_ms)
        [[ $rc == 0 ]] || { rk_fail "$size: mthpd --once exited $rc"; sed 's/^/  /' "$LOG"; }
        n_sizes=$((n_sizes + 1))
        okay=1
        for f in "${knobs[@]}"; do
                id=$(rk_id "$f")
                if [[ $(rk_get "$f") != always ]]; then
                        rk_fail "$id: mthpd --once left '$(rk_get "$f")', expected 'always'"; okay=0
                fi
                grep -q "set $id: .* -> always" "$LOG" || { rk_fail "$id: no 'set $id' line in mthpd's log"; okay=0; }
                owner=$("$MTHPCTL" --state-dir "$STATE" --json --sample 0 status |
                        jq -r --arg id "$id" '.knobs[] | select(.id==$id) | .set_by')
                [[ $owner == mthpd ]] || { rk_fail "$id: mthpctl status says set by '$owner', expected 'mthpd'"; okay=0; }
        done
        # nothing outside this size may have moved
        # (at the PMD size the shrinker's safety net moves with 2M: it is
        # checked where it is written, in limited-cgroup)
        skip="/hugepages-${kb}kB/"
        ((kb == $(rk_pmd_kb))) && skip="$skip|/khugepaged/max_ptes_none |/shrink_underused "
        other=$(grep -Ev "$skip" "$PRE" >"$RK_TMP/pre-other"; rk_diff "$RK_TMP/pre-other" partial)
        [[ -z $other ]] || { rk_fail "$size: mthpd --once changed knobs outside its sizes:"; echo "$other"; okay=0; }
        [[ -e $STATE/restore.journal ]] || { rk_fail "$size: --once left no restore journal"; okay=0; }

        out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1)
        rc=$?
        [[ $rc == 0 ]] || { rk_fail "$size: mthpctl restore exited $rc"; okay=0; }
        echo "$out" | sed 's/^/  | /'
        if d_out=$(rk_diff "$PRE"); then :; else
                rk_fail "$size: after mthpctl restore:"; echo "$d_out"; okay=0
                rk_restore_to "$PRE"
        fi
        [[ ! -e $STATE/restore.journal ]] || { rk_fail "$size: journal still there after a full restore"; okay=0; }
        ((okay)) && n_restored=$((n_restored + 1))
        rk_log "$size: originals $(for f in "${knobs[@]}"; do printf '%s=%s ' "$(rk_id "$f")" "$(grep "^$f " "$PRE" | cut -d' ' -f2)"; done)-> mthpd --once ($((t1 - t0)) ms) -> always -> restore: $( ((okay)) && echo ok || echo FAILED)"
        rk_restore_to "$RK_SAVED" || rk_fail "cannot put the saved values back after $size"
done
rk_workloads_stop
rk_log "measured: mthpd --once + mthpctl restore round trip ok for $n_restored/$n_sizes sizes; workload $(rk_workload_rates)"
rk_check_all "after the mthpd round trips"
exit 0
