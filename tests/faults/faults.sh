#!/bin/bash
# Fault injection on the fake host with the real mthpd and mthpctl: mthpd
# never leaves a host worse than it found it. One scenario per run:
#   faults.sh SCENARIO   (write-errors, knob-vanishes, counters-backwards,
#                         proc-gone, cgroups-gone, no-psi, state-dir,
#                         journal-bad, storm)
# Each named check prints PASS (or FAIL with mthpd's log, and exits 1).
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

SCENARIO=${1:?usage: faults.sh SCENARIO}
fakehost_setup "mthpd-faults-$SCENARIO"
"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 100
snapshot_knobs "$T/orig.knobs"
KNOBS="16K/anon 16K/shmem 32K/anon 32K/shmem 64K/anon 64K/shmem"

# Stop with SIGTERM: exit 0, journal gone, every knob file as before the start.
term_restores() {
        stop_mthpd TERM
        [ "$RC" = 0 ] || { echo "SIGTERM exit code $RC" >&2; return 1; }
        [ ! -e "$STATE/restore.journal" ] || { echo "journal left after SIGTERM" >&2; return 1; }
        same_knobs "$T/orig.knobs"
}

# ---------------------------------------------------------------------------
write_errors() {
        local e
        for e in EINVAL EBUSY EACCES EIO; do
                # one knob fails, then heals
                "$FAKEHOST" fail "$ROOT" 16K/anon "$e"
                start_mthpd -c "$FAST" --no-bus
                bump_faults 25
                check "$e one knob: mthpd keeps running" alive
                check "$e one knob: the others are raised" knob_is hugepages-64kB/shmem_enabled always
                # the ladder is cumulative: anon does not claim sizes above
                # the one the kernel refuses (the engine follows what was written)
                check "$e one knob: anon stays below the refused size" knob_is hugepages-32kB/enabled never
                check "$e one knob: knob keeps its original" knob_is hugepages-16kB/enabled never
                local n; n=$(count "16K/anon (.*): writing 'always' failed")
                check "$e one knob: logged once over 25 ticks (got $n)" [ "$n" = 1 ]
                local words; words=$(python3 -c 'import errno, os, sys; print(os.strerror(getattr(errno, sys.argv[1])))' "$e")
                check "$e one knob: the log names the error" grep -Eiq "failed: .*(\($e\)|$words)" "$LOG"
                check "$e one knob: file, journal and status agree" knob_consistent 16K/anon
                "$FAKEHOST" fail "$ROOT" 16K/anon none
                bump_faults 10
                check "$e healed: the knob is raised" knob_is hugepages-16kB/enabled always
                n=$(count "16K/anon: no longer failing")
                check "$e healed: the recovery is logged once (got $n)" [ "$n" = 1 ]
                for k in $KNOBS; do knob_consistent "$k" || fail "$e healed: $k inconsistent"; done
                pass "$e healed: every knob's file, journal and status agree"
                check "$e: SIGTERM puts every knob back byte for byte" term_restores

                # every knob fails from the start
                for k in $KNOBS; do "$FAKEHOST" fail "$ROOT" "$k" "$e"; done
                start_mthpd -c "$FAST" --no-bus
                bump_faults 25
                check "$e all knobs: mthpd keeps running" alive
                n=$(count "writing 'always' failed")
                # one line per knob the engine tried: 16K/anon and 16K/shmem
                # at least, never one per tick
                check "$e all knobs: one line per failing knob ($n, <= 6)" [ "$n" -ge 2 ] && [ "$n" -le 6 ]
                check "$e all knobs: nothing changed" same_knobs "$T/orig.knobs"
                for k in $KNOBS; do knob_consistent "$k" || fail "$e all knobs: $k inconsistent"; done
                pass "$e all knobs: file, journal and status agree"
                # transient: heal all, the engine gets its way, then fail again before the stop
                for k in $KNOBS; do "$FAKEHOST" fail "$ROOT" "$k" none; done
                bump_faults 10
                check "$e all healed: raised" knob_is hugepages-64kB/enabled always
                check "$e: SIGTERM puts every knob back byte for byte" term_restores

                # a knob that cannot be put back at SIGTERM keeps its original
                start_mthpd -c "$FAST" --no-bus
                bump_faults 20
                check "$e at SIGTERM: raised" knob_is hugepages-32kB/enabled always
                "$FAKEHOST" fail "$ROOT" 32K/anon "$e"
                stop_mthpd TERM
                check "$e at SIGTERM: exit 1 ($RC)" [ "$RC" = 1 ]
                check "$e at SIGTERM: the journal keeps 32K/anon's original" \
                        [ "$(journal_key 32K/anon original)" = never ]
                check "$e at SIGTERM: only 32K/anon is left in the journal" \
                        [ "$(grep -c '^\[knob ' "$STATE/restore.journal")" = 1 ]
                check "$e at SIGTERM: the failure is logged" grep -q "restore 32K/anon: writing 'never'" "$LOG"
                "$FAKEHOST" fail "$ROOT" 32K/anon none
                check "$e at SIGTERM: mthpctl restore finishes once writes work" ctl restore
                check "$e at SIGTERM: every knob byte for byte as before" same_knobs "$T/orig.knobs"
        done
}

