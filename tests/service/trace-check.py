#!/usr/bin/env python3
"""Checks an `strace -f -y` log of mthpd against the sandbox of mthpd.service.

Only the processes from the execve of MTHPD on are looked at. Fails when
  - a system call is outside the unit's SystemCallFilter= (expanded with
    `systemd-analyze syscall-filter`),
  - a call failed with EPERM (what a missing capability looks like), or a
    netlink request was refused with it,
  - something was opened for writing, created, renamed or removed outside
    the --write-under directories (the unit's ReadWritePaths=),
  - with --sampled-pid, that process could not be read: process_vm_readv
    on it never returned data, or opening its /proc files failed;
  - with --shmem-pid, that process's shared segment was not read through
    /proc/PID/map_files (the object's page cache: fstat, then cachestat or
    mincore).
A system call the installed systemd does not know (not in @known: newer
than it, like cachestat(2) for systemd 252) cannot be named in the unit, so
the unit's filter refuses it; it passes only when named with --refusable,
which says mthpd falls back when it is refused (its tests cover that).
Prints what it counted."""
import argparse
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--exec", required=True, help="path of the mthpd binary in the execve")
ap.add_argument("--unit", required=True, help="mthpd.service, for SystemCallFilter=")
ap.add_argument("--write-under", action="append", default=[])
ap.add_argument("--sampled-pid", type=int, action="append", default=[])
ap.add_argument("--shmem-pid", type=int)
ap.add_argument("--refusable", action="append", default=[],
                help="a system call unknown to the installed systemd that mthpd falls back from when refused")
args = ap.parse_args()
problems = []


def syscall_groups():
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True, text=True, check=True).stdout
    groups, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            cur = groups.setdefault(line.split()[0], set())
        elif cur is not None and line.startswith("    ") and not line.strip().startswith("#"):
            cur.add(line.strip())
    return groups


def expand(name, groups, seen=None):
    if not name.startswith("@"):
        return {name}
    seen = seen or set()
    if name in seen:
        return set()
    seen.add(name)
    result = set()
    for m in groups.get(name, ()):
        result |= expand(m, groups, seen)
    return result


def unit_filter():
    """The allow list from the unit's SystemCallFilter= lines, in order."""
    groups = syscall_groups()
    allowed = set()
    for line in open(args.unit):
        m = re.match(r"SystemCallFilter=(~?)(.*)", line.strip())
        if not m:
            continue
        names = set()
        for n in m.group(2).split():
            names |= expand(n, groups)
        if m.group(1):
            allowed -= names
        else:
            allowed |= names
    return allowed


allowed = unit_filter()
if len(allowed) < 100:
    sys.exit(f"FAIL: the SystemCallFilter= of {args.unit} expands to only {len(allowed)} calls")

LINE = re.compile(r"^(\d+) +(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$")
# system calls newer than the strace that traced them, printed by number
# (the same on every architecture since 5.x)
NEWER = {0x1c3: "cachestat"}
mthpd_pids, pending = set(), {}
calls, counts = {}, {}
events = []  # (pid, name, args+result)
for raw in open(args.trace, errors="replace"):
    m = LINE.match(raw.rstrip("\n"))
    if not m:
        continue
    pid, name = int(m.group(1)), m.group(2) or m.group(3)
    n = re.fullmatch(r"syscall_0x([0-9a-f]+)", name)
    if n:
        name = NEWER.get(int(n.group(1), 16), name)
    rest = m.group(4)
    if m.group(3) and rest.endswith("<unfinished ...>"):
        pending[pid] = rest
        continue
    if m.group(2):
        rest = pending.pop(pid, "") + rest
    if name == "execve" and f'"{args.exec}"' in rest.split(",")[0] and rest.rstrip().endswith("= 0"):
        mthpd_pids.add(pid)
        continue
    if pid not in mthpd_pids:
        continue
    if name in ("clone", "clone3", "fork", "vfork"):
        r = re.search(r"= (\d+)", rest)
        if r:
            mthpd_pids.add(int(r.group(1)))
    counts[name] = counts.get(name, 0) + 1
    events.append((pid, name, rest))

if not mthpd_pids:
    sys.exit(f"FAIL: no execve of {args.exec} in {args.trace}")
print(f"trace: {sum(counts.values())} system calls of {len(counts)} kinds by mthpd")

known = expand("@known", syscall_groups())
refused = sorted(n for n in counts if n not in allowed and n not in known and n in args.refusable)
for n in refused:
    print(f"note - {n} ({counts[n]}x) is unknown to this systemd: the unit refuses it and mthpd falls back")
outside = sorted(n for n in counts if n not in allowed and n not in refused)
if outside:
    problems.append("system calls outside SystemCallFilter=: " + ", ".join(f"{n} ({counts[n]}x)" for n in outside))
else:
    print(f"ok - every system call is in the unit's SystemCallFilter= ({len(allowed)} allowed)")

