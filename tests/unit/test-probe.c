/* SPDX-License-Identifier: MIT */
/* Capability probe against fake trees of each kind of host. */
#include <errno.h>
#include <stdlib.h>

#include "mthp/sample.h"
#include "unit.h"

static void test_sizes_ascending(void **state) {
        struct fixture *f = *state;
        static const unsigned kb[] = { 8, 16, 32, 64, 128, 256, 512, 1024, 2048 };
        assert_int_equal(f->caps.pmd_kb, 2048);
        assert_int_equal(f->caps.n_sizes, 9);
        for (unsigned i = 0; i < 9; i++) {
                assert_int_equal(f->caps.sizes[i].kb, kb[i]);
                assert_int_equal(f->caps.sizes[i].order, (int) i + 1);
        }
        assert_int_equal(mthp_caps_find_size(&f->caps, 64), 3);
        assert_int_equal(mthp_caps_find_size(&f->caps, 4), -ENOENT);
}

static void test_8k_has_only_shmem(void **state) {
        struct fixture *f = *state;
        const struct mthp_size *sz = &f->caps.sizes[0];
        assert_int_equal(sz->kb, 8);
        assert_int_equal(sz->knob[MTHP_ANON], -1);
        assert_true(sz->knob[MTHP_SHMEM] >= 0);
        const struct mthp_knob *k = &f->caps.knobs[sz->knob[MTHP_SHMEM]];
        assert_string_equal(k->id, "8K/shmem");
        assert_string_equal(k->path, THP "/hugepages-8kB/shmem_enabled");
        assert_int_equal(k->type, MTHP_KNOB_SIZE_SHMEM);
        assert_int_equal(k->size_kb, 8);
        assert_int_equal(mthp_caps_find_knob(&f->caps, "8K/anon"), -ENOENT);
        /* every other size has both */
        for (unsigned i = 1; i < f->caps.n_sizes; i++) {
                assert_true(f->caps.sizes[i].knob[MTHP_ANON] >= 0);
                assert_true(f->caps.sizes[i].knob[MTHP_SHMEM] >= 0);
        }
}

static void test_knobs_ids_order(void **state) {
        struct fixture *f = *state;
        /* 8 sizes x 2 + 8K shmem + 3 globals + the shrinker's two numbers;
         * per-size first (restore order) */
        assert_int_equal(f->caps.n_knobs, 22);
        assert_string_equal(f->caps.knobs[20].id, "khugepaged/max_ptes_none");
        assert_string_equal(f->caps.knobs[20].path, THP "/khugepaged/max_ptes_none");
        assert_int_equal(f->caps.knobs[20].type, MTHP_KNOB_NUMBER);
        assert_string_equal(f->caps.knobs[21].id, "global/shrink_underused");
        assert_int_equal(f->caps.knobs[21].type, MTHP_KNOB_NUMBER);
        assert_true(mthp_knob_allows(&f->caps.knobs[20], "409"));
        assert_false(mthp_knob_allows(&f->caps.knobs[20], "always"));
        assert_false(mthp_knob_allows(&f->caps.knobs[20], ""));
        char v[MTHP_VALUE_MAX];
        assert_int_equal(mthp_knob_read(f->host, &f->caps.knobs[20], v), 0);
        assert_string_equal(v, "511");
        assert_string_equal(f->caps.knobs[0].id, "8K/shmem");
        assert_string_equal(f->caps.knobs[1].id, "16K/anon");
        assert_string_equal(f->caps.knobs[2].id, "16K/shmem");
        assert_string_equal(f->caps.knobs[15].id, "2M/anon");
        assert_string_equal(f->caps.knobs[16].id, "2M/shmem");
        assert_string_equal(f->caps.knobs[17].id, "global/enabled");
        assert_string_equal(f->caps.knobs[18].id, "global/defrag");
        assert_string_equal(f->caps.knobs[19].id, "global/shmem_enabled");
        assert_int_equal(f->caps.knobs[17].type, MTHP_KNOB_ENABLED);
        assert_int_equal(f->caps.knobs[18].type, MTHP_KNOB_DEFRAG);
        assert_int_equal(f->caps.knobs[19].type, MTHP_KNOB_SHMEM_ENABLED);
        assert_int_equal(f->caps.knobs[19].size_kb, 0);
        int i = fixture_knob(f, "1M/anon");
        assert_string_equal(f->caps.knobs[i].path, THP "/hugepages-1024kB/enabled");
        assert_int_equal(f->caps.knobs[i].type, MTHP_KNOB_SIZE_ANON);
        assert_int_equal(f->caps.knobs[i].size_kb, 1024);
        assert_int_equal(f->caps.sizes[7].knob[MTHP_ANON], i);
}

