#!/bin/bash
# mthpctl cgroups from an mthpd that manages no cgroup (a host without
# policy files): the daemon's empty list arrives as a NULL array, which
# was passed to qsort (undefined behaviour, "null pointer passed as
# argument 1" under UBSan). Only a -Db_sanitize=undefined build can see
# that: elsewhere the outputs are checked and the test says SKIP.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS, SANITIZE (b_sanitize).
# shellcheck source-path=SCRIPTDIR source=../ctl/lib.sh
. "$(dirname "$0")/../ctl/lib.sh"

start_open_bus
fast_conf "$FAST" 1000
mkdir -m 755 "$T/no-policies"
start_mthpd -c "$FAST" --policy-dir "$T/no-policies"
on_bus() { ctl mode >/dev/null 2>&1; }
wait_for 10 on_bus || fail "mthpd never appeared on the bus"
expect_rc 0 ctl cgroups
grep -q "no managed cgroups" <<< "$OUT" || fail "cgroups: $OUT"
expect_rc 0 ctl cgroups --json
json_check 'assert d["source"] == "mthpd" and d["cgroups"] == [], d' <<< "$OUT" || fail "cgroups --json: $OUT"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exited $RC"
case ",${SANITIZE:-}," in
*undefined*) ok "cgroups with no managed cgroup, under UBSan" ;;
*) echo "SKIP: the outputs are right, but only a -Db_sanitize=undefined build sees the undefined behaviour"
   exit 77 ;;
esac
