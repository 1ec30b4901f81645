/* SPDX-License-Identifier: MIT */
/* The fake host itself: layout, formats, and kernel write semantics. Other
 * tests trust it, so it gets tested like the kernel it stands in for. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

static char path_buf[PATH_MAX];

static const char *fpath(const struct fixture *f, const char *host) {
        assert_ok(fakehost_path(f->dir, host, path_buf, sizeof(path_buf)));
        return path_buf;
}

static bool exists(const struct fixture *f, const char *host) {
        return access(fpath(f, host), F_OK) == 0;
}

/* write(2) like another process: open (with O_TRUNC, like a shell) and one write */
static long sys_write(const struct fixture *f, const char *host, const char *text) {
        int fd = open(fpath(f, host), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        long r = n < 0 ? -errno : n;
        close(fd);
        return r;
}

static void test_thp_tree(void **state) {
        struct fixture *f = *state;
        assert_string_equal(fixture_file(f->dir, THP "/enabled"), "always [madvise] never\n");
        assert_string_equal(fixture_file(f->dir, THP "/defrag"), "always defer defer+madvise [madvise] never\n");
        assert_string_equal(fixture_file(f->dir, THP "/shmem_enabled"), "always within_size advise [never] deny force\n");
        assert_string_equal(fixture_file(f->dir, THP "/hpage_pmd_size"), "2097152\n");
        assert_string_equal(fixture_file(f->dir, THP "/use_zero_page"), "1\n");
        assert_string_equal(fixture_file(f->dir, THP "/shrink_underused"), "1\n");
        assert_string_equal(fixture_file(f->dir, THP "/khugepaged/max_ptes_none"), "511\n");
        static const unsigned kb[] = { 16, 32, 64, 128, 256, 512, 1024 };
        for (size_t i = 0; i < sizeof(kb) / sizeof(kb[0]); i++) {
                char p[128];
                snprintf(p, sizeof(p), THP "/hugepages-%ukB/enabled", kb[i]);
                assert_string_equal(fixture_file(f->dir, p), "always inherit madvise [never]\n");
                snprintf(p, sizeof(p), THP "/hugepages-%ukB/shmem_enabled", kb[i]);
                assert_string_equal(fixture_file(f->dir, p), "always inherit within_size advise [never]\n");
                snprintf(p, sizeof(p), THP "/hugepages-%ukB/stats/anon_fault_alloc", kb[i]);
                assert_string_equal(fixture_file(f->dir, p), "0\n");
        }
        assert_string_equal(fixture_file(f->dir, THP "/hugepages-2048kB/enabled"), "always [inherit] madvise never\n");
        assert_string_equal(fixture_file(f->dir, THP "/hugepages-2048kB/shmem_enabled"),
                            "always [inherit] within_size advise never\n");
        assert_false(exists(f, THP "/hugepages-8kB/enabled"));
        assert_string_equal(fixture_file(f->dir, THP "/hugepages-8kB/shmem_enabled"),
                            "always inherit within_size advise [never]\n");
        assert_true(exists(f, THP "/hugepages-8kB/stats/shmem_alloc"));
        assert_true(exists(f, THP "/hugepages-8kB/stats/swpout"));
        assert_false(exists(f, THP "/hugepages-8kB/stats/anon_fault_alloc"));
        assert_false(exists(f, THP "/hugepages-8kB/stats/split_deferred"));
        assert_true(exists(f, THP "/hugepages-16kB/stats/split_deferred"));
        assert_true(exists(f, THP "/hugepages-2048kB/stats/nr_anon_partially_mapped"));
        assert_false(exists(f, THP "/hugepages-4kB"));
        assert_false(exists(f, THP "/hugepages-4096kB"));
        struct stat st;
        assert_int_equal(stat(fpath(f, THP "/hpage_pmd_size"), &st), 0);
        assert_int_equal(st.st_mode & 0777, 0444);
        assert_int_equal(stat(fpath(f, THP "/hugepages-64kB/stats/split"), &st), 0);
        assert_int_equal(st.st_mode & 0777, 0444);
        assert_int_equal(stat(fpath(f, THP "/enabled"), &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
}

static void test_proc_files(void **state) {
        struct fixture *f = *state;
        const char *vm = fixture_file(f->dir, "/proc/vmstat");
        assert_true(strncmp(vm, "nr_free_pages ", 14) == 0);
        static const char *const keys[] = { "\npgfault ", "\npgmajfault ", "\nthp_fault_alloc ", "\nthp_fault_fallback ",
                                            "\nthp_split_page ", "\ncompact_stall ", "\ncompact_fail ",
                                            "\ncompact_success ", "\npswpout ", "\nnr_anon_transparent_hugepages " };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                assert_contains(vm, keys[i]);
        const char *mi = fixture_file(f->dir, "/proc/meminfo");
        assert_true(strncmp(mi, "MemTotal:       ", 16) == 0);
        assert_contains(mi, " kB\nMemFree:        ");
        assert_contains(mi, "\nHugePages_Total:       0\n");
        assert_contains(mi, "\nHugepagesize:       2048 kB\n");
        assert_string_equal(fixture_file(f->dir, "/proc/pressure/memory"),
                            "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        assert_string_equal(fixture_file(f->dir, "/proc/sys/kernel/task_delayacct"), "0\n");
        assert_true(exists(f, "/" FAKEHOST_MARKER));
}

static void test_cgroup_v2_tree(void **state) {
        struct fixture *f = *state;
        char memdir[256];
        assert_string_equal(fixture_file(f->dir, "/sys/fs/cgroup/cgroup.controllers"),
                            "cpuset cpu io memory hugetlb pids rdma misc\n");
        assert_contains(fixture_file(f->dir, "/sys/fs/cgroup/memory.stat"), "\nanon_thp 0\n");
        assert_true(exists(f, "/sys/fs/cgroup/memory.pressure"));
        assert_false(exists(f, "/sys/fs/cgroup/memory"));
        assert_ok(fakehost_add_cgroup(f->dir, "system.slice/db.service", memdir, sizeof(memdir)));
        assert_string_equal(memdir, "/sys/fs/cgroup/system.slice/db.service");
        assert_string_equal(fixture_file(f->dir, "/sys/fs/cgroup/system.slice/db.service/memory.max"), "max\n");
        assert_string_equal(fixture_file(f->dir, "/sys/fs/cgroup/system.slice/db.service/memory.current"), "0\n");
        assert_ok(fakehost_add_counter(f->dir, "/sys/fs/cgroup/system.slice/db.service/memory.stat", "pgfault", 12));
        const char *st = fixture_file(f->dir, "/sys/fs/cgroup/system.slice/db.service/memory.stat");
        assert_true(strncmp(st, "anon 0\nfile 0\n", 14) == 0);
        assert_contains(st, "\npgfault 12\npgmajfault 0\n");
        assert_contains(st, "\nthp_fault_alloc 0\n");
}

static void test_cgroup_hybrid_tree(void **state) {
        struct fixture *f = *state;
        char memdir[256];
        assert_string_equal(fixture_file(f->dir, "/sys/fs/cgroup/unified/cgroup.controllers"), "hugetlb\n");
        assert_true(exists(f, "/sys/fs/cgroup/unified/memory.pressure"));
        assert_contains(fixture_file(f->dir, "/sys/fs/cgroup/memory/memory.stat"), "\nrss_huge 0\n");
        assert_false(exists(f, "/sys/fs/cgroup/cgroup.controllers"));
        assert_ok(fakehost_add_cgroup(f->dir, "batch", memdir, sizeof(memdir)));
        assert_string_equal(memdir, "/sys/fs/cgroup/memory/batch");
        const char *st = fixture_file(f->dir, "/sys/fs/cgroup/memory/batch/memory.stat");
        assert_true(strncmp(st, "cache 0\nrss 0\nrss_huge 0\n", 25) == 0);
        assert_contains(st, "\npgfault 0\n");
        assert_true(exists(f, "/sys/fs/cgroup/unified/batch/memory.pressure"));
        assert_true(exists(f, "/sys/fs/cgroup/memory/batch/memory.limit_in_bytes"));
}

static void test_cgroup_v1_tree(void **state) {
        struct fixture *f = *state;
        char memdir[256];
        assert_false(exists(f, "/sys/fs/cgroup/unified"));
        assert_true(exists(f, "/sys/fs/cgroup/memory/memory.stat"));
        assert_ok(fakehost_add_cgroup(f->dir, "x", memdir, sizeof(memdir)));
        assert_string_equal(memdir, "/sys/fs/cgroup/memory/x");
        assert_false(exists(f, "/sys/fs/cgroup/unified/x"));
}

static void test_no_cgroups_no_psi(void **state) {
        struct fixture *f = *state;
        assert_true(exists(f, "/sys/fs/cgroup"));
        assert_false(exists(f, "/sys/fs/cgroup/memory"));
        assert_false(exists(f, "/sys/fs/cgroup/cgroup.controllers"));
        assert_false(exists(f, "/proc/pressure"));
        assert_int_equal(fakehost_add_cgroup(f->dir, "x", NULL, 0), -EOPNOTSUPP);
        assert_int_equal(fakehost_set_psi(f->dir, 1, 1), -ENOENT);
        assert_string_equal(fixture_file(f->dir, "/proc/sys/kernel/task_delayacct"), "1\n");
}

static void test_write_moves_bracket(void **state) {
        struct fixture *f = *state;
        const char *k = THP "/hugepages-64kB/enabled";
        assert_int_equal(sys_write(f, k, "always\n"), 7);
        assert_string_equal(fixture_file(f->dir, k), "[always] inherit madvise never\n");
        assert_int_equal(sys_write(f, k, "madvise"), 7);
        assert_string_equal(fixture_file(f->dir, k), "always inherit [madvise] never\n");
        assert_int_equal(sys_write(f, THP "/defrag", "defer+madvise\n"), 14);
        assert_string_equal(fixture_file(f->dir, THP "/defrag"), "always defer [defer+madvise] madvise never\n");
        /* the offset does not matter to sysfs */
        int fd = open(fpath(f, k), O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pwrite(fd, "never", 5, 4096), 5);
        close(fd);
        assert_string_equal(fixture_file(f->dir, k), "always inherit madvise [never]\n");
}

static void test_write_rejects(void **state) {
        struct fixture *f = *state;
        const char *k = THP "/hugepages-64kB/enabled";
        static const char *const bad[] = { "sometimes", "always\n\n", " always", "always ", "[always]", "\n",
                                           "Always", "alway", "always never", "inheritx" };
        assert_int_equal(sys_write(f, k, "inherit"), 7);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                long r = sys_write(f, k, bad[i]);
                if (r != -EINVAL)
                        fail_msg("write \"%s\" = %ld, expected -EINVAL", bad[i], r);
                /* the open truncated the file; the kernel value did not change */
                assert_string_equal(fixture_file(f->dir, k), "always [inherit] madvise never\n");
        }
        /* global enabled has no "inherit" */
        assert_int_equal(sys_write(f, THP "/enabled", "inherit"), -EINVAL);
        assert_string_equal(fixture_file(f->dir, THP "/enabled"), "always [madvise] never\n");
        /* an empty write stores nothing */
        assert_int_equal(sys_write(f, k, ""), 0);
        assert_string_equal(fixture_file(f->dir, k), "always [inherit] madvise never\n");
}

static void test_shmem_inherit_force_rules(void **state) {
        struct fixture *f = *state;
        /* force is only allowed while exactly the PMD size inherits */
        assert_int_equal(fakehost_knob_write(f->dir, "8K/shmem", "inherit"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "global/shmem_enabled", "force"), -EINVAL);
        assert_int_equal(fakehost_knob_write(f->dir, "8K/shmem", "never"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "2M/shmem", "always"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "global/shmem_enabled", "force"), -EINVAL);
        assert_int_equal(fakehost_knob_write(f->dir, "2M/shmem", "inherit"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "global/shmem_enabled", "force"), 0);
        assert_string_equal(fixture_knob_value(f, "global/shmem_enabled"), "force");
        /* and while forced, no other size may inherit */
        assert_int_equal(fakehost_knob_write(f->dir, "64K/shmem", "inherit"), -EINVAL);
        assert_int_equal(fakehost_knob_write(f->dir, "8K/shmem", "inherit"), -EINVAL);
        assert_string_equal(fixture_knob_value(f, "64K/shmem"), "never");
        assert_int_equal(fakehost_knob_write(f->dir, "64K/shmem", "always"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "2M/shmem", "advise"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "2M/shmem", "inherit"), 0);
        /* anon knobs have no such rule */
        assert_int_equal(fakehost_knob_write(f->dir, "64K/anon", "inherit"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "global/shmem_enabled", "deny"), 0);
        assert_int_equal(fakehost_knob_write(f->dir, "64K/shmem", "inherit"), 0);
}

static void test_fail_injection(void **state) {
        struct fixture *f = *state;
        static const int errs[] = { EINVAL, EBUSY, EACCES, EIO, EPERM, EROFS, ENODEV };
        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
                assert_ok(fakehost_knob_fail(f->dir, "64K/anon", fakehost_errno_name(errs[i])));
                assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "always"), -errs[i]);
                assert_int_equal(fakehost_knob_write(f->dir, "64K/anon", "always"), -errs[i]);
                assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        }
        /* only that knob */
        assert_int_equal(fakehost_knob_write(f->dir, "32K/anon", "always"), 0);
        assert_ok(fakehost_knob_fail(f->dir, "64K/anon", NULL));
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "always"), 6);
        /* plain attributes too; an unknown name is EIO */
        assert_ok(fakehost_write_file(f->dir, THP "/use_zero_page.fail", "EWHATEVER\n"));
        assert_int_equal(sys_write(f, THP "/use_zero_page", "0"), -EIO);
        assert_string_equal(fixture_file(f->dir, THP "/use_zero_page"), "1\n");
        assert_int_equal(fakehost_knob_fail(f->dir, "64K/anon", "EWHATEVER"), -EINVAL);
        assert_int_equal(fakehost_errno_from_name("EBUSY\n"), EBUSY);
        assert_int_equal(fakehost_errno_from_name("nope"), -EINVAL);
}