static void assert_allowed(const struct mthp_knob *k, const char *const *want, unsigned n) {
        assert_int_equal(k->n_allowed, n);
        for (unsigned i = 0; i < n; i++)
                assert_string_equal(k->allowed[i], want[i]);
}

static void test_accepted_values_from_files(void **state) {
        struct fixture *f = *state;
        static const char *const size_anon[] = { "always", "inherit", "madvise", "never" };
        static const char *const size_shmem[] = { "always", "inherit", "within_size", "advise", "never" };
        static const char *const enabled[] = { "always", "madvise", "never" };
        static const char *const defrag[] = { "always", "defer", "defer+madvise", "madvise", "never" };
        static const char *const shmem[] = { "always", "within_size", "advise", "never", "deny", "force" };
        assert_allowed(&f->caps.knobs[fixture_knob(f, "64K/anon")], size_anon, 4);
        assert_allowed(&f->caps.knobs[fixture_knob(f, "8K/shmem")], size_shmem, 5);
        assert_allowed(&f->caps.knobs[fixture_knob(f, "global/enabled")], enabled, 3);
        assert_allowed(&f->caps.knobs[fixture_knob(f, "global/defrag")], defrag, 5);
        assert_allowed(&f->caps.knobs[fixture_knob(f, "global/shmem_enabled")], shmem, 6);

        /* another kernel offers other values: the probe takes the file's word */
        assert_ok(fakehost_write_file(f->dir, THP "/hugepages-64kB/enabled", "always [never]\n"));
        assert_ok(fakehost_write_file(f->dir, THP "/defrag", "[always] madvise never experimental\n"));
        fixture_reprobe(f);
        static const char *const two[] = { "always", "never" };
        static const char *const four[] = { "always", "madvise", "never", "experimental" };
        assert_allowed(&f->caps.knobs[fixture_knob(f, "64K/anon")], two, 2);
        assert_allowed(&f->caps.knobs[fixture_knob(f, "global/defrag")], four, 4);
        assert_true(mthp_knob_allows(&f->caps.knobs[fixture_knob(f, "global/defrag")], "experimental"));
        assert_false(mthp_knob_allows(&f->caps.knobs[fixture_knob(f, "64K/anon")], "madvise"));
}

static void test_stats(void **state) {
        struct fixture *f = *state;
        const struct mthp_size *s8 = &f->caps.sizes[0], *s64 = &f->caps.sizes[3], *s2m = &f->caps.sizes[8];
        assert_int_equal(s64->n_stats, 18);
        assert_int_equal(s2m->n_stats, 18);
        assert_int_equal(s8->n_stats, 11);
        /* sorted by name */
        assert_string_equal(s64->stats[0], "anon_fault_alloc");
        assert_string_equal(s64->stats[17], "zswpout");
        for (unsigned i = 1; i < s64->n_stats; i++)
                assert_true(strcmp(s64->stats[i - 1], s64->stats[i]) < 0);
        assert_true(mthp_stat_index(s64, "anon_fault_alloc") >= 0);
        assert_true(mthp_stat_index(s64, "split_deferred") >= 0);
        assert_int_equal(mthp_stat_index(s8, "anon_fault_alloc"), -ENOENT);
        assert_int_equal(mthp_stat_index(s8, "nr_anon"), -ENOENT);
        assert_int_equal(mthp_stat_index(s8, "split_deferred"), -ENOENT);
        assert_string_equal(s8->stats[mthp_stat_index(s8, "shmem_alloc")], "shmem_alloc");
}

