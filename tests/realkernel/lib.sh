# SPDX-License-Identifier: MIT
# Shared helpers for the real-kernel tests (sourced, not run).
#
# These tests write the host's real THP knobs on a shared machine. Rules:
#  - every THP selection knob is saved before anything is written and put
#    back on every exit path (EXIT/INT/TERM trap), also through mthpd's own
#    journal ('mthpctl restore'); the exit trap then checks every knob against
#    its saved value and fails the test if one differs;
#  - processes are stopped by PID only; every loop is bounded;
#  - state lives in a mktemp directory, never /run/mthpd;
#  - exit 77 (skip) without root or without writable THP sysfs;
#  - one real-kernel test at a time, also across build trees (flock).
#
# Callers set MTHPD, MTHPCTL, WORKLOAD (paths) and call rk_init NAME.

THP=/sys/kernel/mm/transparent_hugepage
RK_LOCK=${MTHP_REALKERNEL_LOCK:-/tmp/mthpd-realkernel.lock}
RK_PIDS=()        # processes this test started (stopped by PID on exit)
RK_STATE_DIRS=()  # mthpd state dirs to 'mthpctl restore' on exit
RK_FAILS=0
RK_NAME=realkernel

# mthpd logs to the journal when JOURNAL_STREAM matches its stderr; the
# tests read its stderr.
unset JOURNAL_STREAM

rk_log() { printf '%s: %s\n' "$RK_NAME" "$*"; }
rk_fail() { printf '%s: FAIL: %s\n' "$RK_NAME" "$*"; RK_FAILS=$((RK_FAILS + 1)); }
rk_skip() { printf '%s: SKIP: %s\n' "$RK_NAME" "$*"; exit 77; }
rk_die() { printf '%s: FAIL: %s\n' "$RK_NAME" "$*"; RK_FAILS=$((RK_FAILS + 1)); exit 1; }

# Run a C test program that prints its own lines (test-cgmon-real, ...):
# rk_run_program NAME PROGRAM [ARGS...]. In the background and tracked, so
# rk_cleanup stops it; RK_CPID is its PID (it names its cgroups after it).
# Its exit 77 skips this test with its last SKIP reason; any other non-zero
# exit is a failure.
RK_CPID=
rk_run_program() {
        local name=$1 rc
        shift
        "$@" >"$RK_TMP/prog.out" 2>&1 &
        RK_CPID=$!
        rk_track $RK_CPID
        wait $RK_CPID
        rc=$?
        cat "$RK_TMP/prog.out"
        ((rc == 77)) && rk_skip "$name: $(sed -n 's/^.*SKIP: //p' "$RK_TMP/prog.out" | tail -n 1)"
        ((rc == 0)) || rk_fail "$name exited with $rc"
        return 0
}

# Every writable selection knob: per-size ones ascending by size, then the
# global ones. One path per line.
rk_knob_files() {
        local d f
        for d in $(ls -d "$THP"/hugepages-*kB 2>/dev/null | sort -t- -k2 -n); do
                for f in enabled shmem_enabled; do
                        [[ -e $d/$f ]] && echo "$d/$f"
                done
        done
        for f in enabled defrag shmem_enabled; do
                [[ -e $THP/$f ]] && echo "$THP/$f"
        done
}

# The numeric knobs mthpd also writes (the shrinker safety net under 2M):
# saved, restored and checked with the selection knobs, but not in
# rk_knob_files, whose callers walk selection values.
rk_numeric_knob_files() {
        local f
        for f in khugepaged/max_ptes_none shrink_underused; do
                [[ -e $THP/$f ]] && echo "$THP/$f"
        done
}

# The selected value: the bracketed word (a numeric knob: its number).
rk_get() {
        case $1 in
        */khugepaged/max_ptes_none | */shrink_underused) tr -d ' \n' <"$1" ;;
        *) sed -n 's/.*\[\([^]]*\)\].*/\1/p' "$1" ;;
        esac
}
# The accepted values, one per line.
rk_values() { tr -d '[]' <"$1" | tr ' ' '\n' | sed '/^$/d'; }

# rk_set FILE VALUE: one write(2) like mthpd does. Returns the write's status;
# RK_SET_ERR gets the shell's error text ("Invalid argument" for EINVAL).
rk_set() {
        local errf=$RK_TMP/set.err
        if printf '%s' "$2" 2>"$errf" >"$1"; then
                RK_SET_ERR=
                return 0
        fi
        RK_SET_ERR=$(sed 's/^.*: //' "$errf")
        return 1
}

