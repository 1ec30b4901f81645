#!/bin/bash
# The fields of mthpd's journal entries, without journald: in a private
# mount namespace a tmpfs hides /run, a listener takes the datagrams at
# /run/systemd/journal/socket (the native protocol sd_journal_send speaks)
# and JOURNAL_STREAM names mthpd's stderr, as systemd would. mthpd starts on
# a fake host over a leftover journal it cannot restore (the knob's write
# fails with EACCES), so it logs its probe, a knob failure and exits 6.
# Checks: CODE_FILE/CODE_LINE/CODE_FUNC name the caller (open_host,
# restore_entry), never lib/log.c's wrapper; the failure carries
# MESSAGE_ID=3e5b7a91c2d44f6e8a0b1c9d7f2e4a68 and MTHP_KNOB=16K/anon.
# (tests/systemd checks the same under a real journald.)
# Env: MTHPD, FAKEHOST, FAKESYSFS.
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a private mount namespace to hide /run)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
unshare --mount --propagation private true 2>/dev/null ||
        { echo "SKIP: unshare --mount failed here: no mount namespaces"; exit 77; }

fakehost_setup mthpd-jfields
"$FAKEHOST" create "$ROOT" >/dev/null
"$FAKEHOST" write "$ROOT" 16K/anon always
"$FAKEHOST" fail "$ROOT" 16K/anon EACCES
mkdir -p "$STATE"
# a crash's journal: mthpd wrote always over never
printf '[journal]\nroot=%s\n\n[knob 16K/anon]\npath=%s\noriginal=never\nwritten=always\nprevious=never\nstate=managed\n' \
        "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled > "$STATE/restore.journal"
printf '[Daemon]\nInterval=100ms\nBus=no\n' > "$T/mthpd.conf"
# a configuration with a typo: its error entries name open_host(), not a helper
printf '[Daemon]\nInterval=100ms\nBus=no\nIntervall=1s\n' > "$T/bad.conf"
: > "$T/stderr"

# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --propagation private sh -c '
        mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal || exit 90
        python3 "$6" "$1/entries.json" "$1/ready" & L=$!
        i=0; while [ ! -e "$1/ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        [ -e "$1/ready" ] || exit 91
        JOURNAL_STREAM=$(stat -c "%d:%i" "$1/stderr") LD_PRELOAD="$2" \
                "$3" --root "$4" --state-dir "$5" -c "$1/mthpd.conf" 2>>"$1/stderr"
        echo $? > "$1/rc"
        JOURNAL_STREAM=$(stat -c "%d:%i" "$1/stderr") LD_PRELOAD="$2" \
                "$3" --root "$4" --state-dir "$5" -c "$1/bad.conf" 2>>"$1/stderr"
        echo $? > "$1/rc.bad"
        wait $L' sh "$T" "$FAKESYSFS" "$MTHPD" "$ROOT" "$STATE" "$(cd "$(dirname "$0")" && pwd)/journal-listen.py"
[ -s "$T/rc" ] || fail "the namespace with the fake journal socket could not be set up"
RC=$(cat "$T/rc")
[ -s "$T/entries.json" ] || { cat "$T/stderr" >&2; fail "no journal entries reached the socket (stderr above)"; }
[ ! -s "$T/stderr" ] || { cat "$T/stderr" >&2; fail "mthpd wrote to stderr although JOURNAL_STREAM named it"; }
ok "mthpd logged $(wc -l < "$T/entries.json") entries to the journal socket"

python3 - "$T/entries.json" <<'PY' || fail "journal fields"
import json, sys
es = [json.loads(l) for l in open(sys.argv[1])]
bad = [e for e in es if e.get("CODE_FILE", "").endswith("lib/log.c") or not e.get("CODE_LINE")
       or e.get("CODE_FUNC", "") in ("", "mthp_log", "mthp_log_at")]
for e in bad[:3]:
    print(f"FAIL: '{e.get('MESSAGE', '')[:60]}': CODE_FILE={e.get('CODE_FILE')} CODE_LINE={e.get('CODE_LINE')} "
          f"CODE_FUNC={e.get('CODE_FUNC')}", file=sys.stderr)
if bad:
    sys.exit(f"{len(bad)} of {len(es)} entries name the log wrapper, not the caller")
probe = [e for e in es if e.get("MESSAGE", "").startswith("probe:")]
if not probe or any(e["CODE_FUNC"] != "open_host" or not e["CODE_FILE"].endswith("daemon/manager.c") for e in probe):
    sys.exit("the probe lines do not name open_host() in daemon/manager.c")
print(f"ok - every entry names its caller (e.g. {probe[0]['CODE_FILE']}:{probe[0]['CODE_LINE']} {probe[0]['CODE_FUNC']})")
fail = [e for e in es if e.get("MESSAGE_ID") == "3e5b7a91c2d44f6e8a0b1c9d7f2e4a68"]
if not fail:
    sys.exit("no entry with the knob-failure MESSAGE_ID for the failed restore")
if any(e.get("MTHP_KNOB") != "16K/anon" or e.get("CODE_FUNC") != "restore_entry" for e in fail):
    sys.exit(f"a knob-failure entry without MTHP_KNOB=16K/anon from restore_entry (lib/actuator.c): {fail}")
if any(e.get("MESSAGE_ID") == "3e5b7a91c2d44f6e8a0b1c9d7f2e4a68" for e in probe):
    sys.exit("probe lines carry the failure MESSAGE_ID")
print(f"ok - the failed restore: MESSAGE_ID={fail[0]['MESSAGE_ID']} MTHP_KNOB={fail[0]['MTHP_KNOB']}: "
      f"{fail[0]['MESSAGE'][:70]}")
rel = [e for e in es if e.get("CODE_FILE", "").startswith("../")]
if rel:
    sys.exit(f"CODE_FILE relative to the build directory: {rel[0]['CODE_FILE']}")
conf = [e for e in es if "bad.conf:4:" in e.get("MESSAGE", "")]
if not conf:
    sys.exit("no entry for the configuration error bad.conf:4")
if any(e.get("CODE_FUNC") != "open_host" or e.get("CODE_FILE") != "daemon/manager.c" for e in conf):
    sys.exit(f"the configuration error does not name open_host() in daemon/manager.c: {conf}")
print(f"ok - the configuration error names {conf[0]['CODE_FILE']}:{conf[0]['CODE_LINE']} {conf[0]['CODE_FUNC']}")
PY
[ "$RC" = 6 ] || fail "mthpd over an unrestorable journal: exit $RC, expected 6"
ok "...and exited 6"
[ "$(cat "$T/rc.bad")" = 78 ] || fail "mthpd with a typo in its configuration: exit $(cat "$T/rc.bad"), expected 78"
ok "...and with a typo in the configuration exited 78"
echo "all journal field checks passed"
