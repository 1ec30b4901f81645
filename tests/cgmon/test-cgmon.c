/* SPDX-License-Identifier: MIT */
/* Cgroup monitor: memory.stat parsers on real texts, and the monitor on fake
 * hosts of each layout (v2, hybrid, v1) whose cgroups the tests create,
 * move, remove and recreate. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memstat-texts.h"
#include "mthp/actuator.h"
#include "mthp/cgmon.h"
#include "unit.h"

#define SEC 1000000ULL
#define MAXV 16

/* ---- parsers ---- */

static void test_parse_v1_real_uses_totals(void **state) {
        (void) state;
        struct mthp_memstat ms;
        assert_ok(mthp_parse_memstat(real_v1_root_stat, &ms));
        /* total_* (hierarchical) wins over the cgroup's own counters */
        assert_int_equal(ms.pgfault, 781468671);
        assert_int_equal(ms.pgmajfault, 4867);
        assert_int_equal(ms.anon_kb, 49160192 / 1024);
        assert_int_equal(ms.anon_thp_kb, 0);
        assert_int_equal(ms.shmem_kb, 10809344 / 1024);
        assert_int_equal(ms.file_kb, 631762944 / 1024);
}

static void test_parse_v1_local_only(void **state) {
        (void) state;
        struct mthp_memstat ms;
        /* no total_* lines (e.g. a trimmed text): the local values */
        assert_ok(mthp_parse_memstat("cache 8192\nrss 4194304\nrss_huge 2097152\nshmem 4096\n"
                                     "mapped_file 4096\npgfault 42\npgmajfault 3\n",
                                     &ms));
        assert_int_equal(ms.pgfault, 42);
        assert_int_equal(ms.pgmajfault, 3);
        assert_int_equal(ms.anon_kb, 4096);
        assert_int_equal(ms.anon_thp_kb, 2048);
        assert_int_equal(ms.shmem_kb, 4);
        assert_int_equal(ms.file_kb, 8);
        /* totals may come before or after the local line */
        assert_ok(mthp_parse_memstat("total_pgfault 100\npgfault 7\n", &ms));
        assert_int_equal(ms.pgfault, 100);
}

static void test_parse_v2_real(void **state) {
        (void) state;
        struct mthp_memstat ms;
        assert_ok(mthp_parse_memstat(real_v2_stat, &ms));
        assert_int_equal(ms.pgfault, 1234567);
        assert_int_equal(ms.pgmajfault, 89);
        assert_int_equal(ms.anon_kb, 102400);
        assert_int_equal(ms.file_kb, 51200);
        assert_int_equal(ms.shmem_kb, 20480);
        assert_int_equal(ms.anon_thp_kb, 40960);    /* not shmem_thp, not file_thp */
}

static void test_parse_bad(void **state) {
        (void) state;
        struct mthp_memstat ms;
        assert_int_equal(mthp_parse_memstat("", &ms), -EBADMSG);
        assert_int_equal(mthp_parse_memstat("anon 4096\nfile 4096\n", &ms), -EBADMSG);
        assert_int_equal(ms.anon_kb, 4);
        /* prefixes and suffixes of known keys are other keys */
        assert_int_equal(mthp_parse_memstat("pgfaults 5\nxpgfault 6\npgfault_x 7\n", &ms), -EBADMSG);
        /* junk after the number: not a value */
        assert_int_equal(mthp_parse_memstat("pgfault 12x\n", &ms), -EBADMSG);
        /* no trailing newline, and a value that would overflow saturates */
        assert_ok(mthp_parse_memstat("pgfault 99999999999999999999999", &ms));
        assert_int_equal(ms.pgfault, UINT64_MAX);
}

/* ---- the monitor on a fake host ---- */

struct cfix {
        struct fixture *f;
        struct mthp_cgmon *m;
        struct mthp_cgroup_view v[MAXV];
        unsigned n;
        const char *prefix;     /* managed: paths starting with it */
};

static bool match_prefix(const char *path, void *user) {
        struct cfix *x = user;
        return strncmp(path, x->prefix, strlen(x->prefix)) == 0;
}

static int cfix_setup_layout(void **state, enum fakehost_cg_layout l) {
        struct fakehost_opts o = { .cg_layout = l };
        void *fs;
        fixture_setup_opts(&fs, &o);
        struct cfix *x = calloc(1, sizeof(*x));
        assert_non_null(x);
        x->f = fs;
        x->prefix = "/svc";
        assert_ok(mthp_cgmon_new(x->f->host, &x->f->caps, &x->m));
        mthp_cgmon_set_match(x->m, match_prefix, x);
        /* most tests move counters without usage: read everything each tick
         * (test_full_reads_follow_usage covers the default) */
        mthp_cgmon_set_full_interval(x->m, 0);
        *state = x;
        return 0;
}

