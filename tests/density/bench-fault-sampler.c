/* SPDX-License-Identifier: MIT */
/* Cost of the page-fault address sampler (lib/faults.c). Not a test.
 *
 *   bench-fault-sampler FREQ -- CMD [ARGS...]
 *       with FREQ > 0: a sampler tuned for FREQ samples a second per CPU,
 *       warmed up (until a pass gets 10 own samples) and enabled, drained
 *       (and so retuned) once a second while CMD runs; FREQ 0: CMD alone. CMD's stdout passes through;
 *       the sample count goes to stderr.
 *   bench-fault-sampler --inproc FREQ [SECONDS]
 *       ns (wall and CPU) per 4K anon fault of this process (64 MiB written, MADV_DONTNEED,
 *       again) for SECONDS (2), with a sampler at FREQ (0: none).
 *   bench-fault-sampler --drain FREQ [REPS]
 *       drain() time with the rings holding about FREQ samples: 1 s of faults,
 *       disable, time one drain; REPS (10) times, each line one drain.
 * Needs CAP_PERFMON or root. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mthp/faults.h"

#define MAX_SAMPLES (1u << 20)
#define LEN (64u << 20)

static struct mthp_fault_sample *buf;

static double now_s(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

static size_t pass(unsigned char *p) {
        for (size_t i = 0; i < LEN; i += 4096)
                ((volatile unsigned char *) p)[i] = 0;
        madvise(p, LEN, MADV_DONTNEED);
        return LEN / 4096;
}

static size_t drain(struct mthp_fault_sampler *s, size_t *own, uint64_t *lost) {
        size_t n = 0;
        if (mthp_fault_sampler_drain(s, buf, MAX_SAMPLES, &n, lost) < 0)
                return 0;
        if (own) {
                *own = 0;
                for (size_t i = 0; i < n; i++)
                        *own += buf[i].pid == getpid();
        }
        return n;
}

static struct mthp_fault_sampler *open_warm(unsigned freq, unsigned char *p) {
        struct mthp_fault_sampler *s = NULL;
        uint64_t lost = 0;
        size_t own = 0;
        int r = mthp_fault_sampler_new(freq, 64, &s);
        if (r < 0) {
                fprintf(stderr, "mthp_fault_sampler_new: %s\n", strerror(-r));
                exit(1);
        }
        mthp_fault_sampler_enable(s, true);
        for (double t0 = now_s(); now_s() - t0 < 10;) {
                pass(p);
                drain(s, &own, &lost);
                if (own >= 10)
                        break;
        }
        return s;
}

int main(int argc, char **argv) {
        buf = calloc(MAX_SAMPLES, sizeof(*buf));
        unsigned char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (!buf || p == MAP_FAILED || argc < 3)
                return 2;
        madvise(p, LEN, MADV_NOHUGEPAGE);
        uint64_t lost = 0;
        if (!strcmp(argv[1], "--inproc")) {
                unsigned freq = (unsigned) atoi(argv[2]);
                double secs = argc > 3 ? atof(argv[3]) : 2;
                struct mthp_fault_sampler *s = freq ? open_warm(freq, p) : NULL;
                size_t faults = 0, samples = 0;
                struct timespec c0, c1;
                double t0 = now_s(), t;
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
                while ((t = now_s()) - t0 < secs)
                        faults += pass(p);
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
                double cpu = (double) (c1.tv_sec - c0.tv_sec) + (double) (c1.tv_nsec - c0.tv_nsec) / 1e9;
                if (s)
                        samples = drain(s, NULL, &lost);
                printf("freq %u: %.1f ns/fault (%.1f CPU), %zu faults, %zu samples, lost %llu\n", freq,
                       (t - t0) * 1e9 / (double) faults, cpu * 1e9 / (double) faults, faults, samples,
                       (unsigned long long) lost);
                mthp_fault_sampler_free(s);
                return 0;
        }
        if (!strcmp(argv[1], "--drain")) {
                unsigned freq = (unsigned) atoi(argv[2]);
                int reps = argc > 3 ? atoi(argv[3]) : 10;
                struct mthp_fault_sampler *s = open_warm(freq, p);
                for (int i = 0; i < reps; i++) {
                        mthp_fault_sampler_enable(s, true);
                        for (double t0 = now_s(); now_s() - t0 < 1;)
                                pass(p);
                        mthp_fault_sampler_enable(s, false);
                        double t0 = now_s();
                        size_t n = drain(s, NULL, &lost);
                        printf("drain: %zu samples in %.1f us\n", n, (now_s() - t0) * 1e6);
                }
                mthp_fault_sampler_free(s);
                return 0;
        }
        unsigned freq = (unsigned) atoi(argv[1]);
        if (argc < 4 || strcmp(argv[2], "--"))
                return 2;
        struct mthp_fault_sampler *s = freq ? open_warm(freq, p) : NULL;
        if (s)
                drain(s, NULL, &lost);
        pid_t pid = fork();
        if (pid == 0) {
                execvp(argv[3], argv + 3);
                _exit(127);
        }
        size_t samples = 0;
        int status;
        while (waitpid(pid, &status, WNOHANG) == 0) {
                usleep(s ? 1000000 : 100000);
                if (s)
                        samples += drain(s, NULL, &lost);
        }
        if (s)
                samples += drain(s, NULL, &lost);
        fprintf(stderr, "freq %u: %zu samples, lost %llu\n", freq, samples, (unsigned long long) lost);
        mthp_fault_sampler_free(s);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
