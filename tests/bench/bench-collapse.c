/* SPDX-License-Identifier: MIT */
/*
 * bench-collapse: what MADV_COLLAPSE (lib/collapse.c) buys a dense, 4K-faulted
 * anon region, and what it costs.
 *
 * A child maps SIZE (default 1 GiB), 2M-aligned, and writes every 4K page.
 * It runs under prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED)
 * (Linux 6.18), so its faults get 4K pages whatever the THP knobs say, while
 * MADV_COLLAPSE from outside still works (a plain PR_SET_THP_DISABLE, or
 * MADV_NOHUGEPAGE, would make it fail with EINVAL). No sysfs knob is written.
 *
 * Per run:
 *   1. the child does READS random 8-byte reads across the region (TLB-heavy:
 *      1 GiB is 262144 4K pages, far beyond any STLB); ns per read in the
 *      child's CPU time (the host may be busy: wall time is printed too);
 *   2. the collapser makes two passes over it (the first only remembers the
 *      candidates), with no budget limit, while the child keeps reading in
 *      batches of 4096: the collapse's wall and CPU time, kB/s, and the
 *      child's worst and mean batch during it against those of a stretch of
 *      about the same length just before, nothing collapsing (the stall: a
 *      block being collapsed has its PMD cleared, and touching it waits);
 *   3. the same READS again; AnonHugePages before and after.
 * A side-by-side table per run, ratios after/before.
 *
 * Not a test: root (CAP_SYS_NICE for process_madvise). Build, then
 *   ./build/tests/bench/bench-collapse [--size MiB] [--reads N] [--runs N]
 * or ninja -C build bench-collapse (defaults: 1024 MiB, 20000000 reads, 3 runs).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mthp/collapse.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif
#define PMD (2UL << 20)
#define BATCH 4096u

enum { CMD_NONE, CMD_READS, CMD_SPIN, CMD_QUIT };

/* shared between parent and child (MAP_SHARED) */
struct shared {
        _Atomic int cmd, done;
        _Atomic int stop;            /* ends CMD_SPIN */
        int err;
        uint64_t reads;
        uint64_t ns, cpu_ns;         /* CMD_READS: total, wall and CPU time */
        uint64_t batches, max_batch_ns;
        uint64_t sink;
};

static uint64_t now_ns(clockid_t id) {
        struct timespec ts;
        clock_gettime(id, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static inline uint64_t xorshift(uint64_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        return *x;
}

static uint64_t read_batch(const uint64_t *r, uint64_t words, uint64_t *rng, uint64_t n) {
        uint64_t s = 0;
        for (uint64_t i = 0; i < n; i++)
                s += r[xorshift(rng) % words];
        return s;
}

static void child(struct shared *sh, size_t size) {
        if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0) {
                sh->err = errno;
                atomic_store(&sh->done, -1);
                _exit(1);
        }
        char *raw = mmap(NULL, size + PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) {
                sh->err = errno;
                atomic_store(&sh->done, -1);
                _exit(1);
        }
        uint64_t *r = (uint64_t *) (((uintptr_t) raw + PMD - 1) & ~(PMD - 1));
        uint64_t words = size / 8, rng = 0x9e3779b97f4a7c15ULL;
        for (size_t i = 0; i < words; i += 4096 / 8)
                r[i] = i;
        atomic_store(&sh->done, 1);
        for (;;) {
                int cmd;
                while ((cmd = atomic_load(&sh->cmd)) == CMD_NONE)
                        usleep(100);
                if (cmd == CMD_QUIT)
                        _exit(0);
                if (cmd == CMD_READS) {
                        uint64_t t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                        sh->sink += read_batch(r, words, &rng, sh->reads);
                        sh->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                        sh->ns = now_ns(CLOCK_MONOTONIC) - t0;
                } else {
                        sh->batches = sh->max_batch_ns = 0;
                        while (!atomic_load(&sh->stop)) {
                                uint64_t t0 = now_ns(CLOCK_MONOTONIC);
                                sh->sink += read_batch(r, words, &rng, BATCH);
                                uint64_t d = now_ns(CLOCK_MONOTONIC) - t0;
                                if (d > sh->max_batch_ns)
                                        sh->max_batch_ns = d;
                                sh->batches++;
                        }
                }
                atomic_store(&sh->cmd, CMD_NONE);
                atomic_store(&sh->done, 1);
        }
}

static int command(struct shared *sh, int cmd) {
        atomic_store(&sh->done, 0);
        atomic_store(&sh->cmd, cmd);
        /* bounded: a run of reads takes seconds */
        for (int i = 0; i < 600 * 1000 && !atomic_load(&sh->done); i++)
                usleep(1000);
        return atomic_load(&sh->done) == 1 ? 0 : -ETIMEDOUT;
}

static long smaps_kb(pid_t pid, const char *key) {
        char path[64], line[256];
        long v = -1;
        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int) pid);
        FILE *f = fopen(path, "r");
        if (!f)
                return -1;
        size_t n = strlen(key);
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, key, n) && line[n] == ':')
                        v = strtol(line + n + 1, NULL, 10);
        fclose(f);
        return v;
}

