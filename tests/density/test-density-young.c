/* SPDX-License-Identifier: MIT */
/* Young and small processes wait (mthp_density_set_young): on a fake host
 * tree, a process younger than the wait with less than the stake in memory
 * and in a second's faults is not sampled; a young one holding the stake,
 * or faulting it in a second, is sampled at once; the small one is sampled
 * once it is old enough. Hermetic. */
#include <fcntl.h>
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
#define ANON 0x10000000ULL      /* 4 MiB, every page touched */
#define STAKE_KB (16 * 1024)    /* MinBloatBytes='s floor */
#define WAIT_USEC 2000000ULL

struct fake {
        char root[64];
        struct mthp_host *h;
        unsigned long hz;
};

static void put(struct fake *f, const char *rel, const char *fmt, ...) {
        char path[256], dir[256];
        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        snprintf(dir, sizeof(dir), "%s", path);
        *strrchr(dir, '/') = 0;
        for (char *p = dir + strlen(f->root) + 1; (p = strchr(p, '/')); p++) {
                *p = 0;
                mkdir(dir, 0755);
                *p = '/';
        }
        mkdir(dir, 0755);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(fp, fmt, ap);
        va_end(ap);
        fclose(fp);
}

/* pid's stat (minflt, start time in clock ticks, RSS in pages), status
 * (RssAnon) and one dense 4 MiB anon mapping */
static void put_proc(struct fake *f, int pid, const char *comm, unsigned long minflt, double start_s,
                     unsigned long rss_pages, unsigned long rss_anon_kb) {
        char rel[64];
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        put(f, rel, "%d (%s) R 1 %d %d 0 -1 0 %lu 0 0 0 1 1 0 0 20 0 1 0 %lu 1000 %lu\n", pid, comm, pid, pid,
            minflt, (unsigned long) (start_s * (double) f->hz), rss_pages);
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        put(f, rel, "RssAnon:\t%lu kB\nRssShmem:\t0 kB\n", rss_anon_kb);
        snprintf(rel, sizeof(rel), "proc/%d/maps", pid);
        put(f, rel, "10000000-10400000 rw-p 00000000 00:00 0 \n");
        char path[128];
        snprintf(path, sizeof(path), "%s/proc/%d/pagemap", f->root, pid);
        int fd = open(path, O_WRONLY | O_CREAT, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, 8), 0);
        for (unsigned i = 0; i < 1024; i++) {
                uint64_t e = PRESENT | (0x100000 + i);
                assert_int_equal(pwrite(fd, &e, 8, (off_t) ((ANON / P4K + i) * 8)), 8);
        }
        close(fd);
}