# ---------------------------------------------------------------------------
bump_low() { # bump_low N: like bump_faults, counting only the 16K allocations
        for _ in $(seq "$1"); do
                "$FAKEHOST" bump "$ROOT" --pgfault 20000 \
                        --size 16 --stat anon_fault_alloc --add 50 --size 16 --stat shmem_alloc --add 50
                sleep 0.05
        done
}

knob_vanishes() {
        start_mthpd -c "$FAST" --no-bus
        bump_faults 20
        check "before: 64K raised" knob_is hugepages-64kB/enabled always
        # the 64K directory disappears (hot-unplugged size, or a sysfs remount)
        cp -a "$ROOT$THP/hugepages-64kB" "$T/saved-64kB"
        rm -rf "$ROOT$THP/hugepages-64kB"
        bump_low 15
        check "64K gone: mthpd keeps running" alive
        # a 32K file alone disappears, the engine wants it lowered later
        cp -a "$ROOT$THP/hugepages-32kB/enabled" "$T/saved-32k-enabled"
        rm -f "$ROOT$THP/hugepages-32kB/enabled"
        sleep 1   # 10 quiet ticks: the engine would lower, the knob is gone
        check "32K/anon gone: mthpd keeps running" alive
        local n; n=$(grep -c "64K/anon\|64K/shmem" "$LOG" | head -1)
        check "the vanished knobs are not logged every tick ($n lines mention 64K)" [ "$n" -le 8 ]
        # they come back (new inodes, as sysfs would make them)
        cp -a "$T/saved-64kB" "$ROOT$THP/hugepages-64kB"
        cp -a "$T/saved-32k-enabled" "$ROOT$THP/hugepages-32kB/enabled"
        bump_faults 10
        check "back: mthpd keeps running" alive
        for k in $KNOBS; do knob_consistent "$k" || fail "back: $k inconsistent"; done
        pass "back: every knob's file, journal and status agree"
        check "SIGTERM puts every knob back byte for byte" term_restores

        # a knob that is gone at SIGTERM: its original stays in the journal
        start_mthpd -c "$FAST" --no-bus
        bump_faults 20
        check "raised again" knob_is hugepages-64kB/enabled always
        rm -rf "$T/saved-64kB"; cp -a "$ROOT$THP/hugepages-64kB" "$T/saved-64kB"
        rm -rf "$ROOT$THP/hugepages-64kB"
        stop_mthpd TERM
        check "gone at SIGTERM: exit code says not everything was restored ($RC)" [ "$RC" = 1 ]
        check "gone at SIGTERM: the journal keeps 64K's original" grep -q "^\[knob 64K/anon\]" "$STATE/restore.journal"
        check "gone at SIGTERM: the others are restored" knob_is hugepages-32kB/enabled never
        cp -a "$T/saved-64kB" "$ROOT$THP/hugepages-64kB"
        check "back: mthpctl restore finishes the job" ctl restore
        check "back: every knob byte for byte as before" same_knobs "$T/orig.knobs"
}

