#!/bin/bash
# SPDX-License-Identifier: MIT
# ro-sysfs: the real start path on a read-only THP directory (issue 10 item
# 4). In a private mount namespace the real /sys/kernel/mm/transparent_hugepage
# is bind-mounted read-only (the host's stays writable): mthpd managing must
# exit 4 with one sentence naming the path and --mode observe; with --mode
# observe it runs and says the knobs are not writable (log, status file,
# mthpctl status). Nothing is written; the lock is held all the same.
#
# Usage: ro-sysfs.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init ro-sysfs

unshare -m true 2>"$RK_TMP/unshare.err" ||
        rk_skip "needs a mount namespace: unshare -m: $(cat "$RK_TMP/unshare.err")"
STATE=$(rk_state_dir)
CONF=$RK_TMP/fast.conf
LOG=$RK_TMP/mthpd.log
rk_config "$CONF"
# shellcheck disable=SC2016 # expanded by the inner sh
RO='mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'

# managing: refused
rc=0
timeout 20 unshare -m sh -c "$RO" sh "$THP" "$MTHPD" -c "$CONF" --state-dir "$STATE" --no-bus 2>"$LOG" || rc=$?
sed 's/^/  | /' "$LOG" | grep -v 'info: probe'
[[ $rc == 4 ]] || rk_fail "managing a read-only $THP: exit $rc, expected 4"
[[ $(grep -c 'error:' "$LOG") == 1 ]] || rk_fail "expected one error line, got $(grep -c 'error:' "$LOG")"
grep -q "error: cannot write the mTHP knobs ($THP is mounted read-only (EROFS)), so mthpd does not start: .*--mode observe" "$LOG" ||
        rk_fail "the sentence does not name the read-only mount and --mode observe"
[[ ! -e $STATE/restore.journal ]] || rk_fail "a restore journal was left"
rk_diff "$RK_SAVED" >/dev/null || rk_fail "a knob changed: $(rk_diff "$RK_SAVED")"

# observing: runs and says so
unshare -m sh -c "$RO" sh "$THP" "$MTHPD" -c "$CONF" --state-dir "$STATE" --no-bus --mode observe 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'observing: deciding and explaining without writing every' 10 $MPID ||
        rk_die "mthpd --mode observe did not start: $(cat "$LOG")"
grep -q "observe mode: the mTHP knobs cannot be written ($THP is mounted read-only (EROFS))" "$LOG" ||
        rk_fail "the log does not say the knobs cannot be written"
for ((i = 0; i < 50; i++)); do grep -q '^not_writable=' "$STATE/status" 2>/dev/null && break; sleep 0.1; done
grep -q "^not_writable=$THP is mounted read-only (EROFS)" "$STATE/status" 2>/dev/null ||
        rk_fail "the status file does not say the knobs are not writable"
out=$("$MTHPCTL" --state-dir "$STATE" --sample 0 status 2>&1)
echo "$out" | grep -E '^mthpd:|^note: mthpd' | sed 's/^/  | /'
echo "$out" | grep -q '^mthpd: running (observe: decides, writes nothing: the knobs are not writable)' ||
        rk_fail "mthpctl status does not say observe, not writable"
echo "$out" | grep -q "^note: mthpd cannot write the knobs ($THP is mounted read-only (EROFS))" ||
        rk_fail "mthpctl status does not say why"
rk_stop $MPID TERM 10
[[ $RK_STOP_RC == 0 ]] || rk_fail "mthpd --mode observe exited $RK_STOP_RC on SIGTERM"
grep -q 'mthpd changed no knob: nothing to restore; exiting' "$LOG" || rk_fail "the exit does not say nothing was changed"
rk_diff "$RK_SAVED" >/dev/null || rk_fail "a knob changed: $(rk_diff "$RK_SAVED")"
((RK_FAILS == 0)) || exit 1
