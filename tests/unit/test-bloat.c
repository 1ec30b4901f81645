/* SPDX-License-Identifier: MIT */
/* The grown-and-quiet tracker (lib/bloat.c) on a fake /proc: who is
 * offered for a give-back, and when again. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp/bloat.h"
#include "unit.h"

#define PAGES_MB 256ULL   /* 4K pages a MiB */

/* /proc/PID/stat with the fields the tracker reads: 9 flags, 10 minflt,
 * 22 starttime, 24 rss (pages); 52 fields in all, as the kernel writes;
 * and statm, file_pages of the rss shared (file-backed). */
static void put_stat_file(const struct fixture *f, int pid, const char *comm, unsigned long long minflt,
                          unsigned long long starttime, unsigned long long rss_pages, unsigned long long file_pages) {
        char dir[PATH_MAX + 32], path[PATH_MAX + 64];
        snprintf(dir, sizeof(dir), "%s/proc/%d", f->dir, pid);
        mkdir(dir, 0755);
        snprintf(path, sizeof(path), "%s/stat", dir);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "%d (%s) S 1 %d %d 0 -1 4194304 %llu 0 0 0 10 5 0 0 20 0 1 0 %llu 104857600 %llu "
                    "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
                pid, comm, pid, pid, minflt, starttime, rss_pages);
        fclose(fp);
        snprintf(path, sizeof(path), "%s/statm", dir);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "%llu %llu %llu 100 0 %llu 0\n", rss_pages * 2, rss_pages, file_pages, rss_pages);
        fclose(fp);
}

static void put_stat(const struct fixture *f, int pid, const char *comm, unsigned long long minflt,
                     unsigned long long starttime, unsigned long long rss_pages) {
        put_stat_file(f, pid, comm, minflt, starttime, rss_pages, 0);
}

static unsigned tick(struct mthp_bloat *b, bool raised, uint64_t t, struct mthp_bloat_candidate *c) {
        unsigned n = 99;
        struct mthp_bloat_stats st;
        assert_int_equal(mthp_bloat_tick(b, raised, t, 100, c, MTHP_BLOAT_CANDIDATES, &n, &st), 0);
        return n;
}

/* started before the raise: its growth counts from the tick that first
 * saw it under the raise, its rate from the tick after */
static void test_grown_quiet_offered(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat *b;
        struct mthp_bloat_candidate c[MTHP_BLOAT_CANDIDATES];
        assert_int_equal(mthp_bloat_new(f->host, &b), 0);
        put_stat(f, 100, "sparse", 1000, 1, 10 * PAGES_MB);
        put_stat(f, 200, "dense4k", 1000, 1, 10 * PAGES_MB);
        put_stat(f, 300, "busy", 1000, 1, 10 * PAGES_MB);
        put_stat(f, 600, "filemap", 1000, 1, 10 * PAGES_MB);
        assert_int_equal(tick(b, false, 1000000, c), 0);
        assert_int_equal(tick(b, true, 2000000, c), 0);       /* first sight: the baseline */
        /* sparse grows 500 MB on 1,000 faults (4 MB at 4K) and goes quiet;
         * dense4k grows 500 MB on a fault a page; busy like sparse but
         * faulting 10,000 a second now */
        put_stat(f, 100, "sparse", 2000, 1, 510 * PAGES_MB);
        put_stat(f, 200, "dense4k", 1000 + 500 * PAGES_MB, 1, 510 * PAGES_MB);
        put_stat(f, 300, "busy", 11000, 1, 510 * PAGES_MB);
        /* filemap grows 500 MB of a mapped file (fault-around: 16 pages a fault) */
        put_stat_file(f, 600, "filemap", 1000 + 500 * PAGES_MB / 16, 1, 510 * PAGES_MB, 500 * PAGES_MB);
        assert_int_equal(tick(b, true, 2500000, c), 0);       /* faulting while it grew */
        put_stat(f, 300, "busy", 21000, 1, 510 * PAGES_MB);
        assert_int_equal(tick(b, true, 3000000, c), 1);
        assert_int_equal(c[0].pid, 100);
        assert_string_equal(c[0].comm, "sparse");
        assert_int_equal(c[0].grown_kb, 500 * 1024);
        assert_int_equal(c[0].faults_kb, 4000);
        /* busy exits (quiet now, it would be offered in turn) */
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/proc/300/stat", f->dir);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/proc/300/statm", f->dir);
        assert_int_equal(unlink(path), 0);
        snprintf(path, sizeof(path), "%s/proc/300", f->dir);
        assert_int_equal(rmdir(path), 0);
        /* quiet since: offered once, not again within the recheck time */
        assert_int_equal(tick(b, true, 4000000, c), 0);
        assert_int_equal(tick(b, true, 4000000 + MTHP_BLOAT_RECHECK_USEC, c), 1);
        /* a give-back cut short asks for the next tick */
        mthp_bloat_again(b, 100);
        assert_int_equal(tick(b, true, 5000000 + MTHP_BLOAT_RECHECK_USEC, c), 1);
        /* the raise ends and comes back soon: still grown */
        uint64_t t = 6000000 + MTHP_BLOAT_RECHECK_USEC;
        assert_int_equal(tick(b, false, t, c), 0);
        mthp_bloat_again(b, 100);
        assert_int_equal(tick(b, true, t + 1000000, c), 1);
        /* it ends for longer: forgotten; a new one takes a new baseline */
        assert_int_equal(tick(b, false, t + 2000000, c), 0);
        t += 2000000 + MTHP_BLOAT_FORGET_USEC;
        assert_int_equal(tick(b, true, t, c), 0);
        assert_int_equal(tick(b, true, t + 1000000, c), 0);
        mthp_bloat_again(b, 100);
        assert_int_equal(tick(b, true, t + 2000000, c), 0);
        mthp_bloat_free(b);
}

