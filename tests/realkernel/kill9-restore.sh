#!/bin/bash
# SPDX-License-Identifier: MIT
# kill9-restore: mthpd killed with SIGKILL at a random moment while it raises
# knobs under a fault workload; the restore journal must bring every knob
# back, alternately through 'mthpctl restore' and through a restarted mthpd
# (which restores a leftover journal before it does anything else).
#
# Usage: kill9-restore.sh MTHPD MTHPCTL WORKLOAD
# Env:   RK_TRIALS (default 12, at least 10), RK_SEED (random seed)
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init kill9-restore

TRIALS=${RK_TRIALS:-12}
((TRIALS >= 10)) || TRIALS=10
SEED=${RK_SEED:-$(($(date +%s) % 32768))}
RANDOM=$SEED
rk_log "trials: $TRIALS, seed: $SEED (RK_SEED=$SEED reproduces the delays)"

FAST=$RK_TMP/fast.conf
rk_config "$FAST"
# The restarted daemon must not write anything itself (no raise, no idle
# advise of 2M/shmem: ShmemAlign=no), so that what the test sees right
# after startup is what the journal restore did. RaiseFaultTime=0: the raise
# rate is the lower of the two, and this host's slow faults make the other
# about 2,200 pages/s.
HOLD=$RK_TMP/hold.conf
rk_config "$HOLD" RaiseFaultRate=1000000000000 RaiseFaultTime=0 ShmemAlign=no
n_ctl=0 ok_ctl=0 n_rs=0 ok_rs=0 n_inflight=0

journal_entries() { [[ -e $1 ]] && grep -c '^\[knob ' "$1" || echo 0; }

