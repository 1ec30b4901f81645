#!/bin/bash
# The other deciders of THP on a fake host: the boot command line's THP
# parameters, a running tuned and its active profile (with an include), units
# with MemoryTHP= or an Exec line writing a knob. mthpctl status (text,
# --json), metrics and mthpd's log name them; a knob another writer takes is
# given its likely writer and the time mthpd noticed; observe mode shows what
# mthpd would set next to what is set.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
fakehost_setup mthpd-deciders
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"   # status reads the status file
"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 100
ctl() { "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 "$@"; }

# 1. nothing: status says there is no other decider
printf 'BOOT_IMAGE=/vmlinuz root=/dev/vda1 ro quiet\n' > "$ROOT/proc/cmdline"
ctl status > "$T/st" || fail "status"
grep -q "no THP parameter (transparent_hugepage=" "$T/st" || { cat "$T/st"; fail "no cmdline line"; }
grep -q "tuned: not installed" "$T/st" || fail "tuned not installed"
ok "a host without other deciders says so"

# 2. the command line, a running tuned with an including profile, two units
printf 'BOOT_IMAGE=/vmlinuz ro transparent_hugepage=madvise thp_anon=16K-64K:always;128K,512K:inherit thp_shmem=2M:never transparent_hugepage_tmpfs=within_size -- transparent_hugepage=always\n' \
        > "$ROOT/proc/cmdline"
mkdir -p "$ROOT/proc/4242" "$ROOT/etc/tuned" "$ROOT/usr/lib/tuned/db-base" "$ROOT/etc/tuned/db" \
        "$ROOT/etc/systemd/system/redis.service.d" "$ROOT/usr/lib/systemd/system"
printf 'tuned\n' > "$ROOT/proc/4242/comm"
printf 'db\n' > "$ROOT/etc/tuned/active_profile"
printf '[main]\nsummary=base\n[vm]\ntransparent_hugepages=never\n' > "$ROOT/usr/lib/tuned/db-base/tuned.conf"
cat > "$ROOT/etc/tuned/db/tuned.conf" <<'CONF'
[main]
include=db-base
[sysfs]
/sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled = madvise
/sys/kernel/mm/transparent_hugepage/hugepages-*/shmem_enabled = never
/proc/sys/vm/swappiness = 10
CONF
printf '[Service]\nMemoryTHP=disable\n' > "$ROOT/etc/systemd/system/redis.service.d/thp.conf"
printf '[Service]\nExecStart=/usr/bin/redis-server\n' > "$ROOT/etc/systemd/system/redis.service"
cat > "$ROOT/usr/lib/systemd/system/mongod.service" <<'UNIT'
[Service]
ExecStartPre=/bin/sh -c "echo always > /sys/kernel/mm/transparent_hugepage/enabled"
ExecStartPre=/bin/sh -c 'echo defer+madvise | tee /sys/kernel/mm/transparent_hugepage/defrag'
ExecStart=/usr/bin/mongod
UNIT
# a unit file holds any byte: what reaches status is escaped, valid UTF-8
printf '[Service]\nMemoryTHP=disable\033[2J\377\n' > "$ROOT/etc/systemd/system/evil.service"
ctl status > "$T/st" || fail "status"
grep -qF 'MemoryTHP=disable\x1b[2J\xff' "$T/st" || { cat "$T/st"; fail "status: a unit's bytes not escaped"; }
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$T/st" || fail "status: not UTF-8"
for want in "thp_anon=16K-64K:always -> 16K/anon 32K/anon 64K/anon" \
            "thp_anon=128K,512K:inherit -> 128K/anon 512K/anon" \
            "thp_shmem=2M:never -> 2M/shmem" \
            "transparent_hugepage=madvise -> global/enabled" \
            "transparent_hugepage_tmpfs=within_size (tmpfs mounts' default huge=, no knob)" \
            "tuned: running (PID 4242), active profile 'db':" \
            "\[vm\] transparent_hugepages=never -> global/enabled" \
            "\[sysfs\] /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled=madvise -> 32K/anon" \
            "MemoryTHP=disable  \[redis.service (/etc/systemd/system/redis.service.d/thp.conf)\] (per process" \
            "ExecStartPre= writes /sys/kernel/mm/transparent_hugepage/enabled  \[mongod.service" \
            "ExecStartPre= writes /sys/kernel/mm/transparent_hugepage/defrag  \[mongod.service.*-> global/defrag"; do
        grep -q -- "$want" "$T/st" || { cat "$T/st"; fail "status lacks: $want"; }
done
grep -q "transparent_hugepage=always" "$T/st" && fail "status took init's arguments (after --) for the kernel's"
grep -q swappiness "$T/st" && fail "status shows a sysfs line that is no THP knob"
ctl --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)["deciders"]
assert d["tuned"] == {"installed": True, "running": True, "pid": 4242, "profile": "db"}, d["tuned"]
s = {(x["source"], x["setting"]): x for x in d["settings"]}
a = s[("cmdline", "thp_anon=16K-64K:always")]
assert a["value"] == "always" and a["knobs"] == ["16K/anon", "32K/anon", "64K/anon"], a
g = s[("tuned", "[sysfs] /sys/kernel/mm/transparent_hugepage/hugepages-*/shmem_enabled=never")]
assert len(g["knobs"]) == 9 and all(k.endswith("/shmem") for k in g["knobs"]), g
m = [x for x in d["settings"] if x["source"] == "unit" and x["value"] == "defer+madvise"]
assert m and m[0]["knobs"] == ["global/defrag"], m
' || fail "status --json deciders"
ok "status (text and --json) names the command line, tuned and its profile, and the units"

