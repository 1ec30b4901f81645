/* SPDX-License-Identifier: MIT */
/* The fault-burst alarm (mthp_fault_alarm) on this kernel: pinned to one
 * CPU, the test takes known numbers of 4K faults and checks that the
 * CPU's event makes its fd readable after its count and not before, that
 * an arm starts the count again, and that a disarmed alarm stays silent.
 * Needs perf_event_open with CPU-wide events (CAP_PERFMON or root under
 * perf_event_paranoid > 0); else exits 77 with the reason. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "mthp/faults.h"

#define P4K 4096u
#define PERIOD 16384u     /* well above what else a loaded CPU faults during a step */

static unsigned char *mem;
static size_t mem_pages = 3 * PERIOD;
static size_t touched;          /* pages of mem faulted since the last reset_mem() */

/* 4K faults whatever the host's THP settings */
static void reset_mem(void) {
        if (mem)
                munmap(mem, mem_pages * P4K);
        mem = mmap(NULL, mem_pages * P4K, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(mem != MAP_FAILED);
        (void) madvise(mem, mem_pages * P4K, MADV_NOHUGEPAGE);
        touched = 0;
}

/* n more faults, each on a page not touched before */
static void fault(size_t n) {
        assert_true(touched + n <= mem_pages);
        for (size_t i = 0; i < n; i++)
                ((volatile unsigned char *) mem)[(touched + i) * P4K] = 0;
        touched += n;
}

/* The alarm's index of the CPU this test is pinned to, or skip. */
static size_t pin(struct mthp_fault_alarm *a) {
        int cpu = sched_getcpu();
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (cpu < 0 || sched_setaffinity(0, sizeof(set), &set) < 0) {
                printf("# skipped: cannot pin to a CPU: %s\n", strerror(errno));
                skip();
        }
        for (size_t i = 0; i < mthp_fault_alarm_n(a); i++)
                if (mthp_fault_alarm_cpu(a, i) == cpu)
                        return i;
        printf("# skipped: CPU %d has no event (went online after the alarm was made)\n", cpu);
        skip();
        return 0;
}

static bool readable(struct mthp_fault_alarm *a, size_t i) {
        struct pollfd p = { .fd = mthp_fault_alarm_fd(a, i), .events = POLLIN };
        int r = poll(&p, 1, 20);
        assert_true(r >= 0);
        assert_false(p.revents & (POLLHUP | POLLERR));
        return r > 0 && (p.revents & POLLIN);
}

/* quiet more faults leave CPU i's fd quiet; rest more (and 64 for what
 * else this CPU faults meanwhile) make it readable, and fired says so */
static void quiet_then_fires(struct mthp_fault_alarm *a, size_t i, size_t quiet, size_t rest) {
        fault(quiet);
        assert_false(readable(a, i));
        fault(rest + 64);
        assert_true(readable(a, i));
        assert_true(mthp_fault_alarm_fired(a, i));
}

static struct mthp_fault_alarm *new_alarm(void) {
        struct mthp_fault_alarm *a = NULL;
        assert_int_equal(mthp_fault_alarm_new(&a), 0);
        assert_true(mthp_fault_alarm_n(a) > 0);
        reset_mem();
        return a;
}

/* Armed at PERIOD: half of it (and whatever else this CPU faults meanwhile,
 * a few pages) leaves the fd quiet; the rest makes it readable; reading it
 * (fired) quiets it again. Created disarmed: nothing before the arm. */
static void test_fires_after_count(void **state) {
        (void) state;
        struct mthp_fault_alarm *a = new_alarm();
        size_t i = pin(a);
        assert_false(mthp_fault_alarm_armed(a));
        fault(PERIOD);
        assert_false(readable(a, i));
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        assert_true(mthp_fault_alarm_armed(a));
        assert_int_equal(mthp_fault_alarm_period(a, i), PERIOD);
        quiet_then_fires(a, i, PERIOD / 2, PERIOD / 2);
        assert_false(mthp_fault_alarm_fired(a, i));   /* the ring was emptied */
        mthp_fault_alarm_free(a);
}

/* A rearm of one CPU starts its count again: 3/4 of PERIOD, a rearm, 3/4
 * again is quiet (it would have fired at PERIOD); after the rest it fires.
 * An arm with the count a CPU has leaves its count going (it fires at
 * PERIOD in all); with another count, that CPU counts from 0. */
static void test_rearm_restarts_count(void **state) {
        (void) state;
        struct mthp_fault_alarm *a = new_alarm();
        size_t i = pin(a);
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        fault(PERIOD * 3 / 4);
        assert_int_equal(mthp_fault_alarm_rearm(a, i, PERIOD), 0);
        quiet_then_fires(a, i, PERIOD * 3 / 4, PERIOD / 4);

        reset_mem();
        assert_int_equal(mthp_fault_alarm_disarm(a), 0);
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        fault(PERIOD * 3 / 4);
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        fault(PERIOD / 4 + 64);
        assert_true(readable(a, i));
        assert_true(mthp_fault_alarm_fired(a, i));

        reset_mem();
        assert_int_equal(mthp_fault_alarm_disarm(a), 0);
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        fault(PERIOD * 3 / 4);
        assert_int_equal(mthp_fault_alarm_arm(a, 2 * PERIOD), 0);
        assert_int_equal(mthp_fault_alarm_period(a, i), 2 * PERIOD);
        quiet_then_fires(a, i, PERIOD * 3 / 2, PERIOD / 2);
        mthp_fault_alarm_free(a);
}

/* Disarmed: no fd becomes readable, however many faults. */
static void test_disarmed_silent(void **state) {
        (void) state;
        struct mthp_fault_alarm *a = new_alarm();
        size_t i = pin(a);
        assert_int_equal(mthp_fault_alarm_arm(a, PERIOD), 0);
        fault(PERIOD / 2);
        assert_int_equal(mthp_fault_alarm_disarm(a), 0);
        assert_false(mthp_fault_alarm_armed(a));
        assert_int_equal(mthp_fault_alarm_period(a, i), 0);
        fault(2 * PERIOD);
        assert_false(readable(a, i));
        assert_false(mthp_fault_alarm_fired(a, i));
        assert_false(mthp_fault_alarm_armed(a));
        mthp_fault_alarm_free(a);
}

static void test_bad_arguments(void **state) {
        (void) state;
        struct mthp_fault_alarm *a = new_alarm();
        assert_int_equal(mthp_fault_alarm_new(NULL), -EINVAL);
        assert_int_equal(mthp_fault_alarm_arm(a, 0), -EINVAL);
        assert_int_equal(mthp_fault_alarm_arm(NULL, PERIOD), -EINVAL);
        assert_int_equal(mthp_fault_alarm_arm(a, MTHP_FAULT_ALARM_MAX + 1), -EINVAL);
        assert_int_equal(mthp_fault_alarm_rearm(a, 0, 0), -EINVAL);
        assert_int_equal(mthp_fault_alarm_rearm(a, mthp_fault_alarm_n(a), PERIOD), -EINVAL);
        assert_int_equal(mthp_fault_alarm_period(a, mthp_fault_alarm_n(a)), 0);
        assert_int_equal(mthp_fault_alarm_fd(a, mthp_fault_alarm_n(a)), -EINVAL);
        assert_int_equal(mthp_fault_alarm_cpu(a, mthp_fault_alarm_n(a)), -EINVAL);
        assert_false(mthp_fault_alarm_fired(a, mthp_fault_alarm_n(a)));
        assert_int_equal(mthp_fault_alarm_n(NULL), 0);
        mthp_fault_alarm_free(a);
        mthp_fault_alarm_free(NULL);
}

int main(void) {
        struct mthp_fault_alarm *a = NULL;
        int r = mthp_fault_alarm_new(&a);
        if (r == -EACCES || r == -EPERM) {
                printf("SKIP: perf_event_open for a CPU-wide event: %s (needs CAP_PERFMON or root)\n", strerror(-r));
                return 77;
        }
        if (r == -ENOENT || r == -ENOSYS || r == -EOPNOTSUPP) {
                printf("SKIP: perf_event_open: %s (no perf events in this kernel)\n", strerror(-r));
                return 77;
        }
        if (r < 0) {
                printf("mthp_fault_alarm_new: %s\n", strerror(-r));
                return 1;
        }
        mthp_fault_alarm_free(a);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fires_after_count),
                cmocka_unit_test(test_rearm_restarts_count),
                cmocka_unit_test(test_disarmed_silent),
                cmocka_unit_test(test_bad_arguments),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