struct run {
        long huge_before, huge_after, anon;
        double ns_before, ns_after;                 /* CPU time per read */
        double wall_ns_before, wall_ns_after;
        unsigned collapsed, failed, candidates;
        double collapse_ms, collapse_cpu_ms, kb_s;
        double spin_base_ms, spin_during_ms;        /* worst batch of BATCH reads */
        double batch_ns_base, batch_ns_during;      /* mean batch */
};

/* spin the child for a while: its worst and mean batch */
static int spin(struct shared *sh, uint64_t ns, double *worst_ms, double *mean_ns) {
        atomic_store(&sh->stop, 0);
        atomic_store(&sh->done, 0);
        atomic_store(&sh->cmd, CMD_SPIN);
        struct timespec ts = { (time_t) (ns / 1000000000ULL), (long) (ns % 1000000000ULL) };
        nanosleep(&ts, NULL);
        atomic_store(&sh->stop, 1);
        for (int i = 0; i < 10000 && !atomic_load(&sh->done); i++)
                usleep(1000);
        if (atomic_load(&sh->done) != 1)
                return -ETIMEDOUT;
        *worst_ms = (double) sh->max_batch_ns / 1e6;
        *mean_ns = sh->batches ? (double) ns / (double) sh->batches : 0;
        return 0;
}

static int one_run(size_t size, uint64_t reads, struct run *out) {
        struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED)
                return -errno;
        memset(sh, 0, sizeof(*sh));
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child(sh, size);
        int r = 0;
        for (int i = 0; i < 120 * 1000 && atomic_load(&sh->done) == 0; i++)
                usleep(1000);
        if (atomic_load(&sh->done) != 1) {
                fprintf(stderr, "bench-collapse: the child could not set up: %s%s\n", strerror(sh->err),
                        sh->err == EINVAL ? " (PR_THP_DISABLE_EXCEPT_ADVISED needs Linux 6.18)" : "");
                r = -ENODEV;
                goto out;
        }
        memset(out, 0, sizeof(*out));
        out->anon = smaps_kb(pid, "Anonymous");
        out->huge_before = smaps_kb(pid, "AnonHugePages");
        sh->reads = reads;
        if ((r = command(sh, CMD_READS)) < 0)
                goto out;
        out->ns_before = (double) sh->cpu_ns / (double) reads;
        out->wall_ns_before = (double) sh->ns / (double) reads;

        struct mthp_host *h = NULL;
        struct mthp_collapser *c = NULL;
        struct mthp_collapse_budget b;
        struct mthp_collapse_result res;
        mthp_collapse_budget_default(&b);
        b.max_kb_per_tick = UINT64_MAX / 2;
        b.max_usec = UINT64_MAX / 4;
        b.min_interval_usec = 0;
        if ((r = mthp_host_open("/", &h)) < 0 || (r = mthp_collapser_new(h, &b, &c)) < 0)
                goto out_c;
        /* pass 1 remembers; then the baseline stall, then pass 2 while the child reads */
        mthp_collapser_begin_tick(c, 1);
        if ((r = mthp_collapser_run(c, pid, 1, &res)) < 0)
                goto out_c;
        out->candidates = res.candidates;
        /* the baseline: as long as the collapse will take (3 ms a block), nothing collapsing */
        uint64_t est = (uint64_t) res.candidates * 3000000ULL + 20000000ULL;
        if ((r = spin(sh, est, &out->spin_base_ms, &out->batch_ns_base)) < 0)
                goto out_c;

        atomic_store(&sh->stop, 0);
        atomic_store(&sh->done, 0);
        atomic_store(&sh->cmd, CMD_SPIN);
        usleep(20000);
        uint64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        mthp_collapser_begin_tick(c, 2);
        r = mthp_collapser_run(c, pid, 2, &res);
        uint64_t wall = now_ns(CLOCK_MONOTONIC) - w0, cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
        atomic_store(&sh->stop, 1);
        for (int i = 0; i < 10000 && !atomic_load(&sh->done); i++)
                usleep(1000);
        if (r < 0)
                goto out_c;
        out->spin_during_ms = (double) sh->max_batch_ns / 1e6;
        out->batch_ns_during = sh->batches ? (double) (wall + 20000000ULL) / (double) sh->batches : 0;
        out->collapsed = res.collapsed;
        out->failed = res.failed;
        out->collapse_ms = (double) wall / 1e6;
        out->collapse_cpu_ms = (double) cpu / 1e6;
        out->kb_s = wall ? (double) res.kb_collapsed * 1e9 / (double) wall : 0;
        out->huge_after = smaps_kb(pid, "AnonHugePages");
        if ((r = command(sh, CMD_READS)) < 0)
                goto out_c;
        out->ns_after = (double) sh->cpu_ns / (double) reads;
        out->wall_ns_after = (double) sh->ns / (double) reads;
