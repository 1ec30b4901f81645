#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs "$@" with kernel.task_delayacct=1 and puts the old value back on every
# exit path. A lock keeps concurrent runs from saving each other's value.
# Exit 77 (skip) when not root or the sysctl is missing or not writable.
set -u
knob=/proc/sys/kernel/task_delayacct
lockdir=/run/lock
[ -d "$lockdir" ] || lockdir=/tmp

[ "$(id -u)" = 0 ] && [ -w "$knob" ] || exit 77
exec 9>"$lockdir/mthpd-test-task-delayacct.lock" || exit 77
flock -w 60 9 || exit 77
old=$(cat "$knob") || exit 77

child=
restore() {
        [ -n "$child" ] && kill "$child" 2>/dev/null
        echo "$old" > "$knob"
}
trap restore EXIT
trap 'exit 130' HUP INT TERM

echo 1 > "$knob" || exit 77
# In the background, so a signal to this shell is handled at once.
"$@" &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
