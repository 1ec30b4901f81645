#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-idle-fakehost: the guard walks the memory-limited cgroups only on
# the ticks whose decision could need them (daemon/guard.c scan_wanted):
# idle, every 4th tick; on a tick whose demand could raise a size, and
# while a size is raised, every tick. Read from mthpd's recording, whose
# 'limits scanned=1' line marks a tick that walked them.
. "$(dirname "$0")/../lib/fakehost.sh"
fakehost_setup guard-idle
"$FAKEHOST" create "$ROOT" --layout v2 >/dev/null
CGD=$ROOT$("$FAKEHOST" cgroup "$ROOT" mthpd-test-lim)
echo $((1000 << 20)) >"$CGD/memory.max"
echo $((10 << 20)) >"$CGD/memory.current"
fast_conf "$T/conf" 1000
start_mthpd -c "$T/conf" --no-bus --record "$T/rec"

# per tick in the recording: "N 1" if it walked the cgroups, "N 0" if not
scans() { awk '/^tick /{if (t != "") print t, s; t = $2; s = 0} /^limits scanned=1/{s = 1} END{if (t != "") print t, s}' "$T/rec"; }
ticks() { scans | wc -l; }
has_ticks() { [ "$(ticks)" -ge "$1" ]; }
last_tick() { scans | tail -1 | cut -d' ' -f1; }
# the last recorded tick is one after which the next walks on no idle count (4k + 1)
# the first tick whose knobs line (caps order, as the 'knob id=' lines) reads 16K/anon always
first_always() {
        awk '/^knob id=/{n++; if ($2 == "id=16K/anon") k = n} /^tick /{t = $2}
             /^knobs /{ if (k && $(k + 1) == "always") { print t; exit } }' "$T/rec"
}
after_walk() { local t; t=$(last_tick); [ -n "$t" ] && [ $((t % 4)) = 1 ]; }

wait_for 10 has_ticks 25 || fail "mthpd recorded $(ticks) ticks in 10 s"
walked=$(scans | head -25 | awk '$2 == 1 {printf "%s ", $1}')
[ "$walked" = "0 4 8 12 16 20 24 " ] || fail "idle ticks 0-24: walked the cgroups on ticks ${walked:-none}, expected 0 4 8 ... 24"
ok "idle: the limited cgroups walked on ticks ${walked% } of 0-24"

# an empty 100 MiB cgroup appears while idle, just after a tick that did
# not walk, and the host starts to fault: the tick that sees the demand must
# walk and find it (it affords no size: anon stays at 4K), not decide on
# what it knew (an unlimited host: a raise)
wait_for 10 after_walk || fail "no recorded tick 4k+1 within 10 s"
SMALL=$ROOT$("$FAKEHOST" cgroup "$ROOT" mthpd-test-small)
echo $((100 << 20)) >"$SMALL/memory.max"
echo $((10 << 20)) >"$SMALL/memory.current"
bump_faults 10
raised_at=$(first_always)
[ -z "$raised_at" ] && knob_is hugepages-16kB/enabled never ||
        fail "faults beside an empty 100 MiB cgroup that appeared while idle: 16K/anon $(knob hugepages-16kB/enabled), recorded always from tick ${raised_at:-?}"
grep -q "^limited path=/mthpd-test-small " "$T/rec" || fail "the recording names no limited cgroup /mthpd-test-small"
ok "a 100 MiB cgroup that appeared while idle held anon at 4K from the first tick with demand"

# without it, the raise; from then on every tick walks
"$FAKEHOST" rmcgroup "$ROOT" mthpd-test-small
bump_faults 30
knob_is hugepages-16kB/enabled always || fail "mthpd did not raise 16K/anon: $(knob hugepages-16kB/enabled)"
first=$(first_always)
[ -n "$first" ] || fail "no recorded tick reads 16K/anon always"
unwalked=$(scans | awk -v f="$first" '$1 >= f - 1 && $2 == 0 {printf "%s ", $1}')
[ -z "$unwalked" ] || fail "raised from tick $((first - 1)) on: ticks $unwalked did not walk the cgroups"
ok "the raise (decided on tick $((first - 1))) and every tick since walked them (to tick $(last_tick))"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exited $RC"
ok "mthpd exited 0"