out_c:
        if (r < 0)
                fprintf(stderr, "bench-collapse: collapser: %s\n", strerror(-r));
        mthp_collapser_free(c);
        mthp_host_free(h);
out:
        atomic_store(&sh->cmd, CMD_QUIT);
        for (int i = 0; i < 5000; i++) {
                if (waitpid(pid, NULL, WNOHANG) == pid) {
                        pid = 0;
                        break;
                }
                usleep(1000);
        }
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        munmap(sh, sizeof(*sh));
        return r;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "size", required_argument, NULL, 's' }, { "reads", required_argument, NULL, 'r' },
                { "runs", required_argument, NULL, 'n' }, { "help", no_argument, NULL, 'h' }, {},
        };
        unsigned long size_mb = 1024, runs = 3;
        unsigned long long reads = 20000000;
        int o;
        while ((o = getopt_long(argc, argv, "s:r:n:h", opts, NULL)) != -1) {
                switch (o) {
                case 's': size_mb = strtoul(optarg, NULL, 10); break;
                case 'r': reads = strtoull(optarg, NULL, 10); break;
                case 'n': runs = strtoul(optarg, NULL, 10); break;
                case 'h':
                        printf("Usage: bench-collapse [--size MiB] [--reads N] [--runs N]\n");
                        return 0;
                default: return 2;
                }
        }
        if (size_mb < 4 || size_mb > 65536 || size_mb % 2 || reads == 0 || reads > 10000000000ULL || runs == 0 ||
            runs > 20) {
                fprintf(stderr, "bench-collapse: --size 4..65536 (even), --reads 1..1e10, --runs 1..20\n");
                return 2;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "bench-collapse: needs root (process_madvise needs CAP_SYS_NICE)\n");
                return 77;
        }
        printf("bench-collapse: %lu MiB dense anon faulted at 4K (PR_THP_DISABLE_EXCEPT_ADVISED), "
               "%llu random 8-byte reads before/after, %lu runs\n", size_mb, reads, runs);
        for (unsigned long i = 0; i < runs; i++) {
                struct run x;
                int r = one_run((size_t) size_mb << 20, reads, &x);
                if (r < 0)
                        return 1;
                printf("\nrun %lu: %u candidates, %u collapsed, %u failed\n", i + 1, x.candidates, x.collapsed,
                       x.failed);
                printf("  %-34s %14s %14s %8s\n", "", "before", "after", "ratio");
                printf("  %-34s %14ld %14ld\n", "AnonHugePages kB (of Anonymous)", x.huge_before, x.huge_after);
                printf("  %-34s %14.2f %14.2f %8.3f\n", "random read ns (target CPU time)", x.ns_before,
                       x.ns_after, x.ns_after / x.ns_before);
                printf("  %-34s %14.2f %14.2f %8.3f\n", "random read ns (wall)", x.wall_ns_before,
                       x.wall_ns_after, x.wall_ns_after / x.wall_ns_before);
                printf("  %-34s %14.2f %14.2f %8.3f\n", "reads/s per CPU (M)", 1e3 / x.ns_before,
                       1e3 / x.ns_after, x.ns_before / x.ns_after);
                printf("  %-34s %14s %14s\n", "", "quiet", "collapsing");
                printf("  %-34s %14.2f %14.2f %8.1f\n", "target worst 4096-read batch ms", x.spin_base_ms,
                       x.spin_during_ms, x.spin_base_ms > 0 ? x.spin_during_ms / x.spin_base_ms : 0);
                printf("  %-34s %14.1f %14.1f %8.3f\n", "target mean 4096-read batch us", x.batch_ns_base / 1e3,
                       x.batch_ns_during / 1e3, x.batch_ns_base > 0 ? x.batch_ns_during / x.batch_ns_base : 0);
                printf("  collapse: %.1f ms wall, %.1f ms CPU, %.0f kB/s (%.0f MiB/s), %.2f ms CPU per 2M block\n",
                       x.collapse_ms, x.collapse_cpu_ms, x.kb_s, x.kb_s / 1024,
                       x.collapsed ? x.collapse_cpu_ms / x.collapsed : 0);
                printf("  anonymous kB %ld\n", x.anon);
                fflush(stdout);
        }
        return 0;
}
