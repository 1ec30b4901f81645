#!/bin/bash
# mthpctl without a daemon: every command on a fake host tree, with no bus
# (read commands fall back to the host and the journal; commands that need
# the daemon say it is not running, exit 3), plus usage, metrics format,
# history from the (absent) journal, exec's prctl and top on a pipe.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

# 1. usage, help, exit 2
expect_rc 2 "$MTHPCTL"
expect_rc 2 "$MTHPCTL" frobnicate
grep -q "unknown command 'frobnicate'" <<<"$ERR" || fail "unknown command message: $ERR"
expect_rc 0 "$MTHPCTL" --help
HELP=$OUT
COMMANDS="status sizes cgroups explain history metrics top pin unpin resume mode reload restore exec check simulate"
for c in $COMMANDS; do
        grep -Eq "^  $c " <<<"$HELP" || fail "--help does not list $c"
        expect_rc 0 "$MTHPCTL" "$c" --help
        grep -q "^Usage: mthpctl $c" <<<"$OUT" || fail "$c --help: $OUT"
done
expect_rc 0 "$MTHPCTL" --version
expect_rc 2 "$MTHPCTL" pin 64K/anon
expect_rc 2 "$MTHPCTL" unpin
expect_rc 2 "$MTHPCTL" status --bogus
expect_rc 2 "$MTHPCTL" pin 64K/anon always --for 0
expect_rc 2 "$MTHPCTL" pin 64K/anon always --for 1h --until +2h
expect_rc 2 "$MTHPCTL" pin 64K/anon always --until -1h
grep -q "future" <<<"$ERR" || fail "--until in the past: $ERR"
expect_rc 2 "$MTHPCTL" history --since "the day after"
expect_rc 2 "$MTHPCTL" history -n 0
expect_rc 2 "$MTHPCTL" mode sideways
expect_rc 2 "$MTHPCTL" explain 12Q
expect_rc 2 "$MTHPCTL" metrics --lines 3
expect_rc 2 "$MTHPCTL" exec --thp=always -- true
expect_rc 2 "$MTHPCTL" exec
ok "usage errors exit 2; every command has --help"

# 2. status from the host alone
expect_rc 0 ctl --sample 0 status
grep -q "^mthpd: not running" <<<"$OUT" || fail "status header: $OUT"
grep -Eq "^64K +never +original +never +original" <<<"$OUT" || fail "status 64K row: $OUT"
grep -Eq "^global/defrag +madvise +original" <<<"$OUT" || fail "status globals: $OUT"
ctl status --sample 0 --json | json_check '
assert d["daemon"] is False and d["source"] is None and d["mode"] is None, d
k = {x["id"]: x for x in d["knobs"]}
assert "8K/anon" not in k and k["8K/shmem"]["value"] == "never"
assert k["64K/anon"]["set_by"] == "original" and k["64K/anon"]["decision"] is None
assert k["64K/anon"]["pinned"] is False and k["2M/anon"]["value"] == "inherit"
assert k["global/enabled"]["kind"] == "global" and "madvise" in k["global/enabled"]["accepts"]' ||
        fail "status --json"
# one duration grammar (mthp/timespan.h) for every option: --sample too
for span in 1sec 100ms 0.1s "100 msec"; do
        expect_rc 0 ctl status --sample "$span"
        expect_rc 0 ctl --sample "$span" --json status
done
expect_rc 2 ctl status --sample 61s
expect_rc 2 ctl status --sample -1s
ok "status reads the host without a daemon"

# 3. sizes: kinds, accepted values, settings, counters
"$FAKEHOST" bump "$ROOT" --size 64 --stat anon_fault_alloc --add 7 --size 64 --stat anon_fault_fallback --add 3 \
        --size 8 --stat shmem_alloc --add 5
expect_rc 0 ctl sizes
grep -Eq "^SIZE +ORDER +KIND +SETTING +ALLOC +FALLBACK +ACCEPTS$" <<<"$OUT" || fail "sizes header: $OUT"
grep -Eq "^8K +1 +shmem +never +5 +0 +always inherit within_size advise never$" <<<"$OUT" || fail "sizes 8K: $OUT"
grep -Eq "^64K +4 +anon +never +7 +3 +always inherit madvise never$" <<<"$OUT" || fail "sizes 64K: $OUT"
# aligned: every row's ACCEPTS starts in the header's column
python3 -c '
import sys
lines = sys.stdin.read().split("\n\n")[0].splitlines()
col = lines[0].index("ACCEPTS")
for l in lines[1:]:
    assert l[col - 2:col] == "  " and l[col] != " ", repr(l)' <<<"$OUT" || fail "sizes not aligned: $OUT"