# 3. mthpd logs them at start; a foreign write gets its likely writer and the time
start_mthpd -c "$FAST"
wait_for 3 grep -q "neighbours: tuned profile 'db'" "$LOG" || fail "start log lacks tuned"
grep -q "neighbours: kernel command line: thp_anon=16K-64K:always" "$LOG" || fail "start log lacks the cmdline"
bump_faults 30 &
BUMP=$!
wait_for 5 knob_is hugepages-32kB/enabled always || fail "32K anon never raised"
wait "$BUMP"
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled madvise
wait_for 3 grep -q "32K/anon: likely writer: tuned profile 'db' (/etc/tuned/db/tuned.conf): \[sysfs\]" "$LOG" ||
        fail "foreign write: no likely writer logged"
ctl status > "$T/st"
grep -Eq "^note: 32K/anon was changed by someone else to 'madvise' at [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}" "$T/st" ||
        { cat "$T/st"; fail "status: no time for the foreign write"; }
grep -q "likely writer: tuned profile 'db' (/etc/tuned/db/tuned.conf): \[sysfs\] /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled=madvise" "$T/st" ||
        fail "status: no likely writer"
ctl --json status | python3 -c '
import json, sys, time
o = {x["id"]: x for x in json.load(sys.stdin)["other_writers"]}
w = o["32K/anon"]
assert w["value"] == "madvise" and w["likely_writer"].startswith("tuned profile"), w
assert abs(w["noticed_usec"] / 1e6 - time.time()) < 60, w
' || fail "status --json other_writers"
# the same knob with a value no setting names: the unit that writes it... here none, tuned still
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/enabled always
stop_mthpd TERM
ok "a foreign write: mthpd and status name the likely writer and when it was noticed"
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled never

# 4. metrics
ctl metrics > "$T/m"
grep -q '^mthp_tuned_running 1$' "$T/m" || { grep mthp_ "$T/m" | head; fail "metrics: tuned"; }
grep -q '^mthp_decider_setting_info{source="cmdline",origin="kernel command line",setting="thp_anon=16K-64K:always",value="always"} 1$' "$T/m" ||
        fail "metrics: cmdline setting"
ok "metrics carry the deciders"

# 5. observe beside another tuner: what mthpd would set next to what is set
rm -rf "$STATE"
start_mthpd -c "$FAST" --mode observe
bump_faults 30 &
BUMP=$!
wait_for 6 sh -c "'$MTHPCTL' --root '$ROOT' --state-dir '$STATE' --sample 0 status | grep -Eq '^16K/anon +never +always'" ||
        { ctl status; fail "observe: no 'would set' table"; }
wait "$BUMP"
# to a file: grep -q quits at the header, and a status longer than a pipe's
# first write would die of SIGPIPE under pipefail
ctl status > "$T/obs" || fail "observe: status"
grep -q "observe mode: mthpd writes nothing; what it would set:" "$T/obs" || fail "observe: header"
ctl --json status | python3 -c '
import json, sys
o = {x["id"]: x for x in json.load(sys.stdin)["observe"]}
assert o["16K/anon"] == {"id": "16K/anon", "value": "never", "would_set": "always"}, o["16K/anon"]
' || fail "observe: --json"
[ "$(knob hugepages-16kB/enabled)" = never ] || fail "observe wrote a knob"
stop_mthpd TERM
ok "observe mode: status shows what mthpd would set next to what is set"

