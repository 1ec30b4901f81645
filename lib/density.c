/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mthp/density.h"
#include "mthp/util.h"

#include "proc-scan.h"

#include "pagemap-scan.h"

#define PAGE MTHP_DENSITY_PAGE
#define WIN_PAGES_MAX (MTHP_DENSITY_MAX_KB * 1024 / PAGE)
#define WIN_WORDS (WIN_PAGES_MAX / 64)
#define READ_BATCH 256               /* subpages per process_vm_readv (<= IOV_MAX) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)

struct region {
        uint64_t start, end;
        uint64_t delta;              /* alignment key = address + delta: file offset for shmem */
        double cum;                  /* running sum of draw weights */
        bool data;                   /* a subpage read in it held data */
};

/* A window: the part of one aligned block of the largest size that lies in
 * a region; page indexes lo..hi are relative to the aligned block. */
struct win {
        uint64_t start, end;
        unsigned lo, hi;
};

struct wmap {
        uint64_t touched[WIN_WORDS], present[WIN_WORDS];
};

/* One examined window, kept until its subpage reads are in. */
struct window_rec {
        double u;                                 /* inverse draw probability */
        uint32_t full_present[MTHP_SIZES_MAX];    /* present pages in full blocks */
        uint16_t read[MTHP_SIZES_MAX], zero[MTHP_SIZES_MAX];
        uint8_t kind;
        uint32_t reg;                             /* its region in reg[kind] */
};

struct read_req {
        uint64_t addr;
        uint32_t rec;
        uint32_t size_mask;          /* sizes whose block around addr is full */
};

struct acc {
        double cov_num, cov_den, zero_num, zero_den;
        uint64_t blocks, full, read, zero;
};

struct proc_ctx {
        pid_t pid;
        int fd;                      /* /proc/PID/pagemap */
        bool can_read, gone, cut;
        uint64_t examined, queued, reads;   /* window pages; subpage reads queued, done */
        uint64_t rss[_MTHP_KIND_MAX], span[_MTHP_KIND_MAX];
        bool rss_known[_MTHP_KIND_MAX];
        uint8_t *unlisted;                  /* the process's entry: persists across ticks */
        unsigned windows[_MTHP_KIND_MAX];
        bool census[_MTHP_KIND_MAX];
};

struct mthp_density_sampler {
        const struct mthp_host *host;
        struct mthp_density_budget b;
        unsigned n_sizes;
        unsigned kb[MTHP_SIZES_MAX];
        unsigned bp[MTHP_SIZES_MAX];        /* 4K pages per block */
        unsigned lbp[MTHP_SIZES_MAX];       /* log2 of that */
        unsigned wpages;
        uint64_t wbytes;
        uint64_t rng;
        int scan;                           /* PAGEMAP_SCAN: 1 works, 0 untried, -1 use pread */
        pid_t self;

        struct mthp_proc_scan ps;           /* the rotating /proc scan: who faults */
        struct mthp_density_target *targets;
        size_t n_targets;
        struct mthp_density_proc *procs;

        /* per tick */
        uint64_t t0_ns, t0_cpu_ns, tick_examined, tick_queued, tick_reads;
        bool exhausted;

