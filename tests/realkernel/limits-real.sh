#!/bin/bash
# SPDX-License-Identifier: MIT
# limits-real: the limited-cgroup scan on real memory cgroups. The work is
# in tests/unit/test-limits-real.c, which creates, checks and removes
# mthpd-test-walk-PID and its children itself; this wrapper adds the
# real-kernel lock and knob check of lib.sh (a daemon of another test would
# see the limited cgroups) and a second cleanup of those cgroups should
# the program be killed (it is stopped first: a cgroup with a process in it
# cannot be removed).
#
# Usage: limits-real.sh MTHPD MTHPCTL WORKLOAD TEST-LIMITS-REAL
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3 PROG=$4
. "$(dirname "$0")/lib.sh"
rk_init limits-real

remove_leftovers() {
        local base top d
        [[ -n $RK_CPID ]] || return 0
        rk_stop "$RK_CPID" TERM 5   # its own cleanup first; its child dies with it
        for base in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
                top=$base/mthpd-test-walk-$RK_CPID
                [[ -d $top ]] || continue
                for d in "$top/a/b" "$top/a" "$top/c/d" "$top/c" "$top"; do
                        [[ -d $d ]] && rk_rmdir_cg "$d" && rk_log "cleanup: removed $d left by the test program"
                done
        done
        return 0
}
trap 'rc=$?; remove_leftovers; (exit $rc); rk_cleanup' EXIT

rk_run_program test-limits-real "$PROG"
exit 0
