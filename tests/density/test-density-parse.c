/* SPDX-License-Identifier: MIT */
/* Density sampler, hermetic: the pure parsers on tricky inputs, and the
 * sampler against a fake host tree (pagemap read as entries, no PAGEMAP_SCAN,
 * no subpage reads). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "mthp/density.h"

#define P4K 4096u
#define PRESENT (1ULL << 63)
#define SWAPPED (1ULL << 62)

/* ---- /proc/PID/stat ---- */

static void test_stat_plain(void **state) {
        (void) state;
        struct mthp_proc_stat st;
        const char *t = "1234 (bash) S 1 1234 1234 34816 -1 4194304 5678 10 2 0 10 5 0 0 20 -5 1 0 98765 "
                        "12345678 500 18446744073709551615 1 1 0 0 0 0 65536 3670020 1266777851 0 0 0 17 1 0 0\n";
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_int_equal(st.pid, 1234);
        assert_string_equal(st.comm, "bash");
        assert_int_equal(st.state, 'S');
        assert_int_equal(st.flags, 4194304);
        assert_int_equal(st.minflt, 5678);
        assert_int_equal(st.starttime, 98765);
}

static void test_stat_tricky_comm(void **state) {
        (void) state;
        struct mthp_proc_stat st;
        /* comm "x) S 9 (y)" looks like fields; only the last ')' ends it */
        const char *t = "77 (x) S 9 (y)) R 1 77 77 0 -1 2097216 42 0 0 0 0 0 0 0 20 0 1 0 555 0 0\n";
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_int_equal(st.pid, 77);
        assert_string_equal(st.comm, "x) S 9 (y)");
        assert_int_equal(st.state, 'R');
        assert_int_equal(st.flags, 2097216);   /* PF_KTHREAD | ... */
        assert_int_equal(st.minflt, 42);
        assert_int_equal(st.starttime, 555);

        /* spaces, and longer than TASK_COMM_LEN: truncated, not overflowing */
        t = "8 (a b c d e f g h i j) D 2 0 0 0 -1 0 7 0 0 0 0 0 0 0 20 0 1 0 9 0 0\n";
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_string_equal(st.comm, "a b c d e f g h");
        assert_int_equal(st.minflt, 7);
        assert_int_equal(st.starttime, 9);

        t = "9 () Z 1 0 0 0 -1 0 3 0 0 0 0 0 0 0 20 0 1 0 11 0 0";   /* empty comm, no newline */
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_string_equal(st.comm, "");
        assert_int_equal(st.state, 'Z');
        assert_int_equal(st.starttime, 11);
}

/* utime and stime (fields 14 and 15, clock ticks): the CPU a size costs a
 * process (lib/engine-pay.c); large values, and a comm that looks like
 * fields before them */
static void test_stat_cpu(void **state) {
        (void) state;
        struct mthp_proc_stat st;
        const char *t = "4242 (memcached) S 1 4242 4242 0 -1 4194560 91011 0 3 0 123456 7890 0 0 20 0 6 0 "
                        "4321 1000000 2000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0\n";
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_int_equal(st.minflt, 91011);
        assert_int_equal(st.utime, 123456);
        assert_int_equal(st.stime, 7890);
        assert_int_equal(st.starttime, 4321);
        t = "5 (a) 1 2) R 1 5 5 0 -1 0 1 0 0 0 18446744073709551610 42 0 0 20 0 1 0 9 0 0\n";
        assert_int_equal(mthp_proc_parse_stat(t, &st), 0);
        assert_true(st.utime == 18446744073709551610ULL);
        assert_int_equal(st.stime, 42);
        /* a stime that is not a number is an error, not 0 */
        assert_int_equal(mthp_proc_parse_stat("12 (a) S 1 2 3 4 5 6 7 0 0 0 5 x 0 0 20 0 1 0 9\n", &st), -EBADMSG);
}

static void test_stat_bad(void **state) {
        (void) state;
        struct mthp_proc_stat st;
        assert_int_equal(mthp_proc_parse_stat("", &st), -EBADMSG);
        assert_int_equal(mthp_proc_parse_stat("12 (cut", &st), -EBADMSG);
        assert_int_equal(mthp_proc_parse_stat("x (a) S 1", &st), -EBADMSG);
        assert_int_equal(mthp_proc_parse_stat("12 (a) S 1 2 3 4 5 6 7\n", &st), -EBADMSG);   /* short */
        assert_int_equal(mthp_proc_parse_stat("12 (a) S 1 2 3 4 5 x 7 0 0 0 0 0 0 0 20 0 1 0 9\n", &st),
                         -EBADMSG);   /* flags not a number */
        assert_int_equal(mthp_proc_parse_stat(")12 (a S 1", &st), -EBADMSG);
}

static void test_stat_self(void **state) {
        (void) state;
        char buf[1024];
        struct mthp_proc_stat st;
        int fd = open("/proc/self/stat", O_RDONLY);
        assert_true(fd >= 0);
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        assert_true(n > 0);
        buf[n] = 0;
        assert_int_equal(mthp_proc_parse_stat(buf, &st), 0);
        assert_int_equal(st.pid, getpid());
        assert_true(st.minflt > 0);
        assert_true(st.starttime > 0);
        assert_true(st.utime + st.stime < 1000000000ULL);
}

/* ---- /proc/PID/maps ---- */

static int kind_of(const char *line, struct mthp_mapping *m) {
        int r = mthp_proc_parse_maps_line(line, strlen(line), m);
        assert_int_equal(r, 0);
        return mthp_proc_mapping_kind(m);
}