# ---------------------------------------------------------------------------
counters_backwards() {
        # quiet host: counters move a little, below the raise threshold
        start_mthpd -c "$FAST" --no-bus
        for _ in $(seq 10); do "$FAKEHOST" bump "$ROOT" --pgfault 5; sleep 0.05; done
        check "quiet: nothing raised" same_knobs "$T/orig.knobs"
        # vmstat and every per-size stat reset to 0, then resume from there
        local v; v=$("$FAKEHOST" read "$ROOT" /proc/vmstat | awk '$1 == "pgfault" { print $2 }')
        "$FAKEHOST" bump "$ROOT" --vmstat pgfault --set 0 --vmstat thp_fault_alloc --set 0 \
                --size 16 --stat anon_fault_alloc --set 0 --size 64 --stat shmem_alloc --set 0
        sleep 0.3
        for _ in $(seq 10); do "$FAKEHOST" bump "$ROOT" --pgfault 5; sleep 0.05; done
        check "reset from $v to 0: mthpd keeps running" alive
        check "reset: no knob changed" same_knobs "$T/orig.knobs"
        local rate; rate=$(ctl --json status | python3 -c 'import json,sys; d=json.load(sys.stdin); print(int(d.get("fault_pages_rate", 0)))' 2>/dev/null || echo 0)
        check "reset: status rate is not absurd ($rate pages/s)" [ "$rate" -lt 1000000 ]
        check "reset: no change logged" sh -c "! grep -q '^mthpd: set ' '$LOG'"
        # the other way: huge counters going backwards while mthpd has raised
        bump_faults 20
        check "raised under load" knob_is hugepages-64kB/enabled always
        "$FAKEHOST" bump "$ROOT" --vmstat pgfault --set 1 \
                --size 16 --stat anon_fault_alloc --set 0 --size 32 --stat anon_fault_alloc --set 0 \
                --size 64 --stat anon_fault_alloc --set 0
        bump_faults 5
        check "reset under load: still raised (a reset is not a lull)" knob_is hugepages-64kB/enabled always
        for k in $KNOBS; do knob_consistent "$k" || fail "reset under load: $k inconsistent"; done
        pass "reset under load: every knob's file, journal and status agree"
        check "SIGTERM puts every knob back byte for byte" term_restores
}

# ---------------------------------------------------------------------------
proc_gone() {
        # /proc/vmstat (every tick's base) unreadable for a while, then back
        start_mthpd -c "$FAST" --no-bus
        bump_faults 20
        check "before: raised" knob_is hugepages-64kB/enabled always
        cp -a "$ROOT/proc/vmstat" "$T/vmstat.saved"
        rm "$ROOT/proc/vmstat"
        sleep 1
        check "vmstat gone for 10 ticks: mthpd keeps running" alive
        local n; n=$(count "sampling failed")
        check "vmstat gone: logged once, not every tick ($n)" [ "$n" = 1 ]
        check "vmstat gone: the knobs stay as they were" knob_is hugepages-64kB/enabled always
        cp -a "$T/vmstat.saved" "$ROOT/proc/vmstat"
        bump_faults 5
        check "vmstat back: recovery logged once" [ "$(count "sampling works again")" = 1 ]
        for k in $KNOBS; do knob_consistent "$k" || fail "vmstat back: $k inconsistent"; done
        pass "vmstat back: every knob's file, journal and status agree"
        check "SIGTERM puts every knob back byte for byte" term_restores
}

# ---------------------------------------------------------------------------
cgroups_gone() {
        start_mthpd -c "$FAST" --no-bus
        local i d
        for i in $(seq 40); do
                d=$("$FAKEHOST" cgroup "$ROOT" "mthpd-test-gone-$i/child")
                "$FAKEHOST" bump "$ROOT" --pgfault 20000 --size 16 --stat anon_fault_alloc --add 50 \
                        --size 16 --stat shmem_alloc --add 50
                rm -rf "$ROOT$(dirname "$d")"
        done
        check "40 cgroups created and removed mid-run: mthpd keeps running" alive
        check "no error logged" sh -c "! grep -q 'error' '$LOG'"
        check "SIGTERM puts every knob back byte for byte" term_restores
}