        /* scratch, reused */
        char *text;
        size_t cap_text;
        struct region *reg[_MTHP_KIND_MAX];
        size_t n_reg[_MTHP_KIND_MAX], cap_reg[_MTHP_KIND_MAX];
        struct window_rec *recs;
        size_t n_recs, cap_recs;
        struct win *listed;
        size_t cap_listed;
        struct acc acc[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        struct read_req rq[READ_BATCH];
        struct iovec riov[READ_BATCH];
        size_t n_rq;
        uint8_t *rbuf;
        uint64_t pm[WIN_PAGES_MAX];
        struct page_region vec[WIN_PAGES_MAX];
};

/* ---- small helpers ---- */

static uint64_t rng_next(uint64_t *x) {
        uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);   /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static uint64_t rng_below(uint64_t *x, uint64_t n) {
        return (uint64_t) (((unsigned __int128) rng_next(x) * n) >> 64);
}

static uint64_t low_bits(unsigned n) {
        return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

static void set_bits(uint64_t *bm, unsigned from, unsigned n) {
        while (n) {
                unsigned b = from % 64, k = 64 - b < n ? 64 - b : n;
                bm[from / 64] |= low_bits(k) << b;
                from += k;
                n -= k;
        }
}

static bool test_bit(const uint64_t *bm, unsigned i) {
        return bm[i / 64] >> (i % 64) & 1;
}

/* The stages of a SWAR popcount, kept: lv[L] holds, in fields of 2^L bits,
 * the number of set bits of each aligned group of 2^L pages. No popcnt
 * instruction in the x86-64 baseline, and this gives every block size at
 * once. */
struct bit_counts {
        uint64_t lv[7][WIN_WORDS];
};

static void count_levels(const uint64_t *bm, struct bit_counts *c) {
        static const uint64_t mask[6] = {
                0x5555555555555555ULL, 0x3333333333333333ULL, 0x0f0f0f0f0f0f0f0fULL,
                0x00ff00ff00ff00ffULL, 0x0000ffff0000ffffULL, 0x00000000ffffffffULL,
        };
        for (unsigned w = 0; w < WIN_WORDS; w++) {
                uint64_t x = bm[w];
                c->lv[0][w] = x;
                for (unsigned l = 0; l < 6; l++) {
                        x = (x & mask[l]) + ((x >> (1u << l)) & mask[l]);
                        c->lv[l + 1][w] = x;
                }
        }
}

/* Set bits in block j of 2^lbp pages. */
static unsigned block_count(const struct bit_counts *c, unsigned lbp, unsigned j) {
        if (lbp <= 6) {
                unsigned bit = j << lbp;
                return (unsigned) ((c->lv[lbp][bit / 64] >> (bit % 64)) & low_bits(1u << lbp));
        }
        unsigned words = 1u << (lbp - 6), sum = 0;
        for (unsigned k = 0; k < words; k++)
                sum += (unsigned) c->lv[6][j * words + k];
        return sum;
}

static bool entry_touched(uint64_t e) {
        return e & (PM_PRESENT | PM_SWAPPED);
}

double mthp_density_coverage(const uint64_t *pagemap, size_t n, unsigned block_pages, uint64_t *blocks) {
        uint64_t nb = 0, touched = 0;

        for (size_t b = 0; block_pages && (b + 1) * block_pages <= n; b++) {
                unsigned t = 0;
                for (unsigned i = 0; i < block_pages; i++)
                        t += entry_touched(pagemap[b * block_pages + i]);
                if (t) {
                        nb++;
                        touched += t;
                }
        }
        if (blocks)
                *blocks = nb;
        return nb ? (double) touched / ((double) nb * block_pages) : NAN;
}

bool mthp_density_page_is_zero(const void *page) {
        const unsigned char *p = page;
        for (size_t off = 0; off < PAGE; off += 64) {
                uint64_t w[8];
                memcpy(w, p + off, sizeof(w));
                if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
                        return false;
        }
        return true;
}

size_t mthp_density_count_zero_pages(const void *buf, size_t n_pages) {
        size_t z = 0;
        for (size_t i = 0; i < n_pages; i++)
                z += mthp_density_page_is_zero((const unsigned char *) buf + i * PAGE);
        return z;
}

/* ---- construction ---- */

void mthp_density_budget_default(struct mthp_density_budget *b) {
        *b = (struct mthp_density_budget) {
                .max_procs = 8,
                .max_scan = 1024,
                .max_pages_per_tick = 131072,
                .max_pages_per_proc = 16384,
                .reads_per_window = 4,
                .max_usec = 5000,
                .seed = 0x6d746870,
        };
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

int mthp_density_new(const struct mthp_host *h, const unsigned *sizes_kb, unsigned n_sizes,
                     const struct mthp_density_budget *budget, struct mthp_density_sampler **ret) {
        struct mthp_density_budget b;
        unsigned kb[MTHP_SIZES_MAX], n = 0;

        if (!h || !sizes_kb || n_sizes == 0 || n_sizes > MTHP_SIZES_MAX)
                return -EINVAL;
        if (sysconf(_SC_PAGESIZE) != PAGE)
                return -EOPNOTSUPP;
        memcpy(kb, sizes_kb, n_sizes * sizeof(*kb));
        qsort(kb, n_sizes, sizeof(*kb), cmp_unsigned);
        for (unsigned i = 0; i < n_sizes; i++) {
                if (kb[i] < 8 || kb[i] > MTHP_DENSITY_MAX_KB || (kb[i] & (kb[i] - 1)))
                        return -EINVAL;
                if (n == 0 || kb[n - 1] != kb[i])
                        kb[n++] = kb[i];
        }
        if (budget)
                b = *budget;
        else
                mthp_density_budget_default(&b);
        unsigned wpages = kb[n - 1] * 1024 / PAGE;
        if (b.max_procs == 0 || b.max_scan == 0 || b.max_usec == 0 || b.max_pages_per_proc < wpages ||
            b.max_pages_per_tick < wpages || b.reads_per_window > WIN_PAGES_MAX)
                return -EINVAL;

        struct mthp_density_sampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->host = h;
        s->b = b;
        s->n_sizes = n;
        for (unsigned i = 0; i < n; i++) {
                s->kb[i] = kb[i];
                s->bp[i] = kb[i] * 1024 / PAGE;
                s->lbp[i] = (unsigned) __builtin_ctz(s->bp[i]);
        }
        s->wpages = wpages;
        s->wbytes = (uint64_t) wpages * PAGE;
        s->rng = b.seed;
        mthp_proc_scan_init(&s->ps, h);
        s->self = getpid();
        s->procs = calloc(b.max_procs, sizeof(*s->procs));
        s->rbuf = aligned_alloc(PAGE, READ_BATCH * PAGE);
        if (!s->procs || !s->rbuf) {
                mthp_density_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

void mthp_density_free(struct mthp_density_sampler *s) {
        if (!s)
                return;
        mthp_proc_scan_free(&s->ps);
        free(s->targets);
        free(s->procs);
        free(s->text);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                free(s->reg[k]);
        free(s->recs);
        free(s->listed);
        free(s->rbuf);
        free(s);
}

int mthp_density_set_targets(struct mthp_density_sampler *s, const struct mthp_density_target *t, size_t n) {
        struct mthp_density_target *copy = NULL;

        for (size_t i = 0; i < n; i++)
                if (t[i].pid <= 0 || (t[i].end && t[i].end <= t[i].start))
                        return -EINVAL;
        if (n) {
                copy = malloc(n * sizeof(*copy));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, t, n * sizeof(*copy));
        }
        free(s->targets);
        s->targets = copy;
        s->n_targets = n;
        return 0;
}

/* ---- budget ---- */

/* The budget is the CPU time sampling costs us: on a busy host (the
 * workloads being measured keep every core busy) wall time would run out
 * before the second process is read. Wall time still caps it at 4x, so a
 * descheduled tick cannot hold the daemon's loop. */
static uint64_t elapsed_usec(const struct mthp_density_sampler *s) {
        uint64_t cpu = (mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - s->t0_cpu_ns) / 1000;
        uint64_t wall = (mthp_now_nsec(CLOCK_MONOTONIC) - s->t0_ns) / 1000;
        return cpu > wall / 4 ? cpu : wall / 4;
}

/* The /proc scan gets at most half of the tick's time. */
static bool scan_stop(void *user) {
        const struct mthp_density_sampler *s = user;
        return elapsed_usec(s) >= s->b.max_usec / 2;
}

/* May a window costing `pages` start now? Sets the reason it may not. */
static bool budget_allows(struct mthp_density_sampler *s, struct proc_ctx *c, uint64_t pages) {
        if (c->examined + c->queued + pages > s->b.max_pages_per_proc) {
                c->cut = true;
                return false;
        }
        if (s->tick_examined + s->tick_queued + pages > s->b.max_pages_per_tick ||
            elapsed_usec(s) >= s->b.max_usec) {
                s->exhausted = c->cut = true;
                return false;
        }
        return true;
}

/* ---- pagemap ---- */

/* Touched = present but not the shared zero page, or swapped. */
static int pm_scan(struct mthp_density_sampler *s, int fd, uint64_t start, uint64_t end, size_t vec_len,
                   uint64_t max_pages, size_t *n) {
        int r = mthp_pagemap_scan(fd, start, end, s->vec, vec_len, max_pages, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                                  PAGE_IS_PRESENT | PAGE_IS_SWAPPED, NULL);
        if (r < 0)
                return r;
        *n = (size_t) r;
        return 0;
}

/* 1 and *at = first touched page in [a, b); 0 if none; or -errno. */
static int first_touched(struct mthp_density_sampler *s, int fd, uint64_t a, uint64_t b, uint64_t *at) {
        size_t n = 0;
        if (a >= b)
                return 0;
        int r = pm_scan(s, fd, a, b, 1, 1, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return 0;
        *at = s->vec[0].start;
        return 1;
}

static void window_of(const struct mthp_density_sampler *s, const struct region *r, uint64_t a, struct win *w) {
        uint64_t off = (a + r->delta) & (s->wbytes - 1);
        uint64_t before = off < a - r->start ? off : a - r->start;
        uint64_t after = s->wbytes - off < r->end - a ? s->wbytes - off : r->end - a;
        w->start = a - before;
        w->end = a + after;
        w->lo = (unsigned) ((off - before) / PAGE);
        w->hi = (unsigned) ((off + after) / PAGE);
}

static int map_window(struct mthp_density_sampler *s, struct proc_ctx *c, const struct win *w, struct wmap *m) {
        memset(m, 0, sizeof(*m));
        if (s->scan > 0) {
                size_t n = 0;
                int r = pm_scan(s, c->fd, w->start, w->end, WIN_PAGES_MAX, 0, &n);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        const struct page_region *g = &s->vec[i];
                        uint64_t a = g->start < w->start ? w->start : g->start;
                        uint64_t b = g->end > w->end ? w->end : g->end;
                        if (a >= b)
                                continue;
                        unsigned from = w->lo + (unsigned) ((a - w->start) / PAGE), len = (unsigned) ((b - a) / PAGE);
                        set_bits(m->touched, from, len);
                        if (g->categories & PAGE_IS_PRESENT)
                                set_bits(m->present, from, len);
                }
                return 0;
        }
        size_t n = (w->end - w->start) / PAGE;
        ssize_t k = pread(c->fd, s->pm, n * sizeof(uint64_t), (off_t) (w->start / PAGE * sizeof(uint64_t)));
        if (k < 0)
                return -errno;
        /* a short read means the process is gone: the rest stays untouched */
        for (size_t i = 0; i < (size_t) k / sizeof(uint64_t); i++) {
                if (entry_touched(s->pm[i]))
                        set_bits(m->touched, w->lo + (unsigned) i, 1);
                if (s->pm[i] & PM_PRESENT)
                        set_bits(m->present, w->lo + (unsigned) i, 1);
        }
        return 0;
}

/* ---- subpage reads ---- */

static void tally_read(struct mthp_density_sampler *s, const struct read_req *q, bool zero) {
        struct window_rec *rec = &s->recs[q->rec];
        if (!zero)
                s->reg[rec->kind][rec->reg].data = true;
        for (unsigned i = 0; i < s->n_sizes; i++)
                if (q->size_mask & (1u << i)) {
                        rec->read[i]++;
                        rec->zero[i] += zero;
                }
}

static int flush_reads(struct mthp_density_sampler *s, struct proc_ctx *c) {
        size_t i = 0, n = s->n_rq;

        for (size_t k = 0; k < n; k++)
                s->riov[k] = (struct iovec) { (void *) (uintptr_t) s->rq[k].addr, PAGE };
        while (i < n && c->can_read) {
                struct iovec local = { s->rbuf, (n - i) * PAGE };
                ssize_t got = process_vm_readv(c->pid, &local, 1, &s->riov[i], (unsigned long) (n - i), 0);
                if (got < 0) {
                        if (errno == EFAULT) {   /* unmapped since pagemap said present */
                                i++;
                                continue;
                        }
                        if (errno == ESRCH)
                                c->gone = true;
                        c->can_read = false;     /* EPERM, ENOMEM...: no zero check here */
                        break;
                }
                size_t done = (size_t) got / PAGE;
                for (size_t k = 0; k < done; k++)
                        tally_read(s, &s->rq[i + k], mthp_density_page_is_zero(s->rbuf + k * PAGE));
                c->reads += done;
                i += done + (done < n - i);   /* skip the page that failed */
        }
        s->n_rq = 0;
        return c->gone ? -ESRCH : 0;
}

static int queue_read(struct mthp_density_sampler *s, struct proc_ctx *c, uint64_t addr, uint32_t rec,
                      uint32_t mask) {
        if (s->n_rq == READ_BATCH) {
                int r = flush_reads(s, c);
                if (r < 0)
                        return r;
        }
        s->rq[s->n_rq++] = (struct read_req) { addr, rec, mask };
        return 0;
}

/* ---- one window ---- */

static int tally_window(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, const struct win *w,
                        const struct wmap *m, double u) {
        uint64_t full[MTHP_SIZES_MAX][WIN_WORDS];   /* per size: which blocks are full */
        struct bit_counts tc, pc;
        int r = mthp_grow((void **) &s->recs, &s->cap_recs, s->n_recs + 1, sizeof(*s->recs));
        if (r < 0)
                return r;
        uint32_t ri = (uint32_t) s->n_recs++;
        struct window_rec *rec = &s->recs[ri];
        memset(rec, 0, sizeof(*rec));
        memset(full, 0, sizeof(full));
        rec->u = u;
        rec->kind = (uint8_t) kind;
        /* the region holding the window (regions are in address order) */
        for (size_t lo = 0, hi = s->n_reg[kind]; lo < hi;) {
                size_t mid = (lo + hi) / 2;
                if (s->reg[kind][mid].end <= w->start)
                        lo = mid + 1;
                else
                        hi = mid, rec->reg = (uint32_t) mid;
        }
        c->windows[kind]++;
        c->examined += w->hi - w->lo;
        s->tick_examined += w->hi - w->lo;
        count_levels(m->touched, &tc);
        count_levels(m->present, &pc);

        for (unsigned i = 0; i < s->n_sizes; i++) {
                struct acc *a = &s->acc[kind][i];
                unsigned bp = s->bp[i], lbp = s->lbp[i];
                /* only blocks wholly inside the mapping: a folio cannot cross it */
                for (unsigned j = (w->lo + bp - 1) / bp; (j + 1) * bp <= w->hi; j++) {
                        unsigned t = block_count(&tc, lbp, j);
                        if (!t)
                                continue;
                        a->blocks++;
                        a->cov_num += u * t;
                        a->cov_den += u * bp;
                        if (t == bp) {
                                a->full++;
                                set_bits(full[i], j, 1);
                                rec->full_present[i] += block_count(&pc, lbp, j);
                        }
                }
        }
        if (!c->can_read)
                return 0;

        /* Read a uniform choice (selection sampling) among present pages of
         * full blocks of the smallest size; every larger full block is made
         * of those, so one read serves all sizes. Swapped pages are never
         * read: that would swap them in. */
        unsigned avail = rec->full_present[0], bp0 = s->bp[0];
        unsigned need = avail < s->b.reads_per_window ? avail : s->b.reads_per_window;
        for (unsigned j = w->lo / bp0; j < w->hi / bp0 && need; j++) {
                if (!test_bit(full[0], j))
                        continue;
                for (unsigned idx = j * bp0; idx < (j + 1) * bp0 && need; idx++) {
                        if (!test_bit(m->present, idx) || rng_below(&s->rng, avail--) >= need)
                                continue;
                        uint32_t mask = 0;
                        for (unsigned i = 0; i < s->n_sizes; i++)
                                if (test_bit(full[i], idx >> s->lbp[i]))
                                        mask |= 1u << i;
                        r = queue_read(s, c, w->start + (uint64_t) (idx - w->lo) * PAGE, ri, mask);
                        if (r < 0)
                                return r;
                        c->queued++;
                        s->tick_queued++;
                        need--;
                }
        }
        return 0;
}

/* ---- choosing windows ---- */

static uint64_t window_cost(const struct mthp_density_sampler *s, const struct proc_ctx *c) {
        return s->wpages + (c->can_read ? s->b.reads_per_window : 0);
}

static int window_at(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, const struct win *w, double u) {
        struct wmap m;
        int r = map_window(s, c, w, &m);
        return r < 0 ? r : tally_window(s, c, kind, w, &m, u);
}

/* List the windows of a kind that hold a touched page, hopping over holes
 * (the kernel skips empty page tables a level at a time). Without
 * PAGEMAP_SCAN every window is listed, empty or not. Returns 1 if the list
 * is complete, 0 if it reached cap entries, -ETIMEDOUT at the time budget. */
static int enumerate(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, size_t cap, size_t *n) {
        struct win w;

        *n = 0;
        for (size_t i = 0; i < s->n_reg[kind]; i++) {
                const struct region *g = &s->reg[kind][i];
                uint64_t cur = g->start;
                while (cur < g->end) {
                        if (*n >= cap)
                                return 0;
                        if (elapsed_usec(s) >= s->b.max_usec)
                                return -ETIMEDOUT;
                        if (s->scan > 0) {
                                int r = first_touched(s, c->fd, cur, g->end, &cur);
                                if (r < 0)
                                        return r;
                                if (r == 0)
                                        break;
                        }
                        int r = mthp_grow((void **) &s->listed, &s->cap_listed, *n + 1, sizeof(*s->listed));
                        if (r < 0)
                                return r;
                        window_of(s, g, cur, &w);
                        s->listed[(*n)++] = w;
                        cur = w.end;
                }
        }
        return 1;
}

/* Examine `draws` of the n listed windows, a uniform choice in address
 * order (selection sampling): every window has the same chance, so they
 * weigh the same. With draws >= n that is all of them. */
static int sample_listed(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, size_t n, uint64_t draws) {
        uint64_t need = draws < n ? draws : n;

        for (size_t j = 0; j < n && need; j++) {
                if (rng_below(&s->rng, n - j) >= need)
                        continue;
                if (!budget_allows(s, c, window_cost(s, c)))
                        return 0;
                int r = window_at(s, c, kind, &s->listed[j], 1.0);
                if (r < 0)
                        return r;
                need--;
        }
        return 0;
}

/* Too many populated windows to list: draw windows at random. A region is
 * drawn in proportion to its span capped at the process's resident size of
 * the kind (no region holds more than that; the cap keeps terabyte-sized
 * sparse reservations from taking every draw), then a page in it uniformly;
 * each window is weighted by the inverse of its chance, so the ratios stay
 * consistent. Empty windows are recognised with a cheap walk and skipped. */
static int draw(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, uint64_t draws) {
        struct region *reg = s->reg[kind];
        size_t n = s->n_reg[kind];
        uint64_t cap = !c->rss_known[kind] ? UINT64_MAX : c->rss[kind] > s->wbytes ? c->rss[kind] : s->wbytes;
        double total = 0;
        struct win w;

        for (size_t i = 0; i < n; i++) {
                uint64_t span = reg[i].end - reg[i].start;
                total += (double) (span < cap ? span : cap);
                reg[i].cum = total;
        }
        /* a miss costs one short walk, a window a long one and reads */
        for (uint64_t d = 0, attempts = 0; d < draws && attempts < 16 * draws; attempts++) {
                if (!budget_allows(s, c, window_cost(s, c)))
                        return 0;
                double x = (double) (rng_next(&s->rng) >> 11) * 0x1.0p-53 * total;
                size_t lo = 0, hi = n - 1;
                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (reg[mid].cum > x)
                                hi = mid;
                        else
                                lo = mid + 1;
                }
                const struct region *g = &reg[lo];
                uint64_t span = g->end - g->start, a;
                double weight = (double) (span < cap ? span : cap);
                window_of(s, g, g->start + rng_below(&s->rng, span / PAGE) * PAGE, &w);
                if (s->scan > 0) {
                        int r = first_touched(s, c->fd, w.start, w.end, &a);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                }
                int r = window_at(s, c, kind, &w, total * (double) span / (weight * (double) (w.end - w.start)));
                if (r < 0)
                        return r;
                d++;
        }
        return 0;
}

#define UNLISTED_TICKS 16

static int sample_kind(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, uint64_t draws) {
        size_t n;
        bool was_cut = c->cut;

        /* Listing costs a short walk per populated window (1-2 us); past a
         * few times the draws it no longer pays, and a process that big is
         * drawn from instead, without trying again for a while. */
        if (c->unlisted[kind]) {
                c->unlisted[kind]--;
                return draw(s, c, kind, draws);
        }
        int r = enumerate(s, c, kind, draws * 8 > 256 ? draws * 8 : 256, &n);
        if (r == -ETIMEDOUT) {
                s->exhausted = c->cut = true;
                return 0;
        }
        if (r < 0)
                return r;
        if (r == 1) {
                r = sample_listed(s, c, kind, n, draws);
                c->census[kind] = n <= draws && !(c->cut && !was_cut);
                return r;
        }
        c->unlisted[kind] = UNLISTED_TICKS;
        return draw(s, c, kind, draws);
}

/* ---- one process ---- */

static int read_all(struct mthp_density_sampler *s, int dfd, const char *name, size_t *len) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return mthp_proc_read_fd(fd, &s->text, &s->cap_text, len);
}

static void rss_cb(void *user, const char *key, unsigned long long value) {
        struct proc_ctx *c = user;
        int k = strcmp(key, "RssAnon") == 0 ? MTHP_ANON : strcmp(key, "RssShmem") == 0 ? MTHP_SHMEM : -1;
        if (k >= 0) {
                c->rss[k] = value * 1024;
                c->rss_known[k] = true;
        }
}

static int collect_regions(struct mthp_density_sampler *s, struct proc_ctx *c, size_t len,
                           const struct mthp_density_target *t) {
        const char *p = s->text, *end = s->text + len;

        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->n_reg[k] = 0;
        while (p < end) {
                const char *eol = memchr(p, '\n', (size_t) (end - p));
                if (!eol)
                        break;   /* a cut-off last line (maps longer than MTHP_PROC_TEXT_MAX) */
                struct mthp_mapping m;
                int kind;
                if (mthp_proc_parse_maps_line(p, (size_t) (eol - p), &m) == 0 &&
                    (kind = mthp_proc_mapping_kind(&m)) >= 0) {
                        uint64_t a = m.start, b = m.end;
                        if (t && t->end) {
                                a = a > t->start ? a : t->start;
                                b = b < t->end ? b : t->end;
                        }
                        a = (a + PAGE - 1) & ~(uint64_t) (PAGE - 1);
                        b &= ~(uint64_t) (PAGE - 1);
                        if (a < b) {
                                int r = mthp_grow((void **) &s->reg[kind], &s->cap_reg[kind], s->n_reg[kind] + 1,
                                             sizeof(struct region));
                                if (r < 0)
                                        return r;
                                /* shmem folios align in the file, anon ones in the address space */
                                s->reg[kind][s->n_reg[kind]++] = (struct region) {
                                        .start = a,
                                        .end = b,
                                        .delta = kind == MTHP_SHMEM ? m.offset - m.start : 0,
                                };
                                c->span[kind] += b - a;
                        }
                }
                p = eol + 1;
        }
        return 0;
}

/* Is the process still there? A pagemap whose mm is gone reads as empty. */
static int still_alive(int fd) {
        uint64_t e;
        ssize_t k = pread(fd, &e, sizeof(e), 0);
        if (k < 0)
                return -errno;
        return k == sizeof(e) ? 0 : -ESRCH;
}

static void fold(struct mthp_density_sampler *s, struct proc_ctx *c, struct mthp_density_proc *out) {
        for (size_t j = 0; j < s->n_recs; j++) {
                const struct window_rec *rec = &s->recs[j];
                /* Content is not use: a mapping whose every subpage read holds
                 * only zeros may be untouched or written with zeros (calloc,
                 * memset, will-it-scale's page_fault1), so it says nothing of
                 * bloat. Zeros count only in mappings that hold some data. */
                bool data = s->reg[rec->kind][rec->reg].data;
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        struct acc *a = &s->acc[rec->kind][i];
                        if (!rec->read[i])
                                continue;
                        a->read += rec->read[i];
                        a->zero += rec->zero[i];
                        if (!data)
                                continue;
                        a->zero_num += rec->u * rec->full_present[i] * rec->zero[i] / rec->read[i];
                        a->zero_den += rec->u * rec->full_present[i];
                }
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                struct mthp_density_kind *o = &out->kind[k];
                o->mapped_bytes = c->span[k];
                o->rss_bytes = c->rss[k];
                o->windows = c->windows[k];
                o->census = c->census[k];
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        const struct acc *a = &s->acc[k][i];
                        o->size[i] = (struct mthp_density_size) {
                                .kb = s->kb[i],
                                .blocks = a->blocks,
                                .coverage = a->cov_den > 0 ? a->cov_num / a->cov_den : NAN,
                                .full_blocks = a->full,
                                .read_pages = a->read,
                                .zero_pages = a->zero,
                                .zero_fraction = a->zero_den > 0 ? a->zero_num / a->zero_den : NAN,
                        };
                }
        }
        out->pages_examined = c->examined;
        out->pages_read = c->reads;
        out->complete = !c->cut;
}

