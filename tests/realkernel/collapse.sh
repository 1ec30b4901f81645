#!/bin/bash
# SPDX-License-Identifier: MIT
# MADV_COLLAPSE on this kernel (lib/collapse.c through collapse-run):
#  - with every anon THP knob at 'never' (MADV_COLLAPSE ignores the sysfs
#    settings; only THP disabled for the process or the mapping stops it), a
#    dense 64M workload faulted at 4K becomes PMD-mapped after two passes
#    (the first only remembers the candidates): AnonHugePages in its
#    smaps_rollup rises by at least 90% of the region;
#  - with the default budget (64 MiB, 20 ms a tick) the same happens over
#    several ticks, none of them over the kB budget;
#  - a mapping with MADV_NOHUGEPAGE fails with EINVAL and is left alone;
#  - a sparse workload (1 page per 64K) has no candidates.
# Root only (exit 77 otherwise); knobs saved and restored (lib.sh).
#
# Usage: collapse.sh MTHPD MTHPCTL WORKLOAD COLLAPSE_RUN
set -u
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3 COLLAPSE_RUN=$4
. "$(dirname "$0")/lib.sh"
rk_init collapse
[[ -x $COLLAPSE_RUN ]] || rk_die "collapse-run is not an executable: '$COLLAPSE_RUN'"
rk_skip_sanitized_reads_allocate "$WORKLOAD"

SIZE_MB=64
PMD_KB=$(rk_pmd_kb)
[[ $PMD_KB == 2048 ]] || rk_skip "PMD size is ${PMD_KB}K, the test assumes 2048K"

# every anon size and the global switch to never: no THP at fault time
while read -r f; do
        case $f in
        */hugepages-*kB/enabled | "$THP/enabled") rk_set "$f" never || rk_die "writing never to $f: $RK_SET_ERR" ;;
        esac
done < <(rk_knob_files)
rk_log "every anon THP knob set to never"

smaps_kb() { sed -n "s/^$2: *\([0-9]*\) kB/\1/p" "/proc/$1/smaps_rollup" 2>/dev/null; }

# start_workload NAME ARGS...: sets WL_PID once the region is faulted
start_workload() {
        local name=$1 i
        shift
        "$WORKLOAD" --kind anon --size "${SIZE_MB}M" --hold --seconds 120 --quiet "$@" >"$RK_TMP/$name.out" 2>&1 &
        WL_PID=$!
        rk_track "$WL_PID"
        for ((i = 0; i < 200; i++)); do   # 10 s
                rk_alive "$WL_PID" || rk_die "$name exited early: $(cat "$RK_TMP/$name.out")"
                # dense: the whole region; sparse: a page per stride, so any RSS will do
                (($(smaps_kb "$WL_PID" Anonymous) >= ${MIN_ANON_KB:-$((SIZE_MB * 1024))})) && return 0
                sleep 0.05
        done
        rk_die "$name did not fault its ${SIZE_MB}M within 10 s"
}

# field NAME LINE
field() { sed -n "s/.*\b$1=\(-\?[0-9]*\).*/\1/p" <<<"$2"; }

# --- dense, big budget: two passes
start_workload dense --pattern dense
before=$(smaps_kb "$WL_PID" AnonHugePages)
((before == 0)) || rk_fail "dense: AnonHugePages is $before kB with every knob at never"
out=$("$COLLAPSE_RUN" --passes 2 --max-kb 1048576 --max-usec 10000000 "$WL_PID") || rk_fail "collapse-run failed: $out"
echo "$out" | sed 's/^/  /'
p1=$(grep '^pass=1 ' <<<"$out") p2=$(grep '^pass=2 ' <<<"$out")
blocks=$((SIZE_MB * 1024 / PMD_KB))
(($(field candidates "$p1") >= blocks)) || rk_fail "pass 1: expected >= $blocks candidates: $p1"
(($(field collapsed "$p1") == 0)) || rk_fail "pass 1 collapsed before a second sight: $p1"
(($(field collapsed "$p2") >= blocks)) || rk_fail "pass 2: expected >= $blocks blocks collapsed: $p2"
after=$(smaps_kb "$WL_PID" AnonHugePages)
want=$((SIZE_MB * 1024 * 9 / 10))
if ((after - before >= want)); then
        rk_log "ok: dense ${SIZE_MB}M: AnonHugePages $before -> $after kB (>= $want), $(field usec "$p2") us for pass 2"
