// SPDX-License-Identifier: MIT
/*
 * wis-file-fault: the shapes of will-it-scale's page_fault2 and page_fault3,
 * written for mthp-bench (no code taken from will-it-scale).
 *
 * Each of --tasks processes makes its own file of --size bytes in --dir
 * (default /dev/shm, a tmpfs), unlinks it, and then loops: mmap the whole
 * file (page_fault2: MAP_PRIVATE, so each write copies the page into private
 * anon memory; page_fault3: MAP_SHARED, so each write faults in the file's
 * page cache, shmem on a tmpfs), write 0 to the first byte of every 4K page,
 * munmap. One iteration = one page written. page_fault1 (private anon, write
 * 0) is mthp-workload --kind anon --pattern dense --value 0: not repeated
 * here.
 *
 * --anon: no file. Each task maps MAP_SHARED|MAP_ANONYMOUS memory once
 * (shmem the per-size knobs reach) and loops: write 0 to every page, then
 * MADV_DONTNEED the whole of it, which drops the mappings but not the
 * memory: every pass faults again on the folios its first pass made, as a
 * database's new backends fault on a buffer pool filled before (shape 3
 * only).
 *
 * The mapping's address is whatever mmap(NULL) gives, as in will-it-scale;
 * on a tmpfs without huge= the kernel does not align it for large folios,
 * and a tmpfs file only gets them where the address is aligned for the
 * order (DESIGN.md section 2). --align 2M maps at a 2M-aligned address
 * instead (page: a page past one; 1M: 1M past one). The summary says the alignment each task got.
 *
 * Output: with --json one JSON object on stdout:
 *   {"shape":N,"anon":B,"tasks":T,"seconds":S,"iterations":I,"iterations_per_s":R,
 *    "peak_rss_kb":K,"addr_align_kb":[...]}
 * peak_rss_kb: the largest sum over the tasks of VmRSS (anon + file + shmem
 * mapped by them), sampled every 10 ms. A per-second line goes to stderr.
 *
 * Exit: 0 ok, 1 runtime error, 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG "wis-file-fault"
#define MAX_TASKS 64
#define ALIGN_2M (2UL << 20)

struct shared {
        _Atomic uint64_t iters[MAX_TASKS];
        _Atomic uint64_t align_kb[MAX_TASKS];
        _Atomic int ready;
        _Atomic int stop;
        _Atomic int failed;
};

static int64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int usage(FILE *f, int rc) {
        fprintf(f,
                "Usage: " PROG " --shape 2|3 [options]\n"
                "  -S, --shape N      2: MAP_PRIVATE file (page_fault2), 3: MAP_SHARED file (page_fault3)\n"
                "  -d, --dir DIR      where the files are made (default /dev/shm)\n"
                "  -A, --anon         no file: one MAP_SHARED|MAP_ANONYMOUS mapping per task, kept,\n"
                "                     each pass ended by MADV_DONTNEED (shape 3 only)\n"
                "  -z, --size MiB     file and mapping size per task in MiB (default 128)\n"
                "  -t, --tasks N      processes, 1..%d (default 2)\n"
                "  -s, --seconds S    run time, 1..3600 (default 5)\n"
                "  -a, --align A      none (mmap(NULL), as will-it-scale), 2M, page (one page past\n"
                "                     a 2M boundary: aligned for no large folio) or 1M (1M past one:\n"
                "                     aligned for 1M at most, out of khugepaged's reach) (default none)\n"
                "  -j, --json         summary as one JSON object on stdout\n"
                "  -h, --help\n",
                MAX_TASKS);
        return rc;
}

/* Lowest power-of-two alignment of an address, in kB, capped at 2M. */
static uint64_t align_of(uintptr_t a) {
        uint64_t kb = 4;
        while (kb < 2048 && (a & ((kb * 2 * 1024) - 1)) == 0)
                kb *= 2;
        return kb;
}

