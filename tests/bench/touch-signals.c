/* SPDX-License-Identifier: MIT */
/*
 * touch-signals: after a raise, which kernel signal tells an untouched
 * subpage of a large folio from one written with zeros? (issue 12, item 1)
 *
 * The sampler's zero-subpage share (lib/density.c) cannot: content is not
 * use. This tool sets hugepages-64kB/enabled to "always" (under
 * /tmp/mthpd-realkernel.lock; the value is saved first, put back on every
 * exit path and checked), then runs mthp-workload writers one at a time,
 * 64 MiB private anon each: dense (every 4K page) and sparse (one page per
 * 64K), writing 0 or 1, held and re-touched (--hold), touched once and left
 * (--once), or mapped/written/unmapped in a loop (churn, like will-it-scale
 * page_fault1); and held with MADV_HUGEPAGE (2M folios, PMD-mapped, where
 * the global enabled is madvise or always). For each writer it runs a baseline phase (nothing applied),
 * then each candidate for TICKS ticks of TICK_MS:
 *
 *   a  clear_refs "1" at the tick's start, smaps Referenced / Rss at its end
 *      (anon mappings of 16 MiB or more, which are the workload's region);
 *   b  clear_refs "4" (soft-dirty) at the start, PAGEMAP_SCAN
 *      PAGE_IS_SOFT_DIRTY pages / present pages at the end;
 *   c  /sys/kernel/mm/page_idle/bitmap: reported absent or present (this
 *      kernel has no CONFIG_IDLE_PAGE_TRACKING; the kernel marks idle per
 *      folio, see docs/signals.md);
 *   d  perf_event_open software page-fault samples, period 1, with
 *      PERF_SAMPLE_ADDR, on every thread of the writer: distinct faulted 4K
 *      pages / (distinct 64K blocks faulted x 16);
 *   a x100: clear_refs "1" every 10 ms (no estimate): the side effect of (a)
 *      on the writer, amplified a hundredfold against a 1 s tick.
 *
 * --at-4k leaves the knob alone (boot default: 64K never), for the view
 * before a raise.
 * Per candidate and writer it prints the estimated used fraction (mean of
 * the ticks) against the truth (pages the writer touches per pass / pages
 * present: what a 4K-folio run would hold), the cost per tick in the
 * sampler (wall us, and us per MiB of the writer's RSS), and the side effect
 * on the writer: minor faults/s and pages written/s against the baseline.
 * The "fresh" column is Referenced / Rss before any clear_refs: x86 installs
 * PTEs with the Accessed bit set, so a freshly faulted folio reads used
 * whole.
 *
 * Not a test (root; writes a real knob). Build, then
 *   ./build/tests/bench/touch-signals [--ticks N] [--tick-ms MS]
 *       [--workload PATH] [--size MiB] [--at-4k]
 * Exit: 0 ok, 1 failure (also: a knob not restored), 2 usage, 77 cannot run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/pagemap-scan.h"

#ifndef PAGE_IS_SOFT_DIRTY
#define PAGE_IS_SOFT_DIRTY (1 << 7)
#endif

#define KNOB "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
#define LOCK_PATH "/tmp/mthpd-realkernel.lock"
#define PAGE 4096ull
#define BLOCK (64ull << 10)
#define MIN_VMA (16ull << 20)
#define MAX_THREADS 16
#define RING_PAGES 256 /* data pages per perf ring (1 MiB) */
#define MAX_SEEN (1u << 18)

static volatile sig_atomic_t g_stop;
static char g_saved[32];
static bool g_knob_written;
static pid_t g_child = -1;
static bool g_at_4k;

static void on_signal(int sig) {
        (void) sig;
        g_stop = 1;
}

static uint64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ull + (uint64_t) ts.tv_nsec / 1000;
}

static int read_file(const char *path, char *buf, size_t n) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t r = read(fd, buf, n - 1);
        int e = errno;
        close(fd);
        if (r < 0)
                return -e;
        buf[r] = 0;
        return (int) r;
}