static int setup(void **state) {
        struct fake *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        f->hz = (unsigned long) sysconf(_SC_CLK_TCK);
        snprintf(f->root, sizeof(f->root), "/tmp/mthp-young-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        put(f, "proc/uptime", "1000.00 1900.00\n");
        put(f, "proc/loadavg", "0.00 0.00 0.00 1/5 1600\n");
        /* an old worker, faulting: the tick always has it */
        put_proc(f, 100, "worker", 1000000, 900, 1024, 4096);
        /* half a second old, all small: 2,000 faults (8 MB a second), a
         * 40 KiB RSS: a compiler job or a script */
        put_proc(f, 1400, "cc1", 2000, 999.5, 10, 4096);
        /* half a second old, few faults, but 64 MiB held: a dense program
         * caught between two ticks */
        put_proc(f, 1500, "big", 100, 999.5, 16384, 65536);
        /* half a second old and small, faulting 40 MB a second */
        put_proc(f, 1600, "fast", 10000, 999.5, 10, 4096);
        /* half a second old, a large RSS of files (stat) but 4 MiB of anon
         * (status): small, its status read says so */
        put_proc(f, 1700, "gcc", 2000, 999.5, 16384, 4096);
        assert_int_equal(mthp_host_open(f->root, &f->h), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        struct fake *f = *state;
        char cmd[128];
        mthp_host_free(f->h);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static const unsigned sizes[] = { 16, 64, 2048 };

static struct mthp_density_sampler *sampler(struct fake *f) {
        struct mthp_density_budget b;
        struct mthp_density_sampler *s;
        mthp_density_budget_default(&b);
        b.max_usec = 60000000;   /* values, not speed, are under test */
        b.max_quiet = 8;
        assert_int_equal(mthp_density_new(f->h, sizes, 3, &b, &s), 0);
        return s;
}

static bool sampled(const struct mthp_density_report *rep, pid_t pid) {
        for (unsigned i = 0; i < rep->n_procs; i++)
                if (rep->procs[i].pid == pid)
                        return true;
        return false;
}

/* Tick n at n seconds, the host's uptime 999 + n s; every process faults
 * 500 times between two ticks. */
static void tick(struct fake *f, struct mthp_density_sampler *s, unsigned n, struct mthp_density_report *rep) {
        put(f, "proc/uptime", "%u.00 1900.00\n", 999 + n);
        put_proc(f, 100, "worker", 1000000 + 10000UL * n, 900, 1024, 4096);
        put_proc(f, 1400, "cc1", 2000 + 500UL * n, 999.5, 10, 4096);
        put_proc(f, 1500, "big", 100 + 500UL * n, 999.5, 16384, 65536);
        put_proc(f, 1600, "fast", 10000 + 500UL * n, 999.5, 10, 4096);
        put_proc(f, 1700, "gcc", 2000 + 500UL * n, 999.5, 16384, 4096);
        assert_int_equal(mthp_density_tick(s, 1000000ULL * n, rep), 0);
}

/* The small young ones wait until they are 2 s old; the big one and the
 * fast one are sampled at their first tick. Before mthp_density_set_young
 * (the code before), every one was sampled at first sight. */
static void test_young_small_waits(void **state) {
        struct fake *f = *state;
        struct mthp_density_report rep;
        struct mthp_density_sampler *s = sampler(f);
        mthp_density_set_young(s, WAIT_USEC, STAKE_KB);

        tick(f, s, 1, &rep);   /* ages 0.5 s */
        assert_true(sampled(&rep, 100));
        assert_true(sampled(&rep, 1500));
        assert_true(sampled(&rep, 1600));
        assert_false(sampled(&rep, 1400));
        assert_false(sampled(&rep, 1700));
        assert_int_equal(rep.procs_young, 2);

        tick(f, s, 2, &rep);   /* 1.5 s */
        assert_false(sampled(&rep, 1400));
        assert_false(sampled(&rep, 1700));
        assert_true(sampled(&rep, 1500));

        tick(f, s, 3, &rep);   /* 2.5 s: old enough */
        assert_true(sampled(&rep, 1400));
        assert_true(sampled(&rep, 1700));
        assert_int_equal(rep.procs_young, 0);
        mthp_density_free(s);
}

/* No wait set (the default, and MinBloatBytes=0): sampled at first sight. */
static void test_no_wait_by_default(void **state) {
        struct fake *f = *state;
        struct mthp_density_report rep;
        struct mthp_density_sampler *s = sampler(f);
        tick(f, s, 1, &rep);
        assert_true(sampled(&rep, 1400));
        assert_true(sampled(&rep, 1700));
        assert_int_equal(rep.procs_young, 0);
        mthp_density_free(s);
}

/* A process set first (the engine awaits its fault samples) never waits. */
static void test_first_never_waits(void **state) {
        struct fake *f = *state;
        struct mthp_density_report rep;
        struct mthp_density_sampler *s = sampler(f);
        mthp_density_set_young(s, WAIT_USEC, STAKE_KB);
        int first = 1400;
        mthp_density_set_first(s, &first, 1);
        tick(f, s, 1, &rep);
        assert_true(sampled(&rep, 1400));
        assert_false(sampled(&rep, 1700));
        mthp_density_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_young_small_waits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_wait_by_default, setup, teardown),
                cmocka_unit_test_setup_teardown(test_first_never_waits, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
