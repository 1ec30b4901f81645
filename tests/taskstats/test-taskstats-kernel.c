/* SPDX-License-Identifier: MIT */
/* Against the running kernel: needs root (CAP_NET_ADMIN) and the TASKSTATS
 * genl family, else exit 77. Works whether delay accounting is on or off and
 * never changes it. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "mthp/host.h"
#include "mthp/taskstats.h"

static struct mthp_taskstats *ts;

static int setup(void **state) {
        (void) state;
        /* The scheduler adds a running task's CPU time when it is switched
         * out or ticked; sleep once so a very young test process has some. */
        usleep(1000);
        return mthp_taskstats_open(&ts) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        (void) state;
        mthp_taskstats_close(ts);
        ts = NULL;
        return 0;
}

static uint64_t monotonic_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static void assert_sane(const struct mthp_delays *d, pid_t pid) {
        assert_int_equal(d->tgid, (uint32_t) pid);
        assert_true(d->version >= 1);
        assert_true(MTHP_DELAY_PRESENT(d, MTHP_DELAY_CPU));
        assert_true(d->sampled_ns > 0);
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                if (!MTHP_DELAY_PRESENT(d, k)) {
                        assert_int_equal(d->delay[k].count, 0);
                        continue;
                }
                /* a total without any recorded delay is nonsense; counts
                 * beyond 2^40 are a misread offset */
                if (d->delay[k].count == 0)
                        assert_int_equal(d->delay[k].total_ns, 0);
                assert_true(d->delay[k].count < (1ull << 40));
        }
}

static void test_query_self(void **state) {
        struct mthp_delays d;
        (void) state;
        int r = mthp_taskstats_query_tgid(ts, getpid(), &d);
        if (r != 0 && r != -EOPNOTSUPP)
                fail_msg("query_tgid(self) = %d (%s)", r, strerror(-r));
        assert_sane(&d, getpid());
        /* 6.18 has struct taskstats v16 with irq; CPU time is always there */
        print_message("taskstats v%u, delay accounting %s, present 0x%x, cpu %llu/%llu ns, run %llu ns\n",
                      d.version, r == 0 ? "on" : "off", d.present, (unsigned long long) d.delay[MTHP_DELAY_CPU].count,
                      (unsigned long long) d.delay[MTHP_DELAY_CPU].total_ns, (unsigned long long) d.cpu_run_ns);
        assert_true(d.cpu_run_ns > 0);
        if (r == -EOPNOTSUPP)
                for (unsigned k = MTHP_DELAY_BLKIO; k < _MTHP_DELAY_KIND_MAX; k++)
                        assert_int_equal(d.delay[k].count, 0);
}

static void test_query_init(void **state) {
        struct mthp_delays d;
        (void) state;
        int r = mthp_taskstats_query_tgid(ts, 1, &d);
        assert_true(r == 0 || r == -EOPNOTSUPP);
        assert_sane(&d, 1);
}

static void test_query_gone(void **state) {
        struct mthp_delays d;
        (void) state;
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0)
                _exit(0);
        assert_int_equal(waitpid(child, NULL, 0), child);
        assert_int_equal(mthp_taskstats_query_tgid(ts, child, &d), -ESRCH);
        /* beyond PID_MAX_LIMIT */
        assert_int_equal(mthp_taskstats_query_tgid(ts, INT_MAX, &d), -ESRCH);
        /* the socket is still usable after errors */
        int r = mthp_taskstats_query_tgid(ts, getpid(), &d);
        assert_true(r == 0 || r == -EOPNOTSUPP);
}

static void test_query_invalid(void **state) {
        struct mthp_delays d;
        (void) state;
        assert_int_equal(mthp_taskstats_query_tgid(ts, 0, &d), -EINVAL);
        assert_int_equal(mthp_taskstats_query_tgid(ts, -1, &d), -EINVAL);
        assert_int_equal(mthp_taskstats_query_tgid(NULL, 1, &d), -EINVAL);
        assert_int_equal(mthp_taskstats_query_tgid(ts, 1, NULL), -EINVAL);
}

/* Without CAP_NET_ADMIN the kernel refuses TASKSTATS_CMD_GET. */
static void test_query_unprivileged(void **state) {
        (void) state;
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                struct mthp_taskstats *u;
                struct mthp_delays d;
                if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
                    setresuid(65534, 65534, 65534) < 0)
                        _exit(10);
                int r = mthp_taskstats_open(&u);
                if (r < 0)
                        _exit(11);
                r = mthp_taskstats_query_tgid(u, getpid(), &d);
                mthp_taskstats_close(u);
                _exit(r == -EPERM ? 0 : 12);
        }
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

