/* SPDX-License-Identifier: MIT */
/* lib/limits.c: every memory-limited cgroup of a fake host (v2, hybrid),
 * populated or not, least headroom first; memory.events. */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include "mthp/limits.h"

static void put(const struct fixture *f, const char *memdir, const char *file, const char *text) {
        char p[PATH_MAX * 2];
        snprintf(p, sizeof(p), "%s%s/%s", f->dir, memdir, file);
        FILE *o = fopen(p, "w");
        assert_non_null(o);
        fputs(text, o);
        fclose(o);
}

static void add(const struct fixture *f, const char *name, char *memdir, size_t size) {
        assert_int_equal(fakehost_add_cgroup(f->dir, name, memdir, size), 0);
}

static int setup_v2(void **state) {
        struct fakehost_opts o = { .cg_layout = FAKEHOST_CG_V2 };
        return fixture_setup_opts(state, &o);
}

static int setup_hybrid(void **state) {
        struct fakehost_opts o = { .cg_layout = FAKEHOST_CG_HYBRID };
        return fixture_setup_opts(state, &o);
}

static void test_v2_limits(void **state) {
        struct fixture *f = *state;
        char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
        add(f, "free", a, sizeof(a));                  /* max/max: not limited */
        add(f, "svc", b, sizeof(b));
        add(f, "svc/job", c, sizeof(c));
        put(f, b, "memory.max", "1073741824\n");       /* 1 GiB */
        put(f, b, "memory.high", "629145600\n");       /* 600 MiB: the lower one counts */
        put(f, b, "memory.current", "104857600\n");    /* 100 MiB */
        put(f, c, "memory.max", "209715200\n");        /* 200 MiB, 150 used: less headroom */
        put(f, c, "memory.current", "157286400\n");
        put(f, c, "cgroup.events", "populated 0\nfrozen 0\n");
        fixture_reprobe(f);
        struct mthp_snapshot *s = calloc(1, sizeof(*s));
        assert_int_equal(mthp_limits_scan(f->host, &f->caps, s, NULL, NULL), 0);
        assert_true(s->limited_valid);
        assert_int_equal(s->n_limited, 2);
        /* least headroom in bytes first: /svc/job (50 MiB) before /svc
         * (500 MiB; the fake has no cgroup.events for /svc: assumed populated) */
        assert_string_equal(s->limited[1].path, "/svc");
        assert_int_equal(s->limited[1].limit_kb, 600 * 1024);
        assert_int_equal(s->limited[1].usage_kb, 100 * 1024);
        assert_true(s->limited[1].populated);
        assert_string_equal(s->limited[0].path, "/svc/job");
        assert_false(s->limited[0].populated);
        uint64_t u, l;
        assert_int_equal(mthp_limits_read(f->host, &f->caps, "/svc/job", &u, &l), 0);
        assert_int_equal(u, 150 * 1024);
        assert_int_equal(l, 200 * 1024);
        assert_int_equal(mthp_limits_arm_v1(f->host, &f->caps, "/svc", 1), -EOPNOTSUPP);
        free(s);
}

static void test_hybrid_limits_populated_by_children(void **state) {
        struct fixture *f = *state;
        char a[PATH_MAX], b[PATH_MAX];
        add(f, "lim", a, sizeof(a));
        add(f, "lim/child", b, sizeof(b));
        put(f, a, "memory.limit_in_bytes", "629145600\n");
        put(f, a, "memory.usage_in_bytes", "2097152\n");
        put(f, b, "cgroup.procs", "4242\n");           /* a process in the child */
        fixture_reprobe(f);
        struct mthp_snapshot *s = calloc(1, sizeof(*s));
        assert_int_equal(mthp_limits_scan(f->host, &f->caps, s, NULL, NULL), 0);
        assert_int_equal(s->n_limited, 1);
        assert_string_equal(s->limited[0].path, "/lim");
        assert_int_equal(s->limited[0].limit_kb, 600 * 1024);
        assert_int_equal(s->limited[0].usage_kb, 2048);
        assert_true(s->limited[0].populated);
        free(s);
}

