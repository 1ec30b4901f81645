#!/bin/bash
# The integration checks of daemon-fakehost.sh on one fake kernel tree
# ($KERNEL: 6.8, 6.11, 6.18, 7.2, arm64-16k, arm64-64k; tests/fake/fakehost.h).
# Every size and feature comes from the tree: probe must read the base page
# (from hpage_pmd_size), the ladder and the per-size knobs and stats the tree
# has, and mthpd must manage, back off a foreign write and restore on it.
# What each tree makes differ is asserted here per profile.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS, KERNEL.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
fakehost_setup "mthpd-kernel-$KERNEL"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"
"$FAKEHOST" create "$ROOT" --kernel "$KERNEL" || fail "fakehost create --kernel $KERNEL"

# expected per profile: page, PMD, number of sizes, the smallest anon size,
# whether per-size shmem knobs and shmem stats exist, mTHP collapse
case $KERNEL in
6.8)       PAGE=4K  PMD=2M   N=8  ANON0=16  SHMEM=0 SHSTATS=0 COLLAPSE=no ;;
6.11)      PAGE=4K  PMD=2M   N=8  ANON0=16  SHMEM=1 SHSTATS=0 COLLAPSE=no ;;
6.18)      PAGE=4K  PMD=2M   N=9  ANON0=16  SHMEM=1 SHSTATS=1 COLLAPSE=no ;;
7.2)       PAGE=4K  PMD=2M   N=9  ANON0=16  SHMEM=1 SHSTATS=1 COLLAPSE=yes ;;
arm64-16k) PAGE=16K PMD=32M  N=11 ANON0=64  SHMEM=1 SHSTATS=1 COLLAPSE=no ;;
arm64-64k) PAGE=64K PMD=512M N=13 ANON0=256 SHMEM=1 SHSTATS=1 COLLAPSE=no ;;
*) fail "unknown KERNEL '$KERNEL'" ;;
esac
FAST=$T/fast.conf
fast_conf "$FAST" 100
# the default ladder is 16K..2M with up to 64K raised blind (config.c): on a
# tree without those sizes, say the ladder in the tree's own sizes
cat >> "$FAST" <<CONF
AnonSizes=${ANON0}K-$PMD
ShmemSizes=${ANON0}K-$PMD
UnmeasuredMaxSize=$((ANON0 * 4))K
CONF

# 1. probe: base page, PMD, the sizes and what each has
"$MTHPD" --root "$ROOT" --state-dir "$STATE" --once --mode observe -c "$FAST" 2>"$LOG" || fail "observe --once exited $?"
grep -q "probe: PMD size $PMD; $N mTHP sizes" "$LOG" || fail "probe line: $(grep 'PMD size' "$LOG")"
grep -q "probe: base page $PAGE; khugepaged mTHP collapse: $COLLAPSE" "$LOG" || fail "base page/collapse: $(grep 'base page' "$LOG")"
[ $COLLAPSE = yes ] && { grep -q "max_ptes_none 0 or 511 only" "$LOG" || fail "7.2: the max_ptes_none rule"; }
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" sizes --json | python3 -c '
import json, sys
page = {"4K": 4, "16K": 16, "64K": 64}[sys.argv[1]]
shmem, shstats = sys.argv[2] == "1", sys.argv[3] == "1"
d = json.load(sys.stdin)
assert d["pmd_kb"] == page * page * 128, d["pmd_kb"]   # (page bytes)^2 / 8 bytes
for s in d["sizes"]:
    kb, order = s["size_kb"], s["order"]
    assert kb == page << order, (kb, order)
    assert s["pmd"] == (kb == d["pmd_kb"]), s
    kinds = sorted(k["kind"] for k in s["knobs"])
    assert ("shmem" in kinds) == shmem, (kb, kinds)
    assert ("anon" in kinds) == (order >= 2), (kb, kinds)
    assert ("shmem_alloc" in s["stats"]) == shstats, (kb, sorted(s["stats"]))
