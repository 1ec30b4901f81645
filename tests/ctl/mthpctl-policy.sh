#!/bin/bash
# Policy files end to end on a fake host and a private bus: mthpd with
# --policy-dir and two fake cgroups that fault (memory.stat pgfault) with
# conflicting wishes; the documented outcome on the knobs, both ways round
# (mthpd.policy(5), ARBITRATION); mthpctl cgroups/explain/metrics naming
# them; a bad policy file on reload keeps the running policy; check.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

start_open_bus

"$FAKEHOST" cgroup "$ROOT" db.service >/dev/null || fail "fake cgroup db.service"
"$FAKEHOST" cgroup "$ROOT" batch.slice >/dev/null || fail "fake cgroup batch.slice"
"$FAKEHOST" cgroup "$ROOT" batch.slice/job-1.scope >/dev/null || fail "fake cgroup batch.slice/job-1.scope"
chmod u+w "$ROOT"/sys/fs/cgroup/*/memory.stat "$ROOT"/sys/fs/cgroup/*/memory.current
for f in "$ROOT"/sys/fs/cgroup/*/memory.stat; do : > "$f"; done # numbers only grow: rewritten in place
# running before mthpd starts (populated): no start grace, their say comes
# from their faults (the grace has its own tests: tests/engine, start-grace)
for f in "$ROOT"/sys/fs/cgroup/*/memory.current; do echo 4096 > "$f"; done
P=$T/policy.d
mkdir -m 755 "$P"
policies() { # policies DB_PRIO BATCH_PRIO
        printf '[Match]\nUnit=db.service\n[Policy]\nAnon=always\nSizes=16K-64K\nPriority=%s\n' "$1" > "$P/10-db.policy"
        printf '[Match]\nCgroup=/batch.slice\n[Policy]\nAnon=never\nPriority=%s\n' "$2" > "$P/20-batch.policy"
        chmod 644 "$P"/*.policy
}
policies 80 20

# both cgroups fault hard (memory.stat pgfault, usage moving) while the host does
FAULTS=0
cg_fault() { # one tick's worth for both cgroups
        FAULTS=$((FAULTS + 5000))
        local cg
        for cg in db.service batch.slice; do
                [ -d "$ROOT/sys/fs/cgroup/$cg" ] || continue
                # in place, as the kernel's files are: mthpd keeps them open
                printf 'anon %d\nfile 0\nshmem 0\npgfault %d\npgmajfault 0\n' $((FAULTS * 4096)) $FAULTS \
                        1<>"$ROOT/sys/fs/cgroup/$cg/memory.stat"
                printf '%d\n' $((FAULTS * 4096)) 1<>"$ROOT/sys/fs/cgroup/$cg/memory.current"
        done
}
fault_for() { # fault_for N: N ticks of faulting, 50 ms apart
        for _ in $(seq "$1"); do
                cg_fault
                bump_faults 1
        done
}
# faulting in the background until fault_stop (200 ticks: 10 s and the
# fake's own runs), so a slow host's mthpd (ASan) still sees it while the
# checks poll; a fixed 1.5 s ended before mthpd was on the bus there. The
# background loop counts in its own copy of FAULTS: each start and stop
# moves this shell's past all it can reach (200 x 5000), so the cgroups'
# pgfault never goes back (it did at each new loop: a tick of 0 faults/s)
F=""
fault_start() {
        FAULTS=$((FAULTS + 1000000))
        fault_for 200 &
        F=$!
}
fault_stop() {
        [ -n "$F" ] || return 0
        kill "$F" 2>/dev/null || true
        wait "$F" 2>/dev/null || true
        F=""
        FAULTS=$((FAULTS + 1000000))
}
fakehost_cleanup_hook() { fault_stop; }

# --- 1. the always cgroup (80) outranks the never one (20): 16K-64K always
start_mthpd -c "$FAST" --policy-dir "$P"
wait_for 5 grep -q "2 policy file(s) from $P" "$LOG" || fail "mthpd did not load the policy files"
fault_start
wait_for 5 knob_is hugepages-64kB/enabled always || fail "64K/anon not raised for db.service (priority 80)"
on_bus() { ctl mode >/dev/null; }
wait_for 5 on_bus || fail "mthpd never appeared on the bus"
knob_is hugepages-128kB/enabled never || fail "128K/anon changed: outside db.service's Sizes=16K-64K"
# explain shows the last tick's reason: poll it, as in 3.
explain_db() {
        OUT=$(ctl explain 64K 2>&1) &&
                grep -Eq "cgroup /db.service \([0-9]+ faults/s, policy 10-db: Anon=always, priority 80\)" <<<"$OUT" &&
                grep -q "outranked: cgroup /batch.slice ([0-9]* faults/s, policy 20-batch: Anon=never, priority 20)" <<<"$OUT"
}
wait_for 5 explain_db || fail "explain 64K does not name db.service and the outranked batch.slice: $OUT"
expect_rc 0 ctl cgroups
grep -Eq "^CGROUP +POLICY +ANON +SHMEM +PRIO +FAULTS/S +MEMORY +LIMIT +PSI +DENSE$" <<<"$OUT" || fail "cgroups header: $OUT"
grep -Eq "^/db.service +10-db +always +auto +80 +[0-9]+ +[0-9.]+[KMG] +- +[0-9.]+% +anon -, shmem -$" <<<"$OUT" ||
        fail "cgroups db.service row: $OUT"
grep -Eq "^/batch.slice +20-batch +never +auto +20 " <<<"$OUT" || fail "cgroups batch.slice row: $OUT"
! grep -q "job-1" <<<"$OUT" || fail "a child of a managed cgroup listed on its own: $OUT"
# the fault rates are the last tick's: poll (under ASan on a slow host a tick
# can fall between two of the fake's writes and read 0 faults/s)
cgroups_json() {
        ctl cgroups --json | json_check '
assert d["source"] == "mthpd", d
c = {x["path"]: x for x in d["cgroups"]}
assert set(c) == {"/db.service", "/batch.slice"}, c
assert c["/db.service"]["policy"] == "10-db" and c["/db.service"]["priority"] == 80
assert c["/batch.slice"]["anon"] == "never" and c["/batch.slice"]["fault_rate"] > 0, c["/batch.slice"]
assert c["/db.service"]["psi_some_avg10"] is not None and c["/db.service"]["limit_kb"] is None'
}
wait_for 5 cgroups_json || { cgroups_json || true; fail "cgroups --json"; }
ctl metrics > "$T/metrics"
check_metrics < "$T/metrics" >/dev/null || fail "metrics format with cgroups"
grep -Eq '^mthpd_cgroup_memory_bytes\{cgroup="/db.service",policy="10-db"\} [0-9]+$' "$T/metrics" ||
        fail "metrics lack the cgroup's memory: $(grep cgroup "$T/metrics")"
ok "always/80 outranks never/20: 16K-64K always; explain, cgroups (--json) and metrics name both"

# --- 2. a bad policy file on reload: the running policy stays, FILE:LINE logged
printf '[Match]\nCgroup=/x\n[Policy]\nPriority=high\n' > "$P/30-bad.policy"
chmod 644 "$P/30-bad.policy"
expect_rc 1 ctl reload
grep -q "30-bad.policy:4: key 'Priority' in \[Policy\]: expected a whole number from 0 to 100, got 'high'" <<<"$ERR$OUT" ||
        fail "reload error does not name FILE:LINE: $ERR"
grep -q "30-bad.policy:4: key 'Priority'" "$LOG" || fail "the daemon did not log the bad file"
expect_rc 0 ctl cgroups --json
grep -q '"policy":"10-db"' <<<"$OUT" || fail "the running policy was lost on a bad reload: $OUT"
rm "$P/30-bad.policy"
chmod 666 "$P/20-batch.policy"
expect_rc 1 ctl reload
grep -q "20-batch.policy: writable by everyone" <<<"$ERR$OUT" || fail "a world-writable policy file was not refused: $ERR"
chmod 644 "$P/20-batch.policy"
ok "a bad or unsafe policy file on reload keeps the running policy and says FILE:LINE"

# --- 3. priorities swapped: the never cgroup (80) wins; the outranked always
#        wish (16K-64K) becomes madvise
fault_stop
policies 20 80
expect_rc 0 ctl reload
fault_start
wait_for 5 knob_is hugepages-64kB/enabled madvise || fail "64K/anon not madvise after the swap: $(knob hugepages-64kB/enabled)"
# polled too: the madvise holds while db.service faults, and under ASan on a
# slow host the fake's writes can miss a tick (demand 0: back to never, then
# madvise again the tick after)
wait_for 5 knob_is hugepages-16kB/enabled madvise || fail "16K/anon not madvise after the swap: $(grep "16K/anon" "$LOG" | tail -3)"
knob_is hugepages-128kB/enabled never || fail "128K/anon changed: outside every Sizes="
# explain shows the last tick's reason: poll it (a busy machine can take a
# tick where the faults of the batch cgroup have not shown yet)
explain_swap() {
        OUT=$(ctl explain 16K 2>&1) &&
                grep -q "cgroup /batch.slice ([0-9]* faults/s, policy 20-batch: Anon=never, priority 80) accepts no anon folios of 16K as always" <<<"$OUT"
}
wait_for 5 explain_swap || fail "explain 16K after the swap: $OUT"
fault_stop
ok "never/80 outranks always/20: the always wish becomes madvise"

# --- 4. a cgroup that goes away is dropped; SIGTERM restores everything
"$FAKEHOST" rmcgroup "$ROOT" batch.slice || fail "rmcgroup"
fault_for 10
expect_rc 0 ctl cgroups --json
grep -q batch.slice <<<"$OUT" && fail "a removed cgroup is still listed: $OUT"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exited $RC on SIGTERM"
knob_is hugepages-64kB/enabled never || fail "64K/anon not restored"
knob_is hugepages-16kB/enabled never || fail "16K/anon not restored"
ok "a removed cgroup drops out; SIGTERM restores the knobs"

# --- 5. check: files and directories, exit 0/1
expect_rc 0 ctl check "$P"
expect_rc 0 ctl check "$P/10-db.policy" "$P/20-batch.policy"
cp "$P/10-db.policy" "$T/again.policy"
expect_rc 1 ctl check "$P/10-db.policy" "$T/again.policy"
grep -q "again.policy:2: key 'Unit' in \[Match\]: 'db.service' is already matched by .*10-db.policy:2" <<<"$ERR" ||
        fail "check: overlap not reported with both places: $ERR"
ok "check validates policy files and directories, overlaps across files"
