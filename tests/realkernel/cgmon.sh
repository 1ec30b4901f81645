#!/bin/bash
# SPDX-License-Identifier: MIT
# cgmon: the cgroup monitor on real cgroups (v1 memory + their unified twins
# on a hybrid host). The work is in tests/cgmon/test-cgmon-real.c, which
# creates, checks and removes mthpd-test-cgmon-PID-* cgroups itself; this
# wrapper adds the real-kernel lock, the THP knob save/restore of lib.sh
# (the workload must not run beside another real-kernel test) and a second
# cleanup of those cgroups should the program be killed.
#
# Usage: cgmon.sh MTHPD MTHPCTL WORKLOAD TEST-CGMON-REAL
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3 PROG=$4
. "$(dirname "$0")/lib.sh"
rk_init cgmon

remove_leftovers() {
        local d
        [[ -n $RK_CPID ]] || return 0
        for d in /sys/fs/cgroup/memory/mthpd-test-cgmon-"$RK_CPID"-* /sys/fs/cgroup/unified/mthpd-test-cgmon-"$RK_CPID"-* \
                /sys/fs/cgroup/mthpd-test-cgmon-"$RK_CPID"-*; do
                [[ -d $d ]] || continue
                rmdir "$d" 2>/dev/null && rk_log "cleanup: removed $d left by the test program"
        done
}
trap 'rc=$?; remove_leftovers; (exit $rc); rk_cleanup' EXIT

rk_run_program test-cgmon-real "$PROG" "$WORKLOAD"
exit 0
