/* SPDX-License-Identifier: MIT */
/* Fault injection: the memory cgroup of a sampled process goes away
 * between ticks and half way through its teardown (rmdir races with the
 * reads of memory.current and the limits up the tree), and the process
 * exits. procinfo must report only what it could read this tick: no crash,
 * no stale usage or limit from the last tick, no limit of a cgroup that is
 * gone. Runs for v2 and v1 (hybrid) layouts. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fakehost.h"
#include "mthp/host.h"
#include "mthp/probe.h"
#include "mthp/procinfo.h"

struct fx {
        char dir[PATH_MAX];
        struct fakehost_opts opts;
        struct mthp_host *host;
        struct mthp_caps caps;
        struct mthp_procinfo *pi;
        char leaf[PATH_MAX], parent[PATH_MAX];  /* host paths of the memory dirs */
        bool v2;
};

static int setup(void **state, enum fakehost_cg_layout layout) {
        struct fx *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        f->opts.cg_layout = layout;
        f->v2 = layout == FAKEHOST_CG_V2;
        assert_int_equal(fakehost_create_temp(&f->opts, f->dir, sizeof(f->dir)), 0);
        assert_int_equal(mthp_host_open(f->dir, &f->host), 0);
        assert_int_equal(mthp_probe(f->host, &f->caps), 0);
        assert_int_equal(mthp_procinfo_new(f->host, &f->caps, &f->pi), 0);
        assert_int_equal(fakehost_add_cgroup(f->dir, "mthpd-test-gone/child", f->leaf, sizeof(f->leaf)), 0);
        snprintf(f->parent, sizeof(f->parent), "%.*s", (int) (strrchr(f->leaf, '/') - f->leaf), f->leaf);
        *state = f;
        return 0;
}
static int setup_v2(void **state) { return setup(state, FAKEHOST_CG_V2); }
static int setup_v1(void **state) { return setup(state, FAKEHOST_CG_HYBRID); }

static int teardown(void **state) {
        struct fx *f = *state;
        mthp_procinfo_free(f->pi);
        mthp_host_free(f->host);
        fakehost_remove(f->dir);
        free(f);
        return 0;
}

static void put(struct fx *f, const char *dir, const char *file, const char *content) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        assert_int_equal(fakehost_write_file(f->dir, path, content), 0);
}

static void gone(struct fx *f, const char *dir, const char *file) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        int r = fakehost_remove_file(f->dir, path);
        assert_true(r == 0 || r == -ENOENT);
}

static void rmdir_tree(struct fx *f, const char *dir) {
        char cmd[PATH_MAX * 3];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s%s'", f->dir, dir);
        assert_int_equal(system(cmd), 0);
}

/* one process (pid 4242) in the leaf cgroup; usage 40M, leaf limit 100M,
 * parent limit 60M */
static void populate(struct fx *f) {
        char line[256];
        snprintf(line, sizeof(line), f->v2 ? "0::/mthpd-test-gone/child\n"
                                           : "4:memory:/mthpd-test-gone/child\n0::/\n");
        assert_int_equal(fakehost_write_file(f->dir, "/proc/4242/cgroup", line), 0);
        put(f, f->leaf, f->v2 ? "memory.current" : "memory.usage_in_bytes", "41943040\n");
        put(f, f->leaf, f->v2 ? "memory.max" : "memory.limit_in_bytes", "104857600\n");
        put(f, f->parent, f->v2 ? "memory.max" : "memory.limit_in_bytes", "62914560\n");
}

static void enrich(struct fx *f, struct mthp_proc_density *out) {
        struct mthp_density_view v;
        memset(&v, 0, sizeof(v));
        v.valid = true;
        v.n_procs = 1;
        v.proc[0].pid = 4242;
        /* stale values from an earlier tick must not survive */
        v.proc[0].cg_usage_kb = v.proc[0].cg_limit_kb = 12345;
        snprintf(v.proc[0].cgroup, sizeof(v.proc[0].cgroup), "/stale");
        mthp_procinfo_enrich(f->pi, &v);
        *out = v.proc[0];
}

static void test_intact(void **state) {
        struct fx *f = *state;
        struct mthp_proc_density p;
        populate(f);
        enrich(f, &p);
        assert_string_equal(p.cgroup, "/mthpd-test-gone/child");
        assert_int_equal(p.cg_usage_kb, 40960);
        assert_int_equal(p.cg_limit_kb, 61440);   /* the parent's, which binds first */
}

