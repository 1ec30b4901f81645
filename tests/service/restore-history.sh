#!/bin/bash
# Every knob write mthpd logs carries the change's fields, restores from the
# journal included: 'mthpctl restore' and mthpd's start over a leftover
# journal log to a stand-in journal socket (journal-listen.py, in a private
# mount namespace, as journal-fields); each "restored" entry must carry
# MESSAGE_ID=6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b, MTHP_KNOB, MTHP_OLD and
# MTHP_NEW. The entries then become real journal files under the fake root
# (systemd-journal-remote, as tests/ctl/history-journal), and 'mthpctl
# history' with mthpd stopped lists both restores.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS.
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a private mount namespace to hide /run)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
unshare --mount --propagation private true 2>/dev/null ||
        { echo "SKIP: unshare --mount failed here: no mount namespaces"; exit 77; }
REMOTE=""
for p in /lib/systemd/systemd-journal-remote /usr/lib/systemd/systemd-journal-remote; do
        [ -x "$p" ] && REMOTE=$p && break
done
[ -n "$REMOTE" ] || { echo "SKIP: systemd-journal-remote is not installed (Debian: systemd-journal-remote)"; exit 77; }

fakehost_setup mthpd-rhist
"$FAKEHOST" create "$ROOT" >/dev/null
mkdir -p "$STATE"
# journal KNOB SIZE_KB: a crash's journal, mthpd wrote always over never
journal() {
        printf '[journal]\nroot=%s\n\n[knob %s]\npath=%s\noriginal=never\nwritten=always\nprevious=never\nstate=managed\n' \
                "$ROOT" "$1" "/sys/kernel/mm/transparent_hugepage/hugepages-$2kB/enabled" > "$T/journal.$2"
}
journal 16K/anon 16
journal 32K/anon 32
"$FAKEHOST" write "$ROOT" 16K/anon always
"$FAKEHOST" write "$ROOT" 32K/anon always
printf '[Daemon]\nInterval=100ms\nBus=no\nMode=observe\n' > "$T/mthpd.conf"
: > "$T/stderr"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"

# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private sh -c '
        T=$1 FAKESYSFS=$2 ROOT=$3 STATE=$4
        mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal || exit 90
        python3 "$7" "$T/entries.json" "$T/ready" & L=$!
        i=0; while [ ! -e "$T/ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        [ -e "$T/ready" ] || exit 91
        export JOURNAL_STREAM=$(stat -c "%d:%i" "$T/stderr") LD_PRELOAD="$FAKESYSFS"
        cp "$T/journal.16" "$STATE/restore.journal"
        "$6" --root "$ROOT" --state-dir "$STATE" restore 2>>"$T/stderr" >"$T/ctl.out"
        echo $? > "$T/rc.ctl"
        cp "$T/journal.32" "$STATE/restore.journal"
        "$5" --root "$ROOT" --state-dir "$STATE" -c "$T/mthpd.conf" --once 2>>"$T/stderr"
        echo $? > "$T/rc.mthpd"
        wait $L' sh "$T" "$FAKESYSFS" "$ROOT" "$STATE" "$MTHPD" "$MTHPCTL" \
        "$(cd "$(dirname "$0")" && pwd)/journal-listen.py"
[ -s "$T/rc.ctl" ] && [ -s "$T/rc.mthpd" ] || fail "the namespace with the fake journal socket could not be set up"
[ "$(cat "$T/rc.ctl")" = 0 ] || fail "mthpctl restore: exit $(cat "$T/rc.ctl"); stderr: $(cat "$T/stderr")"
[ "$(cat "$T/rc.mthpd")" = 0 ] || fail "mthpd --once: exit $(cat "$T/rc.mthpd"); stderr: $(cat "$T/stderr")"
knob_is hugepages-16kB/enabled never && knob_is hugepages-32kB/enabled never || fail "the knobs were not restored"

python3 - "$T/entries.json" <<'PY' || fail "restore entries"
import json, re, sys
es = [json.loads(l) for l in open(sys.argv[1])]
# "restored 16K/anon: always -> never (...)", not the count at the end
rs = [e for e in es if re.match(r"restored \S+: ", e.get("MESSAGE", ""))]
got = sorted((e.get("SYSLOG_IDENTIFIER", ""), e.get("MTHP_KNOB", "")) for e in rs)
for e in rs:
    if e.get("MESSAGE_ID") != "6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b" or not e.get("MTHP_KNOB") or \
            e.get("MTHP_OLD") != "always" or e.get("MTHP_NEW") != "never":
        sys.exit(f"a restore without the change's fields: {e}")
if got != [("mthpctl", "16K/anon"), ("mthpd", "32K/anon")]:
    sys.exit(f"restores logged: {got}, expected mthpctl's 16K/anon and mthpd's 32K/anon; entries: {es}")
print("ok - the restores of mthpctl and mthpd carry MESSAGE_ID and MTHP_KNOB/OLD/NEW")
PY

# the captured entries as real journal files under the fake root
ID=0123456789abcdef0123456789abcdef
mkdir -p "$ROOT/var/log/journal/$ID"
python3 - "$T/entries.json" "$ID" > "$T/export" <<'PY'
import json, sys, time
now = int(time.time() * 1e6)
for n, l in enumerate(open(sys.argv[1])):
    e = json.loads(l)
    print(f"__REALTIME_TIMESTAMP={now - 1000000 + n}\n__MONOTONIC_TIMESTAMP={n + 1}\n"
          f"_BOOT_ID={sys.argv[2]}\n_MACHINE_ID={sys.argv[2]}\n_HOSTNAME=fake")
    for k, v in e.items():
        print(f"{k}={v}")
    print()
PY
timeout 30 "$REMOTE" -o "$ROOT/var/log/journal/$ID/system.journal" - < "$T/export" 2>"$T/remote.err" ||
        fail "journal-remote: $(cat "$T/remote.err")"
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" history --json > "$T/history" 2>"$T/history.err" ||
        fail "mthpctl history: $(cat "$T/history.err")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["source"] == "journal", d
ids = [(c["id"], c["old"], c["new"]) for c in d["changes"]]
assert ("16K/anon", "always", "never") in ids and ("32K/anon", "always", "never") in ids, ids
' "$T/history" || fail "history with mthpd stopped misses the restores: $(cat "$T/history")"
ok "mthpctl history with mthpd stopped lists both restores"
