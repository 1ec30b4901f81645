#!/bin/bash
# The Debian package under a real systemd: in a booted Debian 12 root
# (systemd-nspawn, lib.sh), build the package from the source under test
# with dpkg-buildpackage, check it with lintian, install it with apt and
# check what an administrator who installs it meets:
#   lintian reports no error; the unit is enabled (dh_installsystemd) and
#   the postinst started it: it runs, or - /sys is read-only in the
#   container and the shipped configuration says Mode=manage - it exits 4
#   saying the knobs cannot be written, without a restart loop;
#   /etc/mthpd/mthpd.conf is a conffile, /etc/mthpd/policy.d is there and
#   empty; the binaries, man pages and completion are installed;
#   observing (Mode=dry-run) it runs and mthpctl reaches it over the system
#   bus; after a reboot of the container it is running again (enabled);
#   remove stops it and keeps the changed conffile, purge removes the
#   configuration and the enablement.
# The package's own tests are left out (DEB_BUILD_OPTIONS=nocheck): CI runs
# the same suites in its other steps, and debian/rules says which of them a
# package build runs.
# Opt-in like nspawn.sh (MTHP_SYSTEMD_SUITE=1), same roots and environment.
set -uo pipefail
# dpkg-buildpackage (build-essential, which it checks for, and debhelper; the
# rest of debian/control's Build-Depends are the build's packages, lib.sh), and lintian
NSPAWN_PKGS="build-essential debhelper lintian"
# shellcheck source=tests/systemd/lib.sh
. "$(dirname "$0")/lib.sh"
nspawn_boot

# ---- build and lintian ----------------------------------------------------
say "dpkg-buildpackage -us -uc -b in the container"
must deb.log "dpkg-buildpackage in the container" \
        sh -c 'cd /root/mthpd && DEB_BUILD_OPTIONS=nocheck dpkg-buildpackage -us -uc -b -Pnocheck'
ARCH=$(in_ct dpkg --print-architecture)
VER=$(in_ct dpkg-parsechangelog -l /root/mthpd/debian/changelog -S Version)
DEB=/root/mthpd_${VER}_$ARCH.deb
in_ct test -f "$DEB" || { echo "FAIL: no $DEB after dpkg-buildpackage" >&2; exit 1; }
ok "dpkg-buildpackage -us -uc -b: $(basename "$DEB")"
in_ct lintian --fail-on error "/root/mthpd_${VER}_$ARCH.changes" >"$W/lintian.log" 2>&1
rc=$?
sed 's/^/  | /' "$W/lintian.log"
check "lintian: no error (exit $rc, $(grep -c '^E:' "$W/lintian.log") E:, $(grep -c '^W:' "$W/lintian.log") W:)" [ $rc = 0 ]

# ---- install --------------------------------------------------------------
say "apt-get install $DEB"
must install.log "apt-get install $DEB" \
        env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$DEB"
ok "apt-get install $(basename "$DEB")"
check "the unit is enabled (is-enabled: $(in_ct systemctl is-enabled mthpd 2>&1))" \
        [ "$(in_ct systemctl is-enabled mthpd 2>&1)" = enabled ]
# the postinst's start: running, or exit 4 at once because /sys is read-only
started() { [ "$(prop ActiveState)" = active ] || [ "$(prop ActiveState)/$(prop ExecMainStatus)" = failed/4 ]; }
wait_for 10 started
state="$(prop ActiveState)/$(prop ExecMainStatus)"
check "the postinst started it: $state (active, or failed/4: the knobs cannot be written here)" started
if [ "$state" = failed/4 ]; then
        in_ct journalctl -q -u mthpd -o cat >"$W/start.log"
        check "...and it says why ($(grep -m1 -iE 'cannot be written|read-only|not writable' "$W/start.log" | cut -c1-70))" \
                grep -qiE 'cannot be written|read-only|not writable' "$W/start.log"
        check "...without a restart loop (NRestarts $(prop NRestarts))" [ "$(prop NRestarts)" = 0 ]
fi
check "/etc/mthpd/mthpd.conf is a conffile" \
        in_ct sh -c "dpkg-query -W -f='\${Conffiles}\n' mthpd | grep -q '^ /etc/mthpd/mthpd.conf '"
# shellcheck disable=SC2016 # expanded in the container
check "/etc/mthpd/policy.d is there and empty" in_ct sh -c 'test -d /etc/mthpd/policy.d && test -z "$(ls -A /etc/mthpd/policy.d)"'
check "mthpd --help reads /etc/mthpd/mthpd.conf" in_ct sh -c '/usr/sbin/mthpd --help | grep -q "first mthpd.conf of /etc/mthpd,"'
for f in /usr/bin/mthpctl /usr/share/man/man8/mthpd.8.gz /usr/share/man/man5/mthpd.conf.5.gz \
        /usr/share/bash-completion/completions/mthpctl /usr/share/dbus-1/system.d/org.mthpd.mthpd1.conf \
        /usr/share/doc/mthpd/copyright; do
        check "$f installed" in_ct test -f "$f"
done

# ---- observe: it runs and answers on the system bus -----------------------
in_ct sh -c "printf '[Daemon]\nMode=dry-run\n' > /etc/mthpd/mthpd.conf"
in_ct systemctl reset-failed mthpd 2>/dev/null
in_ct timeout 60 systemctl restart mthpd
rc=$?
check "Mode=dry-run: systemctl restart mthpd (exit $rc) -> $(prop ActiveState)" [ $rc = 0 ] && [ "$(prop ActiveState)" = active ]
mthpctl_ok() { in_ct sh -c 'mthpctl status >/dev/null 2>&1'; }
wait_for 10 mthpctl_ok
check "mthpctl status reaches it" mthpctl_ok

# ---- reboot: enabled means running after boot ------------------------------
nspawn_poweroff
check "the container powered off" [ $? = 0 ]
nspawn_boot
running() { [ "$(prop ActiveState)" = active ]; }
wait_for 20 running
check "after a reboot mthpd is running (ActiveState $(prop ActiveState), started by $(in_ct systemctl show -p WantedBy --value mthpd))" running

# ---- remove and purge -------------------------------------------------------
in_ct env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q mthpd >"$W/remove.log" 2>&1
rc=$?
check "apt-get remove mthpd (exit $rc)" [ $rc = 0 ]
check "...stops it (ActiveState $(prop ActiveState))" [ "$(prop ActiveState)" != active ]
check "...keeps the changed /etc/mthpd/mthpd.conf" in_ct grep -q '^Mode=dry-run' /etc/mthpd/mthpd.conf
in_ct env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q mthpd >"$W/purge.log" 2>&1
rc=$?
check "apt-get purge mthpd (exit $rc)" [ $rc = 0 ]
check "...removes /etc/mthpd" in_ct test ! -e /etc/mthpd
check "...and the enablement" in_ct test ! -e /etc/systemd/system/multi-user.target.wants/mthpd.service

say "done"
if [ $FAILED -gt 0 ]; then
        echo "$FAILED check(s) failed"
        exit 1
fi
echo "all package checks passed"
