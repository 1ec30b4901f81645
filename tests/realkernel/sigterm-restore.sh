#!/bin/bash
# SPDX-License-Identifier: MIT
# sigterm-restore: mthpd manages the real knobs for ~3 s under a fault
# workload with a config that raises a level every tick; SIGTERM must give
# exit 0, every knob back, no journal and no status file left.
#
# Usage: sigterm-restore.sh MTHPD MTHPCTL WORKLOAD
# Env:   RK_RUN_SECONDS (default 3)
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init sigterm-restore

RUN_S=${RK_RUN_SECONDS:-3}
STATE=$(rk_state_dir)
CONF=$RK_TMP/fast.conf
LOG=$RK_TMP/mthpd.log
rk_config "$CONF"

rk_workloads $((RUN_S + 10))
sleep 0.2
t_start=$(rk_now_ms)
"$MTHPD" -c "$CONF" --state-dir "$STATE" 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_fail "mthpd did not start within 10s"
t_first=
for ((i = 0; i < RUN_S * 20; i++)); do
        [[ -z $t_first ]] && grep -q '^mthpd: set ' "$LOG" && t_first=$(rk_now_ms)
        kill -0 $MPID 2>/dev/null || break
        sleep 0.05
done
kill -0 $MPID 2>/dev/null || rk_die "mthpd died while running; log:"$'\n'"$(cat "$LOG")"

# What mthpd had done by the time it is stopped.
rk_snapshot >"$RK_TMP/before-term"
n_changed=$(rk_diff "$RK_SAVED" | grep -c '^  ' || true)
n_journal=$(grep -c '^\[knob ' "$STATE/restore.journal" 2>/dev/null || true)
EXPLAIN=$("$MTHPCTL" --state-dir "$STATE" explain 2>&1) ||
        rk_fail "mthpctl explain failed while mthpd runs: $EXPLAIN"
[[ -e $STATE/status ]] || rk_fail "no status file while mthpd runs"
((n_changed > 0)) || rk_fail "mthpd changed no knob in ${RUN_S}s under the fast config"
((n_journal == n_changed)) || rk_fail "$n_changed knobs changed, $n_journal in the journal"
rk_log "after ${RUN_S}s: $n_changed knobs changed by mthpd, $n_journal in its journal; first change $((t_first - t_start)) ms after start:"
rk_diff "$RK_SAVED" | sed 's/^  /    /; s/, expected/, originally/'

t0=$(rk_now_ms)
rk_stop $MPID TERM 10
t1=$(rk_now_ms)
rk_workloads_stop
((RK_STOP_EARLY == 0)) || rk_fail "mthpd had exited $RK_STOP_RC before the SIGTERM"
[[ $RK_STOP_RC == 0 ]] || rk_fail "mthpd exited $RK_STOP_RC on SIGTERM (expected 0)"
n_restored=$(grep -c '^mthpd: info: restored ' "$LOG" || true)
rk_log "SIGTERM -> exit $RK_STOP_RC in $((t1 - t0)) ms; $n_restored 'restored' lines"
((n_restored == n_journal)) || rk_fail "mthpd logged $n_restored restores for $n_journal journal entries"
grep -q 'all knobs restored; exiting' "$LOG" || rk_fail "no 'all knobs restored; exiting' line"
rk_check_all "after SIGTERM"
[[ ! -e $STATE/restore.journal ]] || rk_fail "restore journal left after SIGTERM"
[[ ! -e $STATE/status ]] || rk_fail "status file left after SIGTERM"
ls "$STATE"/restore.journal.tmp "$STATE"/status.tmp 2>/dev/null && rk_fail "temporary files left in $STATE"
n_set=$(grep -c '^mthpd: set ' "$LOG" || true)
rk_log "measured: $n_set knob writes in ${RUN_S}s; workload $(rk_workload_rates)"
exit 0
