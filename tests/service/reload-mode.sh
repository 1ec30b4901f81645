#!/bin/bash
# A reload never widens what mthpd may do unless the new file says so. The
# configuration sits at the default path (no -c), as on a real host: in a
# private mount namespace a tmpfs covers the default file's directory.
# 1. Mode=observe, the file removed, SIGHUP: the reload fails, mthpd keeps
#    observing (it once loaded the built-in defaults, Mode=manage included).
# 2. A file without Mode=: still observing, and the log says why.
# 3. Mode=manage: managing.
# 2b. With Bus=no, mthpctl reload (what `systemctl reload` runs) signals
#    mthpd and reports the outcome; a bad file fails it.
# 4. Over D-Bus after 'mthpctl mode manage': Mode=observe in the file is not
#    applied, and both the log and mthpctl reload say so; a file that is gone
#    fails 'mthpctl reload'.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS, CONFDIR (mthpd's default
# configuration directory, MTHP_SYSCONFDIR).
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a private mount namespace over $CONFDIR)"; exit 77; }
if [ -z "${MTHPD_RELOAD_NS:-}" ]; then
        unshare --mount --propagation private true 2>/dev/null ||
                { echo "SKIP: unshare --mount failed here: no mount namespaces"; exit 77; }
        MTHPD_RELOAD_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
# the nearest directory that exists on the way to CONFDIR is covered, only
# in this namespace: by a tmpfs, or, where it holds the system's own files
# (/etc on a host without /etc/mthpd), by an overlay whose writes go to a
# directory of this test, so what mthpd and its libraries read stays there
TOP=$CONFDIR
while [ ! -d "$TOP" ]; do TOP=$(dirname "$TOP"); done
case "$TOP" in
/) echo "SKIP: $CONFDIR does not exist and / is not one to cover"; exit 77 ;;
/etc | /usr | /usr/local)
        OVL=$(mktemp -d /tmp/mthpd-reload-ovl.XXXXXX)
        # removed on exit (fakehost_cleanup calls the hook); the
        # namespace's mounts go with it
        fakehost_cleanup_hook() { rm -rf "$OVL"; }
        trap fakehost_cleanup_hook EXIT # until fakehost_setup takes over
        mkdir "$OVL/upper" "$OVL/work"
        mount -t overlay overlay -o "lowerdir=$TOP,upperdir=$OVL/upper,workdir=$OVL/work" "$TOP" ||
                { echo "SKIP: cannot lay an overlay over $TOP here (no overlayfs?)"; exit 77; }
        ;;
*) mount -t tmpfs tmpfs "$TOP" || fail "cannot mount a tmpfs on $TOP" ;;
esac
mkdir -p "$CONFDIR"
CONF=$CONFDIR/mthpd.conf

fakehost_setup mthpd-reload
# off the host's system bus until section 4 starts a private one
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"
"$FAKEHOST" create "$ROOT" >/dev/null
hup_and_wait() { # hup_and_wait PATTERN: SIGHUP, then the log says PATTERN (grep -E)
        local n
        n=$(grep -c "" "$LOG")
        kill -HUP "$PID"
        wait_for 5 sh -c "tail -n +$((n + 1)) '$LOG' | grep -Eq \"\$1\"" sh "$1" || fail "after SIGHUP: no '$1'"
}
managing() { grep -q "managing mTHP knobs" "$LOG"; }

# 1. observe from the default file; the file goes
printf '[Daemon]\nMode=observe\nInterval=100ms\nBus=no\n' > "$CONF"
start_mthpd
wait_for 5 test -s "$STATE/status" || fail "mthpd does not tick"
grep -q "observing: deciding" "$LOG" || fail "Mode=observe at the default path not applied"
rm "$CONF"
hup_and_wait "reload of $CONF failed: keeping the running configuration"
grep -q "$CONF: the file is gone" "$LOG" || fail "the reload does not say the file is gone"
sleep 0.3
managing && fail "a reload without the file started managing"
kill -0 "$PID" || fail "mthpd died"
ok "the file gone: the reload fails and mthpd keeps observing"

# 2. a file without Mode=: observe stays
printf '[Daemon]\nInterval=100ms\nBus=no\n' > "$CONF"
hup_and_wait "^mthpd: info: reloaded $CONF"
grep -q "reload: $CONF does not say Mode=manage: mthpd keeps observing" "$LOG" || fail "the kept observe is not said"
sleep 0.3
managing && fail "a file without Mode= started managing"
ok "a file without Mode=: still observing, and said"

# 2b. Bus=no: mthpctl reload (systemctl reload's ExecReload=) signals mthpd
#     and reports the reload's outcome from the state directory
rc=0; "$MTHPCTL" --state-dir "$STATE" reload >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 0 ] && grep -q "mthpd reloaded its configuration" "$T/out" ||
        fail "mthpctl reload with Bus=no: exit $rc: $(cat "$T/out" "$T/err")"
grep -q "not applied: $CONF does not say Mode=manage" "$T/err" || fail "mthpctl reload with Bus=no: notes: $(cat "$T/err")"
printf '[Daemon]\nInterval=100ms\nBus=no\nBogus=1\n' > "$CONF"
rc=0; "$MTHPCTL" --state-dir "$STATE" reload >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" = 1 ] && grep -q "rejected the configuration" "$T/err" && grep -q "$CONF:4: unknown key 'Bogus'" "$T/err" ||
        fail "mthpctl reload of a bad file with Bus=no: exit $rc: $(cat "$T/out" "$T/err")"
grep -q "reconnect" "$T/err" && fail "mthpctl reload with Bus=no promises a reconnect: $(cat "$T/err")"
printf '[Daemon]\nInterval=100ms\nBus=no\n' > "$CONF"
ok "Bus=no: mthpctl reload signals mthpd and says how the reload went (good file, bad file)"

# 3. Mode=manage, said in the file
printf '[Daemon]\nMode=manage\nInterval=100ms\nBus=no\n' > "$CONF"
hup_and_wait "Mode= changed on reload: managing mTHP knobs"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit $RC"
ok "Mode=manage in the file: managing"

# 4. over D-Bus: a runtime mode outlives a reload, and the reload says so
start_open_bus
printf '[Daemon]\nMode=observe\nInterval=100ms\n' > "$CONF"
start_mthpd
wait_for 5 test -s "$STATE/status" || fail "mthpd does not tick (bus)"
c() { "$MTHPCTL" "$@" >"$T/out" 2>"$T/err"; }
wait_for 5 c mode || fail "mthpd is not on the private bus"
c mode manage || fail "mthpctl mode manage: $(cat "$T/err")"
c reload || fail "mthpctl reload: $(cat "$T/err")"
grep -q "not applied: Mode=observe in $CONF is not applied: 'mthpctl mode manage' (uid 0) set mode manage" \
        "$T/err" || fail "mthpctl reload does not say Mode=observe was not applied: $(cat "$T/out" "$T/err")"
grep -q "reload: Mode=observe in $CONF is not applied" "$LOG" || fail "the log does not say Mode= was not applied"
c mode && grep -qx manage "$T/out" || fail "the mode after the reload: $(cat "$T/out")"
rm "$CONF"
RC=0; c reload || RC=$?
[ "$RC" = 1 ] && grep -q "$CONF: the file is gone" "$T/err" ||
        fail "mthpctl reload of a file that is gone: exit $RC: $(cat "$T/err")"
ok "after 'mthpctl mode manage': Mode=observe not applied, said by the log and mthpctl reload; a file gone fails the reload"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit $RC"
echo "all reload mode checks passed"