static int sample_proc(struct mthp_density_sampler *s, struct mthp_proc_entry *e, const struct mthp_density_target *t,
                       struct mthp_density_proc *out) {
        uint64_t t0 = mthp_now_nsec(CLOCK_MONOTONIC), t0_cpu = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        struct proc_ctx c = { .pid = e->pid, .fd = -1, .unlisted = e->unlisted };
        char path[32];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d", (int) e->pid);
        /* everything below is read through this directory: if the PID is
         * reused meanwhile, the reads fail instead of reading someone else */
        _cleanup_close_ int dfd = mthp_host_open_file(s->host, path, O_PATH | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        r = read_all(s, dfd, "status", &len);
        if (r < 0)
                return r;
        mthp_parse_kv(s->text, rss_cb, &c);
        r = read_all(s, dfd, "maps", &len);
        if (r < 0)
                return r;
        r = collect_regions(s, &c, len, t);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = openat(dfd, "pagemap", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        c.fd = fd;
        /* also keeps PAGEMAP_SCAN away from an mm-less pagemap, which
         * crashed kernels before the fix for it */
        r = still_alive(fd);
        if (r < 0)
                return r;
        if (s->scan == 0) {
                size_t n = 0;
                /* ENOTTY (before 6.7, or a fake tree): read pagemap entries */
                s->scan = pm_scan(s, fd, 0, PAGE, 1, 1, &n) == 0 ? 1 : -1;
        }
        c.can_read = s->host->real && s->b.reads_per_window > 0;

        /* split the draws between the kinds by resident size (by span if
         * status does not say); a kind with nothing resident is skipped */
        uint64_t draws = s->b.max_pages_per_proc / window_cost(s, &c);
        uint64_t weight[_MTHP_KIND_MAX], wsum = 0;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                weight[k] = !s->n_reg[k] ? 0 : c.rss_known[k] ? c.rss[k] : c.span[k];
                wsum += weight[k];
        }
        s->n_recs = 0;
        s->n_rq = 0;
        memset(s->acc, 0, sizeof(s->acc));
        for (int k = 0; k < _MTHP_KIND_MAX && r == 0; k++) {
                if (!weight[k])
                        continue;
                uint64_t dk = draws * weight[k] / wsum;
                r = sample_kind(s, &c, k, dk ? dk : 1);
        }
        if (r == 0 && s->n_rq)
                r = flush_reads(s, &c);
        if (r == 0)
                r = still_alive(fd);
        if (r < 0)
                return r;
        s->tick_reads += c.reads;

        memset(out, 0, sizeof(*out));
        out->pid = e->pid;
        memcpy(out->comm, e->comm, sizeof(out->comm));
        out->minflt_rate = e->rate;
        out->rate_from_lifetime = e->from_lifetime;
        fold(s, &c, out);
        /* measured as the tick's cost is (elapsed_usec): CPU time, at least a
         * quarter of the wall time, so a process never costs more than its tick */
        uint64_t cpu = (mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - t0_cpu) / 1000, wall = (mthp_now_nsec(CLOCK_MONOTONIC) - t0) / 1000;
        out->usec = cpu > wall / 4 ? cpu : wall / 4;
        return 0;
}

static const struct mthp_density_target *find_target(const struct mthp_density_sampler *s, pid_t pid) {
        for (size_t i = 0; i < s->n_targets; i++)
                if (s->targets[i].pid == pid)
                        return &s->targets[i];
        return NULL;
}

/* Who is worth sampling: faults/s times resident pages. Fault events alone
 * would rank a compiler's 300 4K faults/s above a workload faulting 2M
 * folios 60 times a second (30k pages/s): the one whose size decisions
 * matter. */
static double rank_key(const struct mthp_proc_entry *e) {
        return e->rate * (double) (e->rss_pages ? e->rss_pages : 1);
}

static int cmp_rate(const void *a, const void *b, void *tab) {
        const struct mthp_proc_entry *x = (const struct mthp_proc_entry *) tab + *(const size_t *) a;
        const struct mthp_proc_entry *y = (const struct mthp_proc_entry *) tab + *(const size_t *) b;
        double kx = rank_key(x), ky = rank_key(y);
        if (kx != ky)
                return kx > ky ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Per kind and size over the processes that have data, weighted by fault
 * rate; equal weights if none of them faults. */
static void aggregate(struct mthp_density_sampler *s, struct mthp_density_report *out) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                struct mthp_density_kind *o = &out->kind[k];
                memset(o, 0, sizeof(*o));
                for (unsigned p = 0; p < out->n_procs; p++) {
                        const struct mthp_density_kind *pk = &s->procs[p].kind[k];
                        o->mapped_bytes += pk->mapped_bytes;
                        o->rss_bytes += pk->rss_bytes;
                        o->windows += pk->windows;
                }
                o->census = out->n_procs > 0;
                for (unsigned p = 0; p < out->n_procs; p++)
                        o->census &= s->procs[p].kind[k].census || s->procs[p].kind[k].windows == 0;
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        struct mthp_density_size *os = &o->size[i];
                        double cw = 0, cv = 0, zw = 0, zv = 0, cw1 = 0, cv1 = 0, zw1 = 0, zv1 = 0;
                        os->kb = s->kb[i];
                        for (unsigned p = 0; p < out->n_procs; p++) {
                                const struct mthp_density_size *ps = &s->procs[p].kind[k].size[i];
                                double w = s->procs[p].minflt_rate;
                                os->blocks += ps->blocks;
                                os->full_blocks += ps->full_blocks;
                                os->read_pages += ps->read_pages;
                                os->zero_pages += ps->zero_pages;
                                if (ps->blocks) {
                                        cw += w, cv += w * ps->coverage;
                                        cw1 += 1, cv1 += ps->coverage;
                                }
                                if (ps->read_pages) {
                                        zw += w, zv += w * ps->zero_fraction;
                                        zw1 += 1, zv1 += ps->zero_fraction;
                                }
                        }
                        os->coverage = cw > 0 ? cv / cw : cw1 > 0 ? cv1 / cw1 : NAN;
                        os->zero_fraction = zw > 0 ? zv / zw : zw1 > 0 ? zv1 / zw1 : NAN;
                }
        }
}