static void test_maps_lines(void **state) {
        (void) state;
        struct mthp_mapping m;

        assert_int_equal(kind_of("7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n", &m), MTHP_ANON);
        assert_int_equal(m.start, 0x7f0000000000ULL);
        assert_int_equal(m.end, 0x7f0000021000ULL);
        assert_int_equal(m.name_len, 0);
        assert_string_equal(m.perms, "rw-p");

        assert_int_equal(kind_of("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]", &m),
                         MTHP_ANON);
        assert_int_equal(kind_of("7ffc1a000000-7ffc1a021000 rw-p 00000000 00:00 0   [stack]", &m), MTHP_ANON);
        assert_int_equal(kind_of("7f0000000000-7f0000001000 rw-p 00000000 00:00 0   [anon:my arena]", &m), MTHP_ANON);
        assert_int_equal(m.name_len, strlen("[anon:my arena]"));
        assert_int_equal(kind_of("7f0000000000-7f0000001000 rwxp 00000000 00:00 0 ", &m), MTHP_ANON);   /* JIT */
        /* a private /dev/zero mapping is anonymous memory */
        assert_int_equal(kind_of("7f0000000000-7f0000100000 rw-p 00000000 00:05 4 /dev/zero", &m), MTHP_ANON);

        /* files, reservations, read-only and special mappings */
        assert_int_equal(kind_of("00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon", &m),
                         -ENOENT);
        assert_int_equal(m.dev_major, 8);
        assert_int_equal(m.dev_minor, 2);
        assert_int_equal(m.inode, 173521);
        assert_int_equal(kind_of("7f1c2c000000-7f1c2c002000 rw-p 001f2000 fd:01 99 /usr/lib/libc.so.6", &m), -ENOENT);
        assert_int_equal(m.offset, 0x1f2000);
        assert_int_equal(kind_of("7f0000000000-7f1000000000 ---p 00000000 00:00 0 ", &m), -ENOENT);
        assert_int_equal(kind_of("7f0000000000-7f0000001000 r--p 00000000 00:00 0 ", &m), -ENOENT);
        assert_int_equal(kind_of("7ffc1a1f0000-7ffc1a1f2000 r-xp 00000000 00:00 0  [vdso]", &m), -ENOENT);
        assert_int_equal(kind_of("7ffc1a1ec000-7ffc1a1f0000 r--p 00000000 00:00 0  [vvar]", &m), -ENOENT);
        assert_int_equal(kind_of("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]", &m), -ENOENT);
        assert_int_equal(kind_of("7f0000000000-7f0000001000 rw-s 00000000 08:02 12 /home/u/data.bin", &m), -ENOENT);

        /* shmem: shared anonymous, SysV, memfd, /dev/shm, named shared anon */
        assert_int_equal(kind_of("7f0000000000-7f0004000000 rw-s 00000000 00:01 1025 /dev/zero (deleted)", &m),
                         MTHP_SHMEM);
        assert_int_equal(kind_of("7f0000000000-7f0000100000 rw-s 00000000 00:01 32768 /SYSV0000abcd (deleted)", &m),
                         MTHP_SHMEM);
        assert_int_equal(kind_of("7f0000000000-7f0000100000 rw-s 00200000 00:01 5 /memfd:my pool (deleted)", &m),
                         MTHP_SHMEM);
        assert_int_equal(m.offset, 0x200000);
        assert_int_equal(m.name_len, strlen("/memfd:my pool (deleted)"));
        assert_int_equal(kind_of("7f0000000000-7f0000100000 r--s 00000000 00:1a 77 /dev/shm/a b", &m), MTHP_SHMEM);
        assert_int_equal(kind_of("7f0000000000-7f0000100000 rw-s 00000000 00:01 9 [anon_shmem:ring]", &m),
                         MTHP_SHMEM);
        /* private mapping of a shmem file: its written pages are anon COW */
        assert_int_equal(kind_of("7f0000000000-7f0000100000 rw-p 00000000 00:01 5 /memfd:x (deleted)", &m), -ENOENT);
}

