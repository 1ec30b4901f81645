#!/bin/bash
# The unit under a real systemd: boot a Debian 12 root with systemd-nspawn,
# install mthpd there with the README's service commands and check what a
# user meets (README "Running it as a service", mthpd(8) SYSTEMD):
#   start reaches active only by READY=1; reload with a good and a bad
#   configuration (the bad one fails `systemctl reload` and the running one
#   stays); mthpctl over the system bus as root and as a user (reads work,
#   cgroups too; writes exit 4); `systemctl restart dbus` -> mthpd back on
#   the bus; journal entries name the caller (CODE_*); an unrestorable
#   journal ends in `failed` (exit 6), no restart loop; kill -9 -> restart
#   -> the journal restored first; a knob failure carries MESSAGE_ID and
#   MTHP_KNOB; watchdog (SIGSTOP -> abort -> restart); stop restores, exit 0;
#   a failure at every start trips the start limit (no endless restarts).
#
# /sys is read-only in the container: the checks on the real host root run
# mthpd with Mode=dry-run (observe); those that need writes (kill -9 and
# restore, knob failures, stop) run it on a fake host tree (tests/fake,
# built inside) through a drop-in ExecStart=... --root and LD_PRELOAD. No
# kernel knob is written, here or on the host.
#
# Runs only when asked: MTHP_SYSTEMD_SUITE=1 (.ci/run sets it). It then
# fails, instead of skipping, when the container cannot boot.
# Root: MTHP_NSPAWN_ROOT (a root where .ci/fresh installed the build deps),
# else /var/tmp/mthpd-nspawn-root, made once with .ci/mkroot plus apt-get
# (about 2 minutes, Debian mirror) and reused. Either is booted through an
# overlay and never changed. The source is this tree's (git ls-files, with
# uncommitted changes); MTHP_NSPAWN_SRC=DIR boots another one (e.g. an old
# commit's, to see these checks fail).
set -uo pipefail
# shellcheck source=tests/systemd/lib.sh
. "$(dirname "$0")/lib.sh"
nspawn_boot

# ---- install: the README's service commands -------------------------------
say "building and installing in the container"
# README: meson setup build-usr -Dprefix=/usr -Dtests=false && ninja -C build-usr install
must build.log "the README's install command in the container" \
        sh -c 'cd /root/mthpd && meson setup build-usr -Dprefix=/usr -Dtests=false && ninja -C build-usr install'
ok "README: meson setup build-usr -Dprefix=/usr -Dtests=false && ninja -C build-usr install"
# the fake host for the checks that write (not installed by meson: -Dtests=false)
in_ct sh -c 'cd /root/mthpd/tests/fake && mkdir -p /usr/local/lib/mthpd-test &&
        gcc -std=gnu11 -D_GNU_SOURCE -O1 -shared -fPIC -I. -o /usr/local/lib/mthpd-test/libfakesysfs.so fakesysfs.c fakehost.c &&
        gcc -std=gnu11 -D_GNU_SOURCE -O1 -I. -o /usr/local/lib/mthpd-test/fakehost fakehost-cli.c fakehost.c fakesysfs.c' >"$W/fake.log" 2>&1 ||
        { cat "$W/fake.log" >&2; echo "FAIL: cannot build the fake host in the container" >&2; exit 1; }

# /sys is read-only here: observe (Mode=dry-run, the alias every version takes)
CONF='[Daemon]
Mode=dry-run
Interval=1s'
in_ct sh -c "printf '%s\n' '$CONF' > /etc/mthpd/mthpd.conf"
say "README: systemctl daemon-reload && systemctl enable --now mthpd"
out=$(in_ct timeout 60 sh -c 'systemctl daemon-reload && systemctl enable --now mthpd' 2>&1)
rc=$?
[ $rc = 0 ] || echo "$out" >&2
check "README: systemctl daemon-reload && systemctl enable --now mthpd (exit $rc)" [ $rc = 0 ]

busprop() { # busprop NAME: mthpd's D-Bus property, value only
        in_ct busctl get-property org.mthpd.mthpd1 /org/mthpd/mthpd1 org.mthpd.Manager1 "$1" 2>/dev/null | cut -d' ' -f2-
}
on_bus() {
        in_ct busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus NameHasOwner s \
                org.mthpd.mthpd1 2>/dev/null | grep -qx "b true"
}
dump() { # dump: the unit's state and log, for a failure's context
        in_ct systemctl status --no-pager -n 15 mthpd 2>&1 | sed 's/^/  | /' >&2
}