# ---------------------------------------------------------------------------
no_psi() {
        "$FAKEHOST" remove "$ROOT"
        "$FAKEHOST" create "$ROOT" --no-psi
        start_mthpd -c "$FAST" --no-bus
        bump_faults 20
        check "no PSI: mthpd manages" knob_is hugepages-64kB/enabled always
        check "no PSI: said once" [ "$(count 'PSI memory: absent')" = 1 ]
        check "no PSI: SIGTERM puts every knob back" term_restores
        # PSI present at start, gone after
        "$FAKEHOST" remove "$ROOT"
        "$FAKEHOST" create "$ROOT"
        start_mthpd -c "$FAST" --no-bus
        bump_faults 5
        rm -rf "$ROOT/proc/pressure"
        bump_faults 20
        check "PSI gone mid-run: mthpd keeps running" alive
        check "PSI gone mid-run: still manages" knob_is hugepages-64kB/enabled always
        check "PSI gone mid-run: SIGTERM puts every knob back" term_restores
}

# ---------------------------------------------------------------------------
state_dir() {
        # the state directory cannot be created
        touch "$T/file"
        RC=0; LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$ROOT" --state-dir "$T/file/state" -c "$FAST" --no-bus \
                --once 2>"$LOG" || RC=$?
        check "uncreatable state dir: refuses to manage (exit $RC)" [ "$RC" = 1 ]
        check "uncreatable state dir: says why" grep -q "refusing to change knobs without a restore journal" "$LOG"
        check "uncreatable state dir: nothing written" same_knobs "$T/orig.knobs"
        # ... but observing needs no journal
        RC=0; LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$ROOT" --state-dir "$T/file/state" -c "$FAST" --no-bus \
                --once --dry-run 2>"$LOG" || RC=$?
        check "uncreatable state dir: --dry-run still observes (exit $RC)" [ "$RC" = 0 ]

        # the read-only directory is a read-only bind mount in a mount
        # namespace of its own; a test that cannot make it skips, saying why
        # (in a chroot whose / is not a mount point unshare cannot make the
        # mounts private: "cannot change root filesystem propagation")
        local why
        if ! why=$(unshare -m true 2>&1); then
                echo "SKIP: state-dir: the read-only state dir checks need a mount namespace;" \
                        "'unshare -m' as uid $(id -u): ${why:-failed}"
                exit 77
        fi
        # the state directory exists but is read-only (a read-only /run)
        mkdir -p "$T/ro"
        RC=0
        # shellcheck disable=SC2016 # expanded by the inner sh
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift &&
                LD_PRELOAD="$FAKESYSFS" "$@"' sh "$T/ro" "$MTHPD" --root "$ROOT" --state-dir "$T/ro" -c "$FAST" \
                --no-bus --once 2>"$LOG" || RC=$?
        check "read-only state dir: refuses to manage (exit $RC)" [ "$RC" = 1 ]
        check "read-only state dir: names the directory and says why" \
                grep -q "state directory $T/ro is not writable.*refusing to change knobs without a restore journal" "$LOG"
        check "read-only state dir: does not blame another mthpd" sh -c "! grep -q 'another mthpd' '$LOG'"
        check "read-only state dir: nothing written" same_knobs "$T/orig.knobs"
        RC=0
        # shellcheck disable=SC2016 # expanded by the inner sh
        unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift &&
                LD_PRELOAD="$FAKESYSFS" "$@"' sh "$T/ro" "$MTHPD" --root "$ROOT" --state-dir "$T/ro" -c "$FAST" \
                --no-bus --once --dry-run 2>"$LOG" || RC=$?
        check "read-only state dir: --dry-run still observes (exit $RC)" [ "$RC" = 0 ]

        # the journal cannot be saved while mthpd manages (a full or
        # read-only /run): a directory in the way of its temporary file
        # The directory goes in before the faults: a raise that needs a save
        # must come after it. Put after 'bump_low 3', the blind climb (one
        # size a 0.1 s tick) could reach 64K, its ceiling, before the
        # directory did, leaving no raise to fail: under ASan it did, 1 run
        # in 4 (0 failed saves logged).
        start_mthpd -c "$FAST" --no-bus
        # mthpd's own save may hold restore.journal.tmp (a file) this instant:
        # retry until the directory takes its place (bounded: 2 s)
        local i
        for i in $(seq 200); do
                mkdir "$STATE/restore.journal.tmp" 2>/dev/null && break
                sleep 0.01
        done
        [ -d "$STATE/restore.journal.tmp" ] || fail "could not put a directory at $STATE/restore.journal.tmp"
        bump_low 3
        # a tick already under way may still write (its journal was saved):
        # the knobs as they stand once no save can succeed any more
        sleep 0.3
        local before; before=$(knob_files)
        bump_faults 25
        # under ASan on a slow host 25 bumps can pass before a raise is
        # tried: bump on until the first failed save (bounded: 75 more)
        for i in $(seq 75); do
                [ "$(count "cannot save the restore journal")" -ge 1 ] && break
                bump_faults 1
        done
        check "journal unsaveable mid-run: mthpd keeps running" alive
        local n; n=$(count "cannot save the restore journal")
        check "journal unsaveable mid-run: each knob's failure logged once ($n)" [ "$n" -ge 1 ] && [ "$n" -le 6 ]
        check "journal unsaveable mid-run: the log says why" grep -q "restore.journal: Is a directory" "$LOG"
        check "journal unsaveable mid-run: no knob written without a journal" [ "$(knob_files)" = "$before" ]
        for k in $KNOBS; do knob_consistent "$k" || fail "journal unsaveable: $k inconsistent"; done
        pass "journal unsaveable mid-run: every knob's file, journal and status agree"
        rmdir "$STATE/restore.journal.tmp"
        bump_faults 10
        check "journal saveable again: raised" knob_is hugepages-64kB/enabled always
        check "journal saveable again: recovery logged" grep -q "no longer failing" "$LOG"
        check "journal saveable again: SIGTERM puts every knob back" term_restores
}