static void test_maps_bad(void **state) {
        (void) state;
        struct mthp_mapping m;
        const char *bad[] = {
                "",
                "zz-10 rw-p 00000000 00:00 0",
                "1000-2000",
                "1000-2000 rw-p",
                "1000-2000 rw-p 0 00:00",
                "1000-2000 rw-p 0 00-00 0",
                "2000-1000 rw-p 00000000 00:00 0",
                "1000-2000 rw-p 00000000 00:00 x",
                "1000 2000 rw-p 00000000 00:00 0",
                "11111111111111111-2000 rw-p 00000000 00:00 0",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(mthp_proc_parse_maps_line(bad[i], strlen(bad[i]), &m), -EBADMSG);
        /* length-bounded: what follows len is not read */
        const char *two = "1000-2000 rw-p 00000000 00:00 0 [heap]\n3000-4000";
        assert_int_equal(mthp_proc_parse_maps_line(two, strchr(two, '\n') - two, &m), 0);
        assert_int_equal(m.name_len, strlen("[heap]"));
}

static void test_maps_self(void **state) {
        (void) state;
        static char buf[1 << 20];
        int fd = open("/proc/self/maps", O_RDONLY);
        size_t len = 0;
        ssize_t n;
        assert_true(fd >= 0);
        while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
                len += (size_t) n;
        close(fd);
        buf[len] = 0;
        unsigned lines = 0, anon = 0;
        for (char *p = buf, *eol; (eol = strchr(p, '\n')); p = eol + 1) {
                struct mthp_mapping m;
                assert_int_equal(mthp_proc_parse_maps_line(p, (size_t) (eol - p), &m), 0);
                lines++;
                anon += mthp_proc_mapping_kind(&m) == MTHP_ANON;
        }
        assert_true(lines > 5);
        assert_true(anon > 0);   /* at least the stack */
}

/* ---- coverage and zero pages ---- */

static void test_coverage(void **state) {
        (void) state;
        uint64_t e[64], blocks;

        for (unsigned i = 0; i < 64; i++)
                e[i] = PRESENT | (0x1000 + i);
        assert_true(mthp_density_coverage(e, 32, 16, &blocks) == 1.0);
        assert_int_equal(blocks, 2);

        for (unsigned i = 0; i < 64; i++)
                e[i] = i % 16 == 0 ? PRESENT : 0;
        assert_true(fabs(mthp_density_coverage(e, 64, 16, &blocks) - 1.0 / 16) < 1e-12);
        assert_int_equal(blocks, 4);
        /* smaller blocks: only the touched ones count, each a quarter full */
        assert_true(fabs(mthp_density_coverage(e, 64, 4, &blocks) - 0.25) < 1e-12);
        assert_int_equal(blocks, 4);
        assert_true(fabs(mthp_density_coverage(e, 64, 64, &blocks) - 4.0 / 64) < 1e-12);
        assert_int_equal(blocks, 1);

        /* swapped counts as touched; PFN bits, soft-dirty (55), exclusive (56)
         * and file/shared (61) alone do not */
        memset(e, 0, sizeof(e));
        e[0] = SWAPPED | 0x3e0;
        e[1] = 1ULL << 55;
        e[2] = 1ULL << 56;
        e[3] = 1ULL << 61;
        e[4] = 0x7fffffffffffffULL;
        assert_true(fabs(mthp_density_coverage(e, 16, 16, &blocks) - 1.0 / 16) < 1e-12);
        assert_int_equal(blocks, 1);

        memset(e, 0, sizeof(e));
        assert_true(isnan(mthp_density_coverage(e, 64, 16, &blocks)));
        assert_int_equal(blocks, 0);

        /* a partial tail block is ignored */
        for (unsigned i = 0; i < 20; i++)
                e[i] = i < 16 ? 0 : PRESENT;
        assert_true(isnan(mthp_density_coverage(e, 20, 16, &blocks)));
        assert_true(isnan(mthp_density_coverage(e, 0, 16, NULL)));
}

static void test_zero_pages(void **state) {
        (void) state;
        unsigned char *buf = calloc(5, P4K);
        assert_non_null(buf);
        assert_int_equal(mthp_density_count_zero_pages(buf, 4), 4);
        buf[2 * P4K + P4K - 1] = 1;   /* last byte of page 2 */
        assert_int_equal(mthp_density_count_zero_pages(buf, 4), 3);
        buf[0] = 0x80;                /* first byte of page 0 */
        assert_int_equal(mthp_density_count_zero_pages(buf, 4), 2);
        assert_false(mthp_density_page_is_zero(buf + 2 * P4K));
        assert_true(mthp_density_page_is_zero(buf + 3 * P4K));
        /* any alignment */
        assert_true(mthp_density_page_is_zero(buf + 3 * P4K + 1));
        buf[4 * P4K] = 1;
        assert_false(mthp_density_page_is_zero(buf + 3 * P4K + 1));
        assert_int_equal(mthp_density_count_zero_pages(buf, 0), 0);
        free(buf);
}

/* ---- construction ---- */

static void test_new_validation(void **state) {
        (void) state;
        struct mthp_host *h;
        struct mthp_density_sampler *s;
        struct mthp_density_budget b;
        assert_int_equal(mthp_host_open("/", &h), 0);

        const unsigned bad1[] = { 12 }, bad2[] = { 4 }, bad3[] = { 4096 }, ok[] = { 64, 16, 64, 2048 };
        assert_int_equal(mthp_density_new(h, ok, 0, NULL, &s), -EINVAL);
        assert_int_equal(mthp_density_new(h, bad1, 1, NULL, &s), -EINVAL);
        assert_int_equal(mthp_density_new(h, bad2, 1, NULL, &s), -EINVAL);
        assert_int_equal(mthp_density_new(h, bad3, 1, NULL, &s), -EINVAL);
        mthp_density_budget_default(&b);
        b.max_pages_per_proc = 511;   /* not even one 2M window */
        assert_int_equal(mthp_density_new(h, ok, 4, &b, &s), -EINVAL);
        mthp_density_budget_default(&b);
        b.max_usec = 0;
        assert_int_equal(mthp_density_new(h, ok, 4, &b, &s), -EINVAL);

        assert_int_equal(mthp_density_new(h, ok, 4, NULL, &s), 0);
        struct mthp_density_target t[2] = { { .pid = 0 }, { .pid = 1, .start = 0x2000, .end = 0x1000 } };
        assert_int_equal(mthp_density_set_targets(s, &t[0], 1), -EINVAL);
        assert_int_equal(mthp_density_set_targets(s, &t[1], 1), -EINVAL);
        t[1].end = 0;
        assert_int_equal(mthp_density_set_targets(s, &t[1], 1), 0);
        assert_int_equal(mthp_density_set_targets(s, NULL, 0), 0);
        mthp_density_free(s);
        mthp_density_free(NULL);
        mthp_host_free(h);
}

/* ---- fake host ---- */

struct fake {
        char root[64];
        struct mthp_host *h;
};

static void put(struct fake *f, const char *rel, const char *fmt, ...) {
        char path[256], cmd[300];
        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        snprintf(cmd, sizeof(cmd), "%s", path);
        *strrchr(cmd, '/') = 0;
        for (char *p = cmd + strlen(f->root) + 1; (p = strchr(p, '/')); p++) {
                *p = 0;
                mkdir(cmd, 0755);
                *p = '/';
        }
        mkdir(cmd, 0755);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(fp, fmt, ap);
        va_end(ap);
        fclose(fp);
}

static void put_stat(struct fake *f, int pid, const char *comm, char state, unsigned flags, unsigned long minflt,
                     unsigned long starttime) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        put(f, rel, "%d (%s) %c 1 %d %d 0 -1 %u %lu 0 0 0 1 1 0 0 20 0 1 0 %lu 1000 10\n", pid, comm, state, pid,
            pid, flags, minflt, starttime);
}