/* Stepped down while it still faulted (the guard, or its own density):
 * it goes quiet after the step-down and is offered then, its bloat still
 * counted from the raise's baseline; MTHP_BLOAT_AFTER_USEC later the
 * tracker reads nothing. On main it was never offered: the tracker
 * stopped at the step-down and the bloat stayed for the process's life. */
static void test_quiet_after_step_down(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat *b;
        struct mthp_bloat_candidate c[MTHP_BLOAT_CANDIDATES];
        assert_int_equal(mthp_bloat_new(f->host, &b), 0);
        put_stat(f, 100, "sparse", 1000, 1, 10 * PAGES_MB);
        assert_int_equal(tick(b, true, 1000000, c), 0);        /* the baseline */
        put_stat(f, 100, "sparse", 11000, 1, 510 * PAGES_MB);  /* faulting as it grows */
        assert_int_equal(tick(b, true, 2000000, c), 0);
        put_stat(f, 100, "sparse", 21000, 1, 520 * PAGES_MB);  /* still, at the step-down */
        assert_int_equal(tick(b, false, 3000000, c), 0);
        assert_true(mthp_bloat_tracking(b));
        assert_int_equal(tick(b, false, 4000000, c), 1);       /* quiet now */
        assert_int_equal(c[0].pid, 100);
        assert_true(c[0].grown_kb >= 500 * 1024);
        mthp_bloat_again(b, 100);
        assert_int_equal(tick(b, false, 3000000 + MTHP_BLOAT_AFTER_USEC, c), 0);
        assert_false(mthp_bloat_tracking(b));
        mthp_bloat_free(b);
}

/* Grown partly under the raise, partly at 4K after a step-down: 1.5
 * times what its faults map at 4K, but 100 MiB beyond it: offered; one
 * only 40 MiB beyond: not (on the code before, neither was: under 4x). */
static void test_partly_grown(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat *b;
        struct mthp_bloat_candidate c[MTHP_BLOAT_CANDIDATES];
        assert_int_equal(mthp_bloat_new(f->host, &b), 0);
        put_stat(f, 100, "limited", 1000, 1, 10 * PAGES_MB);
        put_stat(f, 200, "modest", 1000, 1, 10 * PAGES_MB);
        assert_int_equal(tick(b, true, 1000000, c), 0);        /* the baselines */
        put_stat(f, 100, "limited", 1000 + 200 * PAGES_MB, 1, 310 * PAGES_MB);
        put_stat(f, 200, "modest", 1000 + 200 * PAGES_MB, 1, 250 * PAGES_MB);
        assert_int_equal(tick(b, false, 2000000, c), 0);       /* faulting while it grew */
        assert_int_equal(tick(b, false, 3000000, c), 1);       /* quiet now */
        assert_int_equal(c[0].pid, 100);
        assert_int_equal(c[0].grown_kb, 300 * 1024);
        assert_int_equal(c[0].faults_kb, 200 * 1024);
        mthp_bloat_free(b);
}

/* started after the raise: grown from nothing, offered from its second
 * sight (its rate known); under the floor: never */
