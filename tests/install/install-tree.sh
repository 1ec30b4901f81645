#!/bin/bash
# `meson install --destdir` lays out exactly this tree (paths from meson's
# options, so it holds for any prefix), file by file, and nothing else:
#   SBINDIR/mthpd  BINDIR/mthpctl  UNITDIR/mthpd.service
#   UNITDIR/mthpd-metrics.{service,timer}
#   DATADIR/dbus-1/system.d/org.mthpd.mthpd1.conf
#   MANDIR/man8/{mthpd,mthpctl}.8  MANDIR/man5/mthpd.{conf,dbus[,policy]}.5
#   CONFDIR/mthpd.conf  CONFDIR/mthpd.conf.d/ (empty)  CONFDIR/policy.d/ (empty)
#   DATADIR/doc/mthpd/examples/policy.d/*.policy (when conf/policy.d exists)
#   DATADIR/bash-completion/completions/mthpctl
# No tmpfiles.d entry: the unit's RuntimeDirectory= makes /run/mthpd.
# CONFDIR, where mthpd reads its configuration, is /etc/mthpd - what every
# document says - for any prefix, unless -Dsysconfdir names an absolute
# directory: then SYSCONFDIR/mthpd. meson's own default sysconfdir is 'etc'
# under the prefix (/usr/local/etc for a plain `meson setup`), which is not
# where the documents send an administrator.
# Env: MESON_BUILD_ROOT, MESON_SOURCE_ROOT, UNITDIR, SBINDIR, BINDIR, MANDIR,
# DATADIR (absolute paths from meson), SYSCONFDIR_OPTION (-Dsysconfdir as
# meson holds it: relative to the prefix, or absolute).
set -euo pipefail
T=$(mktemp -d /tmp/mthpd-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
SRC=$MESON_SOURCE_ROOT
case "$SYSCONFDIR_OPTION" in
/*) CONFDIR=$SYSCONFDIR_OPTION/mthpd ;;
*) CONFDIR=/etc/mthpd ;;
esac
D=$T/destdir

meson install -C "$MESON_BUILD_ROOT" --destdir "$D" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
        { cat "$T/install.log" >&2; fail "meson install --destdir failed"; }
( cd "$D" && find . -mindepth 1 \( -type f -o -type l \) | sed 's|^\.||' | sort ) > "$T/files"
sed 's/^/  /' "$T/files"

EXPECTED=()
want() { EXPECTED+=("$1"); [ -f "$D$1" ] || fail "$1 is not installed"; }

# binaries: the daemon in sbin, the CLI in bin; both run from the tree
want "$SBINDIR/mthpd"
want "$BINDIR/mthpctl"
for b in "$SBINDIR/mthpd" "$BINDIR/mthpctl"; do
        [ -x "$D$b" ] || fail "$b is not executable"
        "$D$b" --version >/dev/null 2>&1 || "$D$b" --help >/dev/null 2>&1 || fail "installed $b does not run"
done
"$D$SBINDIR/mthpd" --help | grep -q "first mthpd.conf of $CONFDIR," ||
        fail "mthpd does not look for its configuration where it is installed ($CONFDIR/mthpd.conf)"
ok "mthpd in $SBINDIR, mthpctl in $BINDIR; both run; mthpd reads $CONFDIR/mthpd.conf"

# the unit starts the installed daemon
want "$UNITDIR/mthpd.service"
want "$UNITDIR/mthpd-metrics.service"
want "$UNITDIR/mthpd-metrics.timer"
EXEC=$(sed -n 's/^ExecStart=//p' "$D$UNITDIR/mthpd.service")
[ "$EXEC" = "$SBINDIR/mthpd" ] || fail "the unit's ExecStart=$EXEC is not the installed $SBINDIR/mthpd"
ok "$UNITDIR/mthpd.service, ExecStart=$EXEC"

# D-Bus policy: well-formed, for our bus name
want "$DATADIR/dbus-1/system.d/org.mthpd.mthpd1.conf"
python3 - "$D$DATADIR/dbus-1/system.d/org.mthpd.mthpd1.conf" <<'EOF' || fail "the D-Bus policy is not a busconfig for org.mthpd.mthpd1"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "busconfig"
assert any(e.get("own") == "org.mthpd.mthpd1" for e in root.iter("allow"))
EOF
ok "D-Bus policy in $DATADIR/dbus-1/system.d"

# a man page for every scdoc source
for scd in "$SRC"/man/*.scd; do
        page=$(basename "$scd" .scd)
        want "$MANDIR/man${page##*.}/$page"
        head -c 200 "$D$MANDIR/man${page##*.}/$page" | grep -q '^\.TH' || fail "$page is not a man page"
done
ok "$(ls "$SRC"/man/*.scd | wc -l) man pages in $MANDIR"

# configuration: the annotated default, an empty policy.d, examples as docs
want "$CONFDIR/mthpd.conf"
cmp -s "$SRC/conf/mthpd.conf" "$D$CONFDIR/mthpd.conf" || fail "installed mthpd.conf differs from conf/mthpd.conf"
[ -d "$D$CONFDIR/policy.d" ] || fail "no $CONFDIR/policy.d directory"
[ -d "$D$CONFDIR/mthpd.conf.d" ] || fail "no $CONFDIR/mthpd.conf.d directory for drop-ins"
[ -z "$(ls -A "$D$CONFDIR/mthpd.conf.d")" ] || fail "$CONFDIR/mthpd.conf.d is not empty"
[ -z "$(ls -A "$D$CONFDIR/policy.d")" ] || fail "$CONFDIR/policy.d is not empty: examples would be live"
n=0
if [ -d "$SRC/conf/policy.d" ]; then
        for p in "$SRC"/conf/policy.d/*.policy; do
                [ -e "$p" ] || continue
                want "$DATADIR/doc/mthpd/examples/policy.d/$(basename "$p")"
                n=$((n + 1))
        done
fi
ok "$CONFDIR: mthpd.conf, an empty mthpd.conf.d and policy.d; $n example policies in $DATADIR/doc/mthpd/examples"

want "$DATADIR/bash-completion/completions/mthpctl"
bash -n "$D$DATADIR/bash-completion/completions/mthpctl" || fail "the bash completion does not parse"
ok "bash completion in $DATADIR/bash-completion/completions"

printf '%s\n' "${EXPECTED[@]}" | sort > "$T/expected"
EXTRA=$(comm -23 "$T/files" "$T/expected")
[ -z "$EXTRA" ] || fail "installed but not expected: $EXTRA"
ok "$(wc -l < "$T/files") files, no others (no tmpfiles.d: RuntimeDirectory= makes /run/mthpd)"