# a refused netlink request (taskstats without CAP_NET_ADMIN) is an error
# message in the reply, not a failed call
eperm = [(n, r) for _, n, r in events if "= -1 EPERM" in r or "error=-EPERM" in r]
# cachestat(2) answers EPERM for a file the caller may not write and does
# not own (the kernel's rule against a page-cache side channel, not the
# unit's: no capability the unit could grant but CAP_FOWNER lifts it):
# another user's /dev/shm object, such as PostgreSQL's. mthpd then counts
# that object with mincore (lib/pagecache.c), so it is no sandbox break.
cachestat_eperm = [e for e in eperm if e[0] == "cachestat"]
if cachestat_eperm:
    print(f"note - cachestat refused {len(cachestat_eperm)}x with EPERM (objects mthpd may not write): "
          "it counts those with mincore")
    eperm = [e for e in eperm if e[0] != "cachestat"]
if eperm:
    problems.append(f"{len(eperm)} calls failed with EPERM, e.g. {eperm[0][0]}({eperm[0][1][:200]}")
else:
    print("ok - no call failed with EPERM")


def fdpath(arg):
    m = re.match(r"\s*(?:AT_FDCWD|-?\d+<([^>]*)>)", arg)
    return m.group(1) if m and m.group(1) else None


def target(arg_dirfd, arg_path):
    p = re.match(r'\s*"([^"]*)"', arg_path)
    if not p:
        return None
    path = p.group(1)
    if path.startswith("/"):
        return path
    base = fdpath(arg_dirfd)
    # a dirfd on "/" (mthpd's host root) joined naively gave "//sys/...",
    # which no ReadWritePaths= prefix matched
    return os.path.join(base or "<cwd>", path)


writes = []
for _, name, rest in events:
    a = [x for x in re.split(r",\s*(?![^{]*})", rest)]
    t = None
    if name in ("openat", "openat2") and len(a) >= 3 and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", a[2]):
        t = [target(a[0], a[1])]
    elif name == "open" and len(a) >= 2 and re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", a[1]):
        t = [target("AT_FDCWD", a[0])]
    elif name in ("unlink", "mkdir", "rmdir"):
        t = [target("AT_FDCWD", a[0])]
    elif name in ("unlinkat", "mkdirat"):
        t = [target(a[0], a[1])]
    elif name == "rename":
        t = [target("AT_FDCWD", a[0]), target("AT_FDCWD", a[1])]
    elif name in ("renameat", "renameat2"):
        t = [target(a[0], a[1]), target(a[2], a[3])]
    if t and "= -1 " not in rest:
        writes += [x for x in t if x]
bad = sorted({w for w in writes if not any(w == d or w.startswith(d.rstrip("/") + "/") for d in args.write_under)})
if bad:
    problems.append("writes outside ReadWritePaths=: " + ", ".join(bad[:10]))
else:
    print(f"ok - {len(writes)} writes, all under " + ", ".join(args.write_under))

for pid in args.sampled_pid:
    reads = [r for _, n, r in events if n == "process_vm_readv" and re.match(rf"\s*{pid},", r)]
    good = [r for r in reads if re.search(r"= [1-9]\d*$", r)]
    opened = [r for _, n, r in events if n in ("openat", "openat2") and re.search(rf"proc/{pid}\b", r)]
    # refused, not raced: a mapping the workload unmapped between mthpd's
    # read of its maps and the open is ENOENT, and says nothing of the sandbox
    failed = [r for r in opened if "= -1 " in r and
              (re.search(r"= -1 E(PERM|ACCES) ", r) or not re.search(r'"map_files/', r))]
    if not good:
        problems.append(f"process_vm_readv on the workload (pid {pid}) never returned data ({len(reads)} calls)")
    if failed:
        problems.append(f"opening /proc/{pid} files failed: {failed[0][:200]}")
    if good and not failed:
        print(f"ok - workload pid {pid} (another user): {len(opened)} /proc opens, "
              f"{len(good)}/{len(reads)} process_vm_readv returned data")

if args.shmem_pid:
    pid = args.shmem_pid
    objs = [r for _, n, r in events if n in ("openat", "openat2") and re.search(rf'proc/{pid}(?:>, *"|/)map_files/', r)
            and re.search(r"= \d+<", r)]
    # and its page cache read past fstat (a segment not fully allocated):
    # without this a unit that refused both calls would pass
    reads = [r for _, n, r in events if n in ("cachestat", "mincore") and re.search(r"= 0$", r)]
    if not objs:
        problems.append(f"the shmem workload's segment (pid {pid}) was never opened through map_files")
    elif not reads:
        problems.append(f"the shmem workload's page cache (pid {pid}) was never read with cachestat or mincore")
    else:
        print(f"ok - the shmem workload's segment read through map_files ({len(objs)} opens, "
              f"{len(reads)} cachestat/mincore calls)")

for p in problems:
    print("FAIL: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