else
        rk_fail "dense: AnonHugePages $before -> $after kB, expected a rise of >= $want kB"
fi
# a third look: nothing left to do, all PMD-mapped
out=$("$COLLAPSE_RUN" --passes 1 "$WL_PID")
(($(field huge "$out") >= blocks && $(field candidates "$out") == 0)) ||
        rk_fail "after collapsing, expected >= $blocks PMD-mapped blocks and no candidates: $out"
rk_stop "$WL_PID"

# --- dense, default budget: several ticks, each within 64 MiB
start_workload dense-budget --pattern dense
out=$("$COLLAPSE_RUN" --passes 40 "$WL_PID") || rk_fail "collapse-run failed: $out"
maxkb=0 ticks=0
while read -r l; do
        a=$(field attempted "$l")
        ((a > 0)) && ticks=$((ticks + 1))
        ((a * PMD_KB > maxkb)) && maxkb=$((a * PMD_KB))
done < <(grep '^pass=' <<<"$out")
total=$(field collapsed "$(grep '^total ' <<<"$out")")
after=$(smaps_kb "$WL_PID" AnonHugePages)
((maxkb <= 65536)) || rk_fail "default budget: a tick attempted $maxkb kB > 65536"
if ((total >= blocks && after >= want)); then
        rk_log "ok: default budget: $total blocks in $ticks ticks (at most $maxkb kB a tick), AnonHugePages $after kB"
else
        rk_fail "default budget: $total blocks collapsed over 40 ticks, AnonHugePages $after kB"
        echo "$out" | sed 's/^/  /'
fi
rk_stop "$WL_PID"

# --- MADV_NOHUGEPAGE: EINVAL, counted as failed, mapping left alone
start_workload nohuge --pattern dense --madvise nohugepage
out=$("$COLLAPSE_RUN" --passes 3 --max-kb 1048576 --max-usec 10000000 "$WL_PID") || rk_fail "collapse-run failed: $out"
p2=$(grep '^pass=2 ' <<<"$out") p3=$(grep '^pass=3 ' <<<"$out")
if (($(field collapsed "$p2") == 0 && $(field failed "$p2") == 1 && $(field last_error "$p2") == -22)) &&
        (($(field candidates "$p3") == 0 && $(field attempted "$p3") == 0)); then
        rk_log "ok: MADV_NOHUGEPAGE: one EINVAL, then the mapping is left alone"
else
        rk_fail "MADV_NOHUGEPAGE: expected one EINVAL failure, then nothing:"
        echo "$out" | sed 's/^/  /'
fi
(($(smaps_kb "$WL_PID" AnonHugePages) == 0)) || rk_fail "MADV_NOHUGEPAGE region got huge pages"
rk_stop "$WL_PID"

# --- sparse: nothing dense enough
MIN_ANON_KB=1 start_workload sparse --pattern sparse --stride 64K
sleep 0.5
out=$("$COLLAPSE_RUN" --passes 2 "$WL_PID") || rk_fail "collapse-run failed: $out"
if (($(field candidates "$(grep '^pass=2 ' <<<"$out")") == 0)) &&
        (($(field attempted "$(grep '^total ' <<<"$out")") == 0)); then
        rk_log "ok: sparse: no candidates"
else
        rk_fail "sparse: expected no candidates: $out"
fi
rk_stop "$WL_PID"

exit 0