static void test_cgroup_removed_between_ticks(void **state) {
        struct fx *f = *state;
        struct mthp_proc_density p;
        populate(f);
        enrich(f, &p);
        rmdir_tree(f, f->parent);
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 0);
        assert_int_equal(p.cg_limit_kb, 0);
        /* and created again under the same name, empty: read afresh */
        char memdir[PATH_MAX];
        assert_int_equal(fakehost_add_cgroup(f->dir, "mthpd-test-gone/child", memdir, sizeof(memdir)), 0);
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 0);
        assert_int_equal(p.cg_limit_kb, 0);
}

/* rmdir mid-tick: each file of the teardown gone in turn */
static void test_cgroup_half_removed(void **state) {
        struct fx *f = *state;
        struct mthp_proc_density p;
        const char *limit = f->v2 ? "memory.max" : "memory.limit_in_bytes";
        const char *usage = f->v2 ? "memory.current" : "memory.usage_in_bytes";

        populate(f);
        gone(f, f->leaf, limit);        /* leaf limit gone, usage still there */
        if (f->v2)
                gone(f, f->leaf, "memory.high");
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 40960);
        assert_int_equal(p.cg_limit_kb, 61440);

        gone(f, f->parent, limit);      /* the parent's limit too */
        if (f->v2)
                gone(f, f->parent, "memory.high");
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 40960);
        assert_true(p.cg_limit_kb == 0 || p.cg_limit_kb > 61440);  /* only the root's, if any */

        gone(f, f->leaf, usage);        /* usage gone: nothing about the cgroup */
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 0);
        assert_int_equal(p.cg_limit_kb, 0);

        /* a file emptied mid-read (the kernel returns ENODEV, a racing
         * reader may see an empty or cut value) */
        populate(f);
        put(f, f->leaf, usage, "");
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 0);
        put(f, f->leaf, usage, "4194");
        put(f, f->parent, limit, "garbage\n");
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 4);
        assert_int_equal(p.cg_limit_kb, 102400);  /* the leaf's; the garbage is no limit */
}

static void test_process_exited(void **state) {
        struct fx *f = *state;
        struct mthp_proc_density p;
        populate(f);
        enrich(f, &p);
        assert_int_equal(fakehost_remove_file(f->dir, "/proc/4242/cgroup"), 0);
        enrich(f, &p);
        assert_string_equal(p.cgroup, "");
        assert_int_equal(p.cg_usage_kb, 0);
        assert_int_equal(p.cg_limit_kb, 0);
        /* a /proc/PID/cgroup naming a cgroup that never existed */
        assert_int_equal(fakehost_write_file(f->dir, "/proc/4242/cgroup",
                                             f->v2 ? "0::/nowhere/at/all\n" : "4:memory:/nowhere\n"), 0);
        enrich(f, &p);
        assert_int_equal(p.cg_usage_kb, 0);
        assert_int_equal(p.cg_limit_kb, 0);
}

/* many ticks with the cgroup coming and going: no fd or memory growth
 * shows up as a crash under ASan, and every tick's answer matches the tree */
static void test_churn(void **state) {
        struct fx *f = *state;
        struct mthp_proc_density p;
        char memdir[PATH_MAX];
        for (int i = 0; i < 200; i++) {
                if (i % 2 == 0) {
                        assert_int_equal(fakehost_add_cgroup(f->dir, "mthpd-test-gone/child", memdir,
                                                             sizeof(memdir)), 0);
                        populate(f);
                        enrich(f, &p);
                        assert_int_equal(p.cg_usage_kb, 40960);
                } else {
                        rmdir_tree(f, f->parent);
                        enrich(f, &p);
                        assert_int_equal(p.cg_usage_kb, 0);
                }
        }
}

#define BOTH(t) cmocka_unit_test_setup_teardown(t, setup_v2, teardown), \
                cmocka_unit_test_setup_teardown(t, setup_v1, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                BOTH(test_intact),
                BOTH(test_cgroup_removed_between_ticks),
                BOTH(test_cgroup_half_removed),
                BOTH(test_process_exited),
                BOTH(test_churn),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