static int setup_v2(void **state) {
        return cfix_setup_layout(state, FAKEHOST_CG_V2);
}
static int setup_hybrid(void **state) {
        return cfix_setup_layout(state, FAKEHOST_CG_HYBRID);
}
static int setup_v1(void **state) {
        return cfix_setup_layout(state, FAKEHOST_CG_V1);
}

static int cfix_teardown(void **state) {
        struct cfix *x = *state;
        void *fs = x->f;
        mthp_cgmon_free(x->m);
        free(x);
        return fixture_teardown(&fs);
}

static bool is_v1(struct cfix *x) {
        return x->f->opts.cg_layout != FAKEHOST_CG_V2;
}

static void memdir(struct cfix *x, const char *name, char *buf, size_t size) {
        snprintf(buf, size, "%s/%s", is_v1(x) ? "/sys/fs/cgroup/memory" : "/sys/fs/cgroup", name);
}

static void add_cg(struct cfix *x, const char *name) {
        char d[PATH_MAX];
        assert_ok(fakehost_add_cgroup(x->f->dir, name, d, sizeof(d)));
}

/* pgfault of a cgroup moves by delta (v1: the hierarchical total_pgfault,
 * which the monitor reads, and the local one) */
static void add_faults(struct cfix *x, const char *name, int64_t delta) {
        char d[PATH_MAX], f[PATH_MAX + 16];
        memdir(x, name, d, sizeof(d));
        snprintf(f, sizeof(f), "%s/memory.stat", d);
        assert_ok(fakehost_add_counter(x->f->dir, f, "pgfault", delta));
        if (is_v1(x))
                assert_ok(fakehost_add_counter(x->f->dir, f, "total_pgfault", delta));
}

static void set_faults(struct cfix *x, const char *name, uint64_t v) {
        char d[PATH_MAX], f[PATH_MAX + 16];
        memdir(x, name, d, sizeof(d));
        snprintf(f, sizeof(f), "%s/memory.stat", d);
        assert_ok(fakehost_set_counter(x->f->dir, f, is_v1(x) ? "total_pgfault" : "pgfault", v));
}

static void put_file(struct cfix *x, const char *name, const char *file, const char *text) {
        char d[PATH_MAX], f[PATH_MAX + 64];
        memdir(x, name, d, sizeof(d));
        snprintf(f, sizeof(f), "%s/%s", d, file);
        assert_ok(fakehost_write_file(x->f->dir, f, text));
}

static void set_usage(struct cfix *x, const char *name, uint64_t bytes) {
        char t[32];
        snprintf(t, sizeof(t), "%llu\n", (unsigned long long) bytes);
        put_file(x, name, is_v1(x) ? "memory.usage_in_bytes" : "memory.current", t);
}

static void tick(struct cfix *x, uint64_t t) {
        assert_ok(mthp_cgmon_tick(x->m, t, x->v, MAXV, &x->n));
}

static const struct mthp_cgroup_view *find(struct cfix *x, const char *path) {
        for (unsigned i = 0; i < x->n; i++)
                if (strcmp(x->v[i].path, path) == 0)
                        return &x->v[i];
        return NULL;
}

static const struct mthp_cgroup_view *need(struct cfix *x, const char *path) {
        const struct mthp_cgroup_view *v = find(x, path);
        if (!v)
                fail_msg("cgroup %s is not in the views (%u of them)", path, x->n);
        return v;
}