static void test_read_only_attributes(void **state) {
        struct fixture *f = *state;
        assert_int_equal(sys_write(f, THP "/hpage_pmd_size", "4096"), -EACCES);
        assert_string_equal(fixture_file(f->dir, THP "/hpage_pmd_size"), "2097152\n");
        assert_ok(fakehost_set_size_stat(f->dir, 64, "split", 5));
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/stats/split", "0"), -EACCES);
        assert_string_equal(fixture_file(f->dir, THP "/hugepages-64kB/stats/split"), "5\n");
        assert_int_equal(sys_write(f, "/proc/vmstat", "pgfault 0\n"), -EACCES);
        assert_contains(fixture_file(f->dir, "/proc/vmstat"), "nr_free_pages ");
        /* writable plain attributes store what is written */
        assert_int_equal(sys_write(f, "/proc/sys/kernel/task_delayacct", "1"), 1);
        assert_string_equal(fixture_file(f->dir, "/proc/sys/kernel/task_delayacct"), "1\n");
}

static void test_removed_attribute(void **state) {
        struct fixture *f = *state;
        char buf[64];
        const char *stat = THP "/hugepages-64kB/stats/anon_fault_alloc";
        int fd = open(fpath(f, stat), O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(pread(fd, buf, sizeof(buf), 0), 2);
        assert_ok(fakehost_remove_file(f->dir, stat));
        /* kernfs: reading a removed attribute fails */
        errno = 0;
        assert_int_equal(pread(fd, buf, sizeof(buf), 0), -1);
        assert_int_equal(errno, ENODEV);
        assert_int_equal(read(fd, buf, sizeof(buf)), -1);
        assert_int_equal(errno, ENODEV);
        close(fd);
        /* and it can come back as a new file */
        assert_ok(fakehost_set_size_stat(f->dir, 64, "anon_fault_alloc", 3));
        assert_string_equal(fixture_file(f->dir, stat), "3\n");

        fd = open(fpath(f, THP "/hugepages-64kB/enabled"), O_WRONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_ok(fakehost_remove_file(f->dir, THP "/hugepages-64kB/enabled"));
        assert_int_equal(write(fd, "always", 6), -1);
        assert_int_equal(errno, ENODEV);
        close(fd);
}

static void test_outside_and_bookkeeping_untouched(void **state) {
        struct fixture *f = *state;
        char dir[] = "/tmp/mthp-outside-XXXXXX", file[64], buf[64];
        assert_non_null(mkdtemp(dir));
        snprintf(file, sizeof(file), "%s/looks-like-a-knob", dir);
        int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "a [b] c\n", 8), 8);
        assert_int_equal(write(fd, "zzz", 3), 3);
        assert_ok(unlink(file));
        /* an unlinked file outside a fake tree reads as usual */
        assert_int_equal(pread(fd, buf, sizeof(buf), 0), 11);
        close(fd);
        assert_int_equal(rmdir(dir), 0);
        /* files of the tree outside /sys and /proc are ordinary files */
        assert_ok(fakehost_write_file(f->dir, "/run/mthpd/notes", ""));
        fd = open(fpath(f, "/run/mthpd/notes"), O_WRONLY | O_APPEND | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "ab", 2), 2);
        assert_int_equal(write(fd, "cd", 2), 2);
        close(fd);
        assert_string_equal(fixture_file(f->dir, "/run/mthpd/notes"), "abcd");
}