static void test_started_after(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat *b;
        struct mthp_bloat_candidate c[MTHP_BLOAT_CANDIDATES];
        assert_int_equal(mthp_bloat_new(f->host, &b), 0);
        assert_int_equal(tick(b, true, 1000000, c), 0);
        put_stat(f, 400, "late", 300, ~0ULL >> 8, 200 * PAGES_MB);
        put_stat(f, 500, "small", 10, ~0ULL >> 8, 4 * PAGES_MB);
        assert_int_equal(tick(b, true, 2000000, c), 0);       /* first sight: its rate unknown */
        assert_int_equal(tick(b, true, 3000000, c), 1);
        assert_int_equal(c[0].pid, 400);
        assert_int_equal(c[0].grown_kb, 200 * 1024);
        /* another process at its PID is a first sight again */
        put_stat(f, 400, "late", 300, (~0ULL >> 8) + 1, 200 * PAGES_MB);
        assert_int_equal(tick(b, true, 4000000 + MTHP_BLOAT_RECHECK_USEC, c), 0);
        mthp_bloat_free(b);
}

static unsigned tick_stats(struct mthp_bloat *b, uint64_t t, struct mthp_bloat_candidate *c,
                           struct mthp_bloat_stats *st) {
        unsigned n = 99;
        assert_int_equal(mthp_bloat_tick(b, true, t, 100, c, MTHP_BLOAT_CANDIDATES, &n, st), 0);
        return n;
}

/* A raise held on a host of many processes: the baselines are read all at
 * once at the raise, then each tick reads a share of the processes, every
 * one within MTHP_BLOAT_PASS_USEC, not all of them (a stat file each,
 * ~5 us: 2,000 processes were 1% of a core while raised), and a process
 * grown and quiet is still offered within a pass or two. */
#define MANY 2000
static void test_many_processes_in_rotation(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat *b;
        struct mthp_bloat_candidate c[MTHP_BLOAT_CANDIDATES];
        struct mthp_bloat_stats st;
        assert_int_equal(mthp_bloat_new(f->host, &b), 0);
        for (int pid = 1000; pid < 1000 + MANY; pid++)
                put_stat(f, pid, "sleep", 100, 1, 100);
        uint64_t t = 1000000;
        assert_int_equal(tick_stats(b, t, c, &st), 0);
        assert_int_equal(st.scanned, MANY);                   /* the baselines, at the raise */
        put_stat(f, 1500, "sparse", 200, 1, 100 + 500 * PAGES_MB);
        unsigned most = 0, total = 0, ticks = 0, offered_at = 0;
        uint64_t pass_ticks = MTHP_BLOAT_PASS_USEC / 1000000;
        for (unsigned i = 1; i <= 3 * pass_ticks; i++) {
                unsigned n = tick_stats(b, t + i * 1000000ULL, c, &st);
                most = st.scanned > most ? st.scanned : most;
                total += st.scanned;
                ticks++;
                if (n && !offered_at) {
                        assert_int_equal(c[0].pid, 1500);
                        assert_int_equal(c[0].grown_kb, 500 * 1024);
                        offered_at = i;
                }
        }
        /* each process about once a pass, with a pass's listing of /proc */
        assert_true(most <= MANY / pass_ticks + MTHP_BLOAT_MIN_READS);
        assert_true(total <= 4 * MANY);
        assert_true(offered_at > 0 && offered_at <= 2 * pass_ticks + 1);
        /* a give-back cut short by its budget: offered again at the next
         * tick, not at its turn in the rotation */
        mthp_bloat_again(b, 1500);
        assert_int_equal(tick_stats(b, t + (3 * pass_ticks + 1) * 1000000ULL, c, &st), 1);
        assert_int_equal(c[0].pid, 1500);
        /* a process started under the raise (a new ID in /proc/loadavg)
         * that grows and goes quiet at once: offered within seconds, not
         * at the next pass's listing */
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/proc/loadavg", f->dir);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "0.00 0.00 0.00 1/%d %d\n", MANY, 1000 + MANY - 1);
        fclose(fp);
        t += (3 * pass_ticks + 2) * 1000000ULL;
        assert_int_equal(tick_stats(b, t, c, &st), 0);
        put_stat(f, 1000 + MANY + 5, "late", 300, ~0ULL >> 8, 200 * PAGES_MB);
        fp = fopen(path, "w");
        assert_non_null(fp);
        fprintf(fp, "0.00 0.00 0.00 1/%d %d\n", MANY + 1, 1000 + MANY + 9);
        fclose(fp);
        unsigned late_at = 0;
        for (unsigned i = 1; i <= pass_ticks && !late_at; i++)
                if (tick_stats(b, t + i * 1000000ULL, c, &st) && c[0].pid == 1000 + MANY + 5)
                        late_at = i;
        assert_true(late_at > 0 && late_at <= 3);
        mthp_bloat_free(b);
}