/* Every query is answered well inside the receive timeout, and the socket
 * stays in step over many of them. */
static void test_query_bounded(void **state) {
        struct mthp_delays d;
        (void) state;
        for (int i = 0; i < 200; i++) {
                uint64_t t = monotonic_ns();
                int r = mthp_taskstats_query_tgid(ts, i % 2 ? getpid() : 1, &d);
                assert_true(r == 0 || r == -EOPNOTSUPP);
                assert_int_equal(d.tgid, i % 2 ? (uint32_t) getpid() : 1u);
                assert_true(monotonic_ns() - t < (uint64_t) MTHP_TASKSTATS_TIMEOUT_MS * 1000000u);
        }
}

static void test_rates_self(void **state) {
        struct mthp_delays a, b;
        struct mthp_delay_rates rates;
        (void) state;
        int r = mthp_taskstats_query_tgid(ts, getpid(), &a);
        assert_true(r == 0 || r == -EOPNOTSUPP);
        usleep(20000);
        r = mthp_taskstats_query_tgid(ts, getpid(), &b);
        assert_true(r == 0 || r == -EOPNOTSUPP);
        assert_int_equal(mthp_delays_rates(&a, &b, &rates), 0);
        assert_int_equal(rates.present, a.present & b.present);
        assert_true(rates.interval_sec >= 0.02 && rates.interval_sec < 5);
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++)
                assert_true(rates.rate[k].ms_per_sec >= 0 && rates.rate[k].events_per_sec >= 0);
        assert_true(b.cpu_run_ns >= a.cpu_run_ns);
}

/* Whether accounting is on is read from task_delayacct below the host root. */
static void query_with_fake_sysctl(const char *value, int expected) {
        char root[] = "/tmp/mthp-taskstats-XXXXXX";
        char path[PATH_MAX];
        struct mthp_host *host;
        struct mthp_taskstats *fake;
        struct mthp_delays d;

        static const char *const dirs[] = { "/proc", "/proc/sys", "/proc/sys/kernel" };

        assert_non_null(mkdtemp(root));
        for (size_t i = 0; i < 3; i++) {
                snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
                assert_int_equal(mkdir(path, 0755), 0);
        }
        snprintf(path, sizeof(path), "%s/proc/sys/kernel/task_delayacct", root);
        if (value) {
                FILE *f = fopen(path, "we");
                assert_non_null(f);
                fputs(value, f);
                assert_int_equal(fclose(f), 0);
        }

        assert_int_equal(mthp_host_open(root, &host), 0);
        assert_int_equal(mthp_taskstats_open_at(host, &fake), 0);
        mthp_host_free(host); /* only needed while opening */
        assert_int_equal(mthp_taskstats_query_tgid(fake, getpid(), &d), expected);
        assert_sane(&d, getpid());
        mthp_taskstats_close(fake);

        if (value)
                assert_int_equal(unlink(path), 0);
        for (size_t i = 3; i-- > 0;) {
                snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
                assert_int_equal(rmdir(path), 0);
        }
        assert_int_equal(rmdir(root), 0);
}

static void test_host_sysctl(void **state) {
        (void) state;
        query_with_fake_sysctl("0\n", -EOPNOTSUPP);
        query_with_fake_sysctl("1\n", 0);
        /* no sysctl (pre-5.14 layout): CPU run time in the reply decides,
         * and this kernel always fills it */
        query_with_fake_sysctl(NULL, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_query_self),
                cmocka_unit_test(test_query_init),
                cmocka_unit_test(test_query_gone),
                cmocka_unit_test(test_query_invalid),
                cmocka_unit_test(test_query_unprivileged),
                cmocka_unit_test(test_query_bounded),
                cmocka_unit_test(test_rates_self),
                cmocka_unit_test(test_host_sysctl),
        };
        struct mthp_taskstats *probe;

        if (geteuid() != 0) {
                fprintf(stderr, "skip: needs root (CAP_NET_ADMIN)\n");
                return 77;
        }
        int r = mthp_taskstats_open(&probe);
        if (r == -ENOENT) {
                fprintf(stderr, "skip: no TASKSTATS genl family\n");
                return 77;
        }
        if (r < 0) {
                fprintf(stderr, "mthp_taskstats_open: %s\n", strerror(-r));
                return 1;
        }
        mthp_taskstats_close(probe);
        return cmocka_run_group_tests_name("taskstats-kernel", tests, setup, teardown);
}