static void test_counters_in_place(void **state) {
        struct fixture *f = *state;
        struct stat a, b;
        char buf[16384];
        int fd = open(fpath(f, "/proc/vmstat"), O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &a), 0);
        assert_ok(fakehost_set_counter(f->dir, "/proc/vmstat", "pgfault", 100));
        assert_ok(fakehost_add_counter(f->dir, "/proc/vmstat", "pgfault", 23));
        assert_ok(fakehost_set_counter(f->dir, "/proc/vmstat", "pgmajfault", 9));
        assert_int_equal(stat(fpath(f, "/proc/vmstat"), &b), 0);
        assert_int_equal(a.st_ino, b.st_ino);
        /* an fd opened before sees the new values */
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        assert_true(n > 0);
        buf[n] = 0;
        assert_contains(buf, "\npgfault 123\npgmajfault 9\n");
        close(fd);
        uint64_t v;
        assert_ok(fakehost_get_counter(f->dir, "/proc/vmstat", "pgfault", &v));
        assert_int_equal(v, 123);
        assert_ok(fakehost_add_counter(f->dir, "/proc/vmstat", "pgfault", -1000));
        assert_ok(fakehost_get_counter(f->dir, "/proc/vmstat", "pgfault", &v));
        assert_int_equal(v, 0);
        assert_int_equal(fakehost_add_counter(f->dir, "/proc/vmstat", "pgfaul", 1), -ENOENT);
        assert_int_equal(fakehost_add_counter(f->dir, "/proc/nothing", "pgfault", 1), -ENOENT);

        /* meminfo keeps its columns */
        assert_ok(fakehost_set_meminfo(f->dir, "MemAvailable", 1234));
        assert_contains(fixture_file(f->dir, "/proc/meminfo"), "\nMemAvailable:       1234 kB\n");
        assert_ok(fakehost_set_meminfo(f->dir, "MemAvailable", 123456789012ULL));
        assert_contains(fixture_file(f->dir, "/proc/meminfo"), "\nMemAvailable:   123456789012 kB\n");
        assert_ok(fakehost_set_meminfo(f->dir, "HugePages_Free", 7));
        assert_contains(fixture_file(f->dir, "/proc/meminfo"), "\nHugePages_Free:        7\n");

        /* per-size stats */
        int sfd = open(fpath(f, THP "/hugepages-16kB/stats/swpout"), O_RDONLY | O_CLOEXEC);
        assert_true(sfd >= 0);
        assert_ok(fakehost_add_size_stat(f->dir, 16, "swpout", 41));
        assert_ok(fakehost_add_size_stat(f->dir, 16, "swpout", 1));
        assert_int_equal(pread(sfd, buf, sizeof(buf), 0), 3);
        assert_true(memcmp(buf, "42\n", 3) == 0);
        close(sfd);
        assert_ok(fakehost_get_size_stat(f->dir, 16, "swpout", &v));
        assert_int_equal(v, 42);
        assert_int_equal(fakehost_add_size_stat(f->dir, 8, "anon_fault_alloc", 1), -ENOENT);
}