static int write_str(const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t r = write(fd, s, strlen(s));
        int e = errno;
        close(fd);
        return r < 0 ? -e : 0;
}

/* The bracketed word of a selection knob. */
static int knob_get(char *out, size_t n) {
        char buf[256];
        int r = read_file(KNOB, buf, sizeof(buf));
        if (r < 0)
                return r;
        char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
        if (!a || !b || (size_t) (b - a) >= n)
                return -EINVAL;
        memcpy(out, a + 1, (size_t) (b - a - 1));
        out[b - a - 1] = 0;
        return 0;
}

/* Puts the saved value back and checks it; 0 or -errno. */
static int knob_restore(void) {
        char now[32];
        if (!g_knob_written)
                return 0;
        int r = write_str(KNOB, g_saved);
        if (r < 0)
                fprintf(stderr, "touch-signals: restoring %s to %s: %s\n", KNOB, g_saved, strerror(-r));
        if (knob_get(now, sizeof(now)) < 0 || strcmp(now, g_saved) != 0) {
                fprintf(stderr, "touch-signals: FAIL: %s is not back to %s\n", KNOB, g_saved);
                return -EIO;
        }
        g_knob_written = false;
        fprintf(stderr, "touch-signals: %s restored to %s (checked)\n", KNOB, g_saved);
        return 0;
}

struct proc_stat {
        uint64_t minflt;
};

static int read_minflt(pid_t pid, uint64_t *minflt) {
        char path[64], buf[1024];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int r = read_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        char *p = strrchr(buf, ')');
        if (!p)
                return -EINVAL;
        /* after ')': state ppid pgrp session tty tpgid flags minflt */
        unsigned long long v;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %llu", &v) != 1)
                return -EINVAL;
        *minflt = v;
        return 0;
}

struct vmas {
        unsigned n;
        uint64_t start[8], end[8];
        uint64_t rss_kb, ref_kb;
        bool sd_flag;   /* a region's VmFlags has "sd" (CONFIG_MEM_SOFT_DIRTY) */
};