for ((t = 1; t <= TRIALS; t++)); do
        fail_before=$RK_FAILS
        STATE=$(rk_state_dir)
        LOG=$RK_TMP/trial$t.log
        delay_ms=$((RANDOM % 1501))
        rk_workloads 10
        "$MTHPD" -c "$FAST" --state-dir "$STATE" 2>"$LOG" &
        pid=$!
        rk_track $pid
        sleep "$((delay_ms / 1000)).$(printf %03d $((delay_ms % 1000)))"
        kill -KILL "$pid"
        wait "$pid" 2>/dev/null
        rc=$?
        rk_workloads_stop
        [[ $rc == 137 ]] || rk_fail "trial $t: mthpd exited $rc before the SIGKILL (expected 137); log:"$'\n'"$(cat "$LOG")"
        n_changes=$(grep -c '^mthpd: set ' "$LOG" || true)
        n_diff=$(rk_diff "$RK_SAVED" | grep -c '^  ' || true)
        n_journal=$(journal_entries "$STATE/restore.journal")
        ((n_journal > 0)) && n_inflight=$((n_inflight + 1))
        # Every knob that differs from the saved values must be in the journal.
        while read -r line; do
                id=${line#  }; id=${id%%:*}
                grep -q "^\[knob $id\]\|^id=$id$" "$STATE/restore.journal" 2>/dev/null ||
                        rk_fail "trial $t: $id differs after the kill but is not in the journal"
        done < <(rk_diff "$RK_SAVED" | grep '^  [^ ]*:')

        if ((t % 2)); then
                how=mthpctl
                n_ctl=$((n_ctl + 1))
                t0=$(rk_now_ms)
                out=$("$MTHPCTL" --state-dir "$STATE" restore 2>&1)
                rc=$?
                t1=$(rk_now_ms)
                [[ $rc == 0 ]] || rk_fail "trial $t: mthpctl restore exited $rc: $out"
                rk_diff "$RK_SAVED" >/dev/null || { rk_fail "trial $t: after mthpctl restore:"; rk_diff "$RK_SAVED"; }
                [[ ! -e $STATE/restore.journal ]] || rk_fail "trial $t: journal still there after mthpctl restore"
                detail="mthpctl restore: '$(echo "$out" | tail -1 | sed 's/: no journal at .*//; s/; the journal .* keeps them//')' in $((t1 - t0)) ms"
        else
                how=restart
                n_rs=$((n_rs + 1))
                LOG2=$RK_TMP/trial$t.restart.log
                # Every other restart manages again under the workload: what it
                # journals as "original" must be the restored value, not the
                # dead run's, or its SIGTERM would put the dead run's values back.
                if ((t % 4 == 0)); then conf=$FAST variant="manages again"; rk_workloads 10; else conf=$HOLD variant=holds; fi
                t0=$(rk_now_ms)
                "$MTHPD" -c "$conf" --state-dir "$STATE" 2>"$LOG2" &
                pid=$!
                rk_track $pid
                if rk_wait_for "$LOG2" 'managing mTHP knobs every' 10 $pid; then
                        t1=$(rk_now_ms) up="running after $((t1 - t0)) ms"
                        if [[ $conf == "$HOLD" ]]; then
                                # restored at startup, before any SIGTERM
                                rk_diff "$RK_SAVED" >/dev/null ||
                                        { rk_fail "trial $t: restarted mthpd is running but did not restore:"; rk_diff "$RK_SAVED"; }
                        else
                                rk_wait_for "$LOG2" '^mthpd: set ' 5 $pid || rk_fail "trial $t: restarted mthpd changed nothing in 5s"
                        fi
                else
                        rk_alive $pid && why="did not start within 10s" || why="exited during startup"
                        up=$why
                        rk_fail "trial $t: restarted mthpd $why; log:"$'\n'"$(grep -v ': probe: ' "$LOG2")"
                fi
                if ((n_journal > 0)); then
                        grep -q 'found restore journal .* from a run that did not stop cleanly; restoring' "$LOG2" ||
                                rk_fail "trial $t: restarted mthpd did not log the leftover journal"
                        n_rest=$(sed -n 's/.*restored \([0-9]*\) knobs from the previous run.*/\1/p' "$LOG2")
                        [[ $n_rest == "$n_journal" ]] ||
                                rk_fail "trial $t: restarted mthpd restored '$n_rest' knobs, the journal had $n_journal"
                else
                        ! grep -q 'found restore journal' "$LOG2" ||
                                rk_fail "trial $t: restarted mthpd reports a leftover journal where none was"
                fi
                rk_stop "$pid" TERM 10
                ((RK_STOP_EARLY)) && rk_fail "trial $t: restarted mthpd had exited $RK_STOP_RC before the SIGTERM"
                ((RK_STOP_EARLY)) || [[ $RK_STOP_RC == 0 ]] || rk_fail "trial $t: restarted mthpd exited $RK_STOP_RC on SIGTERM"
                rk_workloads_stop
                n_again=$(grep -c '^mthpd: set ' "$LOG2" || true)
                # (a restarted mthpd that changed nothing says so instead)
                grep -q 'all knobs restored; exiting\|nothing to restore; exiting' "$LOG2" ||
                        rk_fail "trial $t: no 'all knobs restored' (or 'nothing to restore') line"
                rk_diff "$RK_SAVED" >/dev/null || { rk_fail "trial $t: after the restart + SIGTERM:"; rk_diff "$RK_SAVED"; }
                [[ ! -e $STATE/restore.journal ]] || rk_fail "trial $t: journal still there after the restart + SIGTERM"
                detail="restart ($variant): $(grep -o 'restored [0-9]* knobs from the previous run' "$LOG2" || { grep -q 'found restore journal' "$LOG2" && echo 'restore FAILED' || echo 'no leftover journal'; }), $up"
                [[ $conf == "$FAST" ]] && detail+=", $n_again writes, SIGTERM"
        fi
        if ((RK_FAILS == fail_before)); then
                result=restored
                [[ $how == mthpctl ]] && ok_ctl=$((ok_ctl + 1)) || ok_rs=$((ok_rs + 1))
        else
                result=FAILED
                echo "  mthpd log of trial $t:"; sed 's/^/  | /' "$LOG"
                [[ -e $STATE/restore.journal ]] && { echo "  journal:"; sed 's/^/  | /' "$STATE/restore.journal"; }
                rk_restore_to "$RK_SAVED" || true
        fi
        printf '%s: trial %2d: kill -9 after %4d ms: %2d knob writes logged, %2d knobs off their saved values, %2d in the journal; %s; %s\n' \
                "$RK_NAME" "$t" "$delay_ms" "$n_changes" "$n_diff" "$n_journal" "$detail" "$result"
done
rk_log "workload of the last trial: $(rk_workload_rates)"
echo "kill -9 trials: $TRIALS, restored by mthpctl: $ok_ctl/$n_ctl, restored by restart: $ok_rs/$n_rs" \
        "($n_inflight trials had knobs changed when killed)"
rk_check_all "after $TRIALS trials"
exit 0