/* More stats than a size keeps (MTHP_STATS_MAX): the fault counters are
 * kept, the rest by name, and the ones not read are named in one log line
 * (they were cut silently, in directory order). */
static void test_stats_beyond_limit(void **state) {
        struct fixture *f = *state;
        char path[256];
        for (int i = 0; i < 40; i++) {
                snprintf(path, sizeof(path), THP "/hugepages-64kB/stats/aa_extra_%02d", i);
                assert_ok(fakehost_write_file(f->dir, path, "0\n"));
        }
        assert_ok(fakehost_write_file(f->dir, THP "/hugepages-64kB/stats/a_name_longer_than_thirty_one_bytes", "0\n"));
        struct mthp_caps caps;
        stderr_capture_begin();
        assert_ok(mthp_probe(f->host, &caps));
        const char *log = stderr_capture_end();
        const struct mthp_size *s64 = &caps.sizes[mthp_caps_find_size(&caps, 64)];
        assert_int_equal(s64->n_stats, MTHP_STATS_MAX);
        static const char *const hot[] = { "anon_fault_alloc", "anon_fault_fallback", "anon_fault_fallback_charge",
                                           "shmem_alloc", "shmem_fallback", "shmem_fallback_charge" };
        for (size_t i = 0; i < sizeof(hot) / sizeof(hot[0]); i++)
                if (mthp_stat_index(s64, hot[i]) < 0)
                        fail_msg("%s not kept", hot[i]);
        for (unsigned i = 1; i < s64->n_stats; i++)
                assert_true(strcmp(s64->stats[i - 1], s64->stats[i]) < 0);
        assert_contains(log, "1 size(s) have stats mthpd does not read (at most 32 per size");
        assert_contains(log, "a_name_longer_than_thirty_one_bytes");
        assert_contains(log, "zswpout");
        /* the other sizes are whole */
        assert_int_equal(caps.sizes[mthp_caps_find_size(&caps, 2048)].n_stats, 18);
}

static void test_psi_and_delayacct(void **state) {
        struct fixture *f = *state;
        assert_true(f->caps.psi);
        assert_false(f->caps.task_delayacct);
        assert_ok(fakehost_write_file(f->dir, "/proc/sys/kernel/task_delayacct", "1\n"));
        /* PSI compiled in but the file reads empty: treated as absent */
        assert_ok(fakehost_write_file(f->dir, "/proc/pressure/memory", ""));
        fixture_reprobe(f);
        assert_true(f->caps.task_delayacct);
        assert_false(f->caps.psi);
}

static void test_psi_absent(void **state) {
        struct fixture *f = *state;
        assert_false(f->caps.psi);
        assert_false(mthp_host_exists(f->host, "/proc/pressure"));
        assert_true(f->caps.task_delayacct);
        char buf[1024];
        assert_ok(mthp_caps_describe(&f->caps, buf, sizeof(buf)));
        assert_contains(buf, "PSI memory: absent; task delay accounting: on\n");
}

static void test_cgroup_v2(void **state) {
        struct fixture *f = *state;
        assert_int_equal(f->caps.cg_layout, MTHP_CG_V2);
        assert_string_equal(f->caps.cg_unified, "/sys/fs/cgroup");
        assert_string_equal(f->caps.cg_memory, "/sys/fs/cgroup");
}

static void test_cgroup_hybrid(void **state) {
        struct fixture *f = *state;
        assert_int_equal(f->caps.cg_layout, MTHP_CG_HYBRID);
        assert_string_equal(f->caps.cg_memory, "/sys/fs/cgroup/memory");
        assert_string_equal(f->caps.cg_unified, "/sys/fs/cgroup/unified");
        assert_string_equal(mthp_cg_layout_name(f->caps.cg_layout), "hybrid");
}

static void test_cgroup_v1(void **state) {
        struct fixture *f = *state;
        assert_int_equal(f->caps.cg_layout, MTHP_CG_V1);
        assert_string_equal(f->caps.cg_memory, "/sys/fs/cgroup/memory");
        assert_string_equal(f->caps.cg_unified, "");
}