static void task(struct shared *sh, int idx, int shape, const char *dir, bool anon, size_t size, int align2m) {
        char path[4096];
        long pg = sysconf(_SC_PAGESIZE);
        int fd;

        char *kept = NULL;
        if (anon)
                fd = -1;
        else {
                snprintf(path, sizeof(path), "%s/wis-file-fault.XXXXXX", dir);
                fd = mkstemp(path);
                if (fd < 0 || ftruncate(fd, (off_t) size) < 0) {
                        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
                        sh->failed = 1;
                        _exit(1);
                }
                unlink(path);
        }
        while (!sh->ready && !sh->stop)
                usleep(1000);
        while (!sh->stop) {
                char *c = kept;
                if (!c) {
                        void *hint = NULL;
                        if (align2m) {
                                /* reserve size + 2M (+ a page), keep an aligned window's
                                 * address, or (align2m 2) the one a page past it,
                                 * or (align2m 3) the one 1M past it */
                                char *r = mmap(NULL, size + 2 * ALIGN_2M + (size_t) pg, PROT_NONE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                                if (r == MAP_FAILED) {
                                        sh->failed = 1;
                                        _exit(1);
                                }
                                hint = (void *) ((((uintptr_t) r + ALIGN_2M - 1) & ~(ALIGN_2M - 1)) +
                                                 (align2m == 2   ? (uintptr_t) pg
                                                  : align2m == 3 ? (uintptr_t) ALIGN_2M / 2
                                                                 : 0));
                                munmap(r, size + 2 * ALIGN_2M + (size_t) pg);
                        }
                        c = mmap(hint, size, PROT_READ | PROT_WRITE,
                                 (shape == 2 ? MAP_PRIVATE : MAP_SHARED) | (anon ? MAP_ANONYMOUS : 0) |
                                         (hint ? MAP_FIXED_NOREPLACE : 0),
                                 fd, 0);
                        if (c == MAP_FAILED) {
                                fprintf(stderr, PROG ": mmap: %s\n", strerror(errno));
                                sh->failed = 1;
                                _exit(1);
                        }
                        sh->align_kb[idx] = align_of((uintptr_t) c);
                        if (anon)
                                kept = c; /* mapped once: each pass refaults it */
                }
                for (size_t i = 0; i < size && !sh->stop; i += (size_t) pg) {
                        c[i] = 0;
                        atomic_fetch_add_explicit(&sh->iters[idx], 1, memory_order_relaxed);
                }
                if (!anon)
                        munmap(c, size);
                else if (madvise(c, size, MADV_DONTNEED) < 0) {
                        fprintf(stderr, PROG ": madvise(MADV_DONTNEED): %s\n", strerror(errno));
                        sh->failed = 1;
                        _exit(1);
                }
        }
        _exit(0);
}

static uint64_t rss_kb(pid_t pid) {
        char path[64], line[256];
        uint64_t kb = 0;
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "shape", required_argument, NULL, 'S' }, { "dir", required_argument, NULL, 'd' },
                { "size", required_argument, NULL, 'z' },  { "tasks", required_argument, NULL, 't' },
                { "seconds", required_argument, NULL, 's' }, { "align", required_argument, NULL, 'a' },
                { "anon", no_argument, NULL, 'A' },        { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int shape = 0, tasks = 2, seconds = 5, json = 0, align2m = 0, o;
        bool anon = false;
        long size_mib = 128;
        const char *dir = "/dev/shm";
        char *end;

        while ((o = getopt_long(argc, argv, "S:d:Az:t:s:a:jh", opts, NULL)) != -1) {
                switch (o) {
                case 'S':
                        shape = atoi(optarg);
                        break;
                case 'd':
                        dir = optarg;
                        break;
                case 'A':
                        anon = true;
                        break;
                case 'z':
                        size_mib = strtol(optarg, &end, 10);
                        if (*end || size_mib < 1 || size_mib > 65536)
                                return usage(stderr, 2);
                        break;
                case 't':
                        tasks = atoi(optarg);
                        break;
                case 's':
                        seconds = atoi(optarg);
                        break;
                case 'a':
                        if (strcmp(optarg, "2M") == 0)
                                align2m = 1;
                        else if (strcmp(optarg, "page") == 0)
                                align2m = 2;
                        else if (strcmp(optarg, "1M") == 0)
                                align2m = 3;
                        else if (strcmp(optarg, "none") != 0)
                                return usage(stderr, 2);
                        break;
                case 'j':
                        json = 1;
                        break;
                case 'h':
                        return usage(stdout, 0);
                default:
                        return usage(stderr, 2);
                }
        }
        if (anon && shape != 3) {
                fprintf(stderr, PROG ": --anon is page_fault3's shape on shared anonymous memory: --shape 3 only\n");
                return 2;
        }
        if ((shape != 2 && shape != 3) || tasks < 1 || tasks > MAX_TASKS || seconds < 1 || seconds > 3600 ||
            optind != argc)
                return usage(stderr, 2);

        struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh == MAP_FAILED) {
                perror(PROG ": mmap");
                return 1;
        }
        pid_t pids[MAX_TASKS], self = getpid();
        for (int i = 0; i < tasks; i++) {
                pids[i] = fork();
                if (pids[i] < 0) {
                        perror(PROG ": fork");
                        sh->stop = 1;
                        for (int j = 0; j < i; j++)
                                waitpid(pids[j], NULL, 0);
                        return 1;
                }
                if (pids[i] == 0) {
                        /* a task must not outlive its parent: killed, the
                         * parent never sets stop, and a task looping on would
                         * keep whatever its parent held (a test's lock fd) */
                        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
                                _exit(1);
                        task(sh, i, shape, dir, anon, (size_t) size_mib << 20, align2m);
                }
        }
        usleep(100000); /* files made */
        int64_t t0 = now_ns(), deadline = t0 + (int64_t) seconds * 1000000000LL, next = t0 + 1000000000LL;
        uint64_t peak = 0, last = 0;
        sh->ready = 1;
        while (!sh->failed) {
                int64_t t = now_ns();
                if (t >= deadline)
                        break;
                uint64_t sum = 0;
                for (int i = 0; i < tasks; i++)
                        sum += rss_kb(pids[i]);
                if (sum > peak)
                        peak = sum;
                if (t >= next) {
                        uint64_t it = 0;
                        for (int i = 0; i < tasks; i++)
                                it += sh->iters[i];
                        fprintf(stderr, "t=%lld iterations/s=%llu rss_kb=%llu\n",
                                (long long) ((next - t0) / 1000000000LL), (unsigned long long) (it - last),
                                (unsigned long long) sum);
                        last = it;
                        next += 1000000000LL;
                }
                usleep(10000);
        }
        int64_t t1 = now_ns();
        sh->stop = 1;
        uint64_t total = 0;
        int rc = sh->failed ? 1 : 0;
        for (int i = 0; i < tasks; i++) {
                int st;
                if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        rc = 1;
                total += sh->iters[i];
        }
        double secs = (double) (t1 - t0) / 1e9;
        if (json) {
                printf("{\"shape\":%d,\"anon\":%s,\"tasks\":%d,\"seconds\":%.3f,\"iterations\":%llu,"
                       "\"iterations_per_s\":%.0f,\"peak_rss_kb\":%llu,\"addr_align_kb\":[",
                       shape, anon ? "true" : "false", tasks, secs, (unsigned long long) total, (double) total / secs,
                       (unsigned long long) peak);
                for (int i = 0; i < tasks; i++)
                        printf("%s%llu", i ? "," : "", (unsigned long long) sh->align_kb[i]);
                printf("]}\n");
        } else {
                printf("page_fault%d%s: %d tasks, %.0f iterations/s, peak RSS %llu kB\n", shape,
                       anon ? " (shared anonymous)" : "", tasks,
                       (double) total / secs, (unsigned long long) peak);
        }
        return rc;
}
