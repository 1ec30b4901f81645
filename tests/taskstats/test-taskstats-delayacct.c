/* SPDX-License-Identifier: MIT */
/* Counters move: run by delayacct.sh, which turns kernel.task_delayacct on
 * and restores it. A child forked after that (the kernel gives a task its
 * delay record at fork) dirties memory it shares copy-on-write with its own
 * child; every first write copies a page, which delay accounting records as
 * wpcopy. Exit 77 unless accounting is on. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mthp/taskstats.h"

#define REGION (32u << 20)
#define PAGE 4096u

static int read_byte(int fd) {
        char c;
        return read(fd, &c, 1) == 1 ? c : -1;
}

static void write_byte(int fd, char c) {
        if (write(fd, &c, 1) != 1)
                _exit(20);
}

/* Child: touch the region, fork a holder that keeps it shared, report 'a';
 * on 'g' write every page (copy-on-write), report 'b'; on 'q' exit. */
static void child_main(int in, int out) {
        uint8_t *m = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                _exit(21);
        memset(m, 1, REGION);
        pid_t holder = fork();
        if (holder < 0)
                _exit(22);
        if (holder == 0) {
                pause();
                _exit(0);
        }
        write_byte(out, 'a');
        if (read_byte(in) != 'g')
                _exit(23);
        for (size_t off = 0; off < REGION; off += PAGE)
                m[off] = 2;
        write_byte(out, 'b');
        read_byte(in);
        kill(holder, SIGKILL);
        waitpid(holder, NULL, 0);
        _exit(0);
}

static void test_wpcopy_moves(void **state) {
        int to_child[2], from_child[2];
        struct mthp_taskstats *ts;
        struct mthp_delays before, after;
        struct mthp_delay_rates rates;
        (void) state;

        assert_int_equal(mthp_taskstats_open(&ts), 0);
        assert_int_equal(pipe2(to_child, O_CLOEXEC), 0);
        assert_int_equal(pipe2(from_child, O_CLOEXEC), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                close(to_child[1]);
                close(from_child[0]);
                child_main(to_child[0], from_child[1]);
        }
        close(to_child[0]);
        close(from_child[1]);

        assert_int_equal(read_byte(from_child[0]), 'a');
        assert_int_equal(mthp_taskstats_query_tgid(ts, child, &before), 0);
        write_byte(to_child[1], 'g');
        assert_int_equal(read_byte(from_child[0]), 'b');
        assert_int_equal(mthp_taskstats_query_tgid(ts, child, &after), 0);
        write_byte(to_child[1], 'q');
        int status;
        assert_int_equal(waitpid(child, &status, 0), child);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(to_child[1]);
        close(from_child[0]);
        mthp_taskstats_close(ts);

        assert_true(MTHP_DELAY_PRESENT(&after, MTHP_DELAY_WPCOPY));
        uint64_t copies = after.delay[MTHP_DELAY_WPCOPY].count - before.delay[MTHP_DELAY_WPCOPY].count;
        print_message("v%u: %llu wpcopy delays, %llu ns; compact %llu, reclaim %llu, irq %llu\n", after.version,
                      (unsigned long long) copies,
                      (unsigned long long) (after.delay[MTHP_DELAY_WPCOPY].total_ns -
                                            before.delay[MTHP_DELAY_WPCOPY].total_ns),
                      (unsigned long long) after.delay[MTHP_DELAY_COMPACT].count,
                      (unsigned long long) after.delay[MTHP_DELAY_RECLAIM].count,
                      (unsigned long long) after.delay[MTHP_DELAY_IRQ].count);
        /* One copy per page, or per large folio where one is copied whole. */
        assert_true(copies >= REGION / (2u << 20));
        assert_true(after.delay[MTHP_DELAY_WPCOPY].total_ns > before.delay[MTHP_DELAY_WPCOPY].total_ns);

        assert_int_equal(mthp_delays_rates(&before, &after, &rates), 0);
        assert_true(rates.rate[MTHP_DELAY_WPCOPY].events_per_sec > 0);
        assert_true(rates.rate[MTHP_DELAY_WPCOPY].ms_per_sec > 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wpcopy_moves),
        };
        char v[4] = "";
        FILE *f = fopen("/proc/sys/kernel/task_delayacct", "re");

        if (f) {
                if (!fgets(v, sizeof(v), f))
                        v[0] = 0;
                fclose(f);
        }
        if (geteuid() != 0 || v[0] != '1') {
                fprintf(stderr, "skip: needs root and kernel.task_delayacct=1 (run through delayacct.sh)\n");
                return 77;
        }
        return cmocka_run_group_tests_name("taskstats-delayacct", tests, NULL, NULL);
}
