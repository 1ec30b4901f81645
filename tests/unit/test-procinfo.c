/* SPDX-License-Identifier: MIT */
/* /proc/PID/cgroup parsing: which memory cgroup a process is in. Pure. */
#include <errno.h>

#include "mthp/procinfo.h"
#include "unit.h"

static void test_cgroup_v2(void **state) {
        (void) state;
        char cg[128];
        assert_int_equal(mthp_procinfo_parse_cgroup("0::/system.slice/db.service\n", MTHP_CG_V2, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/system.slice/db.service");
        assert_int_equal(mthp_procinfo_parse_cgroup("0::/\n", MTHP_CG_V2, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/");
        /* a v1 line is not the unified one */
        assert_int_equal(mthp_procinfo_parse_cgroup("4:memory:/a\n", MTHP_CG_V2, cg, sizeof(cg)), -ENOENT);
}

static void test_cgroup_v1_and_hybrid(void **state) {
        (void) state;
        char cg[128];
        const char *text = "12:pids:/p\n"
                           "5:cpu,cpuacct:/c\n"
                           "4:memory:/mthpd-test-pressure-42\n"
                           "1:name=systemd:/s\n"
                           "0::/u\n";
        assert_int_equal(mthp_procinfo_parse_cgroup(text, MTHP_CG_HYBRID, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/mthpd-test-pressure-42");
        assert_int_equal(mthp_procinfo_parse_cgroup(text, MTHP_CG_V1, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/mthpd-test-pressure-42");
        /* memory shares a hierarchy with another controller */
        assert_int_equal(mthp_procinfo_parse_cgroup("3:blkio,memory:/m\n", MTHP_CG_V1, cg, sizeof(cg)), 0);
        assert_string_equal(cg, "/m");
        /* "memory" must be a whole controller name */
        assert_int_equal(mthp_procinfo_parse_cgroup("3:memory_x:/m\n", MTHP_CG_V1, cg, sizeof(cg)), -ENOENT);
}

static void test_cgroup_too_long(void **state) {
        (void) state;
        char cg[8];
        assert_int_equal(mthp_procinfo_parse_cgroup("0::/a/very/long/path\n", MTHP_CG_V2, cg, sizeof(cg)),
                         -ENAMETOOLONG);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_v2),
        cmocka_unit_test(test_cgroup_v1_and_hybrid),
        cmocka_unit_test(test_cgroup_too_long),
};
/* no known bugs: a test name given on the command line picks from the main group */
UNIT_MAIN(tests, tests)
