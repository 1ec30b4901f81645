#!/bin/bash
# Issue 13 item 3 on the bus: strings chosen by others (a byte 0xff quoted
# by a policy error, a cgroup named with 0xff or ESC) must not break the
# D-Bus service: sd-bus refuses invalid UTF-8, so Reload never replied and
# ListCgroups failed. Every reply must come, valid UTF-8, the bytes escaped.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

start_open_bus
"$FAKEHOST" create "$ROOT" >/dev/null
LIVE=$T/live.conf
fast_conf "$LIVE" 1000
mkdir -m 0755 "$T/policy.d"
printf '[Match]\nCgroup=/db*\n[Policy]\nAnon=always\n' > "$T/policy.d/db.policy"
"$FAKEHOST" cgroup "$ROOT" "$(printf 'db\xff\x1b[2J')" >/dev/null || fail "cannot add a cgroup to the fake host"

start_mthpd -c "$LIVE" --policy-dir "$T/policy.d"
wait_for 5 on_bus || fail "mthpd did not take org.mthpd.mthpd1"

# item03: a cgroup named with 0xff and ESC: ListCgroups replies, escaped
wait_for 5 sh -c "busctl --timeout=5 --json=short call ${OBJ[*]} ListCgroups | grep -q 'db'" ||
        fail "item03: ListCgroups failed or never listed the cgroup: $(busctl --timeout=5 call "${OBJ[@]}" ListCgroups 2>&1)"
out=$(busctl --timeout=5 --json=short call "${OBJ[@]}" ListCgroups)
grep -qF '/db\\xff\\x1b[2J' <<<"$out" || fail "item03: the cgroup name is not escaped: $out"
ok "item03: ListCgroups replies for a cgroup named with 0xff and ESC, the bytes escaped"

# item03: a policy error quoting byte 0xff: Reload replies (it never did)
printf '[Match]\nCgroup=/x\n[Policy]\nAnon=\xff\n' > "$T/policy.d/bad.policy"
t0=$SECONDS
err=$(timeout 10 dbus-send --system --reply-timeout=5000 --print-reply --dest=org.mthpd.mthpd1 /org/mthpd/mthpd1 \
        org.mthpd.Manager1.Reload 2>&1) && fail "item03: Reload of a bad policy succeeded"
[ $((SECONDS - t0)) -lt 4 ] || fail "item03: Reload took $((SECONDS - t0)) s: no reply ($err)"
grep -qF "org.mthpd.Error.InvalidConfig" <<<"$err" || fail "item03: Reload did not say InvalidConfig: $err"
grep -qF "got '\\xff'" <<<"$err" || fail "item03: the byte is not escaped in the error: $err"
ok "item03: Reload of a policy quoting byte 0xff replies InvalidConfig at once, the byte escaped"
rm -f "$T/policy.d/bad.policy"

# mthpctl reload, as the issue saw it (it hung 25 s)
printf '[Match]\nCgroup=/y\n[Policy]\nAnon=\xfe\n' > "$T/policy.d/bad2.policy"
t0=$SECONDS
RC=0; timeout 20 "$MTHPCTL" reload >"$T/out" 2>&1 || RC=$?
[ "$RC" != 0 ] && [ "$RC" != 124 ] || fail "item03: mthpctl reload: exit $RC: $(cat "$T/out")"
[ $((SECONDS - t0)) -lt 4 ] || fail "item03: mthpctl reload took $((SECONDS - t0)) s"
rm -f "$T/policy.d/bad2.policy"
ok "item03: mthpctl reload of such a policy fails at once (exit $RC)"

call Reload || fail "Reload of the good policy again"
kill -0 "$PID" || fail "mthpd died"
echo "dbus-untrusted: all checks passed"