# ---------------------------------------------------------------------------
journal_bad() {
        # a real journal: raise, kill -9
        start_mthpd -c "$FAST" --no-bus
        bump_faults 20
        # another writer takes 64K/shmem: a foreign entry
        "$FAKEHOST" write "$ROOT" 64K/shmem advise
        wait_for 3 grep -q "64K/shmem was changed by someone else" "$LOG" || fail "foreign write not noticed"
        stop_mthpd 9
        local J=$STATE/restore.journal
        # and a knob whose original is a longer form of another value
        # ("defer" of "defer+madvise"): a cut inside it must not restore "defer"
        "$FAKEHOST" write "$ROOT" global/defrag never
        snapshot_knobs "$T/written.knobs"
        printf '\n[knob global/defrag]\npath=%s/defrag\noriginal=defer+madvise\nwritten=never\nprevious=defer+madvise\nstate=managed\n' \
                "$THP" >> "$J"
        cp "$J" "$T/real.journal"
        check "real journal written" grep -q "^\[knob 64K/shmem\]" "$T/real.journal"

        # other host root: refused, nothing written
        "$FAKEHOST" create "$T/other"
        cp "$T/real.journal" "$J"
        RC=0; "$MTHPCTL" --root "$T/other" --state-dir "$STATE" restore 2>"$T/err" || RC=$?
        check "other root: mthpctl restore refuses ($RC)" [ "$RC" != 0 ]
        check "other root: says which root" grep -q "was written for host root $ROOT, not $T/other" "$T/err"
        check "other root: the journal is kept" cmp -s "$T/real.journal" "$J"
        check "other root: says the journal was not applied" grep -q "was not applied (see above); it is kept" "$T/err"
        RC=0; LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$T/other" --state-dir "$STATE" -c "$FAST" --no-bus --once \
                2>"$LOG" || RC=$?
        check "other root: mthpd refuses to start with exit 6 ($RC)" [ "$RC" = 6 ]
        check "other root: nothing written here" same_knobs "$T/written.knobs"

        # a value the knob does not accept: refused with the file and knob, no write
        sed 's/^original=never$/original=sometimes/' "$T/real.journal" > "$J"
        RC=0; ctl restore 2>"$T/err" || RC=$?
        check "bad value: mthpctl restore fails ($RC)" [ "$RC" != 0 ]
        check "bad value: names the value" grep -q "'sometimes'" "$T/err"
        check "bad value: the intact entry is restored" knob_is defrag defer+madvise
        "$FAKEHOST" write "$ROOT" global/defrag never
        check "bad value: nothing else written" same_knobs "$T/written.knobs"

        # garbage: refused with FILE:LINE
        local g
        for g in empty binary text outside dir; do
                rm -rf "$J"
                case $g in
                empty) : > "$J" ;;
                binary) head -c 4096 /dev/urandom > "$J" ;;
                text) printf '[journal]\nroot=%s\n[knob x]\npath=/etc/passwd\noriginal=x\nwritten=y\nprevious=y\nstate=managed\n' "$ROOT" > "$J" ;;
                # a selection file outside the THP directory: never written
                outside) mkdir -p "$ROOT/proc/sys/vm"   # 16K/anon holds [always] here
                         cp "$ROOT$THP/hugepages-16kB/enabled" "$ROOT/proc/sys/vm/fake_selection"
                         printf '[journal]\nroot=%s\n[knob x]\npath=%s/../../../../proc/sys/vm/fake_selection\noriginal=never\nwritten=always\nprevious=always\nstate=managed\n' \
                                "$ROOT" "$THP" > "$J" ;;
                dir) mkdir "$J" ;;
                esac
                RC=0; ctl restore > "$T/out" 2>"$T/err" || RC=$?
                [ "$RC" -lt 128 ] || fail "garbage $g: mthpctl crashed ($RC)"
                same_knobs "$T/written.knobs" || fail "garbage $g: a knob was written"
                if [ "$g" = outside ]; then
                        grep -q "\[always\]" "$ROOT/proc/sys/vm/fake_selection" || fail "garbage $g: a file outside the THP directory was written"
                        grep -q "is not a knob below $THP" "$T/err" || fail "garbage $g: no clear message"
                fi
                pass "garbage $g: mthpctl restore exit $RC, nothing written: $(cat "$T/err" "$T/out" | head -c 200 | tr '\n' ' ')"
        done
        rm -rf "$J"

        # truncated at every byte offset: mthpctl restore never crashes and
        # never writes a value that is not in the journal
        python3 "$(dirname "$0")/cut-journal.py" "$T/real.journal" "$ROOT" "$STATE" "$T/orig.knobs" \
                "$MTHPCTL" "$MTHPD" "$FAKEHOST" "$FAKESYSFS" "$FAST" || fail "truncated journals"
        pass "truncated journals: every offset checked"
}

