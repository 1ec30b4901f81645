/* SPDX-License-Identifier: MIT */
/* What one process's mapping count costs the density sampler: a child maps
 * N separate regions (default 60,000; vm.max_map_count is 65,530 by
 * default), two pages each, alternating read-write and read-only so the
 * kernel cannot merge them, writes the read-write ones, and waits; the
 * sampler, with its default budget and the child as its target, ticks over
 * it and the median and largest tick are printed.
 *
 *   bench-maps [mappings (60000)] [ticks (20)] [interval ms (100)]
 *
 * Needs to read another process's pagemap: root (or the child's owner with
 * ptrace rights). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mthp/density.h"
#include "mthp/probe.h"
#include "mthp/util.h"

static pid_t spawn(unsigned n) {
        int fds[2];
        if (pipe(fds) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid != 0) {
                char c;
                close(fds[1]);
                ssize_t k = read(fds[0], &c, 1);
                close(fds[0]);
                return k == 1 && c == 'r' ? pid : -EIO;
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        long pg = sysconf(_SC_PAGESIZE);
        /* one reservation, then a mapping every 2 pages over it (MAP_FIXED):
         * neighbours with other protections, never merged */
        size_t len = (size_t) n * 2 * (size_t) pg;
        char *base = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED)
                _exit(1);
        for (unsigned i = 0; i < n; i++) {
                int prot = i % 2 ? PROT_READ : PROT_READ | PROT_WRITE;
                char *p = mmap(base + (size_t) i * 2 * pg, 2 * (size_t) pg, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                               -1, 0);
                if (p == MAP_FAILED)
                        _exit(2);
                if (prot & PROT_WRITE)
                        p[0] = 1;
        }
        if (write(fds[1], "r", 1) != 1)
                _exit(1);
        for (;;)
                pause();
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static unsigned count_maps(pid_t pid) {
        char p[64], line[512];
        snprintf(p, sizeof(p), "/proc/%d/maps", (int) pid);
        FILE *f = fopen(p, "r");
        unsigned n = 0;
        while (f && fgets(line, sizeof(line), f))
                n++;
        if (f)
                fclose(f);
        return n;
}

int main(int argc, char **argv) {
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 60000;
        int ticks = argc > 2 ? atoi(argv[2]) : 20;
        int interval_ms = argc > 3 ? atoi(argv[3]) : 100;
        if (n == 0 || ticks <= 0 || ticks > 10000 || interval_ms < 0) {
                fprintf(stderr, "usage: %s [mappings] [ticks] [interval ms]\n", argv[0]);
                return 2;
        }
        struct mthp_host *h;
        static struct mthp_caps caps;
        unsigned sizes[MTHP_SIZES_MAX], ns = 0;
        int r = mthp_host_open("/", &h);
        if (r < 0) {
                fprintf(stderr, "host: %s\n", strerror(-r));
                return 1;
        }
        if (mthp_probe(h, &caps) == 0)
                for (unsigned i = 0; i < caps.n_sizes; i++)
                        if (caps.sizes[i].kb >= 8 && caps.sizes[i].kb <= MTHP_DENSITY_MAX_KB)
                                sizes[ns++] = caps.sizes[i].kb;
        if (ns == 0) {
                sizes[ns++] = 16;
                sizes[ns++] = 64;
                sizes[ns++] = 2048;
        }
        uint64_t t = mthp_now_usec(CLOCK_MONOTONIC);
        pid_t pid = spawn(n);
        if (pid < 0) {
                fprintf(stderr, "child: %s (vm.max_map_count too low?)\n", strerror(-pid));
                return 1;
        }
        fprintf(stderr, "child %d: %u mappings in /proc/PID/maps, ready in %.1f s\n", (int) pid, count_maps(pid),
                (double) (mthp_now_usec(CLOCK_MONOTONIC) - t) / 1e6);

        struct mthp_density_budget b;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        mthp_density_budget_default(&b);
        b.measure_thp_disabled = true;
        struct mthp_density_target target = { .pid = pid };
        if ((r = mthp_density_new(h, sizes, ns, &b, &s)) < 0 || (r = mthp_density_set_targets(s, &target, 1)) < 0) {
                fprintf(stderr, "sampler: %s\n", strerror(-r));
                return 1;
        }
        uint64_t *us = calloc((size_t) ticks, sizeof(*us)), first = 0;
        unsigned windows = 0;
        for (int i = 0; i < ticks && us; i++) {
                t = mthp_now_usec(CLOCK_MONOTONIC);
                if ((r = mthp_density_tick(s, t, &rep)) < 0 || rep.n_procs != 1) {
                        fprintf(stderr, "tick: %s, %u processes\n", strerror(r < 0 ? -r : 0), rep.n_procs);
                        return 1;
                }
                us[i] = mthp_now_usec(CLOCK_MONOTONIC) - t;
                if (i == 0)
                        first = us[0];
                windows = rep.kind[MTHP_ANON].windows;
                usleep((useconds_t) interval_ms * 1000);
        }
        qsort(us, (size_t) ticks, sizeof(*us), cmp_u64);
        printf("%u mappings: density tick median %.2f ms, max %.2f ms, first %.2f ms (%d ticks, %d ms apart); "
               "%u anon windows, %.0f MiB anon mapped in the last\n",
               n, (double) us[(ticks - 1) / 2] / 1000, (double) us[ticks - 1] / 1000, (double) first / 1000, ticks,
               interval_ms, windows, (double) rep.kind[MTHP_ANON].mapped_bytes / (1 << 20));
        mthp_density_free(s);
        free(us);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        mthp_host_free(h);
        return 0;
}
