/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by the unit tests: cmocka, a fake host per test, and a few
 * assertions cmocka 1.1 lacks. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fakehost.h"
#include "mthp/host.h"
#include "mthp/probe.h"

#define THP FAKEHOST_THP

struct fixture {
        char dir[PATH_MAX];             /* fake host root */
        char state_dir[PATH_MAX];       /* <dir>/run/mthpd, not created */
        char journal[PATH_MAX];         /* <state_dir>/restore.journal */
        struct fakehost_opts opts;
        struct mthp_host *host;
        struct mthp_caps caps;
};

/* cmocka setups: a fake host (v2, PSI) or with the given options, opened
 * and probed; *state is the struct fixture. */
int fixture_setup(void **state);
int fixture_setup_opts(void **state, const struct fakehost_opts *opts);
int fixture_teardown(void **state);
/* Probe again after changing the tree. */
void fixture_reprobe(struct fixture *f);
/* Everything written to stderr (the log, as mthp_log writes it outside
 * the journal) between the two calls. */
void stderr_capture_begin(void);
const char *stderr_capture_end(void);
/* Index of a knob by id, failing the test if it is missing. */
int fixture_knob(const struct fixture *f, const char *id);
/* Selected value of a knob in the fake tree, read directly. */
const char *fixture_knob_value(const struct fixture *f, const char *id);
/* Whole file of the fake tree or of the real file system (path absolute
 * and outside the tree when dir is NULL); "" if missing. */
const char *fixture_file(const char *dir, const char *path);

#define assert_contains(haystack, needle)                                                       \
        do {                                                                                    \
                const char *h_ = (haystack), *n_ = (needle);                                    \
                if (!h_ || !strstr(h_, n_))                                                     \
                        fail_msg("\"%s\" does not contain \"%s\"", h_ ? h_ : "(null)", n_);     \
        } while (0)

#define assert_not_contains(haystack, needle)                                                   \
        do {                                                                                    \
                const char *h_ = (haystack), *n_ = (needle);                                    \
                if (h_ && strstr(h_, n_))                                                       \
                        fail_msg("\"%s\" contains \"%s\"", h_, n_);                             \
        } while (0)

#define assert_double_equal(a, b)                                                               \
        do {                                                                                    \
                double a_ = (a), b_ = (b);                                                      \
                double d_ = a_ > b_ ? a_ - b_ : b_ - a_;                                        \
                if (d_ > 1e-9 * (1 + (a_ > 0 ? a_ : -a_)))                                      \
                        fail_msg("%s = %.9g, expected %.9g", #a, a_, b_);                       \
        } while (0)

#define assert_ok(expr)                                                                         \
        do {                                                                                    \
                long r_ = (long) (expr);                                                        \
                if (r_ < 0)                                                                     \
                        fail_msg("%s = %ld (%s)", #expr, r_, strerror((int) -r_));              \
        } while (0)

/* Tests of lib bugs that are not fixed yet live in a second group, run only
 * as "test-x NAME" (one test). meson registers each with should_fail: true,
 * so the suite stays green while the bug is there and reports UNEXPECTEDPASS
 * once it is fixed: then move the test into the main group. */
#define UNIT_MAIN(tests, known_bugs)                                                                    \
        int main(int argc, char **argv) {                                                               \
                if (argc > 1) {                                                                         \
                        cmocka_set_test_filter(argv[1]);                                                \
                        return _cmocka_run_group_tests("known bugs", known_bugs,                        \
                                                       sizeof(known_bugs) / sizeof((known_bugs)[0]),    \
                                                       NULL, NULL);                                     \
                }                                                                                       \
                return _cmocka_run_group_tests("tests", tests, sizeof(tests) / sizeof((tests)[0]), NULL, \
                                               NULL);                                                   \
        }