' "$PAGE" "$SHMEM" "$SHSTATS" || fail "sizes --json: orders, PMD flag, knobs or stats wrong for $KERNEL"
ok "$KERNEL: probe reads base page $PAGE, PMD $PMD, $N sizes, their knobs and stats from the tree"

# 2. manage: faults at the three smallest anon sizes raise them
S0=$ANON0 S1=$((ANON0 * 2)) S2=$((ANON0 * 4))
bump() { # bump N: heavy faulting with allocations at S0..S2 (both kinds where stats exist)
        for _ in $(seq "$1"); do
                args=(--pgfault 20000)
                for s in $S0 $S1 $S2; do
                        args+=(--size "$s" --stat anon_fault_alloc --add 50)
                        [ "$SHSTATS" = 1 ] && args+=(--size "$s" --stat shmem_alloc --add 50)
                done
                "$FAKEHOST" bump "$ROOT" "${args[@]}"
                sleep 0.05
        done
}
start_mthpd -c "$FAST"
bump 30 &
BUMP=$!
wait_for 6 knob_is "hugepages-${S0}kB/enabled" always || fail "$KERNEL: ${S0}K anon never raised"
wait "$BUMP"
grep -q "set $(( S0 >= 1024 ? S0 / 1024 : S0 ))$([ $S0 -ge 1024 ] && echo M || echo K)/anon: never -> always" "$LOG" ||
        fail "$KERNEL: the raise of the smallest anon size is not logged"
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 --json status | python3 -c '
import json, sys
d = json.load(sys.stdin); k = {x["id"]: x for x in d["knobs"]}
s0 = sys.argv[1]
assert k[s0 + "/anon"]["value"] == "always" and k[s0 + "/anon"]["set_by"] == "mthpd", k[s0 + "/anon"]
if sys.argv[2] == "0":
    assert not [i for i in k if i.endswith("/shmem")], "per-size shmem knobs on a tree without them"
' "$(( S0 >= 1024 ? S0 / 1024 : S0 ))$([ $S0 -ge 1024 ] && echo M || echo K)" "$SHMEM" || fail "$KERNEL: status --json"
ok "$KERNEL: faults raise the smallest anon size; status shows it set by mthpd"

# 3. a foreign write to it: mthpd backs off
"$FAKEHOST" write "$ROOT" "/sys/kernel/mm/transparent_hugepage/hugepages-${S0}kB/enabled" madvise
wait_for 3 grep -q "was changed by someone else" "$LOG" || fail "$KERNEL: foreign write not noticed"
ok "$KERNEL: a foreign write makes mthpd stop managing that knob"

# 4. SIGTERM restores every knob it still owns, exit 0
stop_mthpd TERM
[ "$RC" = 0 ] || fail "$KERNEL: SIGTERM exit code $RC"
[ "$(knob "hugepages-${S0}kB/enabled")" = madvise ] || fail "$KERNEL: the foreign knob was overwritten"
for s in $S1 $S2; do [ "$(knob "hugepages-${s}kB/enabled")" = never ] || fail "$KERNEL: ${s}K not restored"; done
[ ! -e "$STATE/restore.journal" ] || fail "$KERNEL: journal left after clean stop"
ok "$KERNEL: SIGTERM restores all but the foreign knob"

# 5. kill -9, then the next start restores first
"$FAKEHOST" write "$ROOT" "/sys/kernel/mm/transparent_hugepage/hugepages-${S0}kB/enabled" never
start_mthpd -c "$FAST"
bump 30 &
BUMP=$!
wait_for 6 knob_is "hugepages-${S0}kB/enabled" always || fail "$KERNEL: not raised before kill"
stop_mthpd 9
wait "$BUMP"
start_mthpd -c "$FAST"
wait_for 3 grep -q "restored .* knobs from the previous run" "$LOG" || fail "$KERNEL: restart did not restore"
stop_mthpd TERM
for s in $S0 $S1 $S2; do [ "$(knob "hugepages-${s}kB/enabled")" = never ] || fail "$KERNEL: ${s}K not restored by restart"; done
ok "$KERNEL: kill -9 then restart restores first"
echo "all checks passed on the $KERNEL tree"