# 6. boot-time writers: tmpfiles.d (an /etc file overrides /usr/lib's of
# the same name), sysfsutils, udev rules, rc.local
mkdir -p "$ROOT/etc/tmpfiles.d" "$ROOT/usr/lib/tmpfiles.d" "$ROOT/etc/sysfs.d" "$ROOT/etc/udev/rules.d" \
        "$ROOT/usr/lib/udev/rules.d"
printf '# THP off for redis\nw /sys/kernel/mm/transparent_hugepage/enabled - - - - never\nw /proc/sys/vm/overcommit_memory - - - - 1\n' \
        > "$ROOT/etc/tmpfiles.d/thp.conf"
printf 'w /sys/kernel/mm/transparent_hugepage/defrag - - - - always\n' > "$ROOT/usr/lib/tmpfiles.d/thp.conf"
printf 'w! /sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled - - - - always\n' \
        > "$ROOT/usr/lib/tmpfiles.d/vendor.conf"
printf 'mode kernel/mm/transparent_hugepage/enabled = 0644\nkernel/mm/transparent_hugepage/defrag = defer\n' \
        > "$ROOT/etc/sysfs.conf"
printf 'kernel/mm/transparent_hugepage/hugepages-32kB/enabled = madvise\n' > "$ROOT/etc/sysfs.d/thp.conf"
printf 'ACTION=="add", SUBSYSTEM=="module", KERNEL=="zram", ATTR{/sys/kernel/mm/transparent_hugepage/shmem_enabled}="advise"\n' \
        > "$ROOT/etc/udev/rules.d/60-thp.rules"
printf 'ACTION=="add", RUN+="/bin/sh -c '"'"'echo never > /sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled'"'"'"\n' \
        > "$ROOT/usr/lib/udev/rules.d/70-thp.rules"
printf '#!/bin/sh\necho madvise > /sys/kernel/mm/transparent_hugepage/enabled\nexit 0\n' > "$ROOT/etc/rc.local"
ctl status > "$T/st" || fail "status"
for want in "w /sys/kernel/mm/transparent_hugepage/enabled never  \[/etc/tmpfiles.d/thp.conf:2\] -> global/enabled" \
            "w! /sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled always  \[/usr/lib/tmpfiles.d/vendor.conf:1\] -> 64K/anon" \
            "kernel/mm/transparent_hugepage/defrag = defer  \[/etc/sysfs.conf:2\] -> global/defrag" \
            "kernel/mm/transparent_hugepage/hugepages-32kB/enabled = madvise  \[/etc/sysfs.d/thp.conf:1\] -> 32K/anon" \
            "ATTR{/sys/kernel/mm/transparent_hugepage/shmem_enabled}=advise  \[/etc/udev/rules.d/60-thp.rules:1\] -> global/shmem_enabled" \
            "RUN writes /sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled  \[/usr/lib/udev/rules.d/70-thp.rules:1\] -> 2M/anon" \
            "rc.local writes /sys/kernel/mm/transparent_hugepage/enabled  \[/etc/rc.local:2\] -> global/enabled"; do
        grep -q -- "$want" "$T/st" || { cat "$T/st"; fail "status lacks: $want"; }
done
grep -q "defrag always" "$T/st" && fail "status read /usr/lib/tmpfiles.d/thp.conf, which /etc/tmpfiles.d/thp.conf overrides"
grep -q "overcommit\|= 0644" "$T/st" && fail "status shows a line that writes no THP knob"
ctl --json status | python3 -c '
import json, sys
s = json.load(sys.stdin)["deciders"]["settings"]
src = {x["source"] for x in s}
assert {"tmpfiles", "sysfsutils", "udev", "rc.local"} <= src, src
r = [x for x in s if x["source"] == "rc.local"][0]
assert r["value"] == "madvise" and r["knobs"] == ["global/enabled"], r
' || fail "status --json: boot-time writers"
ok "status names the boot-time writers: tmpfiles.d, sysfs.conf and sysfs.d, udev rules, rc.local"
echo "all deciders checks passed"