ctl sizes --json | json_check '
s = {x["size"]: x for x in d["sizes"]}
assert d["pmd_size"] == "2M" and len(s) == 9, d
assert [k["kind"] for k in s["8K"]["knobs"]] == ["shmem"]
a = s["64K"]["knobs"][0]
assert a["id"] == "64K/anon" and a["value"] == "never" and a["alloc"] == 7 and a["fallback"] == 3, a
assert a["accepts"] == ["always", "inherit", "madvise", "never"], a
assert s["64K"]["order"] == 4 and s["2M"]["pmd"] is True
assert s["64K"]["stats"]["anon_fault_alloc"] == 7' || fail "sizes --json"
ok "sizes lists kinds, accepted values, settings and counters"

# 4. commands that need the daemon: exit 3
expect_rc 3 ctl explain
grep -q "mthpd is not running" <<<"$ERR" || fail "explain: $ERR"
for args in "pin 64K/anon always" "unpin 64K/anon" "resume 64K/anon" "reload" "mode observe" "mode"; do
        # shellcheck disable=SC2086
        expect_rc 3 ctl $args
        grep -q "mthpctl: ${args%% *}: mthpd is not running" <<<"$ERR" || fail "$args: $ERR"
done
expect_rc 0 ctl restore
grep -q "nothing to restore" <<<"$OUT" || fail "restore without journal: $OUT"
if [ "$(id -u)" = 0 ]; then
        # a user's restore: the journal is root's (0600): permission denied, exit 4 as documented
        nobody_copy NOBODY_CTL "$MTHPCTL"
        mkdir -p "$STATE" && chmod 755 "$STATE"
        printf '[journal]\nroot=%s\n\n[knob 64K/anon]\npath=%s\noriginal=never\nwritten=always\nprevious=never\nstate=managed\n' \
                "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled > "$STATE/restore.journal"
        chmod 600 "$STATE/restore.journal"
        expect_rc 4 as_nobody "$NOBODY_CTL" --root "$ROOT" --state-dir "$STATE" restore
        grep -q "restore: permission denied: only root may restore knobs (run as root)" <<<"$ERR" ||
                fail "a user's restore: $ERR"
        [ -e "$STATE/restore.journal" ] || fail "a user's restore removed the journal"
        rm "$STATE/restore.journal"
fi
ok "commands that need mthpd exit 3 and say it is not running"

# 5. history without mthpd falls back to the journal of the host root (none
#    here; history-journal.sh reads real journal files)
expect_rc 0 ctl history
grep -q "mthpd is not on the bus, and the journal holds no knob changes by mthpd" <<<"$OUT" || fail "history: $OUT"
ctl history --json | json_check 'assert d == {"source": "journal", "changes": []}, d' || fail "history --json"
ok "history falls back to the journal"

# 6. metrics: the exposition format, node_exporter's textfile collector
ctl metrics > "$T/metrics" || fail "metrics exit $?"
FAMILIES=$(check_metrics < "$T/metrics") || { cat "$T/metrics"; fail "metrics format"; }
for f in mthp_knob_info mthp_size_anon_fault_alloc_total mthp_size_anon_fault_fallback_total \
         mthp_size_shmem_alloc_total mthp_size_shmem_fallback_total mthpd_up; do
        grep -qw "$f" <<<"$FAMILIES" || fail "metrics lack $f"
done
grep -qx 'mthp_knob_info{knob="64K/anon",size="64K",kind="anon",value="never",set_by="original"} 1' "$T/metrics" ||
        fail "knob info line"
grep -qx 'mthp_size_anon_fault_alloc_total{size="64K"} 7' "$T/metrics" || fail "alloc counter"
grep -qx 'mthp_size_shmem_alloc_total{size="8K"} 5' "$T/metrics" || fail "shmem counter"
grep -qx 'mthpd_up 0' "$T/metrics" || fail "mthpd_up without a daemon"
! grep -q '^mthpd_ticks_total' "$T/metrics" || fail "ticks without a daemon"
# no rates, no percentages, nothing node_exporter exports itself
! grep -Eq '^mthp[d]?_[a-z_]*(per_second|avg10|pgfault|psi)' "$T/metrics" || fail "a rate or node_exporter series"
# --output replaces the file atomically (no temporary left), same bytes
ctl metrics --output "$T/out.prom" || fail "metrics --output exit $?"
diff <(grep -v '^mthp_size_' "$T/metrics") <(grep -v '^mthp_size_' "$T/out.prom") >/dev/null || fail "--output differs"
[ "$(ls "$T" | grep -c '^out\.prom')" = 1 ] || fail "--output left a temporary: $(ls "$T")"
expect_rc 1 ctl metrics --output "$T/no/such/dir/m.prom"
ctl metrics --json | json_check '
m = {f["name"]: f for f in d["metrics"]}
k = m["mthp_knob_info"]
assert k["type"] == "gauge" and k["help"], k
s = [x for x in k["samples"] if x["labels"]["knob"] == "64K/anon"][0]
assert s == {"labels": {"knob": "64K/anon", "size": "64K", "kind": "anon", "value": "never", "set_by": "original"}, "value": 1}, s
a = m["mthp_size_anon_fault_alloc_total"]
assert a["type"] == "counter" and {"labels": {"size": "64K"}, "value": 7} in a["samples"], a
assert m["mthpd_up"]["samples"] == [{"labels": {}, "value": 0}]' || fail "metrics --json"
ok "metrics: valid exposition format, knobs and counters; --json the same samples"

