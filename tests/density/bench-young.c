/* SPDX-License-Identifier: MIT */
/* What waiting for young and small processes saves the density sampler
 * (mthp_density_set_young): two samplers on the real host, one sampling
 * every faulting process at first sight (as before), one letting those
 * younger than 2 s with less than the stake wait, tick in turn, each once
 * a second half a second apart, for the same processes; their CPU time
 * (the tick's thread CPU) and what they sampled are summed. Run it beside
 * a busy background (a compile loop and short scripts):
 *
 *   bench-young [seconds (60)] [stake MiB (MinBloatBytes=auto)] [second]
 *
 * "second": the waiting sampler ticks first (the order's bias, if any).
 *
 *   bench-young dense [trials (8)]
 *
 * The first-sample time of a dense program: a child maps, touches and
 * unmaps 64 MiB in a loop (a churning dense program), started at a random
 * point of the tick grid; each sampler's time from its start to the first
 * tick that samples it, per trial and median.
 *
 * Reads other processes' pagemap and smaps: root. Prints one line per
 * sampler. */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mthp/density.h"
#include "mthp/probe.h"
#include "mthp/util.h"

struct run {
        const char *name;
        struct mthp_density_sampler *s;
        uint64_t cpu_ns, ticks, sampled, young;
};

static uint64_t mem_total_kb(const struct mthp_host *h) {
        char buf[8192];
        if (mthp_host_read(h, "/proc/meminfo", buf, sizeof(buf)) <= 0)
                return 0;
        const char *p = strstr(buf, "MemTotal:");
        return p ? strtoull(p + 9, NULL, 10) : 0;
}

static void tick(struct run *r) {
        struct mthp_density_report rep;
        uint64_t c0 = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        if (mthp_density_tick(r->s, mthp_now_usec(CLOCK_MONOTONIC), &rep) < 0)
                return;
        r->cpu_ns += mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - c0;
        r->ticks++;
        r->sampled += rep.n_procs;
        r->young += rep.procs_young;
}

static pid_t spawn_dense(void) {
        pid_t pid = fork();
        if (pid != 0)
                return pid;
        for (;;) {
                size_t len = 64u << 20;
                char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        _exit(1);
                for (size_t i = 0; i < len; i += 4096)
                        m[i] = 1;
                munmap(m, len);
        }
}

static bool samples(struct mthp_density_sampler *s, pid_t pid) {
        struct mthp_density_report rep;
        if (mthp_density_tick(s, mthp_now_usec(CLOCK_MONOTONIC), &rep) < 0)
                return false;
        for (unsigned i = 0; i < rep.n_procs; i++)
                if (rep.procs[i].pid == pid)
                        return true;
        return false;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

/* dense mode: the two samplers in turn as above; a child started at a
 * random offset; each one's delay to its first sample of it */
static int dense_trials(struct run *runs, unsigned trials) {
        uint64_t d[2][64];
        if (trials > 64)
                trials = 64;
        srand(1);
        for (unsigned t = 0; t < trials; t++) {
                for (int k = 0; k < 4; k++) {   /* settle: the tables current */
                        tick(&runs[k % 2]);
                        usleep(500000);
                }
                usleep((useconds_t) (rand() % 500000));
                uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
                pid_t pid = spawn_dense();
                if (pid < 0)
                        return 1;
                d[0][t] = d[1][t] = UINT64_MAX;
                unsigned own[2] = { 0, 0 };
                uint64_t nth[2] = { 0, 0 };
                for (unsigned k = 0; k < 20 && (d[0][t] == UINT64_MAX || d[1][t] == UINT64_MAX); k++) {
                        usleep(k ? 500000 : 500000 - (mthp_now_usec(CLOCK_MONOTONIC) - t0) % 500000);
                        unsigned i = (k + t) % 2;   /* each goes first in half the trials */
                        own[i]++;
                        if (d[i][t] == UINT64_MAX && samples(runs[i].s, pid)) {
                                d[i][t] = mthp_now_usec(CLOCK_MONOTONIC) - t0;
                                nth[i] = own[i];
                        }
                }
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                printf("trial %u: at-first-sight %.2f s (its tick %llu after the start), young-wait %.2f s (its "
                       "tick %llu)\n", t, (double) d[0][t] / 1e6, (unsigned long long) nth[0], (double) d[1][t] / 1e6,
                       (unsigned long long) nth[1]);
        }
        for (int i = 0; i < 2; i++) {
                qsort(d[i], trials, sizeof(uint64_t), cmp_u64);
                printf("%-15s first sample of the dense program: median %.2f s (min %.2f, max %.2f)\n", runs[i].name,
                       (double) d[i][trials / 2] / 1e6, (double) d[i][0] / 1e6, (double) d[i][trials - 1] / 1e6);
        }
        return 0;
}

int main(int argc, char **argv) {
        bool dense = argc > 1 && strcmp(argv[1], "dense") == 0;
        unsigned seconds = argc > 1 && !dense ? (unsigned) atoi(argv[1]) : 60;
        struct mthp_host *h;
        struct mthp_caps caps;
        if (mthp_host_open("/", &h) < 0 || mthp_probe(h, &caps) < 0) {
                fprintf(stderr, "bench-young: cannot open the host\n");
                return 1;
        }
        /* MinBloatBytes=auto: the larger of 16 MiB and 0.1% of MemTotal */
        uint64_t stake_kb = mem_total_kb(h) / 1000;
        if (stake_kb < 16 * 1024)
                stake_kb = 16 * 1024;
        if (argc > 2 && !dense)
                stake_kb = strtoull(argv[2], NULL, 10) * 1024;
        unsigned sizes[MTHP_SIZES_MAX], n = 0;
        for (unsigned i = 0; i < caps.n_sizes; i++)
                if (caps.sizes[i].kb <= MTHP_DENSITY_MAX_KB)
                        sizes[n++] = caps.sizes[i].kb;
        struct run runs[2] = { { .name = "at-first-sight" }, { .name = "young-wait" } };
        for (int i = 0; i < 2; i++)
                if (mthp_density_new(h, sizes, n, NULL, &runs[i].s) < 0) {
                        fprintf(stderr, "bench-young: no density sampler\n");
                        return 1;
                }
        mthp_density_set_young(runs[1].s, 2000000, stake_kb);
        if (dense) {
                int r = dense_trials(runs, argc > 2 ? (unsigned) atoi(argv[2]) : 8);
                for (int i = 0; i < 2; i++)
                        mthp_density_free(runs[i].s);
                mthp_host_free(h);
                return r;
        }
        unsigned first = argc > 3 && strcmp(argv[3], "second") == 0;
        for (unsigned t = 0; t < 2 * seconds; t++) {
                tick(&runs[(t + first) % 2]);
                usleep(500000);
        }
        for (int i = 0; i < 2; i++) {
                struct run *r = &runs[i];
                printf("%-15s ticks %3llu  CPU %.2f ms a tick (%.3f %% of a core)  sampled %.2f a tick  waited %.2f a "
                       "tick\n",
                       r->name, (unsigned long long) r->ticks, r->ticks ? (double) r->cpu_ns / 1e6 / (double) r->ticks : 0,
                       (double) r->cpu_ns / 1e7 / (double) (seconds ? seconds : 1),
                       r->ticks ? (double) r->sampled / (double) r->ticks : 0,
                       r->ticks ? (double) r->young / (double) r->ticks : 0);
                mthp_density_free(r->s);
        }
        printf("stake %llu MiB, %u s\n", (unsigned long long) stake_kb / 1024, seconds);
        mthp_host_free(h);
        return 0;
}