# ---- 1. start: active only through READY=1 ---------------------------------
check "active after start (Type=notify: READY=1)" [ "$(prop ActiveState)/$(prop SubState)" = active/running ]
check "STATUS= reaches systemd ($(prop StatusText | cut -c1-60))" [ -n "$(prop StatusText)" ]
wait_for 10 on_bus
check "mthpd owns org.mthpd.mthpd1 on the system bus (installed policy)" on_bus

# ---- 2. journal fields: the caller, not the wrapper ------------------------
JPID=$(prop MainPID)
in_ct journalctl -q -o json _PID="$JPID" >"$W/j.json"
code_fields() {
        python3 - "$W/j.json" <<'PY'
import json, sys
n = bad = 0
funcs = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("SYSLOG_IDENTIFIER") != "mthpd":
        continue
    n += 1
    f, fn = e.get("CODE_FILE", ""), e.get("CODE_FUNC", "")
    funcs.add(fn)
    if f.endswith("lib/log.c") or fn in ("mthp_log", "mthp_log_at") or not e.get("CODE_LINE"):
        bad += 1
        if bad <= 3:
            print(f"  entry '{e.get('MESSAGE', '')[:60]}': CODE_FILE={f} CODE_LINE={e.get('CODE_LINE')} CODE_FUNC={fn}",
                  file=sys.stderr)
print(f"# {n} entries of mthpd, {bad} naming the log wrapper; functions: {' '.join(sorted(funcs))}")
sys.exit(0 if n > 0 and bad == 0 and "open_host" in funcs else 1)
PY
}
check "journal: every entry's CODE_FILE/CODE_LINE/CODE_FUNC name the caller (e.g. open_host)" code_fields

# ---- 3. mthpctl over the system bus, root and user -------------------------
check "root: mthpctl status" in_ct sh -c 'mthpctl status >/dev/null'
check "root: mthpctl cgroups" in_ct sh -c 'mthpctl cgroups >/dev/null'
check "user: mthpctl status" as_user sh -c 'mthpctl status >/dev/null'
out=$(as_user mthpctl cgroups 2>&1)
rc=$?
[ $rc = 0 ] || echo "  mthpctl cgroups as uid 65534: exit $rc: $out" >&2
check "user: mthpctl cgroups (ListCgroups, open to everyone)" [ $rc = 0 ]
check "user: mthpctl explain" as_user sh -c 'mthpctl explain >/dev/null'
as_user mthpctl pin 64K/anon never >/dev/null 2>&1
rc=$?
check "user: mthpctl pin exits 4 (got $rc)" [ $rc = 4 ]
as_user mthpctl reload >/dev/null 2>&1
rc=$?
check "user: mthpctl reload exits 4 (got $rc)" [ $rc = 4 ]

# ---- 4. reload: good, then bad -------------------------------------------
in_ct sh -c "printf '%s\n' '${CONF/Interval=1s/Interval=2s}' > /etc/mthpd/mthpd.conf"
in_ct timeout 30 systemctl reload mthpd
rc=$?
check "systemctl reload with a good configuration: exit $rc" [ $rc = 0 ]
check "...and the new Interval=2s runs ($(busprop IntervalUSec))" [ "$(busprop IntervalUSec)" = 2000000 ]
in_ct sh -c "printf '%s\nNoSuchKey=1\n' '${CONF/Interval=1s/Interval=5s}' > /etc/mthpd/mthpd.conf"
out=$(in_ct timeout 30 systemctl reload mthpd 2>&1)
rc=$?
check "systemctl reload with a bad configuration fails (exit $rc)" [ $rc != 0 ]
check "...the running configuration stays (IntervalUSec $(busprop IntervalUSec))" [ "$(busprop IntervalUSec)" = 2000000 ]
check "...and mthpd stays active" [ "$(prop ActiveState)" = active ]
in_ct journalctl -q -u mthpd -o cat --since=-30s >"$W/reload.log"
check "...the journal names the bad line" grep -q "mthpd.conf:4:.*NoSuchKey" "$W/reload.log"
in_ct sh -c "printf '%s\n' '$CONF' > /etc/mthpd/mthpd.conf"
in_ct timeout 30 systemctl reload mthpd >/dev/null 2>&1

# ---- 5. systemctl restart dbus: back on the bus ------------------------------
T0=$SECONDS
in_ct timeout 30 systemctl restart dbus
wait_for 10 on_bus
back=$?
say "mthpd on the bus again $((SECONDS - T0)) s after systemctl restart dbus returned"
check "systemctl restart dbus: mthpd back on the bus within 10 s" [ $back = 0 ]
check "...root's mthpctl reload works again" in_ct sh -c 'mthpctl reload >/dev/null'
in_ct journalctl -q -u mthpd -o cat --since=-20s >"$W/dbus.log"
check "...and the journal says so" grep -q "D-Bus: back on the system bus" "$W/dbus.log"