static void test_rates_and_order(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc-a");
        add_cg(x, "svc-b");
        add_cg(x, "svc-c");
        add_cg(x, "other");
        tick(x, 10 * SEC);
        assert_int_equal(x->n, 3);      /* "/other" and the root are not managed */
        for (unsigned i = 0; i < 3; i++) {
                assert_true(x->v[i].new_cgroup);
                assert_double_equal(x->v[i].fault_rate, 0);
        }
        /* all equal: path order */
        assert_string_equal(x->v[0].path, "/svc-a");
        assert_string_equal(x->v[1].path, "/svc-b");
        assert_string_equal(x->v[2].path, "/svc-c");
        struct mthp_cgmon_stats st;
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.n_managed, 3);
        assert_int_equal(st.n_cgroups, 5);  /* the root, 4 children */
        assert_int_equal(st.walks, 1);
        /* memory.stat + usage + limit(s) (+ pressure) each */
        unsigned per = x->f->opts.cg_layout == FAKEHOST_CG_V2 ? 5 : x->f->opts.cg_layout == FAKEHOST_CG_HYBRID ? 4 : 3;
        assert_int_equal(st.files_read, 3 * per);

        add_faults(x, "svc-a", 100);
        add_faults(x, "svc-b", 500);
        set_usage(x, "svc-b", 8 * 1024 * 1024);
        tick(x, 12 * SEC);
        assert_int_equal(x->n, 3);
        assert_string_equal(x->v[0].path, "/svc-b");
        assert_double_equal(x->v[0].fault_rate, 250);
        assert_false(x->v[0].new_cgroup);
        assert_int_equal(x->v[0].usage_kb, 8192);
        assert_double_equal(x->v[0].growth_kb_s, 4096);
        assert_string_equal(x->v[1].path, "/svc-a");
        assert_double_equal(x->v[1].fault_rate, 50);
        assert_string_equal(x->v[2].path, "/svc-c");
        assert_double_equal(x->v[2].fault_rate, 0);

        /* shrinking is negative growth */
        set_usage(x, "svc-b", 4 * 1024 * 1024);
        tick(x, 13 * SEC);
        assert_double_equal(need(x, "/svc-b")->growth_kb_s, -4096);

        /* truncation to n_out keeps the highest */
        add_faults(x, "svc-c", 1000);
        add_faults(x, "svc-a", 10);
        unsigned n;
        struct mthp_cgroup_view two[2];
        assert_ok(mthp_cgmon_tick(x->m, 14 * SEC, two, 2, &n));
        assert_int_equal(n, 2);
        assert_string_equal(two[0].path, "/svc-c");
        assert_double_equal(two[0].fault_rate, 1000);
        assert_string_equal(two[1].path, "/svc-a");
        assert_double_equal(two[1].fault_rate, 10);
        assert_ok(mthp_cgmon_tick(x->m, 15 * SEC, two, 0, &n));
        assert_int_equal(n, 0);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 1);  /* no rescan within 30 s */
}

static void test_memstat_fields(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        char d[PATH_MAX], f[PATH_MAX + 16];
        memdir(x, "svc", d, sizeof(d));
        snprintf(f, sizeof(f), "%s/memory.stat", d);
        assert_ok(fakehost_set_counter(x->f->dir, f, is_v1(x) ? "total_rss" : "anon", 64 << 20));
        assert_ok(fakehost_set_counter(x->f->dir, f, is_v1(x) ? "total_shmem" : "shmem", 2 << 20));
        tick(x, SEC);
        const struct mthp_cgroup_view *v = need(x, "/svc");
        assert_int_equal(v->anon_kb, 65536);
        assert_int_equal(v->shmem_kb, 2048);
}

static void test_limits(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        tick(x, SEC);
        assert_int_equal(need(x, "/svc")->limit_kb, 0);      /* none */
        if (is_v1(x)) {
                put_file(x, "svc", "memory.limit_in_bytes", "1073741824\n");
                tick(x, 2 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 1048576);
                put_file(x, "svc", "memory.limit_in_bytes", "9223372036854771712\n");
                tick(x, 3 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 0);
        } else {
                /* the lower of memory.max and memory.high that is not "max" */
                put_file(x, "svc", "memory.max", "1073741824\n");
                tick(x, 2 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 1048576);
                put_file(x, "svc", "memory.high", "536870912\n");
                tick(x, 3 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 524288);
                put_file(x, "svc", "memory.max", "max\n");
                tick(x, 4 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 524288);
                put_file(x, "svc", "memory.high", "max\n");
                tick(x, 5 * SEC);
                assert_int_equal(need(x, "/svc")->limit_kb, 0);
        }
}