static void test_psi(void **state) {
        struct fixture *f = *state;
        assert_ok(fakehost_set_psi(f->dir, 42.5, 123456));
        assert_string_equal(fixture_file(f->dir, "/proc/pressure/memory"),
                            "some avg10=42.50 avg60=0.00 avg300=0.00 total=123456\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
}

static void test_knob_names(void **state) {
        (void) state;
        char p[256];
        static const char *const c[][2] = {
                { "64K/anon", THP "/hugepages-64kB/enabled" },
                { "8K/shmem", THP "/hugepages-8kB/shmem_enabled" },
                { "2M/shmem", THP "/hugepages-2048kB/shmem_enabled" },
                { "global/defrag", THP "/defrag" },
                { "hugepages-32kB/enabled", THP "/hugepages-32kB/enabled" },
                { "enabled", THP "/enabled" },
                { "/proc/sys/kernel/task_delayacct", "/proc/sys/kernel/task_delayacct" },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                assert_ok(fakehost_knob_path(c[i][0], p, sizeof(p)));
                assert_string_equal(p, c[i][1]);
        }
        assert_int_equal(fakehost_knob_path("64X/anon", p, sizeof(p)), -EINVAL);
}

static int busy_hook(void *user, const char *host, const char *value) {
        unsigned *calls = user;
        (*calls)++;
        assert_string_equal(host, THP "/hugepages-64kB/enabled");
        return strcmp(value, "always") == 0 ? -EBUSY : 1;
}

static void test_write_hook(void **state) {
        struct fixture *f = *state;
        unsigned calls = 0;
        fakehost_set_write_hook(busy_hook, &calls);
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "always"), -EBUSY);
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "madvise"), 7);
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "bogus"), -EINVAL);
        assert_int_equal(calls, 2);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        fakehost_set_write_hook(NULL, NULL);
        assert_int_equal(sys_write(f, THP "/hugepages-64kB/enabled", "madvise"), 7);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "madvise");
}