/* Entries for pages [addr, addr + n pages): touched(i) decides. */
static void put_pagemap(struct fake *f, int pid, uint64_t addr, unsigned n, bool (*touched)(unsigned)) {
        char path[128];
        snprintf(path, sizeof(path), "%s/proc/%d/pagemap", f->root, pid);
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        assert_true(fd >= 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        if (st.st_size < 8)   /* entry 0 readable: the process is alive */
                assert_int_equal(ftruncate(fd, 8), 0);
        for (unsigned i = 0; i < n; i++) {
                uint64_t e = touched(i) ? PRESENT | (0x100000 + i) : 0;
                assert_int_equal(pwrite(fd, &e, 8, (off_t) ((addr / P4K + i) * 8)), 8);
        }
        close(fd);
}

static bool all(unsigned i) {
        (void) i;
        return true;
}
static bool one_in_16(unsigned i) {
        return i % 16 == 0;
}
/* pages 0-3 of every 16, counted from the start of the mapping */
static bool four_in_16(unsigned i) {
        return i % 16 < 4;
}

#define ANON_A 0x10000000ULL    /* 4 MiB dense */
#define ANON_B 0x20000000ULL    /* 4 MiB, 1 page in 16 */
#define SHM_C  0x30002000ULL    /* 1 MiB shmem at file offset 0: 8K past a 16K boundary */

static int fake_setup(void **state) {
        struct fake *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/mthp-density-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        long hz = sysconf(_SC_CLK_TCK);
        put(f, "proc/uptime", "1000.00 1900.00\n");
        /* 100: hot, started at 900 s (age 100 s), 1e6 faults: 10000/s */
        put_stat(f, 100, "hot worker", 'R', 0, 1000000, 900 * (unsigned long) hz);
        put(f, "proc/100/status", "Name:\thot\nRssAnon:\t   5120 kB\nRssFile:\t0 kB\nRssShmem:\t  256 kB\n");
        put(f, "proc/100/maps",
            "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/hot\n"
            "10000000-10400000 rw-p 00000000 00:00 0 \n"
            "20000000-20400000 rw-p 00000000 00:00 0 [anon:sparse]\n"
            "30002000-30102000 rw-s 00000000 00:01 7 /dev/zero (deleted)\n"
            "7ff000000000-7ff100000000 ---p 00000000 00:00 0 \n");
        put_pagemap(f, 100, ANON_A, 1024, all);
        put_pagemap(f, 100, ANON_B, 1024, one_in_16);
        put_pagemap(f, 100, SHM_C, 256, four_in_16);
        /* 200: cooler, same age, 1e4 faults: 100/s */
        put_stat(f, 200, "cool", 'S', 0, 10000, 900 * (unsigned long) hz);
        put(f, "proc/200/status", "RssAnon:\t4096 kB\n");
        put(f, "proc/200/maps", "10000000-10400000 rw-p 00000000 00:00 0 \n");
        put_pagemap(f, 200, ANON_A, 1024, one_in_16);
        /* a kernel thread and a zombie: never candidates */
        put_stat(f, 300, "kworker/0:1", 'I', 0x00208040, 5000000, 100);
        put_stat(f, 400, "defunct", 'Z', 0, 9000000, 100);
        assert_int_equal(mthp_host_open(f->root, &f->h), 0);
        *state = f;
        return 0;
}

static int fake_teardown(void **state) {
        struct fake *f = *state;
        char cmd[128];
        mthp_host_free(f->h);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static const unsigned sizes[] = { 16, 64, 2048 };

/* Values, not speed, are under test: no time limit to trip on a busy machine. */
static struct mthp_density_budget untimed(void) {
        struct mthp_density_budget b;
        mthp_density_budget_default(&b);
        b.max_usec = 60000000;
        return b;
}

static void test_fake_ranking_and_coverage(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        assert_int_equal(mthp_density_tick(s, 1000000, &rep), 0);
        assert_int_equal(rep.procs_listed, 4);
        assert_int_equal(rep.procs_scanned, 4);
        assert_int_equal(rep.n_procs, 2);   /* not the kthread, not the zombie */
        assert_int_equal(rep.procs[0].pid, 100);
        assert_string_equal(rep.procs[0].comm, "hot worker");
        assert_true(rep.procs[0].rate_from_lifetime);
        assert_true(fabs(rep.procs[0].minflt_rate - 10000) < 1);
        assert_int_equal(rep.procs[1].pid, 200);
        assert_true(fabs(rep.procs[1].minflt_rate - 100) < 0.1);

        /* small enough to read whole: exact */
        const struct mthp_density_kind *anon = &rep.procs[0].kind[MTHP_ANON];
        assert_true(anon->census);
        assert_int_equal(anon->mapped_bytes, 8 << 20);
        assert_int_equal(anon->rss_bytes, 5120 << 10);
        assert_int_equal(anon->windows, 4);
        /* A: 1024 pages dense; B: 64 pages, one per 16 */
        assert_int_equal(anon->size[0].kb, 16);
        assert_int_equal(anon->size[0].blocks, 256 + 64);
        assert_true(fabs(anon->size[0].coverage - (1024 + 64) / (320.0 * 4)) < 1e-9);
        assert_int_equal(anon->size[1].blocks, 64 + 64);
        assert_true(fabs(anon->size[1].coverage - (1024 + 64) / (128.0 * 16)) < 1e-9);
        assert_int_equal(anon->size[1].full_blocks, 64);
        assert_int_equal(anon->size[2].blocks, 4);
        assert_true(fabs(anon->size[2].coverage - (1024 + 64) / (4.0 * 512)) < 1e-9);
        /* no subpage reads on a fake root */
        assert_int_equal(anon->size[1].read_pages, 0);
        assert_true(isnan(anon->size[1].zero_fraction));

        /* shmem blocks align in the file, not in the address space: the four
         * touched pages of every 16 fill 16K blocks exactly */
        const struct mthp_density_kind *shm = &rep.procs[0].kind[MTHP_SHMEM];
        assert_int_equal(shm->mapped_bytes, 1 << 20);
        assert_true(shm->size[0].blocks == 16 && shm->size[0].coverage == 1.0);
        assert_true(fabs(shm->size[1].coverage - 0.25) < 1e-9);
        assert_int_equal(shm->size[2].blocks, 0);   /* 1 MiB holds no whole 2M block */
        assert_true(isnan(shm->size[2].coverage));

        /* aggregate weighted by fault rate: 10000 vs 100 */
        double want = (10000 * anon->size[1].coverage + 100 * (1.0 / 16)) / 10100;
        assert_true(fabs(rep.kind[MTHP_ANON].size[1].coverage - want) < 1e-9);
        assert_int_equal(rep.kind[MTHP_ANON].size[1].blocks, 128 + 64);

        /* second tick: rates from deltas */
        put_stat(f, 100, "hot worker", 'R', 0, 1000000, 900 * sysconf(_SC_CLK_TCK));
        put_stat(f, 200, "cool", 'S', 0, 10000 + 500, 900 * sysconf(_SC_CLK_TCK));
        assert_int_equal(mthp_density_tick(s, 1500000, &rep), 0);
        assert_int_equal(rep.n_procs, 1);   /* 100 did not fault since */
        assert_int_equal(rep.procs[0].pid, 200);
        assert_false(rep.procs[0].rate_from_lifetime);
        assert_true(fabs(rep.procs[0].minflt_rate - 1000) < 1e-6);
        mthp_density_free(s);
}

/* Fault addresses are counted by the kind of the mapping they fall in
 * (issue 12, item 2), for the sampled processes only, once: the samples are
 * given for one tick. */
static void test_fake_fault_samples_by_kind(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        const struct mthp_fault_sample v[] = {
                { .pid = 100, .addr = 0x00400800 },            /* text: other */
                { .pid = 100, .addr = 0x0ffff000 },            /* in no mapping: not counted */
                { .pid = 100, .addr = ANON_A },                /* anon */
                { .pid = 100, .addr = ANON_A + 0x3ff000 },     /* anon, its last page */
                { .pid = 100, .addr = ANON_B + 0x1000 },       /* anon */
                { .pid = 100, .addr = SHM_C },                 /* shmem */
                { .pid = 100, .addr = 0x7ff000001000ULL },     /* PROT_NONE reservation: other */
                { .pid = 200, .addr = ANON_A + 0x5000 },
                { .pid = 200, .addr = ANON_A + 0x6000 },
                { .pid = 999, .addr = ANON_A },                /* a process not sampled */
        };
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        mthp_density_set_fault_samples(s, v, sizeof(v) / sizeof(v[0]));
        assert_int_equal(mthp_density_tick(s, 1000000, &rep), 0);
        assert_int_equal(rep.n_procs, 2);
        assert_int_equal(rep.procs[0].pid, 100);
        assert_int_equal(rep.procs[0].fault_samples[MTHP_ANON], 3);
        assert_int_equal(rep.procs[0].fault_samples[MTHP_SHMEM], 1);
        assert_int_equal(rep.procs[0].fault_samples_other, 2);
        assert_int_equal(rep.procs[1].pid, 200);
        assert_int_equal(rep.procs[1].fault_samples[MTHP_ANON], 2);
        assert_int_equal(rep.procs[1].fault_samples[MTHP_SHMEM] + rep.procs[1].fault_samples_other, 0);
        /* the view the engine gets carries them */
        struct mthp_proc_density pd;
        struct mthp_caps caps = { .n_sizes = 0 };
        mthp_density_proc_view(&caps, &rep, &rep.procs[0], &pd);
        assert_int_equal(pd.fault_samples[MTHP_ANON], 3);
        assert_int_equal(pd.fault_samples_other, 2);
        /* given for one tick: none the next */
        put_stat(f, 100, "hot worker", 'R', 0, 2000000, 900 * sysconf(_SC_CLK_TCK));
        assert_int_equal(mthp_density_tick(s, 2000000, &rep), 0);
        assert_int_equal(rep.procs[0].pid, 100);
        assert_int_equal(rep.procs[0].fault_samples[MTHP_ANON] + rep.procs[0].fault_samples[MTHP_SHMEM] +
                                 rep.procs[0].fault_samples_other,
                         0);
        mthp_density_free(s);
}

static void test_fake_budget_and_rotation(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();

        b.max_scan = 2;
        b.max_pages_per_tick = 1200;   /* two windows and a bit */
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        /* new processes are read newest first: the zombie and the kthread
         * (both kept, so that the next listing does not bring them back) */
        assert_int_equal(mthp_density_tick(s, 1000000, &rep), 0);
        assert_int_equal(rep.procs_scanned, 2);
        assert_int_equal(rep.n_procs, 0);
        /* the next tick reads the other two stat files */
        assert_int_equal(mthp_density_tick(s, 2000000, &rep), 0);
        assert_int_equal(rep.procs_scanned, 2);
        assert_int_equal(rep.n_procs, 1);   /* 100 (the hotter) used up the tick */
        assert_true(rep.pages_examined <= 1200);
        assert_true(rep.budget_exhausted);
        assert_false(rep.procs[0].complete);
        mthp_density_free(s);

        /* restricted to a PID and a range: only that mapping */
        b = untimed();
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        struct mthp_density_target t = { .pid = 100, .start = ANON_B, .end = ANON_B + (4 << 20) };
        assert_int_equal(mthp_density_set_targets(s, &t, 1), 0);
        assert_int_equal(mthp_density_tick(s, 1000000, &rep), 0);
        assert_int_equal(rep.procs_listed, 1);
        assert_int_equal(rep.n_procs, 1);
        const struct mthp_density_kind *anon = &rep.procs[0].kind[MTHP_ANON];
        assert_int_equal(anon->mapped_bytes, 4 << 20);
        assert_true(fabs(anon->size[1].coverage - 1.0 / 16) < 1e-9);
        assert_int_equal(rep.procs[0].kind[MTHP_SHMEM].mapped_bytes, 0);
        /* a target that does not exist is skipped quietly */
        t.pid = 999;
        assert_int_equal(mthp_density_set_targets(s, &t, 1), 0);
        assert_int_equal(mthp_density_tick(s, 2000000, &rep), 0);
        assert_int_equal(rep.n_procs, 0);
        mthp_density_free(s);
}

/* ---- which stat files a tick reads: cost follows activity ---- */

#define N_IDLE 400
#define IDLE0 1000

/* A stat line to field 38: exit_signal -1 marks a thread that is not its
 * group's leader (its /proc/TID/stat shows the whole process's figures). */
static void put_stat_signal(struct fake *f, int pid, const char *comm, unsigned long minflt, unsigned long starttime,
                            int exit_signal) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        put(f, rel,
            "%d (%s) R 1 %d %d 0 -1 0 %lu 0 0 0 1 1 0 0 20 0 1 0 %lu 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 "
            "0 0 0 0 %d 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
            pid, comm, pid, pid, minflt, starttime, exit_signal);
}

static void put_mem(struct fake *f, int pid) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        put(f, rel, "RssAnon:\t4096 kB\n");
        snprintf(rel, sizeof(rel), "proc/%d/maps", pid);
        put(f, rel, "10000000-10400000 rw-p 00000000 00:00 0 \n");
        put_pagemap(f, pid, ANON_A, 1024, all);
}