static void test_pressure(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        enum fakehost_cg_layout l = x->f->opts.cg_layout;
        const char *psi_dir = l == FAKEHOST_CG_V2 ? "/sys/fs/cgroup/svc" : "/sys/fs/cgroup/unified/svc";
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/memory.pressure", psi_dir);
        if (l != FAKEHOST_CG_V1)
                assert_ok(fakehost_write_file(x->f->dir, p,
                                              "some avg10=12.50 avg60=3.00 avg300=0.70 total=123456\n"
                                              "full avg10=1.25 avg60=0.00 avg300=0.00 total=2345\n"));
        tick(x, SEC);
        const struct mthp_cgroup_view *v = need(x, "/svc");
        if (l == FAKEHOST_CG_V1) {
                assert_false(v->psi_present);   /* v1 has no PSI */
                return;
        }
        assert_true(v->psi_present);
        assert_double_equal(v->psi_some_avg10, 12.5);
        if (l == FAKEHOST_CG_HYBRID) {
                /* the unified twin goes: PSI goes, the memory cgroup stays */
                char twin[PATH_MAX];
                assert_ok(fakehost_path(x->f->dir, "/sys/fs/cgroup/unified/svc", twin, sizeof(twin)));
                assert_ok(fakehost_remove_file(x->f->dir, p));
                assert_ok(fakehost_remove_file(x->f->dir, "/sys/fs/cgroup/unified/svc/cgroup.procs"));
                assert_ok(fakehost_remove_file(x->f->dir, "/sys/fs/cgroup/unified/svc/cgroup.controllers"));
                assert_int_equal(rmdir(twin), 0);
                tick(x, 2 * SEC);
                v = need(x, "/svc");
                assert_false(v->psi_present);
                /* and comes back at the next walk */
                assert_ok(fakehost_write_file(x->f->dir, p, "some avg10=0.50 avg60=0 avg300=0 total=1\n"));
                assert_ok(mthp_cgmon_walk(x->m, 3 * SEC));
                tick(x, 3 * SEC);
                v = need(x, "/svc");
                assert_true(v->psi_present);
                assert_double_equal(v->psi_some_avg10, 0.5);
                assert_false(v->new_cgroup);
        }
}

static void test_removed_and_recreated(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc-a");
        add_cg(x, "svc-b");
        add_faults(x, "svc-b", 1000);
        tick(x, SEC);
        add_faults(x, "svc-b", 1000);
        tick(x, 2 * SEC);
        assert_int_equal(x->n, 2);
        assert_double_equal(need(x, "/svc-b")->fault_rate, 1000);
        struct mthp_cgmon_stats st;
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 1);

        /* removed between ticks: dropped quietly, a walk comes next */
        assert_ok(fakehost_remove_cgroup(x->f->dir, "svc-b"));
        tick(x, 3 * SEC);
        assert_int_equal(x->n, 1);
        assert_string_equal(x->v[0].path, "/svc-a");
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.n_managed, 1);
        tick(x, 4 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 2);
        assert_int_equal(x->n, 1);

        /* recreated under the same path, with a counter far below the old
         * one: a new cgroup, no rate on its first tick */
        add_cg(x, "svc-b");
        add_faults(x, "svc-b", 10);
        assert_ok(mthp_cgmon_walk(x->m, 5 * SEC));
        tick(x, 5 * SEC);
        assert_int_equal(x->n, 2);
        const struct mthp_cgroup_view *v = need(x, "/svc-b");
        assert_true(v->new_cgroup);
        assert_double_equal(v->fault_rate, 0);
        add_faults(x, "svc-b", 300);
        tick(x, 6 * SEC);
        v = need(x, "/svc-b");
        assert_false(v->new_cgroup);
        assert_double_equal(v->fault_rate, 300);
}

static void test_removed_and_recreated_between_walks(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        tick(x, SEC);
        tick(x, 2 * SEC);
        assert_false(need(x, "/svc")->new_cgroup);
        /* gone and back before the monitor looked: the old fds read ENODEV */
        assert_ok(fakehost_remove_cgroup(x->f->dir, "svc"));
        add_cg(x, "svc");
        tick(x, 3 * SEC);
        assert_null(find(x, "/svc"));
        tick(x, 4 * SEC);      /* the walk this triggered finds the new one */
        assert_true(need(x, "/svc")->new_cgroup);
}

static void test_counter_reset(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        set_faults(x, "svc", 5000);
        tick(x, SEC);
        set_faults(x, "svc", 100);
        tick(x, 2 * SEC);
        const struct mthp_cgroup_view *v = need(x, "/svc");
        assert_double_equal(v->fault_rate, 0);
        assert_false(v->new_cgroup);
        set_faults(x, "svc", 600);
        tick(x, 4 * SEC);
        assert_double_equal(need(x, "/svc")->fault_rate, 250);
}

static void test_rescan_and_nested(void **state) {
        struct cfix *x = *state;
        mthp_cgmon_set_rescan(x->m, 5 * SEC);
        add_cg(x, "svc");
        tick(x, 100 * SEC);
        assert_int_equal(x->n, 1);
        add_cg(x, "svc/web");
        add_cg(x, "svc/web/worker");
        add_cg(x, "other");
        add_cg(x, "other/svc");         /* "/other/svc" does not start with "/svc" */
        tick(x, 103 * SEC);
        assert_int_equal(x->n, 1);      /* not before the rescan */
        tick(x, 105 * SEC);
        assert_int_equal(x->n, 3);
        need(x, "/svc/web");
        need(x, "/svc/web/worker");
        struct mthp_cgmon_stats st;
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 2);
        assert_int_equal(st.n_cgroups, 6);
        /* a parent counts its children on v1 too (total_*) */
        if (is_v1(x)) {
                add_faults(x, "svc/web/worker", 70);
                char d[PATH_MAX], f[PATH_MAX + 16];
                memdir(x, "svc", d, sizeof(d));
                snprintf(f, sizeof(f), "%s/memory.stat", d);
                assert_ok(fakehost_add_counter(x->f->dir, f, "total_pgfault", 70));
                tick(x, 106 * SEC);
                assert_double_equal(need(x, "/svc")->fault_rate, 70);
                assert_double_equal(need(x, "/svc/web/worker")->fault_rate, 70);
                assert_double_equal(need(x, "/svc/web")->fault_rate, 0);
        }
}