static void test_knob_set_and_read(void **state) {
        struct fixture *f = *state;
        char v[32];
        /* setup may select any offered value, bypassing the shmem rules */
        assert_ok(fakehost_knob_set(f->dir, "global/shmem_enabled", "force"));
        assert_ok(fakehost_knob_set(f->dir, "64K/shmem", "inherit"));
        assert_ok(fakehost_knob_read(f->dir, "64K/shmem", v, sizeof(v)));
        assert_string_equal(v, "inherit");
        assert_int_equal(fakehost_knob_set(f->dir, "64K/shmem", "force"), -EINVAL);
        assert_int_equal(fakehost_knob_read(f->dir, "8K/anon", v, sizeof(v)), -ENOENT);
        assert_int_equal(fakehost_knob_read(f->dir, "use_zero_page", v, sizeof(v)), -EBADMSG);
}

static void test_selection_format(void **state) {
        (void) state;
        struct fakehost_sel s;
        char buf[128];
        assert_ok(fakehost_sel_parse("always [madvise] never\n", &s));
        assert_int_equal(s.n, 3);
        assert_int_equal(s.selected, 1);
        assert_ok(fakehost_sel_format(&s, buf, sizeof(buf)));
        assert_string_equal(buf, "always [madvise] never\n");
        assert_int_equal(fakehost_sel_parse("always madvise\n", &s), -EBADMSG);
        assert_int_equal(fakehost_sel_parse("[a] [b]\n", &s), -EBADMSG);
        assert_int_equal(fakehost_sel_parse("some avg10=0.00\n", &s), -EBADMSG);
        assert_int_equal(fakehost_sel_parse("1\n", &s), -EBADMSG);
        struct fakehost_sel x = { .n = 1, .selected = 0, .word = { "x" } };
        assert_int_equal(fakehost_sel_format(&x, buf, 5), 0);
        assert_string_equal(buf, "[x]\n");
        assert_int_equal(fakehost_sel_format(&x, buf, 4), -ENOBUFS);
}