/* The anon mappings of MIN_VMA or more (the writer's region) from smaps. */
static int read_smaps(pid_t pid, struct vmas *v) {
        char path[64], line[512];
        snprintf(path, sizeof(path), "/proc/%d/smaps", (int) pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        memset(v, 0, sizeof(*v));
        bool take = false;
        while (fgets(line, sizeof(line), f)) {
                unsigned long long s, e, kb;
                char name[256];
                if (sscanf(line, "%llx-%llx", &s, &e) == 2 && strchr(line, ' ')) {
                        /* header: start-end perms offset dev inode [name] */
                        name[0] = 0;
                        sscanf(line, "%*s %*s %*s %*s %*s %255s", name);
                        take = e - s >= MIN_VMA && name[0] == 0;
                        if (take && v->n < 8) {
                                v->start[v->n] = s;
                                v->end[v->n] = e;
                                v->n++;
                        }
                } else if (take && sscanf(line, "Rss: %llu kB", &kb) == 1) {
                        v->rss_kb += kb;
                } else if (take && sscanf(line, "Referenced: %llu kB", &kb) == 1) {
                        v->ref_kb += kb;
                } else if (take && !strncmp(line, "VmFlags:", 8) && strstr(line, " sd")) {
                        v->sd_flag = true;
                }
        }
        fclose(f);
        return 0;
}

/* Present and soft-dirty pages of the region (PAGEMAP_SCAN). */
static int scan_soft_dirty(pid_t pid, const struct vmas *v, uint64_t *present, uint64_t *sd) {
        char path[64];
        static struct page_region vec[4096];
        snprintf(path, sizeof(path), "/proc/%d/pagemap", (int) pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *present = *sd = 0;
        for (unsigned i = 0; i < v->n; i++) {
                uint64_t at = v->start[i];
                for (unsigned guard = 0; at < v->end[i] && guard < 100000; guard++) {
                        uint64_t walk_end = v->end[i];
                        int n = mthp_pagemap_scan(fd, at, v->end[i], vec, 4096, 0, PAGE_IS_PRESENT,
                                                  PAGE_IS_PRESENT | PAGE_IS_SOFT_DIRTY, &walk_end);
                        if (n < 0) {
                                close(fd);
                                return n;
                        }
                        for (int k = 0; k < n; k++) {
                                uint64_t pages = (vec[k].end - vec[k].start) / PAGE;
                                *present += pages;
                                if (vec[k].categories & PAGE_IS_SOFT_DIRTY)
                                        *sd += pages;
                        }
                        if (walk_end <= at)
                                break;
                        at = walk_end;
                }
        }
        close(fd);
        return 0;
}

/* ---- perf page-fault samples ---- */
struct perf {
        int n;
        int fd[MAX_THREADS];
        void *ring[MAX_THREADS];
        uint64_t samples, lost;
        /* distinct faulted pages and 64K blocks this tick (open addressing,
         * with the used slots listed so that clearing costs what was added) */
        uint64_t *seen, *seen_list, *blk, *blk_list;
        unsigned n_seen, n_blk;
};

static int perf_open(struct perf *p, pid_t pid) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        DIR *d = opendir(path);
        if (!d)
                return -errno;
        struct dirent *de;
        p->n = 0;
        while ((de = readdir(d)) && p->n < MAX_THREADS) {
                int tid = atoi(de->d_name);
                if (tid <= 0)
                        continue;
                struct perf_event_attr a = {
                        .type = PERF_TYPE_SOFTWARE,
                        .size = sizeof(a),
                        .config = PERF_COUNT_SW_PAGE_FAULTS_MIN,
                        .sample_period = 1,
                        .sample_type = PERF_SAMPLE_ADDR,
                        .exclude_kernel = 0,
                        .wakeup_events = 0,
                };
                int fd = (int) syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        int e = errno;
                        closedir(d);
                        return -e;
                }
                void *r = mmap(NULL, (RING_PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (r == MAP_FAILED) {
                        int e = errno;
                        close(fd);
                        closedir(d);
                        return -e;
                }
                p->fd[p->n] = fd;
                p->ring[p->n] = r;
                p->n++;
        }
        closedir(d);
        return p->n ? 0 : -ESRCH;
}

static void perf_close(struct perf *p) {
        for (int i = 0; i < p->n; i++) {
                munmap(p->ring[i], (RING_PAGES + 1) * PAGE);
                close(p->fd[i]);
        }
        p->n = 0;
}

/* Inserts key+1 into an open-addressing table of MAX_SEEN slots, also
 * listing it in list[]; returns true if it was new. */
static bool set_add(uint64_t *tab, uint64_t *list, unsigned *n, uint64_t key) {
        uint64_t h = (key * 0x9E3779B97F4A7C15ull) >> 44 & (MAX_SEEN - 1);
        for (unsigned k = 0; k < MAX_SEEN; k++, h = (h + 1) & (MAX_SEEN - 1)) {
                if (tab[h] == key + 1)
                        return false;
                if (tab[h] == 0) {
                        if (*n >= MAX_SEEN / 2)
                                return false;
                        tab[h] = key + 1;
                        list[(*n)++] = h;
                        return true;
                }
        }
        return false;
}

static void set_clear(uint64_t *tab, const uint64_t *list, unsigned *n) {
        for (unsigned i = 0; i < *n; i++)
                tab[list[i]] = 0;
        *n = 0;
}

static void seen_add(struct perf *p, uint64_t page) {
        if (set_add(p->seen, p->seen_list, &p->n_seen, page))
                set_add(p->blk, p->blk_list, &p->n_blk, page / (BLOCK / PAGE));
}

static void perf_drain(struct perf *p) {
        for (int i = 0; i < p->n; i++) {
                struct perf_event_mmap_page *m = p->ring[i];
                const unsigned char *data = (const unsigned char *) p->ring[i] + PAGE;
                uint64_t size = RING_PAGES * PAGE;
                uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
                uint64_t tail = m->data_tail;
                while (tail < head) {
                        struct perf_event_header h;
                        unsigned char rec[64];
                        for (size_t b = 0; b < sizeof(h); b++)
                                ((unsigned char *) &h)[b] = data[(tail + b) % size];
                        if (h.size < sizeof(h) || h.size > sizeof(rec))
                                break;
                        for (size_t b = 0; b < h.size; b++)
                                rec[b] = data[(tail + b) % size];
                        if (h.type == PERF_RECORD_SAMPLE) {
                                uint64_t addr;
                                memcpy(&addr, rec + sizeof(h), sizeof(addr));
                                p->samples++;
                                seen_add(p, addr / PAGE);
                        } else if (h.type == PERF_RECORD_LOST) {
                                uint64_t lost;
                                memcpy(&lost, rec + sizeof(h) + 8, sizeof(lost));
                                p->lost += lost;
                        }
                        tail += h.size;
                }
                __atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
        }
}

/* distinct faulted pages / (distinct 64K blocks x 16); resets the tick's sets */
static double perf_estimate(struct perf *p, uint64_t *pages_out, uint64_t *blocks_out) {
        uint64_t pages = p->n_seen, blocks = p->n_blk;
        set_clear(p->seen, p->seen_list, &p->n_seen);
        set_clear(p->blk, p->blk_list, &p->n_blk);
        *pages_out = pages;
        *blocks_out = blocks;
        return blocks ? (double) pages / (double) (blocks * (BLOCK / PAGE)) : NAN;
}

/* ---- writers ---- */
struct writer {
        const char *name;
        const char *pattern; /* dense | sparse */
        const char *value;   /* "0" | "1" */
        const char *mode;    /* hold | once | churn */
        bool thp;            /* --madvise hugepage: 2M folios, PMD-mapped (global madvise) */
};

static const struct writer WRITERS[] = {
        { "dense-0-hold", "dense", "0", "hold", false },   { "dense-1-hold", "dense", "1", "hold", false },
        { "sparse-0-hold", "sparse", "0", "hold", false }, { "sparse-1-hold", "sparse", "1", "hold", false },
        { "dense-0-once", "dense", "0", "once", false },   { "sparse-0-once", "sparse", "0", "once", false },
        { "dense-0-churn", "dense", "0", "churn", false }, { "sparse-0-churn", "sparse", "0", "churn", false },
        { "dense-1-churn", "dense", "1", "churn", false },
        { "dense-0-hold-2M", "dense", "0", "hold", true }, { "sparse-0-hold-2M", "sparse", "0", "hold", true },
};
#define N_WRITERS (sizeof(WRITERS) / sizeof(WRITERS[0]))

static pid_t spawn(const char *workload, const struct writer *w, unsigned size_mib, unsigned seconds, int *out_fd) {
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                char sz[32], secs[32];
                snprintf(sz, sizeof(sz), "%uM", size_mib);
                snprintf(secs, sizeof(secs), "%u", seconds);
                dup2(pfd[1], 1);
                const char *argv[20] = { workload, "--kind", "anon", "--pattern", w->pattern, "--size", sz,
                                         "--seconds", secs, "--value", w->value, "--stride", "64K" };
                int n = 13;
                if (!strcmp(w->mode, "hold"))
                        argv[n++] = "--hold";
                else if (!strcmp(w->mode, "once"))
                        argv[n++] = "--once";
                if (w->thp) {
                        argv[n++] = "--madvise";
                        argv[n++] = "hugepage";
                }
                argv[n] = NULL;
                execv(workload, (char *const *) argv);
                _exit(127);
        }
        close(pfd[1]);
        fcntl(pfd[0], F_SETFL, O_NONBLOCK);
        *out_fd = pfd[0];
        return pid;
}

/* Reads the writer's per-second lines; adds pages_per_s to *sum. */
static void drain_lines(int fd, char *buf, size_t *len, size_t cap, double *sum, unsigned *n) {
        for (;;) {
                ssize_t r = read(fd, buf + *len, cap - 1 - *len);
                if (r <= 0)
                        break;
                *len += (size_t) r;
                buf[*len] = 0;
                char *nl;
                while ((nl = strchr(buf, '\n'))) {
                        *nl = 0;
                        unsigned long long pps;
                        char *q = strstr(buf, "pages_per_s=");
                        if (q && !strncmp(buf, "t=", 2) && sscanf(q, "pages_per_s=%llu", &pps) == 1) {
                                *sum += (double) pps;
                                (*n)++;
                        }
                        size_t rest = *len - (size_t) (nl + 1 - buf);
                        memmove(buf, nl + 1, rest);
                        *len = rest;
                        buf[rest] = 0;
                }
                if (*len >= cap - 1)
                        *len = 0;
        }
}

enum cand { C_BASE, C_REFS, C_SOFTDIRTY, C_PERF, C_STORM, N_CAND };
static const char *CAND_NAME[N_CAND] = { "baseline", "a:clear_refs1+Referenced", "b:clear_refs4+softdirty",
                                         "d:perf-fault-addr", "a x100: clear_refs1/10ms" };

struct result {
        double est_sum, truth_sum, cost_us_sum, rss_mib_sum;
        unsigned n_est, n_ticks;
        uint64_t minflt;
        double pps_sum;
        unsigned pps_n;
        uint64_t phase_us;
        char note[96];
};

static double used_truth(const struct writer *w, const struct vmas *v, unsigned size_mib) {
        double step = !strcmp(w->pattern, "dense") ? (double) PAGE : (double) BLOCK;
        if (!strcmp(w->mode, "churn")) /* raised: every 64K block of a pass is one folio */
                return g_at_4k ? 1.0 : (double) PAGE / step;
        if (v->rss_kb == 0)
                return NAN;
        double touched = (double) size_mib * 1048576.0 / step;
        double t = touched * (double) PAGE / ((double) v->rss_kb * 1024.0);
        return t > 1 ? 1 : t;
}

static void sleep_until(uint64_t t_us, struct perf *p, int out_fd, char *lb, size_t *ll, struct result *r) {
        while (!g_stop) {
                uint64_t now = now_us();
                if (now >= t_us)
                        break;
                uint64_t d = t_us - now;
                if (d > 20000)
                        d = 20000;
                struct timespec ts = { 0, (long) d * 1000 };
                nanosleep(&ts, NULL);
                if (p && p->n) {
                        uint64_t t0 = now_us();
                        perf_drain(p);
                        r->cost_us_sum += (double) (now_us() - t0);
                }
                drain_lines(out_fd, lb, ll, 4096, &r->pps_sum, &r->pps_n);
        }
}

static int run_writer(const char *workload, const struct writer *w, unsigned size_mib, unsigned ticks,
                      unsigned tick_ms, struct result res[N_CAND], double *fresh) {
        unsigned warm_ms = 2000;
        unsigned seconds = (warm_ms + N_CAND * ticks * tick_ms) / 1000 + 4;
        int out_fd;
        char lb[4096];
        size_t ll = 0;
        struct result junk = { 0 };
        char path[64];
        pid_t pid = spawn(workload, w, size_mib, seconds, &out_fd);
        if (pid < 0)
                return -errno;
        g_child = pid;
        memset(res, 0, sizeof(struct result) * N_CAND);
        *fresh = NAN;
        /* fresh: Referenced / Rss before any clear, once the first pass is in */
        sleep_until(now_us() + warm_ms * 1000ull, NULL, out_fd, lb, &ll, &junk);
        struct vmas v;
        if (read_smaps(pid, &v) == 0 && v.rss_kb)
                *fresh = (double) v.ref_kb / (double) v.rss_kb;
        snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int) pid);
        struct perf pf = { 0 };
        pf.seen = calloc(MAX_SEEN, sizeof(uint64_t));
        pf.seen_list = calloc(MAX_SEEN, sizeof(uint64_t));
        pf.blk = calloc(MAX_SEEN, sizeof(uint64_t));
        pf.blk_list = calloc(MAX_SEEN, sizeof(uint64_t));
        if (!pf.seen || !pf.seen_list || !pf.blk || !pf.blk_list)
                return -ENOMEM;
        for (int c = 0; c < N_CAND && !g_stop; c++) {
                struct result *r = &res[c];
                uint64_t f0 = 0, f1 = 0, t_phase = now_us();
                read_minflt(pid, &f0);
                drain_lines(out_fd, lb, &ll, sizeof(lb), &junk.pps_sum, &junk.pps_n);
                if (c == C_PERF) {
                        uint64_t t0 = now_us();
                        int e = perf_open(&pf, pid);
                        r->cost_us_sum += (double) (now_us() - t0);
                        if (e < 0)
                                snprintf(r->note, sizeof(r->note), "perf_event_open: %s", strerror(-e));
                }
                for (unsigned t = 0; t < ticks && !g_stop; t++) {
                        uint64_t t_start = now_us();
                        if (c == C_REFS || c == C_SOFTDIRTY) {
                                int e = write_str(path, c == C_REFS ? "1" : "4");
                                if (e < 0)
                                        snprintf(r->note, sizeof(r->note), "clear_refs: %s", strerror(-e));
                                r->cost_us_sum += (double) (now_us() - t_start);
                        }
                        if (c == C_STORM) {
                                /* the side effect on the writer, 100x amplified:
                                 * clear_refs "1" every 10 ms through the tick */
                                for (uint64_t at = t_start + 10000; at < t_start + tick_ms * 1000ull && !g_stop;
                                     at += 10000) {
                                        sleep_until(at, NULL, out_fd, lb, &ll, r);
                                        uint64_t c0 = now_us();
                                        write_str(path, "1");
                                        r->cost_us_sum += (double) (now_us() - c0);
                                }
                        }
                        sleep_until(t_start + tick_ms * 1000ull, c == C_PERF ? &pf : NULL, out_fd, lb, &ll, r);
                        uint64_t t0 = now_us();
                        double est = NAN;
                        if (c == C_REFS) {
                                if (read_smaps(pid, &v) == 0 && v.rss_kb)
                                        est = (double) v.ref_kb / (double) v.rss_kb;
                        } else if (c == C_SOFTDIRTY) {
                                uint64_t present = 0, sd = 0;
                                read_smaps(pid, &v); /* the region, for the scan (not counted) */
                                t0 = now_us();
                                int e = scan_soft_dirty(pid, &v, &present, &sd);
                                if (!v.sd_flag)
                                        snprintf(r->note, sizeof(r->note),
                                                 "no sd in VmFlags: CONFIG_MEM_SOFT_DIRTY off");
                                if (e < 0)
                                        snprintf(r->note, sizeof(r->note), "PAGEMAP_SCAN: %s", strerror(-e));
                                else if (present)
                                        est = (double) sd / (double) present;
                        } else if (c == C_PERF && pf.n) {
                                uint64_t pg, bl;
                                perf_drain(&pf);
                                est = perf_estimate(&pf, &pg, &bl);
                        }
                        r->cost_us_sum += (double) (now_us() - t0);
                        r->n_ticks++;
                        struct vmas tv;
                        if (read_smaps(pid, &tv) == 0) {
                                double tr = used_truth(w, &tv, size_mib);
                                if (!isnan(est) && !isnan(tr)) {
                                        r->est_sum += est;
                                        r->truth_sum += tr;
                                        r->n_est++;
                                }
                                r->rss_mib_sum += (double) tv.rss_kb / 1024.0;
                        }
                }
                if (c == C_PERF) {
                        if (pf.n)
                                snprintf(r->note, sizeof(r->note), "%" PRIu64 " faults sampled, %" PRIu64 " lost",
                                         pf.samples, pf.lost);
                        perf_close(&pf);
                }
                read_minflt(pid, &f1);
                r->minflt = f1 - f0;
                r->phase_us = now_us() - t_phase;
        }
        free(pf.seen);
        free(pf.seen_list);
        free(pf.blk);
        free(pf.blk_list);
        kill(pid, SIGTERM);
        for (int i = 0; i < 500; i++) {
                if (waitpid(pid, NULL, WNOHANG) == pid) {
                        pid = -1;
                        break;
                }
                struct timespec ts = { 0, 10000000 };
                nanosleep(&ts, NULL);
        }
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        g_child = -1;
        close(out_fd);
        return g_stop ? -EINTR : 0;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: touch-signals [--ticks N] [--tick-ms MS] [--size MiB] [--workload PATH] [--at-4k]\n"
                   "--at-4k: leave the knob as it is (the before-a-raise view, with the boot default)\n"
                   "Root; sets hugepages-64kB/enabled=always under " LOCK_PATH
                   " (saved, restored, checked).\n"
                   "Defaults: 3 ticks of 1000 ms per candidate, 64 MiB writers, mthp-workload beside this binary.\n");
}

