/* SPDX-License-Identifier: MIT */
/* What the C real-kernel test programs share (tests/cgmon/test-cgmon-real.c,
 * tests/unit/test-limits-real.c): FAIL lines under the program's name, a
 * child stopped by its PID, and cgroup directories removed once a killed
 * child has left them. Set rt_name first. Header-only, static inline: each
 * program is one file. */
#ifndef MTHP_TESTS_REAL_TEST_H
#define MTHP_TESTS_REAL_TEST_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include "mthp/host.h"
#include "mthp/log.h"
#include "mthp/probe.h"

static const char *rt_name = "real";
static int rt_fails;

__attribute__((format(printf, 1, 2))) static inline void rt_fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        printf("%s: FAIL: ", rt_name);
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
        rt_fails++;
}

/* async-signal-safe: SIGKILL the child (if any) and reap it, bounded: 5 s */
static inline void rt_stop(volatile pid_t *pid) {
        pid_t p = *pid;
        if (p <= 0)
                return;
        kill(p, SIGKILL);
        for (int i = 0; i < 500; i++) {
                if (waitpid(p, NULL, WNOHANG) == p)
                        break;
                usleep(10000);
        }
        *pid = 0;
}

/* async-signal-safe: rmdir each non-empty path in order (children first),
 * retrying while a killed task is leaving it, bounded: 1 s a directory */
static inline void rt_rmdirs(const char *const *dirs, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (dirs[i][0])
                        for (int k = 0; k < 50 && rmdir(dirs[i]) < 0 && errno == EBUSY; k++)
                                usleep(20000);
}

/* The start every such program shares: name its lines, root or a skip,
 * line-buffered stdout, the log (verbose when the environment variable
 * verbose_env is set), the real host and its probe. Returns 0, or 77 with
 * the SKIP line printed. */
static inline int rt_start(const char *name, const char *verbose_env, struct mthp_host **h,
                           struct mthp_caps *caps) {
        rt_name = name;
        if (geteuid() != 0) {
                printf("%s: SKIP: needs root\n", name);
                return 77;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        mthp_log_init(name, getenv(verbose_env) != NULL);
        if (mthp_host_open("/", h) < 0 || mthp_probe(*h, caps) < 0) {
                printf("%s: SKIP: no memory cgroup hierarchy\n", name);
                return 77;
        }
        return 0;
}

#endif