static void test_full_reads_follow_usage(void **state) {
        struct cfix *x = *state;
        mthp_cgmon_set_full_interval(x->m, 10 * SEC);
        add_cg(x, "svc-a");
        add_cg(x, "svc-b");
        struct mthp_cgmon_stats st;
        tick(x, 100 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.full_reads, 2);     /* first sight */
        /* faults in a, usage moves in b only: b is read in full, a keeps
         * its counters until its deadline */
        add_faults(x, "svc-a", 400);
        add_faults(x, "svc-b", 100);
        set_usage(x, "svc-b", 1 << 20);
        tick(x, 101 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.full_reads, 1);
        /* usage of both, and the rest of b's files */
        unsigned per = x->f->opts.cg_layout == FAKEHOST_CG_V2 ? 5 : x->f->opts.cg_layout == FAKEHOST_CG_HYBRID ? 4 : 3;
        assert_int_equal(st.files_read, 2 + per - 1);
        assert_double_equal(need(x, "/svc-b")->fault_rate, 100);
        assert_double_equal(need(x, "/svc-b")->growth_kb_s, 1024);
        assert_double_equal(need(x, "/svc-a")->fault_rate, 0);
        assert_false(need(x, "/svc-a")->new_cgroup);
        /* growth follows usage every tick, also without a full read */
        tick(x, 102 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.full_reads, 0);
        assert_int_equal(st.files_read, 2);
        assert_double_equal(need(x, "/svc-b")->growth_kb_s, 0);
        /* usage did not move: no evidence of faults this tick (an idle
         * cgroup must not keep its last rate, and its say, for 10 s) */
        assert_double_equal(need(x, "/svc-b")->fault_rate, 0);
        /* by the deadline (5..10 s after first sight) a is read: its rate
         * is the average since its last full read */
        unsigned t;
        for (t = 103; t <= 111; t++) {
                tick(x, t * SEC);
                if (need(x, "/svc-a")->fault_rate > 0)
                        break;
        }
        assert_true(t <= 110);
        assert_double_equal(need(x, "/svc-a")->fault_rate, 400.0 / (t - 100));
}

/* /proc/cgroups says whether a walk is worth it */
static void write_count(struct cfix *x, unsigned n) {
        char t[512];
        snprintf(t, sizeof(t),
                 "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpuset\t3\t1\t1\nmemory\t%u\t%u\t1\npids\t8\t1\t1\n",
                 x->f->opts.cg_layout == FAKEHOST_CG_V2 ? 0 : 4, n);
        assert_ok(fakehost_write_file(x->f->dir, "/proc/cgroups", t));
}

static void test_walk_only_on_count_change(void **state) {
        struct cfix *x = *state;
        write_count(x, 2);
        /* the monitor opens /proc/cgroups when it is made */
        mthp_cgmon_free(x->m);
        assert_ok(mthp_cgmon_new(x->f->host, &x->f->caps, &x->m));
        mthp_cgmon_set_match(x->m, match_prefix, x);
        mthp_cgmon_set_full_interval(x->m, 0);
        mthp_cgmon_set_rescan(x->m, 30 * SEC);
        add_cg(x, "svc-a");
        struct mthp_cgmon_stats st;
        tick(x, 1000 * SEC);
        /* same count at the rescan: no walk, so svc-b is not seen yet */
        add_cg(x, "svc-b");
        tick(x, 1031 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 1);
        assert_int_equal(st.checks, 1);
        assert_int_equal(x->n, 1);
        /* the count moved: walk */
        write_count(x, 3);
        tick(x, 1050 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 1);  /* not before the interval */
        tick(x, 1062 * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 2);
        assert_int_equal(x->n, 2);
        /* unchanged for ten intervals: walk anyway (a swap of cgroups
         * leaves the count alone) */
        add_cg(x, "svc-c");
        unsigned t;
        for (t = 1063; t < 1062 + 10 * 30 + 2; t++) {
                tick(x, t * SEC);
                if (x->n == 3)
                        break;
        }
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 3);
        assert_int_equal(t, 1062 + 10 * 30);
        /* a managed cgroup vanishing walks at once, count or not */
        assert_ok(fakehost_remove_cgroup(x->f->dir, "svc-a"));
        tick(x, (t + 1) * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 3);  /* this tick found it gone */
        assert_int_equal(x->n, 2);
        tick(x, (t + 2) * SEC);
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.walks, 4);
}