static void put_loadavg(struct fake *f, int last_pid) {
        put(f, "proc/loadavg", "0.00 0.00 0.00 1/%d %d\n", N_IDLE + 1, last_pid);
}

/* 400 idle processes (80 faults in their life, then none) and one worker
 * (pid 100) faulting 10,000 times a second. */
static int fake_many_setup(void **state) {
        struct fake *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/mthp-density-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);
        put(f, "proc/uptime", "1000.00 1900.00\n");
        put_stat(f, 100, "worker", 'R', 0, 1000000, 900 * hz);
        put_mem(f, 100);
        for (int i = 0; i < N_IDLE; i++)
                put_stat(f, IDLE0 + i, "sleep", 'S', 0, 80, 100 * hz);
        put_loadavg(f, IDLE0 + N_IDLE - 1);
        assert_int_equal(mthp_host_open(f->root, &f->h), 0);
        *state = f;
        return 0;
}

static bool sampled(const struct mthp_density_report *rep, pid_t pid) {
        for (unsigned i = 0; i < rep->n_procs; i++)
                if (rep->procs[i].pid == pid)
                        return true;
        return false;
}

/* Ticks 1..n: the worker faults 10,000 times between two. */
static void run_ticks(struct fake *f, struct mthp_density_sampler *s, unsigned *tick, unsigned n,
                      struct mthp_density_report *rep) {
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);
        for (unsigned i = 0; i < n; i++) {
                ++*tick;
                put_stat(f, 100, "worker", 'R', 0, 1000000 + 10000 * (unsigned long) *tick, 900 * hz);
                assert_int_equal(mthp_density_tick(s, 1000000ULL * *tick, rep), 0);
        }
}