static void test_swap(void **state) {
        struct fixture *f = *state;
        char path[PATH_MAX + 32];
        uint64_t kb = 1;
        snprintf(path, sizeof(path), "%s/proc/meminfo", f->dir);
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs("MemTotal:       24000000 kB\nSwapTotal:             0 kB\nSwapFree:              0 kB\n", fp);
        fclose(fp);
        assert_int_equal(mthp_bloat_swap_kb(f->host, &kb), 0);
        assert_int_equal(kb, 0);
        fp = fopen(path, "w");
        fputs("MemTotal:       24000000 kB\nSwapTotal:       2097148 kB\n", fp);
        fclose(fp);
        assert_int_equal(mthp_bloat_swap_kb(f->host, &kb), 0);
        assert_int_equal(kb, 2097148);
        /* a fake host's processes are not this machine's to advise */
        struct mthp_bloat_candidate cand = { .pid = 1 };
        struct mthp_bloat_result res;
        assert_int_equal(mthp_bloat_give_back(f->host, &cand, 0.5, 1024, 100000, &res), -EOPNOTSUPP);
}

/* With swap, on a v2 memory controller: the process's cgroup is asked to
 * reclaim the bloat with swappiness=0 through memory.reclaim (the fake
 * tree's file records what was written); anon_thp and memory.current are
 * read before and after. The root cgroup is never asked (the whole host);
 * a v1 host has no memory.reclaim. Not measured on a real v2 host. */
static void test_memcg_reclaim(void **state) {
        struct fixture *f = *state;
        char memdir[PATH_MAX], path[PATH_MAX + 64], buf[256];
        struct mthp_bloat_reclaim res;
        assert_ok(fakehost_add_cgroup(f->dir, "mthpd-test-bloat.slice/app", memdir, sizeof(memdir)));
        snprintf(path, sizeof(path), "%s/memory.stat", memdir);
        assert_ok(fakehost_write_file(f->dir, path, "anon 1207959552\nanon_thp 1073741824\n"));
        snprintf(path, sizeof(path), "%s/memory.current", memdir);
        assert_ok(fakehost_write_file(f->dir, path, "1342177280\n"));
        snprintf(path, sizeof(path), "%s/memory.reclaim", memdir);
        assert_ok(fakehost_write_file(f->dir, path, ""));
        assert_ok(fakehost_write_file(f->dir, "/proc/100/cgroup", "0::/mthpd-test-bloat.slice/app\n"));
        assert_int_equal(mthp_bloat_memcg_reclaim(f->host, &f->caps, 100, 64 * 1024, &res), 0);
        assert_ok(fakehost_read_file(f->dir, path, buf, sizeof(buf)));
        assert_string_equal(buf, "67108864 swappiness=0\n");   /* the kernel strips the newline */
        assert_string_equal(res.cgroup, "/mthpd-test-bloat.slice/app");
        assert_int_equal(res.asked_kb, 64 * 1024);
        assert_int_equal(res.anon_thp_before_kb, 1024 * 1024);
        assert_int_equal(res.current_before_kb, 1280 * 1024);
        /* the root cgroup: the whole host's reclaim, not done */
        assert_ok(fakehost_write_file(f->dir, "/proc/101/cgroup", "0::/\n"));
        assert_int_equal(mthp_bloat_memcg_reclaim(f->host, &f->caps, 101, 64 * 1024, &res), -EPERM);
        /* no memory.reclaim (before 5.19) */
        assert_ok(fakehost_remove_file(f->dir, path));
        assert_int_equal(mthp_bloat_memcg_reclaim(f->host, &f->caps, 100, 64 * 1024, &res), -EOPNOTSUPP);
        /* gone */
        assert_int_equal(mthp_bloat_memcg_reclaim(f->host, &f->caps, 102, 64 * 1024, &res), -ESRCH);
}

static void test_memcg_reclaim_v1(void **state) {
        struct fixture *f = *state;
        struct mthp_bloat_reclaim res;
        assert_ok(fakehost_write_file(f->dir, "/proc/100/cgroup", "5:memory:/app\n"));
        assert_int_equal(mthp_bloat_memcg_reclaim(f->host, &f->caps, 100, 64 * 1024, &res), -EOPNOTSUPP);
}

static int v1_setup(void **state) {
        struct fakehost_opts o = { .cg_layout = FAKEHOST_CG_V1 };
        return fixture_setup_opts(state, &o);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grown_quiet_offered, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_started_after, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_quiet_after_step_down, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_partly_grown, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_many_processes_in_rotation, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_swap, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_memcg_reclaim, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_memcg_reclaim_v1, v1_setup, fixture_teardown),
};
UNIT_MAIN(tests, tests)
