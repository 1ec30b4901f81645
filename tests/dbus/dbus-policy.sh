#!/bin/bash
# conf/org.mthpd.mthpd1.conf on a private bus whose default policy is the
# system bus's (deny owning names and calling methods, allow replies and
# signals): it must parse, let root own the name and call everything, let
# everyone read, and refuse the rest to other users before mthpd sees it.
# Env: MTHPD, FAKEHOST, FAKESYSFS, POLICY (the policy file).
. "$(dirname "$0")/lib.sh"

# the default policy of Debian's /usr/share/dbus-1/system.conf, then ours
start_bus "<policy context=\"default\">
    <allow user=\"*\"/>
    <deny own=\"*\"/>
    <deny send_type=\"method_call\"/>
    <allow send_type=\"signal\"/>
    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>
    <allow send_requested_reply=\"true\" send_type=\"error\"/>
    <allow receive_type=\"method_call\"/>
    <allow receive_type=\"method_return\"/>
    <allow receive_type=\"error\"/>
    <allow receive_type=\"signal\"/>
    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus\"/>
    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Introspectable\"/>
    <allow send_destination=\"org.freedesktop.DBus\" send_interface=\"org.freedesktop.DBus.Properties\"/>
  </policy>
  <include ignore_missing=\"no\">$POLICY</include>" || fail "dbus-daemon refused a configuration including $POLICY"
ok "the policy file parses (dbus-daemon started with it)"

"$FAKEHOST" create "$ROOT" >/dev/null
printf '[Daemon]\nInterval=100ms\n' > "$T/mthpd.conf"
start_mthpd -c "$T/mthpd.conf"
wait_for 5 on_bus || fail "root could not own org.mthpd.mthpd1"
ok "root owns org.mthpd.mthpd1"

as_nobody busctl get-property "${OBJ[@]}" Mode | grep -qx 's "manage"' || fail "uid $NOBODY cannot Get"
as_nobody busctl call "${OBJ[@]:0:2}" org.freedesktop.DBus.Properties GetAll s org.mthpd.Manager1 >/dev/null ||
        fail "uid $NOBODY cannot GetAll"
# into a file: grep -q ending the pipe early would fail busctl (SIGPIPE, pipefail)
as_nobody busctl introspect "${OBJ[@]}" > "$T/introspect" || fail "uid $NOBODY cannot introspect"
grep -q '^\.Pin *method' "$T/introspect" || fail "uid $NOBODY introspects no Pin: $(cat "$T/introspect")"
as_nobody busctl call "${OBJ[@]}" ListKnobs | grep -q '"16K/anon" 16 "anon"' || fail "uid $NOBODY cannot ListKnobs"
as_nobody busctl call "${OBJ[@]}" Explain s "" >/dev/null || fail "uid $NOBODY cannot Explain"
as_nobody busctl call "${OBJ[@]}" ExplainRules s "" >/dev/null || fail "uid $NOBODY cannot ExplainRules"
as_nobody busctl call "${OBJ[@]}" History u 5 >/dev/null || fail "uid $NOBODY cannot read History"
# mthpd.dbus(5): everyone may call ListCgroups (mthpctl cgroups, metrics, top)
out=$(as_nobody busctl call "${OBJ[@]}" ListCgroups 2>&1) || fail "uid $NOBODY cannot ListCgroups: $out"
ok "uid $NOBODY may Get, GetAll, Introspect, ListKnobs, Explain, ExplainRules, History, ListCgroups"

# refused by the bus: the message is dbus-daemon's, not mthpd's
bus_denies() { # bus_denies METHOD ARGS...
        local out
        out=$(call_error --nobody "$@") || fail "uid $NOBODY could call $1"
        grep -q "^org.freedesktop.DBus.Error.AccessDenied: Rejected send message" <<<"$out" ||
                fail "$1 as uid $NOBODY was not refused by the bus policy: $out"
}
bus_denies Reload
bus_denies Pin string:64K/anon string:never uint64:0
bus_denies Unpin string:64K/anon
bus_denies SetMode string:observe
bus_denies Restore
bus_denies Resume string:64K/anon
out=$(as_nobody busctl call "${OBJ[@]:0:2}" org.freedesktop.DBus.Properties Set ssv org.mthpd.Manager1 Mode s observe 2>&1) &&
        fail "uid $NOBODY could call Set"
ok "the bus refuses every write of uid $NOBODY (Reload, Pin, Unpin, SetMode, Restore, Resume, Set)"

out=$(as_nobody busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus RequestName su \
        org.mthpd.mthpd1 0 2>&1) && fail "uid $NOBODY could ask for the name: $out"
ok "uid $NOBODY may not own org.mthpd.mthpd1"

call Pin sst 128K/anon always 0 || fail "root cannot Pin"
knob_is hugepages-128kB/enabled always || fail "root's Pin did not write"
call SetMode s observe || fail "root cannot SetMode"
knob_is hugepages-128kB/enabled never || fail "observe did not restore"
ok "root may call the writes"

stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit code $RC"
echo "all D-Bus policy checks passed"