/* With a worker faulting among hundreds of idle processes, a tick reads the
 * new processes, the ones that faulted, and a slice of the quiet rest: not
 * every stat file. Today's-code check: it read all 401 each tick. */
static void test_fake_scan_follows_activity(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);
        unsigned tick = 0;

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        run_ticks(f, s, &tick, 1, &rep);
        assert_int_equal(rep.procs_scanned, N_IDLE + 1);   /* first sight: all */
        /* the idle ones' lifetime averages (80 faults in 900 s) fade as they
         * are read again; then each tick reads the worker and a slice */
        run_ticks(f, s, &tick, 9, &rep);
        assert_int_equal(rep.procs_scanned, 1 + 128);
        assert_true(sampled(&rep, 100));
        assert_int_equal(rep.n_procs, 1);

        /* a new process is read on the tick it appears */
        put_stat(f, 1400, "newcomer", 'R', 0, 5000000, 999 * hz);
        put_mem(f, 1400);
        put_loadavg(f, 1400);
        run_ticks(f, s, &tick, 1, &rep);
        assert_true(sampled(&rep, 1400));
        assert_int_equal(rep.procs_scanned, 1 + 1 + 128);

        /* a thread's ID: its stat shows the whole process, it is no process */
        put_stat_signal(f, 1401, "newcomer", 9000000, 999 * hz, -1);
        put_mem(f, 1401);
        put_loadavg(f, 1401);
        run_ticks(f, s, &tick, 1, &rep);
        assert_false(sampled(&rep, 1401));

        /* an idle process that begins to fault is found within N / 128 ticks */
        put_stat(f, IDLE0 + 200, "sleep", 'R', 0, 80 + 1000000, 100 * hz);
        put_mem(f, IDLE0 + 200);
        bool found = false;
        for (unsigned i = 0; i < (N_IDLE + 127) / 128 && !found; i++) {
                run_ticks(f, s, &tick, 1, &rep);
                found = sampled(&rep, IDLE0 + 200);
        }
        assert_true(found);
        mthp_density_free(s);
}