# ---- 6. an unrestorable journal: failed, with a clear status, no loop ------
in_ct timeout 30 systemctl stop mthpd
K=/sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled
ID=16K/anon
in_ct test -e "$K" || { K=/sys/kernel/mm/transparent_hugepage/enabled; ID=global/enabled; }
cur=$(in_ct cat "$K" | sed 's/.*\[\(.*\)\].*/\1/')
other=$(in_ct cat "$K" | tr -d '[]' | tr ' ' '\n' | grep -vx "$cur" | grep -v '^$' | head -n1)
# a crash's journal: mthpd wrote $cur over $other; /sys is read-only here
in_ct sh -c "printf '[journal]\nroot=/\n\n[knob $ID]\npath=$K\noriginal=$other\nwritten=$cur\nprevious=$other\nstate=managed\n' \
        > /run/mthpd/restore.journal"
in_ct systemctl reset-failed mthpd 2>/dev/null
# start_fails WHAT STATUS: systemctl start fails, the unit ends failed with
# exit STATUS and is not restarted
start_fails() {
        local r0 rc
        r0=$(prop NRestarts)
        in_ct timeout 30 systemctl start mthpd >/dev/null 2>&1
        rc=$?
        check "start $1 fails (exit $rc)" [ $rc != 0 ]
        sleep 5 # RestartSec=2s: a loop would have restarted twice by now
        check "...no restart loop: NRestarts $r0 -> $(prop NRestarts)" [ "$(prop NRestarts)" = "$r0" ]
        check "...the unit is failed ($(prop ActiveState)), exit status $(prop ExecMainStatus) ($2 expected)" \
                [ "$(prop ActiveState)/$(prop ExecMainStatus)" = "failed/$2" ]
}
start_fails "over an unrestorable journal ($ID, /sys read-only)" 6
in_ct systemctl status --no-pager -n 5 mthpd >"$W/status.txt" 2>&1
sed 's/^/  | /' "$W/status.txt"
check "...systemctl status says which journal and why" grep -q "restore journal /run/mthpd/restore.journal .*cannot be restored" "$W/status.txt"
in_ct rm -f /run/mthpd/restore.journal
in_ct systemctl reset-failed mthpd

# ---- 6b. a configuration typo: failed at once (exit 78), no restart ---------
in_ct sh -c "printf '%s\nIntervall=1s\n' '$CONF' > /etc/mthpd/mthpd.conf"
start_fails "with a typo in mthpd.conf" 78
in_ct sh -c "printf '%s\n' '$CONF' > /etc/mthpd/mthpd.conf"
in_ct systemctl reset-failed mthpd

# ---- the fake host: the checks that write --------------------------------
FAKE=/var/lib/mthpd-fake
fk() { in_ct /usr/local/lib/mthpd-test/fakehost "$@"; }
fk create "$FAKE" >/dev/null
in_ct mkdir -p /etc/systemd/system/mthpd.service.d
in_ct sh -c "cat > /etc/systemd/system/mthpd.service.d/fakehost.conf" <<EOF
# tests/systemd: a fake host tree (the container's /sys is read-only)
[Service]
Environment=LD_PRELOAD=/usr/local/lib/mthpd-test/libfakesysfs.so
ExecStart=
ExecStart=/usr/sbin/mthpd --root $FAKE
ReadWritePaths=$FAKE
WatchdogSec=3s
EOF
in_ct sh -c "printf '[Daemon]\nMode=manage\nInterval=1s\n' > /etc/mthpd/mthpd.conf"
in_ct systemctl daemon-reload
in_ct timeout 30 systemctl start mthpd
check "on the fake host: active (WatchdogSec=3s)" [ "$(prop ActiveState)" = active ]
wait_for 10 on_bus

# ---- 7. kill -9 -> restart -> restore first -------------------------------
in_ct sh -c 'mthpctl pin 16K/anon always >/dev/null'
check "pin 16K/anon always writes the fake knob" [ "$(fk read "$FAKE" 16K/anon)" = always ]
check "...and the restore journal holds it" in_ct grep -q "^\[knob 16K/anon\]" /run/mthpd/restore.journal
P1=$(prop MainPID)
R0=$(prop NRestarts)
in_ct systemctl kill --signal=KILL mthpd
restarted() { [ "$(prop MainPID)" != "$P1" ] && [ "$(prop MainPID)" != 0 ] && [ "$(prop ActiveState)" = active ]; }
wait_for 20 restarted
check "kill -9: systemd restarts mthpd (pid $P1 -> $(prop MainPID), NRestarts $R0 -> $(prop NRestarts))" restarted
P2=$(prop MainPID)
in_ct journalctl -q -o cat _PID="$P2" >"$W/restart.log"
first=$(grep -n -m1 "found restore journal" "$W/restart.log" | cut -d: -f1)
restored=$(grep -n -m1 "restored .* knobs from the previous run" "$W/restart.log" | cut -d: -f1)
managing=$(grep -n -m1 "managing mTHP knobs" "$W/restart.log" | cut -d: -f1)
check "...which restores the journal first (lines $first, $restored, then managing at $managing)" \
        [ -n "$first" ] && [ -n "$restored" ] && [ -n "$managing" ] && [ "$restored" -lt "$managing" ]