static void test_cgroup_none(void **state) {
        struct fixture *f = *state;
        assert_int_equal(f->caps.cg_layout, MTHP_CG_NONE);
        assert_string_equal(f->caps.cg_memory, "");
        assert_string_equal(f->caps.cg_unified, "");
}

static void test_cgroup_v2_without_memory(void **state) {
        struct fixture *f = *state;
        /* cgroup_disable=memory: cgroup2 is there, the memory controller not */
        assert_ok(fakehost_write_file(f->dir, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io pids\n"));
        fixture_reprobe(f);
        assert_int_equal(f->caps.cg_layout, MTHP_CG_NONE);
        assert_string_equal(f->caps.cg_unified, "/sys/fs/cgroup");
        assert_string_equal(f->caps.cg_memory, "");
}

static void test_describe(void **state) {
        struct fixture *f = *state;
        char buf[2048];
        assert_ok(mthp_caps_describe(&f->caps, buf, sizeof(buf)));
        assert_contains(buf, "PMD size 2M; 9 mTHP sizes: 8K(shmem) 16K(anon+shmem) 32K(anon+shmem)");
        assert_contains(buf, " 2M(anon+shmem)\n");
        assert_contains(buf, "global/defrag accepts: always defer defer+madvise madvise never\n");
        assert_contains(buf, "per-size stats: 11 counters (e.g. shmem_alloc)\n");
        assert_contains(buf, "PSI memory: yes; task delay accounting: off\n");
        assert_contains(buf, "cgroups: v2 (memory at /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup)");
        assert_not_contains(buf, "64K/anon");
        char small[16];
        assert_int_equal(mthp_caps_describe(&f->caps, small, sizeof(small)), -ENOBUFS);
        assert_int_equal(strlen(small), 15);
}

static void test_no_thp(void **state) {
        struct fixture *f = *state;
        struct mthp_caps caps;
        assert_ok(fakehost_remove_file(f->dir, THP "/enabled"));
        assert_int_equal(mthp_probe(f->host, &caps), -ENOENT);
}

static void test_malformed_knob(void **state) {
        struct fixture *f = *state;
        struct mthp_caps caps;
        /* a selection file without a selection is not something to manage:
         * the error names the file and what was expected */
        assert_ok(fakehost_write_file(f->dir, THP "/hugepages-32kB/enabled", "always inherit madvise never\n"));
        stderr_capture_begin();
        assert_int_equal(mthp_probe(f->host, &caps), -EBADMSG);
        const char *log = stderr_capture_end();
        assert_contains(log, THP "/hugepages-32kB/enabled: expected a selection like 'always [madvise] never'");
        assert_contains(log, "got 'always inherit madvise never'");
        /* too many values, or one too long: the same, not a cut */
        assert_ok(fakehost_write_file(f->dir, THP "/hugepages-32kB/enabled", "a b c d e f g h [i]\n"));
        stderr_capture_begin();
        assert_int_equal(mthp_probe(f->host, &caps), -EBADMSG);
        assert_contains(stderr_capture_end(), THP "/hugepages-32kB/enabled: expected a selection");
        /* a number file that is not a number is left alone, with a word */
        assert_ok(fakehost_write_file(f->dir, THP "/hugepages-32kB/enabled", "always [never]\n"));
        assert_ok(fakehost_write_file(f->dir, THP "/shrink_underused", "lots\n"));
        stderr_capture_begin();
        assert_ok(mthp_probe(f->host, &caps));
        assert_contains(stderr_capture_end(), THP "/shrink_underused: expected a plain unsigned number");
        assert_int_equal(mthp_caps_find_knob(&caps, "global/shrink_underused"), -ENOENT);
}

/* Only the kernel's own spelling of a size directory is a size: read
 * loosely, each of these was 64K and 64K was managed three times over. */
static void test_sysfs_size_names(void **state) {
        struct fixture *f = *state;
        static const char *const odd[] = { "hugepages-064kB", "hugepages-4294967360kB", "hugepages-64",
                                           "hugepages--4294967232kB", "hugepages-64kB ", "hugepages-+64kB",
                                           "hugepages-24kB", "hugepages-4kB" };
        char path[256];
        for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
                snprintf(path, sizeof(path), THP "/%s/enabled", odd[i]);
                assert_ok(fakehost_write_file(f->dir, path, "always inherit madvise [never]\n"));
                snprintf(path, sizeof(path), THP "/%s/shmem_enabled", odd[i]);
                assert_ok(fakehost_write_file(f->dir, path, "always inherit within_size advise [never]\n"));
        }
        struct mthp_caps caps;
        stderr_capture_begin();
        assert_ok(mthp_probe(f->host, &caps));
        const char *log = stderr_capture_end();
        assert_int_equal(caps.n_sizes, 9);
        unsigned n64 = 0;
        for (unsigned i = 0; i < caps.n_sizes; i++)
                n64 += caps.sizes[i].kb == 64;
        assert_int_equal(n64, 1);
        for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
                snprintf(path, sizeof(path), THP "/%s: ignored: ", odd[i]);
                assert_contains(log, path);
                /* one line each */
                const char *a = strstr(log, path);
                assert_null(strstr(a + 1, path));
        }

        unsigned kb = 0;
        assert_ok(mthp_sysfs_size_parse("hugepages-8kB", &kb));
        assert_int_equal(kb, 8);
        assert_ok(mthp_sysfs_size_parse("hugepages-2147483648kB", &kb));
        assert_int_equal(kb, 2147483648u);
        static const char *const bad[] = { "hugepages-4kB", "hugepages-0kB", "hugepages-kB", "hugepages-",
                                           "hugepages-12kB", "hugepages-64KB", "hugepages-64kb", "hugepages-64kBx",
                                           "hugepages- 64kB", "hugepages-4294967296kB",
                                           "hugepages-18446744073709551680kB", "Hugepages-64kB", "hugepages-0x40kB" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (mthp_sysfs_size_parse(bad[i], &kb) != -EINVAL)
                        fail_msg("'%s' was taken as a size", bad[i]);
}

static void test_knob_read(void **state) {
        struct fixture *f = *state;
        char v[MTHP_VALUE_MAX];
        const struct mthp_knob *k = &f->caps.knobs[fixture_knob(f, "2M/anon")];
        assert_ok(mthp_knob_read(f->host, k, v));
        assert_string_equal(v, "inherit");
        assert_ok(fakehost_knob_write(f->dir, "2M/anon", "madvise"));
        assert_ok(mthp_knob_read(f->host, k, v));
        assert_string_equal(v, "madvise");
        assert_ok(mthp_knob_read(f->host, &f->caps.knobs[fixture_knob(f, "global/shmem_enabled")], v));
        assert_string_equal(v, "never");
        assert_ok(mthp_knob_read(f->host, &f->caps.knobs[fixture_knob(f, "global/defrag")], v));
        assert_string_equal(v, "madvise");
}

#define OPTS_SETUP(name, ...)                                            \
        static int name(void **state) {                                  \
                struct fakehost_opts o = { __VA_ARGS__ };                \
                return fixture_setup_opts(state, &o);                    \
        }
OPTS_SETUP(setup_no_psi, .no_psi = true, .task_delayacct = true)
OPTS_SETUP(setup_hybrid, .cg_layout = FAKEHOST_CG_HYBRID)
OPTS_SETUP(setup_v1, .cg_layout = FAKEHOST_CG_V1)
OPTS_SETUP(setup_none, .cg_layout = FAKEHOST_CG_NONE)

#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)
#define TS(fn, setup) cmocka_unit_test_setup_teardown(fn, setup, fixture_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_sizes_ascending),
                T(test_8k_has_only_shmem),
                T(test_knobs_ids_order),
                T(test_accepted_values_from_files),
                T(test_stats),
                T(test_stats_beyond_limit),
                T(test_psi_and_delayacct),
                TS(test_psi_absent, setup_no_psi),
                T(test_cgroup_v2),
                TS(test_cgroup_hybrid, setup_hybrid),
                TS(test_cgroup_v1, setup_v1),
                TS(test_cgroup_none, setup_none),
                T(test_cgroup_v2_without_memory),
                T(test_describe),
                T(test_no_thp),
                T(test_malformed_knob),
                T(test_sysfs_size_names),
                T(test_knob_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