/* While nothing is sampled (the host faults too little for a raise), idle
 * ticks keep the table current: when the host starts to fault, the first
 * sampling tick reads the new process, the hot ones and a slice, and
 * samples the newcomer, instead of listing /proc and reading every stat
 * file first (at 5,000 processes that took the tick's whole budget and
 * delayed the first raise by a tick). Without the idle ticks (the code
 * before), that first tick lists /proc and reads all 402. */
static void test_fake_idle_ticks_keep_table(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        for (unsigned t = 1; t <= 3; t++)
                assert_int_equal(mthp_density_idle_tick(s, 1000000ULL * t), 0);
        put_stat(f, 1400, "newcomer", 'R', 0, 5000000, 999 * hz);
        put_mem(f, 1400);
        put_loadavg(f, 1400);
        assert_int_equal(mthp_density_tick(s, 4000000, &rep), 0);
        assert_false(rep.procs_full_list);
        assert_true(sampled(&rep, 1400));
        assert_in_range(rep.procs_scanned, 2, 1 + 1 + 128);
        mthp_density_free(s);
}

/* The hot floor for first-sight rates follows MinProcessFaultRate=: the
 * idle processes' lifetime averages (80 faults in 900 s) are hot under a
 * floor of 0.05/s and are read again first; under the default 100/s they are not. */
static void test_fake_hot_rate_follows_config(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned tick = 0;

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        run_ticks(f, s, &tick, 1, &rep);
        run_ticks(f, s, &tick, 1, &rep);
        assert_int_equal(rep.procs_scanned, 1 + 128);
        mthp_density_free(s);

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        mthp_density_set_hot_rate(s, 0.05);
        tick = 0;
        run_ticks(f, s, &tick, 1, &rep);
        run_ticks(f, s, &tick, 1, &rep);
        assert_int_equal(rep.procs_scanned, 64 + 128);
        mthp_density_free(s);
}

/* Idle processes met for the first time (lifetime averages far below the
 * hot floor) are sampled at most max_quiet a tick: at 5,000 processes the
 * rotation brought 7 new idle ones into every tick's 8 samples, each a
 * smaps read, 4-7 ms a tick under one dense workload. Before: 1 + 7. */
static void test_fake_quiet_samples_capped(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned tick = 0;

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        run_ticks(f, s, &tick, 1, &rep);
        assert_true(sampled(&rep, 100));
        assert_int_equal(rep.n_procs + rep.procs_skipped, 1 + 1);
        mthp_density_free(s);
}

/* A process read in its first second (a program just started, before it
 * faults) has a lifetime average of its loader's faults, under the hot
 * floor: it is read again on the next sampling tick whatever that rate,
 * so that a dense program started on a busy host is sampled at its real
 * rate at once. Before, it waited for the rotation, which a busy host's
 * time budget cuts before it comes round (a dense program sampled at its
 * first sight's 83 faults/s for 8 s, never raised for). */
static void test_fake_young_read_again(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);
        unsigned tick = 0;

        b.max_rescan = 8;   /* the rotation, as a busy host's budget leaves it */
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        run_ticks(f, s, &tick, 2, &rep);
        /* started half a second before this uptime (1000 s), 83 faults so far */
        put_stat(f, 1400, "dense", 'R', 0, 83, 999 * hz + hz / 2);
        put_mem(f, 1400);
        put_loadavg(f, 1400);
        run_ticks(f, s, &tick, 1, &rep);
        put_stat(f, 1400, "dense", 'R', 0, 83 + 1000000, 999 * hz + hz / 2);
        run_ticks(f, s, &tick, 1, &rep);
        bool measured = false;
        for (unsigned i = 0; i < rep.n_procs; i++)
                if (rep.procs[i].pid == 1400)
                        measured = !rep.procs[i].rate_from_lifetime && rep.procs[i].minflt_rate > 900000;
        assert_true(measured);
        mthp_density_free(s);
}

/* /proc is listed whole at the first tick, when more IDs were handed out
 * than reading them costs, after MTHP_PROC_SCAN_RELIST_USEC, and on every
 * tick where /proc/loadavg cannot tell; else the new IDs are read. */
static void test_fake_listing(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        unsigned long hz = (unsigned long) sysconf(_SC_CLK_TCK);
        unsigned tick = 0;

        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        run_ticks(f, s, &tick, 1, &rep);
        assert_true(rep.procs_full_list);
        assert_int_equal(rep.procs_listed, N_IDLE + 1);
        run_ticks(f, s, &tick, 1, &rep);
        assert_false(rep.procs_full_list);
        /* 20 IDs handed out, 3 of them processes still there */
        for (int p = 1400; p < 1420; p += 7)
                put_stat(f, p, "short", 'S', 0, 10, 999 * hz);
        put_loadavg(f, 1419);
        run_ticks(f, s, &tick, 1, &rep);
        assert_false(rep.procs_full_list);
        assert_int_equal(rep.procs_listed, N_IDLE + 1 + 20);   /* known now; the 17 gone are dropped */
        run_ticks(f, s, &tick, 1, &rep);
        assert_int_equal(rep.procs_listed, N_IDLE + 1 + 3);
        /* more new IDs than a quarter of the table: list */
        put_loadavg(f, 1419 + 200);
        run_ticks(f, s, &tick, 1, &rep);
        assert_true(rep.procs_full_list);
        assert_int_equal(rep.procs_listed, N_IDLE + 1 + 3);
        /* a minute after the last listing: list again */
        run_ticks(f, s, &tick, 1, &rep);
        assert_false(rep.procs_full_list);
        tick += 60;
        run_ticks(f, s, &tick, 1, &rep);
        assert_true(rep.procs_full_list);
        /* no /proc/loadavg: every tick lists */
        char path[256];
        snprintf(path, sizeof(path), "%s/proc/loadavg", f->root);
        assert_int_equal(unlink(path), 0);
        run_ticks(f, s, &tick, 2, &rep);
        assert_true(rep.procs_full_list);
        mthp_density_free(s);
}