check "...16K/anon is back to never ($(fk read "$FAKE" 16K/anon))" [ "$(fk read "$FAKE" 16K/anon)" = never ]

# ---- 8. a knob that cannot be written: MESSAGE_ID and MTHP_KNOB ------------
fk fail "$FAKE" 32K/anon EACCES
out=$(in_ct mthpctl pin 32K/anon always 2>&1)
rc=$?
echo "  $out"
check "pin of a knob whose write fails (EACCES) exits 1 (got $rc) with mthpd's reason" \
        [ $rc = 1 ] && grep -q "32K/anon.*permission denied" <<<"$out"
fk fail "$FAKE" 32K/anon none
in_ct journalctl -q -o json -u mthpd MESSAGE_ID=3e5b7a91c2d44f6e8a0b1c9d7f2e4a68 MTHP_KNOB=32K/anon >"$W/fail.json"
check "...the journal entry carries MESSAGE_ID=3e5b7a91... and MTHP_KNOB=32K/anon ($(wc -l <"$W/fail.json") entries)" \
        [ -s "$W/fail.json" ]

# ---- 9. watchdog: SIGSTOP -> abort -> restart ------------------------------
P1=$(prop MainPID)
R0=$(prop NRestarts)
in_ct kill -STOP "$P1"
wait_for 20 restarted
check "watchdog: a stopped mthpd is aborted and restarted (pid $P1 -> $(prop MainPID), NRestarts $R0 -> $(prop NRestarts))" restarted
in_ct journalctl -q -o cat -u mthpd --since=-25s >"$W/wd.log"
check "...systemd says Watchdog timeout" grep -q "Watchdog timeout" "$W/wd.log"

# ---- 10. stop restores and exits 0 ---------------------------------------
wait_for 10 on_bus
in_ct sh -c 'mthpctl pin 64K/anon always >/dev/null'
check "pin 64K/anon always writes the fake knob" [ "$(fk read "$FAKE" 64K/anon)" = always ]
in_ct timeout 30 systemctl stop mthpd
check "stop: exit status $(prop ExecMainStatus), result $(prop Result)" \
        [ "$(prop ExecMainStatus)/$(prop Result)" = 0/success ]
check "...64K/anon restored to never ($(fk read "$FAKE" 64K/anon))" [ "$(fk read "$FAKE" 64K/anon)" = never ]
check "...no restore journal left" in_ct test ! -e /run/mthpd/restore.journal

# ---- 11. a failure a restart cannot mend ends, on the fake host too -------
# (exit 78 is in RestartPreventExitStatus=: failed at once, no restart, so
# the start limit is never reached), and STATUS= says which line is wrong
in_ct sh -c "printf '[Daemon]\nNoSuchKey=1\n' > /etc/mthpd/mthpd.conf"
in_ct systemctl reset-failed mthpd
T0=$SECONDS
in_ct timeout 30 systemctl start mthpd >/dev/null 2>&1
limited() { [ "$(prop ActiveState)" = failed ]; }
wait_for 40 limited
N1=$(prop NRestarts)
sleep 3 # RestartSec=2s: still failed, no restart since
check "a configuration error at every start: Restart=on-failure gives up after $((SECONDS - T0 - 3)) s ($N1 restarts)" \
        limited && [ "$(prop NRestarts)" = "$N1" ]
check "...exit status $(prop ExecMainStatus) (78 expected)" [ "$(prop ExecMainStatus)" = 78 ]
prop StatusText >"$W/status-text"
check "...and STATUS= names the bad line ($(cut -c1-80 "$W/status-text"))" \
        grep -q "invalid configuration: /etc/mthpd/mthpd.conf:2: unknown key 'NoSuchKey'" "$W/status-text"
in_ct sh -c "printf '%s\n' '$CONF' > /etc/mthpd/mthpd.conf"
in_ct systemctl reset-failed mthpd

say "done"
if [ $FAILED -gt 0 ]; then
        dump
        echo "$FAILED check(s) failed"
        exit 1
fi
echo "all real-systemd checks passed"
