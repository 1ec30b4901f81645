#!/bin/bash
# SPDX-License-Identifier: MIT
# sparse-after-raise: default configuration. A dense churning program makes
# mthpd raise anon sizes; 6 s later a sparse program starts (1 GiB mapped,
# 1 byte per 64 KiB, then idle: ~67 MB at 4K), takes large folios on its
# first touches (16x its 4K RSS and more) and makes no fault after. Once
# quiet, the fault-driven sampler never sees it: mthpd must find it by its
# growth and give its zero subpages back (process_madvise MADV_PAGEOUT on a
# swapless host). Passes when the sparse program's RSS is at most 2x its 4K
# RSS within 15 s of its start, and the dense program keeps its gain: an
# anon size above 4K is still raised at the end and no give-back touched
# it. Its pages/s after against before is reported, not judged: on a
# shared 2-core host it moves 0.1-1x with the neighbours' load. SKIP on a host with
# swap: there the give-back would swap touched data out, mthpd does not do
# it. Prints the sparse program's RSS each second. GIVEBACK=no runs mthpd
# with GiveBack=no (the figures without the give-back, for comparison).
#
# Usage: sparse-after-raise.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init sparse-after-raise

swap=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)
((swap == 0)) || rk_skip "the host has swap (SwapTotal ${swap} kB): mthpd does not page bloat out where it would swap touched data"
rk_sanitized "$WORKLOAD" && rk_skip "$WORKLOAD is built with a sanitizer: mthpd measures its shadow memory as sparse and holds no 2M for it"

rss_mb() { awk '/^VmRSS:/ {print int($2 / 1024)}' "/proc/$1/status" 2>/dev/null; }

# The sparse program's 4K RSS, measured: the same program with THP disabled
"$WORKLOAD" --kind anon --pattern sparse --size 1G --once --seconds 3 --thp-disable --quiet >/dev/null 2>&1 &
BPID=$!
rk_track $BPID
sleep 2
BOOT=$(rss_mb $BPID)
rk_stop $BPID TERM 5
[[ -n $BOOT ]] && ((BOOT > 0)) || rk_die "cannot read the sparse program's 4K RSS"
rk_log "sparse program at 4K: ${BOOT} MB"

CONF=$RK_TMP/empty.conf POL=$RK_TMP/policy.d
if [[ -n ${GIVEBACK:-} ]]; then printf '[Engine]\nGiveBack=%s\n' "$GIVEBACK" >"$CONF"; else : >"$CONF"; fi
mkdir "$POL"
STATE=$(rk_state_dir)
LOG=$RK_TMP/mthpd.log
"$MTHPD" -c "$CONF" -p "$POL" --state-dir "$STATE" --no-bus 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"

"$WORKLOAD" --kind anon --pattern dense --size 64M --seconds 45 >"$RK_TMP/dense.out" 2>&1 &
DPID=$!
rk_track $DPID
rk_wait_value "$THP/hugepages-64kB/enabled" always 20 || rk_die "mthpd raised nothing for the dense program"
sleep 6
rk_log "raised: $(for s in 16kB 64kB 256kB 2048kB; do printf '%s=%s ' $s "$(rk_get "$THP/hugepages-$s/enabled")"; done)"
dense_rate() {   # median pages/s of the dense program's per-second lines from second $1 to $2
        awk -v a="$1" -v b="$2" '/^t=/ { split($1, t, "="); split($3, p, "=");
                if (t[2] >= a && t[2] <= b) print p[2] }' "$RK_TMP/dense.out" | sort -n |
                awk '{ v[n++] = $1 } END { print n ? v[int((n - 1) / 2)] : 0 }'
}
tb=$(awk '/^t=/ { split($1, t, "="); x = t[2] } END { print x + 0 }' "$RK_TMP/dense.out")

"$WORKLOAD" --kind anon --pattern sparse --size 1G --once --seconds 40 --quiet >"$RK_TMP/sparse.out" 2>&1 &
SPID=$!
rk_track $SPID
peak=0 last=0 ok_at=
series=
for ((s = 1; s <= 15; s++)); do
        sleep 1
        rk_alive $SPID || rk_die "the sparse program exited early"
        last=$(rss_mb $SPID)
        series+="${s}s=${last} "
        ((last > peak)) && peak=$last
        [[ -z $ok_at ]] && ((peak > 2 * BOOT && last <= 2 * BOOT)) && ok_at=$s
done
rk_log "sparse program RSS (MB) after its start: $series(4K: $BOOT, peak $peak)"
((last <= 2 * BOOT)) || rk_fail "the sparse program holds ${last} MB 15 s after its start, over 2x its 4K RSS (${BOOT} MB)"
[[ -n $ok_at ]] && rk_log "back to <= 2x its 4K RSS ${ok_at} s after its start"
ta=$(awk '/^t=/ { split($1, t, "="); x = t[2] } END { print x + 0 }' "$RK_TMP/dense.out")
before=$(dense_rate $((tb - 4)) "$tb") after=$(dense_rate $((ta - 4)) "$ta")
ratio=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
rk_log "dense program: ${before} pages/s before the sparse one, ${after} after (ratio $ratio)"
raised_end=$(for s in 16kB 32kB 64kB 128kB 256kB 512kB 1024kB 2048kB; do
        [[ $(rk_get "$THP/hugepages-$s/enabled") == always ]] && printf '%s ' $s; done)
rk_log "anon sizes always at the end: ${raised_end:-none}"
[[ -n $raised_end ]] || rk_fail "no anon size is raised at the end: the dense program lost its gain"
grep -q "give-back: pid $DPID " "$LOG" && rk_fail "the dense program's memory was paged out"
grep -h "give-back: pid $SPID " "$LOG" | sed 's/^/  /' | head -5
rk_stop $SPID TERM 5
rk_stop $DPID TERM 10
rk_stop $MPID TERM 10
exit 0
