#!/bin/bash
# A read-only state directory is named as what it is: mthpd managing over a
# StateDirectory on a read-only mount (a bind mount remounted ro in a private
# mount namespace) refuses to start, and the log and the STATUS= it sends
# systemd (a datagram socket at NOTIFY_SOCKET) name the directory, never
# "/sys is mounted read-only". Two ways: the directory exists (its lock
# cannot be made), or it must be created below a read-only one.
# Env: MTHPD, FAKEHOST, FAKESYSFS.
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a read-only bind mount in a private mount namespace)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
unshare --mount --propagation private true 2>/dev/null ||
        { echo "SKIP: unshare --mount failed here: no mount namespaces"; exit 77; }

fakehost_setup mthpd-stro
"$FAKEHOST" create "$ROOT" >/dev/null
mkdir -p "$STATE"
printf '[Daemon]\nInterval=100ms\nBus=no\n' > "$T/mthpd.conf"
cat > "$T/notify.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(5)
out = open(sys.argv[2], "w")
open(sys.argv[3], "w").close()
while True:
    try:
        d = s.recv(65536)
    except socket.timeout:
        break
    out.write(d.decode(errors="replace") + "\n")
    out.flush()
PY

run() { # run NAME STATE_DIR: mthpd over STATE_DIR with $STATE read-only; $T/NAME.{log,notify,rc}
        rm -f "$T/ready" "$T/sock"
        # shellcheck disable=SC2016 # expanded by the inner shell
        unshare --mount --propagation private sh -c '
                mount --bind "$4" "$4" && mount -o remount,bind,ro "$4" || exit 90
                python3 "$1/notify.py" "$1/sock" "$1/$2.notify" "$1/ready" & L=$!
                i=0; while [ ! -e "$1/ready" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                NOTIFY_SOCKET="$1/sock" LD_PRELOAD="$5" "$6" --root "$7" --state-dir "$3" -c "$1/mthpd.conf" \
                        2>"$1/$2.log"
                echo $? > "$1/$2.rc"
                # the datagrams are sent: let the listener write them out
                i=0; while ! grep -q "^STATUS=failed" "$1/$2.notify" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                kill $L' sh "$T" "$1" "$2" "$STATE" "$FAKESYSFS" "$MTHPD" "$ROOT"
        [ -s "$T/$1.rc" ] || fail "$1: the read-only mount could not be set up"
}
check() { # check NAME DIR
        local rc status
        rc=$(cat "$T/$1.rc")
        status=$(grep '^STATUS=' "$T/$1.notify" | tail -n 1)
        [ "$rc" != 0 ] || fail "$1: mthpd started over a read-only state directory"
        grep -q "/sys" <<<"$status" && fail "$1: STATUS= blames /sys: $status"
        grep -qF "$2" <<<"$status" || fail "$1: STATUS= does not name $2: $status; log: $(cat "$T/$1.log")"
        grep -q "mounted read-only here" "$T/$1.log" && fail "$1: the log blames /sys: $(cat "$T/$1.log")"
        ok "$1: exit $rc, $status"
}
run exists "$STATE"
check exists "$STATE"
run below "$STATE/sub"
check below "$STATE/sub"