/* A cgroup's appearance (the engine's start grace, issue 12): seen by a
 * later walk, or populated after the first one found it empty; watching
 * for new cgroups walks as soon as the count moves. */
static void test_appeared(void **state) {
        struct cfix *x = *state;
        write_count(x, 2);
        mthp_cgmon_free(x->m);
        assert_ok(mthp_cgmon_new(x->f->host, &x->f->caps, &x->m));
        mthp_cgmon_set_match(x->m, match_prefix, x);
        mthp_cgmon_set_full_interval(x->m, 0);
        mthp_cgmon_set_rescan(x->m, 30 * SEC);
        mthp_cgmon_set_watch_new(x->m, true);
        add_cg(x, "svc-a");
        set_usage(x, "svc-a", 1 << 20);
        add_cg(x, "svc-e"); /* empty */
        add_cg(x, "svc-x");
        set_usage(x, "svc-x", 1 << 20);
        put_file(x, "svc-x", "memory.stat", "garbage\n"); /* unreadable: dropped */
        tick(x, 1000 * SEC);
        assert_null(find(x, "/svc-x"));
        /* readable again: a walk finds it, but it did not appear */
        put_file(x, "svc-x", "memory.stat", "pgfault 1\n");
        tick(x, 1000 * SEC + 1);
        assert_int_equal(need(x, "/svc-x")->appeared_usec, 0);
        /* there when the monitor first looked: not seen to appear */
        assert_int_equal(need(x, "/svc-a")->appeared_usec, 0);
        assert_int_equal(need(x, "/svc-e")->appeared_usec, 0);
        /* created since: the next tick walks (the count moved) */
        add_cg(x, "svc-b");
        write_count(x, 3);
        tick(x, 1001 * SEC);
        assert_int_equal(need(x, "/svc-b")->appeared_usec, 1001 * SEC);
        /* the empty one gets a process */
        set_usage(x, "svc-e", 4096);
        tick(x, 1002 * SEC);
        assert_int_equal(need(x, "/svc-e")->appeared_usec, 1002 * SEC);
        assert_int_equal(need(x, "/svc-a")->appeared_usec, 0);
        assert_int_equal(need(x, "/svc-b")->appeared_usec, 1001 * SEC);
        /* created empty, then populated: the grace counts from the process */
        add_cg(x, "svc-c");
        write_count(x, 4);
        tick(x, 1003 * SEC);
        assert_int_equal(need(x, "/svc-c")->appeared_usec, 1003 * SEC);
        set_usage(x, "svc-c", 4096);
        tick(x, 1005 * SEC);
        assert_int_equal(need(x, "/svc-c")->appeared_usec, 1005 * SEC);
        tick(x, 1006 * SEC);
        assert_int_equal(need(x, "/svc-c")->appeared_usec, 1005 * SEC);
        /* not watching: a new cgroup waits for the rescan interval */
        mthp_cgmon_set_watch_new(x->m, false);
        add_cg(x, "svc-d");
        write_count(x, 5);
        tick(x, 1007 * SEC);
        assert_null(find(x, "/svc-d"));
        /* a reload's walk (new predicate): what it finds was there before */
        mthp_cgmon_set_match(x->m, match_prefix, x);
        tick(x, 1008 * SEC);
        assert_int_equal(need(x, "/svc-d")->appeared_usec, 0);
        assert_int_equal(need(x, "/svc-b")->appeared_usec, 1001 * SEC);
}

static bool match_root(const char *path, void *user) {
        (void) user;
        return strcmp(path, "/") == 0;
}

static void test_root_and_no_match(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        mthp_cgmon_set_match(x->m, match_root, NULL);
        tick(x, SEC);
        assert_int_equal(x->n, 1);
        assert_string_equal(x->v[0].path, "/");
        if (is_v1(x))
                assert_int_equal(x->v[0].usage_kb, 243732480 / 1024);  /* the fake's root */
        else
                assert_int_equal(x->v[0].usage_kb, 0);  /* the v2 root has no memory.current */
        mthp_cgmon_set_match(x->m, NULL, NULL);
        tick(x, 2 * SEC);
        assert_int_equal(x->n, 0);
        struct mthp_cgmon_stats st;
        mthp_cgmon_get_stats(x->m, &st);
        assert_int_equal(st.n_managed, 0);
        assert_int_equal(st.files_read, 0);
}