static void test_remove_needs_marker(void **state) {
        (void) state;
        char dir[] = "/tmp/mthp-notfake-XXXXXX";
        assert_non_null(mkdtemp(dir));
        assert_int_equal(fakehost_remove(dir), -EPERM);
        assert_int_equal(access(dir, F_OK), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(fakehost_create(dir, &(struct fakehost_opts) { .cg_layout = 7 }), -EINVAL);
}

#define OPTS_SETUP(name, ...)                                            \
        static int name(void **state) {                                  \
                struct fakehost_opts o = { __VA_ARGS__ };                \
                return fixture_setup_opts(state, &o);                    \
        }
OPTS_SETUP(setup_hybrid, .cg_layout = FAKEHOST_CG_HYBRID)
OPTS_SETUP(setup_v1, .cg_layout = FAKEHOST_CG_V1)
OPTS_SETUP(setup_bare, .cg_layout = FAKEHOST_CG_NONE, .no_psi = true, .task_delayacct = true)

#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
#define TS(fn, setup) cmocka_unit_test_setup_teardown(fn, setup, fixture_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_thp_tree),
                T(test_proc_files),
                T(test_cgroup_v2_tree),
                TS(test_cgroup_hybrid_tree, setup_hybrid),
                TS(test_cgroup_v1_tree, setup_v1),
                TS(test_no_cgroups_no_psi, setup_bare),
                T(test_write_moves_bracket),
                T(test_write_rejects),
                T(test_shmem_inherit_force_rules),
                T(test_fail_injection),
                T(test_read_only_attributes),
                T(test_removed_attribute),
                T(test_outside_and_bookkeeping_untouched),
                T(test_counters_in_place),
                T(test_psi),
                cmocka_unit_test(test_knob_names),
                T(test_write_hook),
                T(test_knob_set_and_read),
                cmocka_unit_test(test_selection_format),
                cmocka_unit_test(test_remove_needs_marker),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
