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
 * Reads other processes' pagemap and smaps: root. Prints one line per
 * sampler. */
#include <stdint.h>
#include <stdio.h>
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

int main(int argc, char **argv) {
        unsigned seconds = argc > 1 ? (unsigned) atoi(argv[1]) : 60;
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
        if (argc > 2)
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