/* A policy that matches nothing from the first walk on (a service not
 * started yet): the walks find nothing and the monitor manages nothing.
 * Under UBSan the code before passed qsort a NULL array here, which
 * stopped mthpd in the start-grace test of CI's sanitizer run. */
static void test_nothing_matches_yet(void **state) {
        struct cfix *x = *state;
        add_cg(x, "other");
        x->prefix = "/svc-not-there";
        mthp_cgmon_set_watch_new(x->m, true);
        tick(x, SEC);
        assert_int_equal(x->n, 0);
        add_cg(x, "other2");   /* the count moves: a walk, still nothing */
        tick(x, 2 * SEC);
        assert_int_equal(x->n, 0);
}

static void test_not_a_memory_cgroup(void **state) {
        struct cfix *x = *state;
        add_cg(x, "svc");
        /* a directory without memory.stat (v2: memory not delegated) */
        char d[PATH_MAX], p[PATH_MAX];
        memdir(x, "svc-bare", d, sizeof(d));
        assert_ok(fakehost_path(x->f->dir, d, p, sizeof(p)));
        assert_int_equal(mkdir(p, 0755), 0);
        tick(x, SEC);
        assert_int_equal(x->n, 1);
        assert_string_equal(x->v[0].path, "/svc");
}

static void test_no_cgroups(void **state) {
        (void) state;
        struct fakehost_opts o = { .cg_layout = FAKEHOST_CG_NONE };
        void *fs;
        fixture_setup_opts(&fs, &o);
        struct fixture *f = fs;
        struct mthp_cgmon *m = NULL;
        assert_int_equal(mthp_cgmon_new(f->host, &f->caps, &m), -EOPNOTSUPP);
        fixture_teardown(&fs);
}

static void test_libcgroup_walker_needs_real_root(void **state) {
        struct cfix *x = *state;
        assert_int_equal(mthp_cgmon_set_walker(x->m, MTHP_CGMON_WALK_LIBCGROUP), -EOPNOTSUPP);
        assert_ok(mthp_cgmon_set_walker(x->m, MTHP_CGMON_WALK_DIRFD));
}

/* Descriptors in use by this process. */
static unsigned open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        assert_non_null(d);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                n += de->d_name[0] != '.';
        closedir(d);
        return n - 1;   /* the directory's own */
}

/* Manage n cgroups under a soft RLIMIT_NOFILE of soft, tick twice, then
 * write a knob and restore it: the monitor must leave the knob writes
 * their descriptors whatever the number of cgroups. */