static void test_memory_events(void **state) {
        (void) state;
        uint64_t high, max;
        assert_int_equal(mthp_parse_memory_events("low 0\nhigh 3\nmax 7\noom 1\noom_kill 1\n", &high, &max), 0);
        assert_int_equal(high, 3);
        assert_int_equal(max, 7);
        assert_int_equal(mthp_parse_memory_events("", &high, &max), -EBADMSG);
}

/* Set the file's atime far before its mtime: the next read moves it
 * (relatime and strictatime mounts). */
static void age_atime(const char *path) {
        struct timespec ts[2] = { { .tv_sec = 1 }, { .tv_nsec = UTIME_OMIT } };
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool was_read(const char *path) {
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        return st.st_atim.tv_sec != 1;
}

/* v1: reading a cgroup.procs builds the cgroup's whole PID list in the
 * kernel (3 ms for 5,000 processes); the scan reads it only where a limited
 * cgroup's populated state depends on it. */
static void test_hybrid_procs_read_only_under_a_limit(void **state) {
        struct fixture *f = *state;
        char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], pa[PATH_MAX * 2 + 16], pb[PATH_MAX * 2 + 16], pc[PATH_MAX * 2 + 16];
        add(f, "busy", a, sizeof(a));                  /* not limited: thousands of processes */
        add(f, "lim", b, sizeof(b));
        add(f, "lim/child", c, sizeof(c));
        put(f, a, "cgroup.procs", "100\n101\n");
        put(f, b, "memory.limit_in_bytes", "629145600\n");
        put(f, b, "memory.usage_in_bytes", "2097152\n");
        put(f, c, "cgroup.procs", "4242\n");
        snprintf(pa, sizeof(pa), "%s%s/cgroup.procs", f->dir, a);
        snprintf(pb, sizeof(pb), "%s%s/cgroup.procs", f->dir, b);
        snprintf(pc, sizeof(pc), "%s%s/cgroup.procs", f->dir, c);
        age_atime(pa);
        char buf[16];
        FILE *fp = fopen(pa, "r");
        assert_non_null(fp);
        assert_non_null(fgets(buf, sizeof(buf), fp));
        fclose(fp);
        if (!was_read(pa))
                skip(); /* a noatime mount: reads cannot be seen here */
        age_atime(pa);
        put(f, b, "cgroup.procs", "");
        age_atime(pb);
        age_atime(pc);
        fixture_reprobe(f);
        struct mthp_snapshot *s = calloc(1, sizeof(*s));
        assert_int_equal(mthp_limits_scan(f->host, &f->caps, s, NULL, NULL), 0);
        assert_int_equal(s->n_limited, 1);
        assert_true(s->limited[0].populated);
        assert_true(was_read(pb));
        assert_true(was_read(pc));
        assert_false(was_read(pa));
        free(s);
}

/* A limited cgroup: limit and usage in MiB (v2). */
static void limited(const struct fixture *f, const char *name, unsigned limit_mib, unsigned usage_mib) {
        char d[PATH_MAX], t[32];
        add(f, name, d, sizeof(d));
        snprintf(t, sizeof(t), "%llu\n", (unsigned long long) limit_mib << 20);
        put(f, d, "memory.max", t);
        snprintf(t, sizeof(t), "%llu\n", (unsigned long long) usage_mib << 20);
        put(f, d, "memory.current", t);
}

static const struct mthp_limited_cgroup *carried(const struct mthp_snapshot *s, unsigned limit_mib,
                                                 unsigned usage_mib) {
        for (unsigned i = 0; i < s->n_limited; i++)
                if (s->limited[i].limit_kb == limit_mib * 1024ULL && s->limited[i].usage_kb == usage_mib * 1024ULL)
                        return &s->limited[i];
        return NULL;
}

/* Ranked by what a size would cost it, its headroom in bytes: a 100 MiB
 * cgroup with 50 MiB left beside 40 roomy services (10 GiB, 95% used:
 * 512 MiB left) comes first; by ratio it was the 41st and dropped. */
