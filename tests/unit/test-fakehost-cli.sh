#!/bin/sh
# The fakehost CLI that shell-based integration tests drive.
set -eu
fakehost=$1
tmp=${TMPDIR:-}
[ -n "$tmp" ] || { [ -d /dev/shm ] && [ -w /dev/shm ] && tmp=/dev/shm; } || tmp=/tmp   # tmpfs: fast
dir=$(mktemp -d "$tmp/mthp-cli-XXXXXX")
trap 'rm -rf "$dir"' EXIT
t=$dir/host
thp=$t/sys/kernel/mm/transparent_hugepage

fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { [ "$1" = "$2" ] || fail "expected '$2', got '$1' ($3)"; }

"$fakehost" create "$t" --layout hybrid
[ -f "$t/.mthp-fakehost" ] || fail "no marker"
[ -f "$t/sys/fs/cgroup/memory/memory.stat" ] || fail "no v1 memory"
[ -f "$t/sys/fs/cgroup/unified/cgroup.controllers" ] || fail "no cgroup2"
[ ! -e "$thp/hugepages-8kB/enabled" ] || fail "8kB has enabled"

expect "$("$fakehost" read "$t" 64K/anon)" never "default"
"$fakehost" write "$t" 64K/anon always
expect "$(cat "$thp/hugepages-64kB/enabled")" "[always] inherit madvise never" "after write"
if "$fakehost" write "$t" 64K/anon bogus 2>"$dir/err"; then fail "bogus accepted"; fi
grep -q EINVAL "$dir/err" || fail "no EINVAL in: $(cat "$dir/err")"
expect "$("$fakehost" read "$t" hugepages-64kB/enabled)" always "after bad write"

"$fakehost" fail "$t" 64K/anon EBUSY
if "$fakehost" write "$t" 64K/anon madvise 2>"$dir/err"; then fail "injected EBUSY ignored"; fi
grep -q EBUSY "$dir/err" || fail "no EBUSY in: $(cat "$dir/err")"
"$fakehost" fail "$t" 64K/anon none
"$fakehost" write "$t" 64K/anon madvise
expect "$("$fakehost" read "$t" 64K/anon)" madvise "after clearing the failure"

"$fakehost" write "$t" 64K/shmem inherit
if "$fakehost" write "$t" global/shmem_enabled force 2>/dev/null; then fail "force while 64K inherits"; fi
expect "$("$fakehost" read "$t" /sys/kernel/mm/transparent_hugepage/shmem_enabled)" never "global shmem"

pgf=$(sed -n 's/^pgfault //p' "$t/proc/vmstat")
"$fakehost" bump "$t" --pgfault 1000 --size 64K --stat anon_fault_alloc --add 5 --set 9 \
        --size 2048 --stat shmem_alloc --add 2 --mem-available-kb 4096 --psi-some 12.5 --psi-total 777 \
        --vmstat compact_stall --add 3 --meminfo MemTotal --set 8000000
expect "$(sed -n 's/^pgfault //p' "$t/proc/vmstat")" "$((pgf + 1000))" "pgfault"
expect "$(cat "$thp/hugepages-64kB/stats/anon_fault_alloc")" 9 "64K anon_fault_alloc"
expect "$(cat "$thp/hugepages-2048kB/stats/shmem_alloc")" 2 "2M shmem_alloc"
expect "$(grep '^MemAvailable:' "$t/proc/meminfo")" "MemAvailable:       4096 kB" "MemAvailable"
expect "$(grep '^MemTotal:' "$t/proc/meminfo")" "MemTotal:        8000000 kB" "MemTotal"
expect "$(head -n 1 "$t/proc/pressure/memory")" "some avg10=12.50 avg60=0.00 avg300=0.00 total=777" "psi"
if "$fakehost" bump "$t" --vmstat no_such_counter --add 1 2>/dev/null; then fail "unknown counter"; fi

expect "$("$fakehost" cgroup "$t" app.slice/web)" /sys/fs/cgroup/memory/app.slice/web "cgroup dir"
"$fakehost" bump "$t" --file /sys/fs/cgroup/memory/app.slice/web/memory.stat --key pgfault --add 5
grep -qx "pgfault 5" "$t/sys/fs/cgroup/memory/app.slice/web/memory.stat" || fail "cgroup pgfault"

"$fakehost" create "$dir/nopsi" --layout v1 --no-psi
[ ! -e "$dir/nopsi/proc/pressure" ] || fail "--no-psi left PSI"
if "$fakehost" bump "$dir/nopsi" --psi-some 1 2>/dev/null; then fail "PSI on a host without it"; fi

if "$fakehost" remove "$dir" 2>/dev/null; then fail "removed a directory that is not a fake host"; fi
"$fakehost" remove "$t"
[ ! -e "$t" ] || fail "not removed"
echo ok