int mthp_density_tick(struct mthp_density_sampler *s, uint64_t t_usec, struct mthp_density_report *out) {
        size_t n = 0;
        unsigned scanned;
        int r;

        s->t0_ns = mthp_now_nsec(CLOCK_MONOTONIC);
        s->t0_cpu_ns = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        s->tick_examined = s->tick_queued = s->tick_reads = 0;
        s->exhausted = false;
        memset(out, 0, sizeof(*out));
        out->t_usec = t_usec;
        out->n_sizes = s->n_sizes;
        out->procs = s->procs;

        r = mthp_proc_scan_list(&s->ps, s->targets, s->n_targets, &n);
        if (r < 0)
                return r;
        r = mthp_proc_scan_stat(&s->ps, t_usec, n, s->b.max_scan, scan_stop, s, &scanned);
        if (r < 0)
                return r;
        out->procs_listed = (unsigned) n;
        out->procs_scanned = scanned;

        size_t *order = malloc((s->ps.n_tab ? s->ps.n_tab : 1) * sizeof(*order));
        if (!order)
                return -ENOMEM;
        size_t nc = 0;
        for (size_t i = 0; i < s->ps.n_tab; i++) {
                const struct mthp_proc_entry *e = &s->ps.tab[i];
                if (e->kthread || (s->host->real && e->pid == s->self))
                        continue;
                if (s->n_targets || e->rate > 0)
                        order[nc++] = i;
        }
        qsort_r(order, nc, sizeof(*order), cmp_rate, s->ps.tab);

        for (size_t j = 0; j < nc && out->n_procs < s->b.max_procs; j++) {
                if (s->tick_examined + s->tick_queued + s->wpages > s->b.max_pages_per_tick ||
                    elapsed_usec(s) >= s->b.max_usec) {
                        s->exhausted = true;
                        break;
                }
                struct mthp_proc_entry *e = &s->ps.tab[order[j]];
                r = sample_proc(s, e, find_target(s, e->pid), &s->procs[out->n_procs]);
                if (r == -ENOMEM) {
                        free(order);
                        return r;
                }
                if (r < 0) {   /* exited, or not ours to read: skip quietly */
                        out->procs_skipped++;
                        continue;
                }
                out->n_procs++;
        }
        free(order);

        aggregate(s, out);
        out->pages_read = s->tick_reads;
        out->pages_examined = s->tick_examined;
        out->budget_exhausted = s->exhausted;
        out->usec = elapsed_usec(s);
        return 0;
}
