#!/bin/bash
# Sourced by the real-systemd tests (tests/systemd/*.sh): the checks' gate
# (MTHP_SYSTEMD_SUITE=1, root, the tools), the Debian 12 root and the
# overlay it is booted through (never changed), the source under test copied
# into it as /root/mthpd, nspawn_boot and in_ct/as_user to run commands in
# the booted container. The EXIT trap powers the container off and removes
# the overlay. See nspawn.sh for the environment (MTHP_NSPAWN_ROOT, ...).
SRC=${MTHP_NSPAWN_SRC:-${MESON_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
START=$SECONDS

skip() { echo "SKIP: $*"; exit 77; }
cannot() { # cannot REASON: skip, or fail when the suite was asked for
        if [ "${MTHP_SYSTEMD_SUITE:-}" = 1 ]; then
                echo "FAIL: MTHP_SYSTEMD_SUITE=1 but $*" >&2
                exit 1
        fi
        skip "$*"
}
[ "${MTHP_SYSTEMD_SUITE:-}" = 1 ] ||
        skip "the real-systemd suite boots a container (under a minute; making its Debian root the first time, about 2 more): run it with MTHP_SYSTEMD_SUITE=1 meson test -C build --suite systemd (as root, systemd-container installed)"
[ "$(id -u)" = 0 ] || cannot "systemd-nspawn needs root"
for t in systemd-nspawn nsenter python3 mount; do
        command -v "$t" >/dev/null || cannot "$t is not installed (apt-get install systemd-container util-linux python3)"
done

FAILED=0
ok() { echo "ok - $*"; }
bad() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
check() { # check DESCRIPTION CMD...: ok or FAIL, and go on
        local what=$1
        shift
        if "$@"; then ok "$what"; else bad "$what"; fi
}
say() { echo "# $* ($((SECONDS - START)) s)"; }

# ---- the root and the overlay ------------------------------------------
PKGS="systemd dbus meson ninja-build gcc libc6-dev pkg-config libsystemd-dev libnl-3-dev libnl-genl-3-dev
libinih-dev libcgroup-dev scdoc python3 procps util-linux"
if [ -n "${MTHP_NSPAWN_ROOT:-}" ]; then
        BASE=$MTHP_NSPAWN_ROOT
        [ -x "$BASE/usr/lib/systemd/systemd" ] || [ -d "$BASE/usr/bin" ] ||
                cannot "MTHP_NSPAWN_ROOT=$BASE is not a root file system"
else
        BASE=/var/tmp/mthpd-nspawn-root
        if [ ! -e "$BASE/.mthpd-nspawn-ready" ]; then
                say "making $BASE (.ci/mkroot, then apt-get install inside; once)"
                "$TOP/.ci/mkroot" "$BASE" || cannot ".ci/mkroot $BASE failed"
                # shellcheck disable=SC2086
                chroot "$BASE" env DEBIAN_FRONTEND=noninteractive sh -c \
                        "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${PKGS//$'\n'/ } >/dev/null" ||
                        cannot "apt-get install in $BASE failed"
                touch "$BASE/.mthpd-nspawn-ready"
        fi
fi

W=$(mktemp -d /var/tmp/mthpd-nspawn.XXXXXX)
M=$W/merged
NSPAWN="" CPID=""
# nspawn_poweroff: the container powers off (SIGKILL after 15 s); 0 if it
# did by itself. The overlay stays: nspawn_boot boots it again.
nspawn_poweroff() {
        local rc=0
        if [ -n "$NSPAWN" ] && kill -0 "$NSPAWN" 2>/dev/null; then
                kill -TERM "$NSPAWN" 2>/dev/null # nspawn asks the container's systemd to power off
                for _ in $(seq 150); do kill -0 "$NSPAWN" 2>/dev/null || break; sleep 0.1; done
                if kill -0 "$NSPAWN" 2>/dev/null; then
                        echo "# the container did not power off in 15 s: SIGKILL to nspawn $NSPAWN" >&2
                        kill -KILL "$NSPAWN" 2>/dev/null
                        rc=1
                fi
                wait "$NSPAWN" 2>/dev/null
        fi
        NSPAWN="" CPID=""
        return $rc
}
cleanup() {
        local rc=$?
        nspawn_poweroff
        local left=""
        for _ in 1 2 3; do
                left=$(awk -v w="$W/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r)
                [ -z "$left" ] && break
                for m in $left; do umount "$m" 2>/dev/null || true; done
                sleep 0.5
        done
        if [ -n "$left" ]; then
                echo "FAIL: still mounted, $W left in place: $left" >&2
                rc=1
        else
                rm -rf "$W"
        fi
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$W/upper" "$W/work" "$M"
mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$W/upper,workdir=$W/work" "$M" ||
        cannot "cannot mount an overlay on $BASE"

# packages a given root may lack go into the overlay, not the root; a test
# that needs more than the build's (NSPAWN_PKGS) gets them the same way
missing=""
for p in $PKGS ${NSPAWN_PKGS:-}; do
        # shellcheck disable=SC2016 # dpkg-query's format
        chroot "$M" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
        say "installing into the overlay:$missing"
        chroot "$M" env DEBIAN_FRONTEND=noninteractive sh -c \
                "apt-get update -qq && apt-get install -y -qq --no-install-recommends$missing >/dev/null" ||
                cannot "apt-get install$missing in the overlay failed"
fi

# the source under test, as a clone would have it
mkdir -p "$M/root/mthpd"
chmod 700 "$M/root"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$SRC" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$M/root/mthpd" ||
                cannot "cannot copy $SRC"
else
        (cd "$SRC" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$M/root/mthpd" || cannot "cannot copy $SRC"
fi

# ---- boot ---------------------------------------------------------------
# nspawn_boot: boot $M; NSPAWN is systemd-nspawn's pid, CPID the container's PID 1
nspawn_boot() {
        say "booting $BASE (overlay $M)"
        systemd-nspawn -b --register=no --keep-unit -D "$M" --console=passive >"$W/nspawn.log" 2>&1 &
        NSPAWN=$!
        # the container's PID 1: nspawn's child once it runs systemd (before, the
        # child is nspawn's own, setting up the container)
        for _ in $(seq 100); do
                CPID=""
                for c in $(ps -o pid= --ppid "$NSPAWN" 2>/dev/null); do
                        [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && CPID=$c
                done
                [ -n "$CPID" ] && break
                kill -0 "$NSPAWN" 2>/dev/null || break
                sleep 0.1
        done
        [ -n "$CPID" ] || { cat "$W/nspawn.log" >&2; cannot "systemd-nspawn -b did not start a container"; }

        booted=""
        for _ in $(seq 60); do
                st=$(in_ct timeout 5 systemctl is-system-running 2>/dev/null)
                case "$st" in running|degraded) booted=$st; break ;; esac
                sleep 0.5
        done
        [ -n "$booted" ] || { tail -n 30 "$W/nspawn.log" >&2; cannot "the container's systemd did not finish booting in 30 s (state '$st')"; }
        say "systemd $(in_ct systemctl --version | head -n1 | cut -d' ' -f2) is $booted in container pid $CPID"
}

# in_ct CMD...: run CMD in the container (all its namespaces), clean environment
in_ct() {
        nsenter -t "$CPID" -a -- /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
                HOME=/root LANG=C.UTF-8 "$@"
}
as_user() { in_ct setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env "$@"; }

# must LOG WHAT CMD...: CMD in the container, its output in $W/LOG; if it
# fails, the log's tail and "FAIL: WHAT failed", and the test ends
must() {
        local log=$W/$1 what=$2
        shift 2
        if ! in_ct "$@" >"$log" 2>&1; then
                tail -n 30 "$log" >&2
                echo "FAIL: $what failed" >&2
                exit 1
        fi
}
prop() { in_ct systemctl show -p "$1" --value mthpd; }
wait_for() { # wait_for SECONDS CMD...
        local until=$((SECONDS + $1))
        shift
        while ! "$@"; do
                [ $SECONDS -lt $until ] || return 1
                sleep 0.2
        done
}