# ---------------------------------------------------------------------------
storm() {
        local rounds=${STORM_ROUNDS:-30} r ms e k="" n_kill=0 n_journal=0 n_restart=0 n_refused=0 n_hup=0
        local errs=(EINVAL EBUSY EACCES EIO none none)
        local knobs
        read -r -a knobs <<< "$KNOBS global/enabled"
        RANDOM=42
        cp "$FAST" "$T/live.conf"
        for r in $(seq "$rounds"); do
                # writes fail intermittently: a random knob with a random errno
                [ -n "$k" ] && "$FAKEHOST" fail "$ROOT" "$k" none
                k=${knobs[RANDOM % ${#knobs[@]}]}; e=${errs[RANDOM % ${#errs[@]}]}
                "$FAKEHOST" fail "$ROOT" "$k" "$e"
                start_mthpd -c "$T/live.conf" --no-bus
                bump_faults $((RANDOM % 6)) &
                local bump=$!
                # a bad config reloaded by SIGHUP, at a random moment once it runs
                if [ $((RANDOM % 2)) = 0 ] &&
                   wait_for 2 grep -q "managing mTHP knobs\|cannot be restored" "$LOG" && alive; then
                        printf '[Engine]\nBogus=%d\n' "$r" > "$T/live.conf"
                        sleep "0.0$((RANDOM % 10))"; kill -HUP "$PID" 2>/dev/null || true
                        sleep 0.05
                fi
                ms=$((RANDOM % 400))
                sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
                kill -9 "$PID" 2>/dev/null || true
                wait "$PID" 2>/dev/null || true
                PID=""
                wait "$bump"
                n_kill=$((n_kill + 1))
                [ -s "$STATE/restore.journal" ] && n_journal=$((n_journal + 1))
                grep -q "found restore journal" "$LOG" && n_restart=$((n_restart + 1))
                grep -q "not starting: the restore journal .* cannot be restored" "$LOG" && n_refused=$((n_refused + 1))
                grep -q "keeping the running configuration" "$LOG" && n_hup=$((n_hup + 1))
                cp "$FAST" "$T/live.conf"
                # invariant after every crash: each knob holds its original, or
                # the journal holds the original with the value the knob has
                python3 - "$T/orig.knobs" "$STATE/restore.journal" "$ROOT" <<'PY' || fail "round $r: original lost"
import sys, os, re
orig = dict(l.rstrip("\n").split(": ", 1) for l in open(sys.argv[1]))
root = sys.argv[3]; thp = "/sys/kernel/mm/transparent_hugepage"
ents = {}
if os.path.exists(sys.argv[2]):
    cur = None
    for l in open(sys.argv[2]):
        l = l.rstrip("\n")
        if l.startswith("[knob "): cur = {}; ents[l] = cur
        elif cur is not None and "=" in l:
            k, v = l.split("=", 1); cur[k] = v
byp = {e["path"]: e for e in ents.values()}
sel = lambda s: (re.search(r"\[([^]]+)\]", s) or [None, s])[1]
for rel, was in orig.items():
    path = thp + "/" + rel[2:]
    now = open(root + path).read().rstrip("\n")
    if now == was: continue
    cur = sel(now)
    e = byp.get(path)
    if not e: sys.exit(f"{rel}: {now!r} ({cur!r}) but was {was!r} and the journal has no entry")
    if e["original"] != sel(was): sys.exit(f"{rel}: journal original {e['original']} != {sel(was)}")
    if cur not in (e["written"], e.get("previous")):
        sys.exit(f"{rel}: holds {cur!r} which mthpd did not write ({e})")
PY
        done
        pass "storm: $n_kill kill -9 rounds ($n_journal left a journal, $n_restart starts restored one first, $n_refused refused as a write failed, $n_hup bad reloads rejected); originals always recoverable"
        check "storm: kills left journals behind ($n_journal)" [ "$n_journal" -ge 5 ]
        check "storm: restarts restored them ($n_restart)" [ "$n_restart" -ge 5 ]
        check "storm: bad reloads were rejected ($n_hup)" [ "$n_hup" -ge 3 ]
        # a last kill with knobs raised, for mthpctl restore to undo
        for k in "${knobs[@]}"; do "$FAKEHOST" fail "$ROOT" "$k" none; done
        start_mthpd -c "$FAST" --no-bus
        bump_faults 15
        check "storm: the last mthpd runs until its kill" alive
        stop_mthpd 9
        check "storm: the last kill leaves a journal" [ -s "$STATE/restore.journal" ]
        check "storm: mthpctl restore" ctl restore
        check "storm: every knob byte for byte as before the storm" same_knobs "$T/orig.knobs"
        check "storm: no core dump or sanitizer report" sh -c "! grep -q 'AddressSanitizer\|runtime error' '$LOG'"
}

case $SCENARIO in
write-errors) write_errors ;;
knob-vanishes) knob_vanishes ;;
counters-backwards) counters_backwards ;;
cgroups-gone) cgroups_gone ;;
proc-gone) proc_gone ;;
no-psi) no_psi ;;
state-dir) state_dir ;;
journal-bad) journal_bad ;;
storm) storm ;;
*) echo "unknown scenario $SCENARIO" >&2; exit 2 ;;
esac
echo "$SCENARIO: $CHECKS checks passed"
