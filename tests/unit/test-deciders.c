/* SPDX-License-Identifier: MIT */
/* The administrator's THP off as the deciders module finds it
 * (mthp_deciders_thp_off): the command line's transparent_hugepage=,
 * transparent_hugepage_shmem=, thp_anon= and thp_shmem=, and global
 * enabled at mthpd's start; on a fake 6.18 host. */
#include "unit.h"

#include "mthp/config.h"
#include "mthp/deciders.h"

static struct mthp_deciders dec;
static struct mthp_engine_config e;

static void off_of(const struct fixture *f, const char *cmdline, const char *enabled) {
        memset(&dec, 0, sizeof(dec));
        memset(&e, 0, sizeof(e));
        mthp_deciders_parse_cmdline(cmdline, &f->caps, &dec);
        mthp_deciders_thp_off(&dec, &f->caps, enabled, &e);
}

static void test_cmdline_never(void **state) {
        struct fixture *f = *state;
        off_of(f, "ro transparent_hugepage=never quiet", "madvise");
        assert_string_equal(e.thp_off[MTHP_ANON], "the kernel command line: transparent_hugepage=never");
        assert_string_equal(e.thp_off[MTHP_SHMEM], "");
        /* the kernel takes the last one */
        off_of(f, "transparent_hugepage=never transparent_hugepage=madvise", "never");
        assert_string_equal(e.thp_off[MTHP_ANON], "");
        off_of(f, "transparent_hugepage=always transparent_hugepage=never", "madvise");
        assert_string_equal(e.thp_off[MTHP_ANON], "the kernel command line: transparent_hugepage=never");
        /* init's arguments are not the kernel's */
        off_of(f, "ro -- transparent_hugepage=never", "madvise");
        assert_string_equal(e.thp_off[MTHP_ANON], "");
        off_of(f, "transparent_hugepage_shmem=deny", "madvise");
        assert_string_equal(e.thp_off[MTHP_SHMEM], "the kernel command line: transparent_hugepage_shmem=deny");
        assert_string_equal(e.thp_off[MTHP_ANON], "");
}

static void test_global_never_at_start(void **state) {
        struct fixture *f = *state;
        off_of(f, "ro quiet", "never");
        assert_string_equal(e.thp_off[MTHP_ANON], "global/enabled was never when mthpd started");
        off_of(f, "ro quiet", NULL);            /* not known */
        assert_string_equal(e.thp_off[MTHP_ANON], "");
        /* the command line's madvise, set to never at run time: the command line's word stands */
        off_of(f, "transparent_hugepage=madvise", "never");
        assert_string_equal(e.thp_off[MTHP_ANON], "");
        /* shmem_enabled never is the kernel's default: nobody's off */
        assert_string_equal(e.thp_off[MTHP_SHMEM], "");
}

static void test_sizes_never(void **state) {
        struct fixture *f = *state;
        off_of(f, "thp_anon=16K-64K:never;128K:always;32K:inherit thp_shmem=2M:never", "madvise");
        assert_int_equal(e.thp_off_kb[MTHP_ANON], 1u << 4 | 1u << 6);   /* 16K and 64K: 32K taken back */
        assert_int_equal(e.thp_off_kb[MTHP_SHMEM], 1u << 11);
        assert_string_equal(e.thp_off[MTHP_ANON], "");
}

/* the fake 6.1 tree (Debian 12's stock kernel) has no per-size knobs */
static int setup_6_1(void **state) {
        struct fakehost_opts o = { .kernel = FAKEHOST_K_6_1 };
        return fixture_setup_opts(state, &o);
}

static void test_no_mthp_kernel(void **state) {
        struct fixture *f = *state;
        char why[512];
        assert_int_equal(f->caps.n_sizes, 0);
        assert_true(mthp_probe_no_mthp(f->host, &f->caps, why, sizeof(why)));
        assert_contains(why, "kernel 6.1.0-28-amd64 has no per-size mTHP knobs");
        assert_contains(why, "Linux 6.8 or later");
        assert_contains(why, "6.11");
        assert_contains(why, "Debian 13 (6.12)");
}

static void test_mthp_kernel(void **state) {
        struct fixture *f = *state;
        char why[512] = "";
        assert_false(mthp_probe_no_mthp(f->host, &f->caps, why, sizeof(why)));
        assert_string_equal(why, "");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_cmdline_never),
                T(test_global_never_at_start),
                T(test_sizes_never),
                cmocka_unit_test_setup_teardown(test_no_mthp_kernel, setup_6_1, fixture_teardown),
                T(test_mthp_kernel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
