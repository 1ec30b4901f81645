#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs "$@" with kernel.task_delayacct=1 and puts the old value back on every
# exit path. A lock keeps concurrent runs from saving each other's value.
# Exit 77 (skip) when not root or the sysctl is missing or not writable.
set -u
knob=/proc/sys/kernel/task_delayacct
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/tmp

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to set $knob"
[ -e "$knob" ] || skip "no $knob on this kernel"
[ -w "$knob" ] || skip "$knob is not writable (read-only /proc/sys?)"
exec 9>"$lockdir/mthpd-test-task-delayacct.lock" || skip "cannot open $lockdir/mthpd-test-task-delayacct.lock"
flock -w 60 9 || skip "another run held $lockdir/mthpd-test-task-delayacct.lock for 60 s"
old=$(cat "$knob") || skip "cannot read $knob"

child=
restore() {
        [ -n "$child" ] && kill "$child" 2>/dev/null
        echo "$old" > "$knob"
}
trap restore EXIT
trap 'exit 130' HUP INT TERM

echo 1 > "$knob" || skip "writing 1 to $knob failed"
# In the background, so a signal to this shell is handled at once.
"$@" &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