int main(int argc, char **argv) {
        unsigned ticks = 3, tick_ms = 1000, size_mib = 64;
        bool at_4k = false;
        char workload[PATH_MAX];
        static const struct option opts[] = { { "ticks", required_argument, NULL, 't' },
                                              { "tick-ms", required_argument, NULL, 'm' },
                                              { "size", required_argument, NULL, 'z' },
                                              { "workload", required_argument, NULL, 'w' },
                                              { "at-4k", no_argument, NULL, '4' },
                                              { "help", no_argument, NULL, 'h' },
                                              { 0 } };
        workload[0] = 0;
        int o;
        while ((o = getopt_long(argc, argv, "t:m:z:w:4h", opts, NULL)) != -1) {
                switch (o) {
                case 't': ticks = (unsigned) atoi(optarg); break;
                case 'm': tick_ms = (unsigned) atoi(optarg); break;
                case 'z': size_mib = (unsigned) atoi(optarg); break;
                case 'w': snprintf(workload, sizeof(workload), "%s", optarg); break;
                case '4': at_4k = g_at_4k = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc || ticks < 1 || ticks > 60 || tick_ms < 100 || tick_ms > 10000 || size_mib < 16 ||
            size_mib > 1024) {
                usage(stderr);
                return 2;
        }
        if (!workload[0]) {
                char self[PATH_MAX - 32];
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                if (n <= 0)
                        return 1;
                self[n] = 0;
                char *slash = strrchr(self, '/');
                *slash = 0;
                snprintf(workload, sizeof(workload), "%s/mthp-workload", self);
        }
        if (geteuid() != 0) {
                printf("touch-signals: SKIP: needs root (writes %s, reads other processes' pagemap)\n", KNOB);
                return 77;
        }
        if (access(KNOB, W_OK) != 0) {
                printf("touch-signals: SKIP: %s not writable: %s\n", KNOB, strerror(errno));
                return 77;
        }
        if (access(workload, X_OK) != 0) {
                printf("touch-signals: SKIP: no workload at %s (--workload)\n", workload);
                return 77;
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);

        int lock = open(LOCK_PATH, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (lock < 0)
                return 1;
        int got = -1;
        for (int i = 0; i < 600 && !g_stop; i++) { /* up to 10 minutes */
                if ((got = flock(lock, LOCK_EX | LOCK_NB)) == 0)
                        break;
                if (i == 0)
                        fprintf(stderr, "touch-signals: waiting for %s\n", LOCK_PATH);
                sleep(1);
        }
        if (got != 0) {
                printf("touch-signals: SKIP: %s held by another real-kernel run\n", LOCK_PATH);
                return 77;
        }
        if (knob_get(g_saved, sizeof(g_saved)) < 0)
                return 1;
        g_knob_written = !at_4k;
        int rc = at_4k ? 0 : write_str(KNOB, "always");
        if (rc < 0) {
                fprintf(stderr, "touch-signals: write %s: %s\n", KNOB, strerror(-rc));
                return knob_restore() < 0 ? 1 : 77;
        }

        char pi[16];
        bool page_idle = access("/sys/kernel/mm/page_idle/bitmap", F_OK) == 0;
        snprintf(pi, sizeof(pi), "%s", page_idle ? "present" : "absent");
        printf("# touch-signals: 64K=%s (was %s), %u MiB writers, %u ticks x %u ms per candidate\n",
               at_4k ? "untouched" : "always", g_saved, size_mib, ticks, tick_ms);
        printf("# c:page_idle/bitmap %s%s\n", pi,
               page_idle ? " (not measured: idle is kept per folio)" : " (CONFIG_IDLE_PAGE_TRACKING not set)");
        printf("# used = estimated used fraction (mean of ticks), truth = pages touched per pass / pages present\n");
        printf("# (d estimates touched pages / (64K blocks touched x 16): at 4K that is 64K coverage, not used/present)\n");
        printf("# cost = sampler wall us per tick (us per MiB of RSS); minflt/s and pages/s of the writer\n");
        printf("%-15s %-5s %-25s %6s %6s %9s %8s %10s %12s  %s\n", "writer", "fresh", "candidate", "used", "truth",
               "us/tick", "us/MiB", "minflt/s", "pages/s", "note");
        int ret = 0;
        for (size_t i = 0; i < N_WRITERS && !g_stop; i++) {
                struct result res[N_CAND];
                double fresh = NAN;
                int e = run_writer(workload, &WRITERS[i], size_mib, ticks, tick_ms, res, &fresh);
                if (e < 0 && e != -EINTR) {
                        fprintf(stderr, "touch-signals: %s: %s\n", WRITERS[i].name, strerror(-e));
                        ret = 1;
                        continue;
                }
                for (int c = 0; c < N_CAND; c++) {
                        struct result *r = &res[c];
                        double n = r->n_ticks ? r->n_ticks : 1;
                        double secs = (double) r->phase_us / 1e6;
                        double rss = r->rss_mib_sum / n;
                        double cost = r->cost_us_sum / n;
                        char used[16], truth[16];
                        if (c == C_BASE || !r->n_est) {
                                snprintf(used, sizeof(used), "-");
                        } else {
                                snprintf(used, sizeof(used), "%.3f", r->est_sum / r->n_est);
                        }
                        if (r->n_est)
                                snprintf(truth, sizeof(truth), "%.3f", r->truth_sum / r->n_est);
                        else
                                snprintf(truth, sizeof(truth), "%.3f", used_truth(&WRITERS[i], &(struct vmas){
                                        .rss_kb = (uint64_t) (rss * 1024) }, size_mib));
                        printf("%-15s %5.2f %-25s %6s %6s %9.0f %8.1f %10.0f %12.0f  %s\n", WRITERS[i].name, fresh,
                               CAND_NAME[c], used, truth, c == C_BASE ? 0.0 : cost,
                               c == C_BASE || rss <= 0 ? 0.0 : cost / rss, secs > 0 ? (double) r->minflt / secs : 0,
                               r->pps_n ? r->pps_sum / r->pps_n : NAN, r->note);
                }
                fflush(stdout);
        }
        if (g_child > 0) {
                kill(g_child, SIGKILL);
                waitpid(g_child, NULL, 0);
        }
        if (knob_restore() < 0)
                ret = 1;
        close(lock);
        return g_stop ? 1 : ret;
}