# 7. exec: PR_SET_THP_DISABLE for CMD and its children
expect_rc 0 "$MTHPCTL" exec --thp=disable -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+0" <<<"$OUT" || fail "exec --thp=disable: $OUT"
expect_rc 0 "$MTHPCTL" exec -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+0" <<<"$OUT" || fail "exec default: $OUT"
expect_rc 0 "$MTHPCTL" exec --thp=disable -- "$MTHPCTL" exec --thp=inherit -- grep THP_enabled /proc/self/status
grep -Eq "THP_enabled:\s+1" <<<"$OUT" || fail "exec --thp=inherit: $OUT"
# madvise (alias of except-advised): PR_GET_THP_DISABLE (42) says
# 1|PR_THP_DISABLE_EXCEPT_ADVISED = 3 on Linux 6.18; older kernels refuse the
# flag and mthpctl says so and runs nothing (tests/ctl/exec-thp.sh)
GET='import ctypes; print(ctypes.CDLL(None).prctl(42, 0, 0, 0, 0))'
if python3 -c 'import ctypes,sys; sys.exit(ctypes.CDLL(None, use_errno=True).prctl(41, 1, 2, 0, 0) != 0)'; then
        expect_rc 0 "$MTHPCTL" exec --thp=madvise -- python3 -c "$GET"
        [ "$OUT" = 3 ] || fail "exec --thp=madvise: PR_GET_THP_DISABLE = $OUT"
        expect_rc 0 "$MTHPCTL" exec --thp=madvise -- grep THP_enabled /proc/self/status
        grep -Eq "THP_enabled:\s+1" <<<"$OUT" || fail "exec --thp=madvise status: $OUT"
else
        expect_rc 1 "$MTHPCTL" exec --thp=madvise -- python3 -c "$GET"
        grep -q "does not offer" <<<"$ERR" || fail "exec --thp=madvise refusal: $OUT $ERR"
fi
expect_rc 127 "$MTHPCTL" exec -- /nonexistent/cmd
expect_rc 3 "$MTHPCTL" exec -- sh -c 'exit 3'
ok "exec sets the THP policy of CMD"

# 8. check and simulate keep working
printf '[Engine]\nBogus=1\n' > "$T/bad.conf"
expect_rc 0 "$MTHPCTL" check "$FAST"
expect_rc 1 "$MTHPCTL" check "$FAST" "$T/bad.conf"
grep -q "bad.conf:2:" <<<"$ERR" || fail "check message: $ERR"
expect_rc 1 "$MTHPCTL" check --json "$FAST" "$T/bad.conf"
json_check '
f = d["files"]
assert f[0]["valid"] is True and f[0]["errors"] == [], f
assert f[1]["valid"] is False and f[1]["errors"][0].endswith("bad.conf:2: unknown key \x27Bogus\x27 in [Engine]"), f
' <<<"$OUT" || fail "check --json: $OUT"
expect_rc 1 "$MTHPCTL" simulate "$T/bad.conf"
ok "check and simulate"

# 9. top on a pipe: frames one after another, then exit after --iterations
expect_rc 0 ctl top --iterations 2 --interval 100ms
[ "$(grep -c '^SIZE ' <<<"$OUT")" = 2 ] || fail "top frames: $OUT"
grep -Eq "^64K +never +original" <<<"$OUT" || fail "top rows: $OUT"
grep -q "mthpd is not running" <<<"$OUT" || fail "top without daemon: $OUT"
ctl top --iterations 2 --interval 100ms --json > "$T/top.json" || fail "top --json exit $?"
[ "$(wc -l < "$T/top.json")" = 2 ] || fail "top --json: not one line per frame: $(cat "$T/top.json")"
head -1 "$T/top.json" | json_check '
assert d["daemon"] is False and d["cgroups"] == [] and d["decisions"] == [], d
assert {x["id"]: x for x in d["knobs"]}["64K/anon"]["value"] == "never"
assert d["time_usec"] > 0' || fail "top --json frame"
ok "top --iterations on a pipe; --json: one object per frame"
echo "all mthpctl host checks passed"