# "hugepages-64kB/enabled" -> "64K/anon" (mthpd's knob ids), globals -> global/X
rk_id() {
        local f=$1 kb name
        case $f in
        */khugepaged/max_ptes_none) echo "khugepaged/max_ptes_none" ;;
        */hugepages-*kB/*)
                kb=${f##*/hugepages-}; kb=${kb%%kB/*}; name=${f##*/}
                if ((kb >= 1048576 && kb % 1048576 == 0)); then kb="$((kb / 1048576))G"
                elif ((kb >= 1024 && kb % 1024 == 0)); then kb="$((kb / 1024))M"
                else kb="${kb}K"; fi
                [[ $name == enabled ]] && echo "$kb/anon" || echo "$kb/shmem" ;;
        *) echo "global/${f##*/}" ;;
        esac
}

# Snapshot of every knob: "PATH VALUE" lines.
rk_snapshot() {
        local f
        while read -r f; do echo "$f $(rk_get "$f")"; done < <(rk_knob_files; rk_numeric_knob_files)
}

# Put every knob back to the values in snapshot file $1. Up to 4 passes:
# the kernel refuses per-size shmem 'inherit' while global shmem is 'force'
# and global 'force' while a non-PMD size inherits, so the order that works
# depends on where we come from.
rk_restore_to() {
        local snap=$1 f v bad
        for _ in 1 2 3 4; do
                bad=0
                while read -r f v; do
                        [[ $(rk_get "$f") == "$v" ]] && continue
                        rk_set "$f" "$v" || true
                        [[ $(rk_get "$f") == "$v" ]] || bad=1
                done <"$snap"
                ((bad == 0)) && return 0
        done
        return 1
}

# Print every knob that differs from snapshot $1; return 1 if any.
# With $2 = partial, $1 may list only some knobs.
rk_diff() {
        local snap=$1 f v cur rc=0
        while read -r f v; do
                cur=$(rk_get "$f")
                if [[ $cur != "$v" ]]; then
                        echo "  $(rk_id "$f"): is '$cur', expected '$v'"
                        rc=1
                fi
        done <"$snap"
        # a knob that appeared or vanished is a difference too
        if [[ ${2:-} != partial && $( (rk_knob_files; rk_numeric_knob_files) | sort) != $(cut -d' ' -f1 "$snap" | sort) ]]; then
                echo "  the set of knob files changed"
                rc=1
        fi
        return $rc
}

# rk_check_all WHAT: every knob equals the saved one, else count a failure.
rk_check_all() {
        local out
        if out=$(rk_diff "$RK_SAVED"); then
                rk_log "ok: $1: every knob has its saved value"
                return 0
        fi
        rk_fail "$1: knobs differ from the saved values:"
        echo "$out"
        return 1
}

rk_track() { RK_PIDS+=("$1"); }

# rk_rmdir_cg DIR: remove a cgroup this test created, once its killed
# processes are gone (a v1 memory cgroup refuses rmdir while they exit and
# their memory is uncharged). Bounded: 5 s.
rk_rmdir_cg() {
        local i
        for ((i = 0; i < 100; i++)); do
                rmdir "$1" 2>/dev/null && return 0
                [[ -d $1 ]] || return 0
                sleep 0.05
        done
        rk_log "cleanup: could not remove $1 within 5 s"
        return 1
}