static void budget_run(struct cfix *x, unsigned n, rlim_t soft, struct mthp_cgmon_stats *st) {
        struct mthp_cgmon_stats before;
        mthp_cgmon_get_stats(x->m, &before);
        for (unsigned i = before.n_managed; i < n; i++) {
                char name[32];
                snprintf(name, sizeof(name), "svc-%04u", i);
                add_cg(x, name);
        }
        struct rlimit old, rl;
        assert_ok(getrlimit(RLIMIT_NOFILE, &old));
        rl = old;
        rl.rlim_cur = soft;
        assert_ok(setrlimit(RLIMIT_NOFILE, &rl));
        tick(x, 0);
        tick(x, SEC);
        mthp_cgmon_get_stats(x->m, st);
        char run[PATH_MAX + 8];
        snprintf(run, sizeof(run), "%s/run", x->f->dir);
        (void) mkdir(run, 0755);
        (void) mkdir(x->f->state_dir, 0755);
        struct mthp_actuator *a = NULL;
        char err[512] = "";
        int r = mthp_actuator_new(x->f->host, &x->f->caps, x->f->state_dir, false, &a);
        if (r == 0)
                r = mthp_knob_write(a, fixture_knob(x->f, "64K/anon"), "always", "test", err, sizeof(err));
        int restored = a ? mthp_actuator_restore(a) : -1;
        mthp_actuator_free(a);
        assert_ok(setrlimit(RLIMIT_NOFILE, &old));
        if (r < 0)
                fail_msg("knob write beside %u managed cgroups under RLIMIT_NOFILE %llu: %s", n,
                         (unsigned long long) soft, err[0] ? err : strerror(-r));
        assert_int_equal(r, 1);
        assert_int_equal(restored, 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_int_equal(st->n_managed, n);
}

/* 250 managed cgroups under the usual soft limit of 1,024 (scaled down to
 * 256 here): the cgroups beyond the budget are read by open-read-close,
 * every one of them is still monitored, and the knob write works. */
static void test_fd_budget(void **state) {
        struct cfix *x = *state;
        struct mthp_cgmon_stats st;
        unsigned base = open_fds();
        budget_run(x, 250, base + 192, &st);
        assert_true(st.n_transient > 0);
        assert_int_equal(st.n_unmonitored, 0);
        assert_true(st.fds + base + MTHP_CGMON_FD_RESERVE <= base + 192);
        /* every cgroup was read: the last tick's views are full */
        assert_int_equal(x->n, MAXV);
}

/* So few descriptors that not even open-read-close fits beside the
 * reserve: the cgroups are skipped, visibly, and the knob write works. */
static void test_fd_budget_exhausted(void **state) {
        struct cfix *x = *state;
        struct mthp_cgmon_stats st;
        unsigned base = open_fds();
        budget_run(x, 40, base + MTHP_CGMON_FD_RESERVE - 8, &st);
        assert_int_equal(st.fds, 0);
        assert_int_equal(st.n_transient, 40);
        assert_int_equal(st.n_unmonitored, 40);
}

/* The figure: descriptors at 1,000 managed cgroups, with the soft limit
 * at the hard one (what mthpd sets at start) and at 1,024. */
static void test_fd_budget_1000(void **state) {
        struct cfix *x = *state;
        struct mthp_cgmon_stats st;
        struct rlimit rl;
        assert_ok(getrlimit(RLIMIT_NOFILE, &rl));
        unsigned base = open_fds();
        budget_run(x, 1000, 1024, &st);
        printf("# 1000 managed cgroups, soft RLIMIT_NOFILE 1024: %u descriptors held (%u before), %u cgroups by "
               "open-read-close, %u not monitored\n", st.fds, base, st.n_transient, st.n_unmonitored);
        assert_int_equal(st.n_unmonitored, 0);
        if (rl.rlim_max >= 8192) {
                mthp_cgmon_set_match(x->m, match_prefix, x); /* a walk: the budget is read again */
                budget_run(x, 1000, rl.rlim_max, &st);
                printf("# 1000 managed cgroups, soft RLIMIT_NOFILE %llu: %u descriptors held, %u by "
                       "open-read-close\n", (unsigned long long) rl.rlim_max, st.fds, st.n_transient);
        }
}

#define LAYOUT_TESTS(setup)                                                                     \
        cmocka_unit_test_setup_teardown(test_rates_and_order, setup, cfix_teardown),            \
        cmocka_unit_test_setup_teardown(test_memstat_fields, setup, cfix_teardown),             \
        cmocka_unit_test_setup_teardown(test_limits, setup, cfix_teardown),                     \
        cmocka_unit_test_setup_teardown(test_pressure, setup, cfix_teardown),                   \
        cmocka_unit_test_setup_teardown(test_removed_and_recreated, setup, cfix_teardown),      \
        cmocka_unit_test_setup_teardown(test_removed_and_recreated_between_walks, setup, cfix_teardown), \
        cmocka_unit_test_setup_teardown(test_counter_reset, setup, cfix_teardown),              \
        cmocka_unit_test_setup_teardown(test_rescan_and_nested, setup, cfix_teardown),          \
        cmocka_unit_test_setup_teardown(test_root_and_no_match, setup, cfix_teardown),          \
        cmocka_unit_test_setup_teardown(test_nothing_matches_yet, setup, cfix_teardown),        \
        cmocka_unit_test_setup_teardown(test_not_a_memory_cgroup, setup, cfix_teardown),             \
        cmocka_unit_test_setup_teardown(test_full_reads_follow_usage, setup, cfix_teardown),         \
        cmocka_unit_test_setup_teardown(test_walk_only_on_count_change, setup, cfix_teardown), \
        cmocka_unit_test_setup_teardown(test_appeared, setup, cfix_teardown),                  \
        cmocka_unit_test_setup_teardown(test_fd_budget, setup, cfix_teardown),                 \
        cmocka_unit_test_setup_teardown(test_fd_budget_exhausted, setup, cfix_teardown)

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_v1_real_uses_totals),
        cmocka_unit_test(test_parse_v1_local_only),
        cmocka_unit_test(test_parse_v2_real),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_no_cgroups),
        cmocka_unit_test_setup_teardown(test_libcgroup_walker_needs_real_root, setup_v2, cfix_teardown),
        cmocka_unit_test_setup_teardown(test_fd_budget_1000, setup_v2, cfix_teardown),
        LAYOUT_TESTS(setup_v2),
        LAYOUT_TESTS(setup_hybrid),
        LAYOUT_TESTS(setup_v1),
};
/* no known bugs: a test name given on the command line picks from the main group */
UNIT_MAIN(tests, tests)