static void test_rank_by_bytes(void **state) {
        struct fixture *f = *state;
        for (unsigned i = 0; i < 40; i++) {
                char n[32];
                snprintf(n, sizeof(n), "roomy-%02u", i);
                limited(f, n, 10240, 9728);
        }
        limited(f, "tight", 100, 50);
        fixture_reprobe(f);
        struct mthp_snapshot *s = calloc(1, sizeof(*s));
        struct mthp_limits_stats st;
        assert_int_equal(mthp_limits_scan_ex(f->host, &f->caps, s, NULL, NULL, &st), 0);
        assert_int_equal(s->n_limited, MTHP_SNAP_LIMITED);
        assert_string_equal(s->limited[0].path, "/tight");
        assert_int_equal(st.limited, 41);
        assert_int_equal(st.carried, MTHP_SNAP_LIMITED);
        free(s);
}

/* Deep, long and far: behind 600 cgroups nearer the root, and at a path
 * of 143 and of 250 characters (kubelet's systemd driver), the tight
 * cgroups are seen and carried; the long ones under a short alias that
 * mthp_limits_read resolves. */
static void test_sees_every_limited(void **state) {
        struct fixture *f = *state;
        char d[PATH_MAX];
        for (unsigned i = 0; i < 600; i++) {
                char n[32];
                snprintf(n, sizeof(n), "near-%03u", i);
                add(f, n, d, sizeof(d));
        }
        const char *pod = "kubepods.slice/kubepods-burstable.slice/"
                          "kubepods-burstable-pod0d4b6c6e_4c1b_4a4e_9a57_3f5f6b7d8e9a.slice";
        char c143[PATH_MAX], c250[PATH_MAX];
        snprintf(c143, sizeof(c143), "%s/cri-containerd-%.16s.scope", pod,
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        snprintf(c250, sizeof(c250), "%s/cri-containerd-%s.scope/%s", pod,
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                 "nested-0123456789abcdef0123456789abcdef0123456789abc.scope");
        assert_int_equal(strlen(c143) + 1, 143);
        assert_int_equal(strlen(c250) + 1, 250);
        limited(f, "near-599/deep", 90, 80);
        limited(f, c143, 100, 50);
        limited(f, c250, 120, 100);
        fixture_reprobe(f);
        struct mthp_snapshot *s = calloc(1, sizeof(*s));
        struct mthp_limits_stats st;
        assert_int_equal(mthp_limits_scan_ex(f->host, &f->caps, s, NULL, NULL, &st), 0);
        assert_int_equal(st.limited, 3);
        assert_int_equal(st.unseen, 0);
        assert_non_null(carried(s, 90, 80));
        assert_string_equal(carried(s, 90, 80)->path, "/near-599/deep");
        const struct mthp_limited_cgroup *a = carried(s, 100, 50), *b = carried(s, 120, 100);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(st.aliased, 2);
        assert_true(strlen(a->path) < MTHP_CGROUP_PATH_MAX);
        assert_string_not_equal(a->path, b->path);
        uint64_t u, l;
        assert_int_equal(mthp_limits_read(f->host, &f->caps, b->path, &u, &l), 0);
        assert_int_equal(l, 120 * 1024);
        assert_int_equal(u, 100 * 1024);
        char full[PATH_MAX];
        snprintf(full, sizeof(full), "/%s", c250);
        assert_string_equal(mthp_limits_resolve(b->path), full);
        /* the same alias at the next scan: the engine keeps it by path */
        char keep[MTHP_CGROUP_PATH_MAX];
        snprintf(keep, sizeof(keep), "%s", b->path);
        assert_int_equal(mthp_limits_scan_ex(f->host, &f->caps, s, NULL, NULL, &st), 0);
        assert_string_equal(carried(s, 120, 100)->path, keep);
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_v2_limits, setup_v2, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_hybrid_limits_populated_by_children, setup_hybrid,
                                                fixture_teardown),
                cmocka_unit_test_setup_teardown(test_hybrid_procs_read_only_under_a_limit, setup_hybrid,
                                                fixture_teardown),
                cmocka_unit_test(test_memory_events),
                cmocka_unit_test_setup_teardown(test_rank_by_bytes, setup_v2, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_sees_every_limited, setup_v2, fixture_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
