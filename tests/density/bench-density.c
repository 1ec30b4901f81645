/* SPDX-License-Identifier: MIT */
/* Cost of the density sampler: a child maps N GiB of anon memory, then the
 * sampler, with its default per-tick budget, ticks over it.
 *
 *   bench-density [GiB (4)] [dense|sparse|zero|thp|shared|shared-sparse (dense)] [ticks (20)] [host]
 *
 * shared: the child fills a MAP_SHARED|MAP_ANONYMOUS segment, then forks a
 * grandchild that maps every 4th page of it, which is the one sampled (its
 * shmem: PTEs sparse, the segment's page cache full). shared-sparse: the
 * same, with every 16th page written by either.
 * With "host" the sampler is not restricted to the child: it chooses among
 * all processes by fault rate, as mthpd does, and the child is one of them.
 * "sampled X GiB" is the process memory the sample stands for (the child's
 * resident anon + shmem); the tick examines only a bounded part of it. For
 * comparison the last line reads every populated window once (a census with
 * the budget lifted): the cost of not sampling. Needs root. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
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

#define MiB (1ULL << 20)
#define GiB (1ULL << 30)

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* churn: after mapping, keep faulting on a small side mapping, so that a
 * host-wide sampler ranks the child first */
static pid_t spawn(uint64_t len, const char *mode, bool churn) {
        int fds[2];
        if (pipe(fds) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid != 0) {
                char c[sizeof(pid_t)];
                close(fds[1]);
                ssize_t n = read(fds[0], c, sizeof(c));
                close(fds[0]);
                if (n == sizeof(pid_t))   /* shared: the grandchild is sampled */
                        memcpy(&pid, c, sizeof(pid));
                return n >= 1 ? pid : -EIO;
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (strncmp(mode, "shared", 6) == 0) {
                uint64_t a = strcmp(mode, "shared") == 0 ? 4096 : 16 * 4096, b = strcmp(mode, "shared") == 0 ? 4 * 4096 : a;
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
                char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        _exit(1);
                for (uint64_t off = 0; off < len; off += a)
                        m[off] = 1;
                if (fork() != 0)
                        for (;;)
                                pause();   /* holds the segment; dies with us */
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                for (uint64_t off = 0; off < len; off += b)
                        m[off] = 1;
                pid_t self = getpid();
                if (write(fds[1], &self, sizeof(self)) != sizeof(self))
                        _exit(1);
                for (;;)
                        pause();
        }
        bool thp = strcmp(mode, "thp") == 0;
        if (!thp)
                prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        char *m = mmap(NULL, len + 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                _exit(1);
        m = (char *) (((uintptr_t) m + 2 * MiB - 1) & ~(uintptr_t) (2 * MiB - 1));
        if (thp)
                madvise(m, len, MADV_HUGEPAGE);
        if (strcmp(mode, "zero") == 0)
                memset(m, 0, len);
        uint64_t stride = strcmp(mode, "sparse") == 0 || strcmp(mode, "zero") == 0 ? 64 * 1024 : 4096;
        for (uint64_t off = 0; off < len; off += stride)
                m[off] = 1;
        if (write(fds[1], "r", 1) != 1)
                _exit(1);
        while (!churn)
                pause();
        for (;;) {
                char *c = mmap(NULL, 16 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (c == MAP_FAILED)
                        _exit(1);
                for (uint64_t off = 0; off < 16 * MiB; off += 4096)
                        c[off] = 1;
                munmap(c, 16 * MiB);
        }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static double rss_gib(const struct mthp_density_report *rep) {
        return (double) (rep->kind[MTHP_ANON].rss_bytes + rep->kind[MTHP_SHMEM].rss_bytes) / GiB;
}

int main(int argc, char **argv) {
        double gib = argc > 1 ? atof(argv[1]) : 4;
        const char *mode = argc > 2 ? argv[2] : "dense";
        int ticks = argc > 3 ? atoi(argv[3]) : 20;
        int kind = strncmp(mode, "shared", 6) == 0 ? MTHP_SHMEM : MTHP_ANON;
        bool host_wide = argc > 4 && strcmp(argv[4], "host") == 0;
        static struct mthp_caps caps;
        unsigned sizes[MTHP_SIZES_MAX], n = 0;
        struct mthp_host *h;
        struct mthp_density_sampler *s;
        struct mthp_density_report rep;
        struct mthp_density_budget b;
        int r;

        if (gib <= 0 || ticks <= 0 || ticks > 10000) {
                fprintf(stderr, "usage: %s [GiB] [dense|sparse|zero|thp|shared|shared-sparse] [ticks]\n", argv[0]);
                return 2;
        }
        if ((r = mthp_host_open("/", &h)) < 0) {
                fprintf(stderr, "host: %s\n", strerror(-r));
                return 1;
        }
        /* the sizes this host offers (read only); all of them are sampled */
        if (mthp_probe(h, &caps) == 0)
                for (unsigned i = 0; i < caps.n_sizes; i++)
                        if (caps.sizes[i].kb >= 8 && caps.sizes[i].kb <= MTHP_DENSITY_MAX_KB)
                                sizes[n++] = caps.sizes[i].kb;
        if (n == 0) {
                sizes[n++] = 16;
                sizes[n++] = 64;
                sizes[n++] = 2048;
        }

        uint64_t len = (uint64_t) (gib * (double) GiB) & ~(uint64_t) (2 * MiB - 1);
        uint64_t t = now_usec();
        pid_t pid = spawn(len, mode, host_wide);
        if (pid < 0) {
                fprintf(stderr, "child: %s\n", strerror(-pid));
                return 1;
        }
        fprintf(stderr, "child %d: %.2f GiB %s ready in %.1f s\n", (int) pid, (double) len / GiB, mode,
                (double) (now_usec() - t) / 1e6);

        mthp_density_budget_default(&b);
        b.measure_thp_disabled = true;   /* the child keeps 4K folios with PR_SET_THP_DISABLE */
        struct mthp_density_target target = { .pid = pid };
        if ((r = mthp_density_new(h, sizes, n, &b, &s)) < 0 ||
            (!host_wide && (r = mthp_density_set_targets(s, &target, 1)) < 0)) {
                fprintf(stderr, "sampler: %s\n", strerror(-r));
                return 1;
        }
        uint64_t *us = calloc((size_t) ticks, sizeof(*us)), pages = 0, reads = 0, slowest = 0;
        struct mthp_density_proc *slow = calloc(b.max_procs, sizeof(*slow));
        struct mthp_density_report slow_rep = { 0 };
        double represented = 0, zsum = 0, csum = 0;
        int zn = 0, cn = 0;
        for (int i = 0; i < ticks && us; i++) {
                t = now_usec();
                if ((r = mthp_density_tick(s, t, &rep)) < 0 || (!host_wide && rep.n_procs != 1)) {
                        fprintf(stderr, "tick: %s, %u processes\n", strerror(r < 0 ? -r : 0), rep.n_procs);
                        return 1;
                }
                us[i] = now_usec() - t;
                if (us[i] > slowest && slow) {   /* keep the slowest tick to show where its time went */
                        slowest = us[i];
                        slow_rep = rep;
                        memcpy(slow, rep.procs, rep.n_procs * sizeof(*slow));
                }
                pages += rep.pages_examined;
                reads += rep.pages_read;
                represented = rss_gib(&rep);
                const struct mthp_density_size *big = &rep.kind[kind].size[n - 1];
                if (big->read_pages)
                        zsum += big->zero_fraction, zn++;
                if (big->blocks)
                        csum += big->coverage, cn++;
                usleep(10000);
        }
        const struct mthp_density_size *z = &rep.kind[kind].size[0];
        if (host_wide)
                printf("host-wide: %u processes listed, %u scanned, %u sampled in the last tick\n", rep.procs_listed,
                       rep.procs_scanned, rep.n_procs);
        printf("sizes %uK..%uK; budget %llu pages/process, %u reads/window, %llu us/tick\n", sizes[0], sizes[n - 1],
               (unsigned long long) b.max_pages_per_proc, b.reads_per_window, (unsigned long long) b.max_usec);
        printf("last tick: %u windows, coverage %uK %.4f; mean over ticks at %uK: coverage %.4f, zero fraction %.4f\n",
               rep.kind[kind].windows, z->kb, z->coverage, sizes[n - 1], cn ? csum / cn : NAN,
               zn ? zsum / zn : NAN);
        qsort(us, (size_t) ticks, sizeof(*us), cmp_u64);
        double med = (double) us[ticks / 2] / 1000, max = (double) us[ticks - 1] / 1000;
        double examined = (double) (pages / (uint64_t) ticks) * 4096 / GiB;
        printf("per tick: examined %.3f GiB of windows + %llu subpages read; median %.3f ms, max %.3f ms\n",
               examined, (unsigned long long) (reads / (uint64_t) ticks), med, max);
        printf("slowest tick: %.3f ms (tick's own count %.3f ms): %u listed, %u stat read, %u sampled, %u skipped%s\n",
               (double) slowest / 1000, (double) slow_rep.usec / 1000, slow_rep.procs_listed, slow_rep.procs_scanned,
               slow_rep.n_procs, slow_rep.procs_skipped, slow_rep.budget_exhausted ? ", budget exhausted" : "");
        for (unsigned i = 0; slow && i < slow_rep.n_procs; i++)
                printf("  %7d %-16s %9.0f flt/s %6.1f MiB anon: %3u windows, %4llu reads, %.3f ms\n", (int) slow[i].pid,
                       slow[i].comm, slow[i].minflt_rate, (double) slow[i].kind[MTHP_ANON].rss_bytes / MiB,
                       slow[i].kind[MTHP_ANON].windows + slow[i].kind[MTHP_SHMEM].windows,
                       (unsigned long long) slow[i].pages_read, (double) slow[i].usec / 1000);
        printf("sampled %.2f GiB in %.3f ms = %.3f ms/GiB\n", represented, med, med / represented);
        printf("  (per GiB examined: %.2f ms/GiB)\n", med / examined);
        mthp_density_free(s);

        /* the budget lifted: every populated window read once */
        b.max_pages_per_proc = b.max_pages_per_tick = UINT64_MAX / 4;
        b.max_usec = 60000000;
        if (mthp_density_new(h, sizes, n, &b, &s) == 0 && mthp_density_set_targets(s, &target, 1) == 0) {
                t = now_usec();
                if (mthp_density_tick(s, t, &rep) == 0 && rep.n_procs == 1) {
                        double ms = (double) (now_usec() - t) / 1000;
                        printf("census (no budget): %u windows, %.2f GiB examined + %llu read in %.1f ms = %.2f ms/GiB\n",
                               rep.kind[kind].windows, (double) rep.pages_examined * 4096 / GiB,
                               (unsigned long long) rep.pages_read, ms, ms / rss_gib(&rep));
                }
                mthp_density_free(s);
        }

        free(us);
        free(slow);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        mthp_host_free(h);
        return 0;
}