# rk_stop PID [SIGNAL] [TIMEOUT_S]: signal, wait bounded, then SIGKILL.
# Sets RK_STOP_RC to the process's exit status, RK_STOP_EARLY=1 if it had
# exited before the signal.
rk_alive() { kill -0 "$1" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
rk_stop() {
        local pid=$1 sig=${2:-TERM} t=${3:-10} i
        RK_STOP_RC='' RK_STOP_EARLY=0
        rk_alive "$pid" || { RK_STOP_EARLY=1; wait "$pid" 2>/dev/null; RK_STOP_RC=$?; return 0; }
        kill -s "$sig" "$pid" 2>/dev/null
        for ((i = 0; i < t * 100; i++)); do
                # a zombie child still answers kill -0 until waited: rk_alive checks its state
                rk_alive "$pid" || break
                sleep 0.01
        done
        if rk_alive "$pid"; then
                rk_log "pid $pid did not stop on SIG$sig within ${t}s: SIGKILL"
                kill -KILL "$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
        RK_STOP_RC=$?
}

# rk_wait_for FILE REGEX TIMEOUT_S [PID]: bounded wait for a line in a log;
# gives up early when PID (the writer) has exited.
rk_wait_for() {
        local i
        for ((i = 0; i < $3 * 20; i++)); do
                grep -qE -- "$2" "$1" 2>/dev/null && return 0
                if [[ -n ${4:-} ]] && ! rk_alive "$4"; then
                        grep -qE -- "$2" "$1" 2>/dev/null
                        return
                fi
                sleep 0.05
        done
        return 1
}

# rk_wait_value FILE VALUE TIMEOUT_S: bounded wait for a knob to read VALUE.
rk_wait_value() {
        local i
        for ((i = 0; i < $3 * 20; i++)); do
                [[ $(rk_get "$1") == "$2" ]] && return 0
                sleep 0.05
        done
        return 1
}

rk_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A state directory under the test's temp dir, restored on exit.
rk_state_dir() {
        local d
        d=$(mktemp -d "$RK_TMP/state.XXXXXX")
        RK_STATE_DIRS+=("$d")
        echo "$d"
}

# rk_config FILE [KEY=VALUE...]: a fast-reacting mthpd.conf; arguments
# override [Engine] keys. Pressure and fallback guards are disabled so the
# engine steps up on every tick no matter what the host is doing.
# CollapseCPU=20%: the 20 ms of MADV_COLLAPSE a tick these tests were
# written against (at 100 ms ticks; the default 2% is 2 ms there).
rk_config() {
        local file=$1
        shift
        # Density is off (no process counts: MinProcessFaultRate out of
        # reach), so the engine climbs blind, one size a tick, up to 2M:
        # these tests are about writes and restores, not about density.
        declare -A e=([AnonSizes]=16K-2M [ShmemSizes]=16K-2M [RaiseFaultRate]=1 [LowerFaultRate]=0
                [ConfirmTicks]=1 [LowerTicks]=1000 [DwellTicks]=0 [PressureMax]=100 [MinAvailable]=0
                [MaxFallback]=100 [MinProcessFaultRate]=1000000000000000 [UnmeasuredMaxSize]=2M [VerifyTicks]=100
                [CgroupHeadroom]=0 [CollapseCPU]=20%)
        local kv k
        for kv in "$@"; do e[${kv%%=*}]=${kv#*=}; done
        {
                printf '[Daemon]\nInterval=100ms\nMode=manage\n\n[Engine]\n'
                for k in "${!e[@]}"; do printf '%s=%s\n' "$k" "${e[$k]}"; done
        } >"$file"
}

# rk_sampling_config INTERVAL: the start of the tests whose workload holds
# shared memory and faults one kind, so that fault sampling splits its
# faults between anon and shmem (early-tick, fault-kinds). Skips when there
# is no 2M shmem knob, or when WORKLOAD is built with a sanitizer (its
# shadow memory would be most of its anon: another process than the one
# described). Then writes CONF=$RK_TMP/mthpd.conf (rk_config): density
# decides (MinProcessFaultRate within reach), one tick confirms it, no idle
# advise of shmem (ShmemAlign=no: any shmem write is a raise), and the
# daemon ticks every INTERVAL.
rk_sampling_config() {
        [[ -e $THP/hugepages-2048kB/shmem_enabled ]] || rk_skip "no 2M shmem knob ($THP/hugepages-2048kB/shmem_enabled)"
        rk_sanitized "$WORKLOAD" && rk_skip "$WORKLOAD is built with a sanitizer: its shadow memory is most of its anon"
        CONF=$RK_TMP/mthpd.conf
        rk_config "$CONF" MinProcessFaultRate=100 RaiseFaultRate=1000 UnmeasuredMaxSize=16K LowerTicks=1000 \
                DensityConfirmTicks=1 VerifyTicks=100 ShmemAlign=no
        sed -i "s/^Interval=.*/Interval=$1/" "$CONF"
}

# rk_workloads SECONDS: one dense anon and one dense shmem fault loop, so
# both kinds have demand. PIDs are tracked.
RK_WL_PIDS=()
rk_workloads() {
        local s=$1 k
        RK_WL_PIDS=()
        for k in anon shmem; do
                "$WORKLOAD" --kind "$k" --pattern dense --size 64M --seconds "$s" --quiet \
                        >"$RK_TMP/workload-$k.out" 2>&1 &
                RK_WL_PIDS+=($!)
                rk_track $!
        done
}
rk_workloads_stop() {
        local p
        for p in "${RK_WL_PIDS[@]}"; do rk_stop "$p" TERM 10; done
        RK_WL_PIDS=()
}
rk_workload_rates() {
        local k
        for k in anon shmem; do
                sed -n 's/^summary .*pages_per_s=\([0-9]*\).*/'"$k"' \1 pages\/s/p' "$RK_TMP/workload-$k.out" 2>/dev/null
        done | paste -sd, -
}

rk_cleanup() {
        local rc=$? p d out
        trap - EXIT INT TERM HUP
        trap '' PIPE  # a closed stdout must not cut the restore short
        set +e
        for p in "${RK_PIDS[@]}"; do
                kill -0 "$p" 2>/dev/null && rk_stop "$p" TERM 10
        done
        for d in "${RK_STATE_DIRS[@]}"; do
                if [[ -e $d/restore.journal ]]; then
                        rk_log "cleanup: journal left in $d: mthpctl restore"
                        "$MTHPCTL" --state-dir "$d" restore 2>&1 | sed 's/^/  /'
                fi
        done
        if [[ -n ${RK_SAVED:-} && -s $RK_SAVED ]]; then
                rk_restore_to "$RK_SAVED"
                if out=$(rk_diff "$RK_SAVED"); then
                        rk_log "final check: every THP knob equals its saved value"
                else
                        echo "$RK_NAME: FAIL: final check: knobs differ from the saved values:"
                        echo "$out"
                        echo "$RK_NAME: the saved values are in $RK_SAVED ('PATH VALUE' lines)"
                        RK_FAILS=$((RK_FAILS + 1))
                        RK_KEEP_TMP=1
                fi
        fi
        if ((rc == 0 && RK_FAILS > 0)); then rc=1; fi
        if ((rc == 77)); then
                :
        elif ((rc == 0)); then
                rk_log PASS
        else
                rk_log "FAILED ($RK_FAILS failure(s), exit $rc); logs kept in $RK_TMP"
                RK_KEEP_TMP=1
        fi
        [[ -n ${RK_TMP:-} && -d $RK_TMP && -z ${RK_KEEP_TMP:-} ]] && rm -rf "$RK_TMP"
        exit $rc
}

# rk_init NAME: checks, lock, temp dir, saved knobs, traps.
rk_init() {
        RK_NAME=$1
        local b
        for b in MTHPD MTHPCTL WORKLOAD; do
                [[ -x ${!b:-} ]] || { echo "$RK_NAME: $b is not an executable: '${!b:-}'"; exit 1; }
        done
        [[ $(id -u) == 0 ]] || rk_skip "needs root"
        [[ -r $THP/enabled ]] || rk_skip "no $THP"
        if [[ ! -w $THP/enabled ]]; then
                # say which: a read-only mount (a container, .ci/fresh) or permissions
                local mnt
                mnt=$(findmnt -no OPTIONS -T "$THP" 2>/dev/null || true)
                [[ ,$mnt, == *,ro,* ]] && rk_skip "$THP/enabled is not writable: sysfs is mounted read-only here"
                rk_skip "$THP/enabled is not writable"
        fi

        # Serialize with other real-kernel runs (other build trees too).
        exec 9>>"$RK_LOCK" || rk_skip "cannot open lock $RK_LOCK"
        if ! flock -w 240 9; then
                echo "$RK_NAME: another real-kernel test held $RK_LOCK for 4 min"
                exit 1
        fi

        RK_TMP=$(mktemp -d "/tmp/mthpd-rk-$RK_NAME.XXXXXX")
        RK_SAVED=$RK_TMP/saved-knobs
        trap rk_cleanup EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        trap 'exit 129' HUP
        trap 'exit 141' PIPE
        rk_snapshot >"$RK_SAVED"
        [[ -s $RK_SAVED ]] || rk_die "no THP knobs found"
        # Probe: write a knob's current value back to itself.
        local cur
        cur=$(rk_get "$THP/enabled")
        if ! rk_set "$THP/enabled" "$cur"; then
                RK_SAVED=  # nothing was changed
                rk_skip "THP sysfs not writable: writing '$cur' to $THP/enabled: $RK_SET_ERR"
        fi
        rk_log "saved $(wc -l <"$RK_SAVED") knobs to $RK_SAVED: $(while read -r f v; do printf '%s=%s ' "$(rk_id "$f")" "$v"; done <"$RK_SAVED")"
}

# The PMD size in kB.
rk_pmd_kb() { echo $(($(cat "$THP/hpage_pmd_size") / 1024)); }

# rk_sanitized BIN...: true if one of BIN... is built with a sanitizer
# (ASan, TSan): its runtime maps shadow memory of its own.
rk_sanitized() {
        local b
        for b; do
                case "$(ldd "$b" 2>/dev/null)" in *libasan* | *libtsan*) return 0 ;; esac
        done
        return 1
}

# rk_skip_sanitized_reads_allocate BIN: skips when BIN is built with a
# sanitizer and this kernel has no shared zero page (a read of untouched
# anon memory allocates a page: this 6.18 host boots pvm_no_zero_page=1).
# The runtime reads its shadow and allocator regions, so they become dense
# anon of BIN's own beside the workload's region: other collapse candidates,
# and MADV_NOHUGEPAGE (shadow) memory that is most of its anon. With the
# zero page those reads map nothing and the test can still do its job.
rk_skip_sanitized_reads_allocate() {
        rk_sanitized "$1" || return 0
        local grew
        grew=$(python3 -c '
import mmap
def rss():
    for l in open("/proc/self/status"):
        if l.startswith("RssAnon:"):
            return int(l.split()[1])
m = mmap.mmap(-1, 16 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m.madvise(mmap.MADV_NOHUGEPAGE)  # the 4K zero page, not a 2M folio under enabled=always
b = rss()
s = sum(m[i] for i in range(0, len(m), 4096))
print(rss() - b)') || return 0
        ((grew >= 8192)) &&
                rk_skip "$1 is built with a sanitizer and a read of untouched anon memory allocates here (16 MiB read: RssAnon +${grew} kB; no shared zero page): its shadow and allocator memory is dense anon of its own beside the workload's"
        return 0
}

# rk_sizes_never: every per-size knob (anon and shmem) and the global
# shmem_enabled to never (saved by rk_init, restored on exit), so that a
# workload's memory is filled in 4K folios. Dies if one cannot be written.
rk_sizes_never() {
        local f
        while read -r f; do
                case $f in
                */hugepages-*kB/enabled | */hugepages-*kB/shmem_enabled) rk_set "$f" never || rk_die "writing never to $f: $RK_SET_ERR" ;;
                esac
        done < <(rk_knob_files)
        rk_set "$THP/shmem_enabled" never || rk_die "writing never to $THP/shmem_enabled: $RK_SET_ERR"
}

# rk_wait_shm_collapse LOG MPID PID COMM MIB SECONDS: wait for mthpd (MPID,
# logging to LOG) to collapse some of PID's MIB MiB shmem mapping. 0 when
# it did. Otherwise it skips (mthpd stopped) when 2M/shmem never went to
# always or the density sampler never named PID, and else returns 1 having
# counted a failure.
rk_wait_shm_collapse() {
        local log=$1 mpid=$2 pid=$3 comm=$4 mib=$5 secs=$6
        rk_wait_for "$log" "collapsed [0-9]+ region\\(s\\), [0-9]+ MiB, of pid $pid \\($comm\\)'s $mib MiB shmem" "$secs" "$mpid" &&
                return 0
        grep -qE '2M/shmem: [a-z]+ -> always' "$log" ||
                { rk_stop "$mpid" TERM 10; rk_skip "mthpd set 2M/shmem always not within $secs s on this host now (e.g. a memory-limited cgroup of another test holds raises back)"; }
        grep -qE "pid $pid \\($comm" "$log" ||
                { rk_stop "$mpid" TERM 10; rk_skip "mthpd's density sampler never reached the workload among $(ls /proc | grep -c '^[0-9]') processes: nothing to judge"; }
        rk_fail "2M/shmem was raised and the workload sampled, but mthpd collapsed none of its shmem in $secs s"
        grep -E 'MADV_COLLAPSE|2M/shmem' "$log" | tail -5 | cut -c1-600 | sed 's/^/    /'
        return 1
}

# rk_shm_pmd_kb PID: the kB of PID's shmem mapped by PMDs (smaps
# ShmemPmdMapped, summed); 0 when PID is gone or unreadable.
rk_shm_pmd_kb() {
        [[ -r /proc/$1/smaps ]] || { echo 0; return; }
        awk '/^ShmemPmdMapped:/ { s += $2 } END { print s + 0 }' "/proc/$1/smaps" 2>/dev/null || echo 0
}

# rk_start_shm_4k FILL_S SETTLE_S: starts mthp-workload on a 512 MiB
# shared segment it fills densely over FILL_S seconds and holds (90 s at
# most), tracked, without the real-kernel lock; waits SETTLE_S and skips
# unless none of it is PMD-mapped (the 4K page cache a repair test needs).
# Sets RK_WL (its pid) and RK_WL_MS (rk_now_ms at its start).
rk_start_shm_4k() {
        local before
        "$WORKLOAD" --kind shmem --pattern dense --size 512M --hold --fill-seconds "$1" --seconds 90 \
                >"$RK_TMP/workload.out" 2>&1 9>&- &
        RK_WL=$!
        rk_track $RK_WL
        RK_WL_MS=$(rk_now_ms)
        sleep "$2"
        before=$(rk_shm_pmd_kb $RK_WL)
        [[ $before == 0 ]] || rk_skip "the workload's segment is PMD-mapped before mthpd runs (ShmemPmdMapped $before kB): the 4K page cache this test needs was not made"
}

# rk_poll_shm_pmd PID WANT_KB N: reads rk_shm_pmd_kb PID every 0.5 s, at
# most N times, until it reaches WANT_KB. Sets RK_PMD_MAX (kB, the most it
# read) and RK_PMD_SERIES (each read, MiB).
rk_poll_shm_pmd() {
        local i v
        RK_PMD_MAX=0 RK_PMD_SERIES=""
        for ((i = 0; i < $3 && RK_PMD_MAX < $2; i++)); do
                sleep 0.5
                v=$(rk_shm_pmd_kb "$1")
                ((v > RK_PMD_MAX)) && RK_PMD_MAX=$v
                RK_PMD_SERIES+="$((v >> 10)) "
        done
}

# rk_need_pagemap_scan: skips unless the kernel is 6.7 or later:
# PAGEMAP_SCAN, which mthpd's shmem repair needs (its probe of PMD-aligned
# mappings and the collapser's scan).
rk_need_pagemap_scan() {
        local kmaj kmin
        IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
        kmin=${kmin%%[!0-9]*}
        ((${kmaj:-0} * 100 + ${kmin:-0} >= 607)) ||
                rk_skip "kernel $(uname -r) has no PAGEMAP_SCAN (6.7): mthpd's shmem repair needs it"
}

# rk_attempts N SKIP FAIL: runs the caller's `attempt K` for K = 1..N (it
# returns 0 in time, 1 late, 2 not judged) and exits 0 at the first in
# time; none judged: skips with SKIP; else fails with FAIL (late attempts
# counted) and exits 0 for the restore checks of the exit trap.
rk_attempts() {
        local n=$1 a late=0
        for ((a = 1; a <= n; a++)); do
                attempt $a
                case $? in
                0) exit 0 ;;
                1) late=$((late + 1)) ;;
                esac
        done
        ((late > 0)) || rk_skip "$2"
        rk_fail "$3 in $late of $n attempts, and no attempt was in time"
        exit 0
}

# rk_start_stamped LOG: starts "$MTHPD" -v -c "$CONF" with a fresh state
# directory, each stderr line stamped with the time it was read (ms; no
# fork per line, $EPOCHREALTIME, so a busy host does not delay the
# stamps) into LOG; sets RK_MPID (tracked) and waits until it manages.
rk_start_stamped() {
        local log=$1 state
        state=$(rk_state_dir)
        "$MTHPD" -v -c "$CONF" --state-dir "$state" --no-bus 2> >(while IFS= read -r l; do
                printf '%s %s\n' "$((${EPOCHREALTIME//[!0-9]/} / 1000))" "$l"; done >"$log") &
        RK_MPID=$!
        rk_track $RK_MPID
        rk_wait_for "$log" 'managing mTHP knobs every' 10 $RK_MPID || rk_die "mthpd did not start"$'\n'"$(cut -c1-300 "$log")"
}