/* smaps VmFlags: hg (MADV_HUGEPAGE) and nh (MADV_NOHUGEPAGE) as words,
 * never inside another word. */
static void test_vmflags(void **state) {
        (void) state;
        static const struct {
                const char *v;
                unsigned want;
        } cases[] = {
                { " rd wr mr mw me ac sd", 0 },
                { " rd wr mr mw me ac hg ", MTHP_VMA_HUGEPAGE },
                { "\trd wr mr mw me ac nh", MTHP_VMA_NOHUGEPAGE },
                { " hg nh", MTHP_VMA_HUGEPAGE | MTHP_VMA_NOHUGEPAGE },
                { " hgx nhy xhg", 0 },
                { "", 0 },
                { " rd\nhg", 0 },   /* the line ends before it */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                assert_int_equal(mthp_proc_parse_vmflags(cases[i].v, strlen(cases[i].v)), cases[i].want);
}

/* A process with tens of thousands of mappings: maps is not read again
 * every tick (the kernel formats a line a mapping, ~25 ms for 60,000) but
 * when VmSize moves; the sample works on the list it has meanwhile. */
static void test_fake_maps_follow_vmsize(void **state) {
        struct fake *f = *state;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b = untimed();
        long hz = sysconf(_SC_CLK_TCK);
        char path[128];
        snprintf(path, sizeof(path), "%s/proc/100/maps", f->root);
        /* 60,000 file mappings (text of a library each), then the two anon ones */
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        for (unsigned i = 0; i < 60000; i++)
                fprintf(fp, "%08llx-%08llx r-xp 00000000 08:01 %u /usr/lib/lib%u.so\n",
                        0x40000000ULL + i * 0x2000ULL, 0x40001000ULL + i * 0x2000ULL, 1000 + i, i);
        fprintf(fp, "10000000-10400000 rw-p 00000000 00:00 0 \n20000000-20400000 rw-p 00000000 00:00 0 \n");
        fclose(fp);
        put(f, "proc/100/status", "VmSize:\t 248000 kB\nRssAnon:\t   5120 kB\n");
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        struct mthp_density_target t = { .pid = 100 };
        assert_int_equal(mthp_density_set_targets(s, &t, 1), 0);
        assert_int_equal(mthp_density_tick(s, 1000000, &rep), 0);
        assert_int_equal(rep.n_procs, 1);
        assert_int_equal(rep.procs[0].kind[MTHP_ANON].mapped_bytes, 8 << 20);
        assert_int_equal(rep.procs[0].mappings, 60002);
        assert_int_equal(rep.procs[0].maps_age_usec, 0);

        /* the second anon mapping goes, VmSize says nothing yet: the list
         * read a moment ago stands */
        truncate(path, 0);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "10000000-10400000 rw-p 00000000 00:00 0 \n");
        fclose(fp);
        put_stat(f, 100, "hot worker", 'R', 0, 2000000, 900 * (unsigned long) hz);
        assert_int_equal(mthp_density_tick(s, 1100000, &rep), 0);
        assert_int_equal(rep.n_procs, 1);
        assert_int_equal(rep.procs[0].kind[MTHP_ANON].mapped_bytes, 8 << 20);
        assert_int_equal(rep.procs[0].mappings, 60002);

        /* VmSize moved: read again (once the read is cheap against the time
         * since: the one mapping left costs nothing to read next time) */
        put(f, "proc/100/status", "VmSize:\t 244000 kB\nRssAnon:\t   5120 kB\n");
        bool reread = false;
        for (int i = 0; i < 100 && !reread; i++) {
                put_stat(f, 100, "hot worker", 'R', 0, 3000000 + 1000000 * (unsigned long) i, 900 * (unsigned long) hz);
                assert_int_equal(mthp_density_tick(s, 1200000 + 100000 * (uint64_t) i, &rep), 0);
                reread = rep.n_procs == 1 && rep.procs[0].mappings == 1;
                if (!reread)
                        usleep(50000);
        }
        assert_true(reread);
        assert_int_equal(rep.procs[0].kind[MTHP_ANON].mapped_bytes, 4 << 20);
        mthp_density_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stat_plain),
                cmocka_unit_test(test_stat_tricky_comm),
                cmocka_unit_test(test_stat_cpu),
                cmocka_unit_test(test_stat_bad),
                cmocka_unit_test(test_stat_self),
                cmocka_unit_test(test_maps_lines),
                cmocka_unit_test(test_maps_bad),
                cmocka_unit_test(test_maps_self),
                cmocka_unit_test(test_vmflags),
                cmocka_unit_test(test_coverage),
                cmocka_unit_test(test_zero_pages),
                cmocka_unit_test(test_new_validation),
                cmocka_unit_test_setup_teardown(test_fake_ranking_and_coverage, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_fault_samples_by_kind, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_budget_and_rotation, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_maps_follow_vmsize, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_scan_follows_activity, fake_many_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_listing, fake_many_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_idle_ticks_keep_table, fake_many_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_hot_rate_follows_config, fake_many_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_quiet_samples_capped, fake_many_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_fake_young_read_again, fake_many_setup, fake_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
