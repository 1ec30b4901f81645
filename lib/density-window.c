/* SPDX-License-Identifier: MIT */
/* The density sampler's measurement of one process: the budget, pagemap
 * walks, subpage reads, one window and the choice of windows (census,
 * uniform choice or weighted draws). See mthp/density.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mthp/util.h"

#include "density-internal.h"
#include "pagecache.h"

/* ---- small helpers ---- */

static uint64_t rng_next(uint64_t *x) {
        uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);   /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

uint64_t density_rng_below(uint64_t *x, uint64_t n) {
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

/* ---- budget ---- */

static uint64_t elapsed_cpu_ns(const struct mthp_density_sampler *s) {
        return mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - s->t0_cpu_ns - s->ps.list_cpu_ns;
}

static uint64_t elapsed_wall_ns(const struct mthp_density_sampler *s) {
        return mthp_now_nsec(CLOCK_MONOTONIC) - s->t0_ns - s->ps.list_wall_ns;
}

/* The budget is the CPU time sampling costs us: on a busy host (the
 * workloads being measured keep every core busy) wall time would run out
 * before the second process is read. Wall time still caps it at 4x, so a
 * descheduled tick cannot hold the daemon's loop. */
uint64_t density_elapsed_usec(const struct mthp_density_sampler *s) {
        uint64_t cpu = elapsed_cpu_ns(s) / 1000, wall = elapsed_wall_ns(s) / 1000;
        return cpu > wall / 4 ? cpu : wall / 4;
}

/* density_elapsed_usec(s) >= limit_usec, with fewer CPU clock reads: that
 * clock is a system call (1.35 us a read on this project's PVM test guest,
 * against 28 ns for the wall clock's vDSO read), and the budget is asked
 * before every window: 7% of mthpd's CPU under pgbench TPC-B went to it.
 * The thread cannot have run longer than the wall time since the last
 * reading, so the CPU clock is read only when that bound reaches the
 * limit; the bound has 1/1024 more than the wall time, for NTP slewing
 * the wall clock (at most 500 ppm) and not the CPU clock. In nanoseconds,
 * so the same answer, exactly (where the CPU clock moves a jiffy at a time,
 * without a usable TSC, it is a jiffy off either way). The /proc listing's
 * share comes off both measures; a listing that ended since the reading
 * takes the bound away. */
bool density_spent(struct mthp_density_sampler *s, uint64_t limit_usec) {
        uint64_t wall = elapsed_wall_ns(s), limit = limit_usec * 1000;
        if (wall / 4 >= limit)
                return true;
        if (s->cpu_read && s->cpu_read_list_ns == s->ps.list_wall_ns && wall >= s->cpu_read_wall_ns) {
                uint64_t d = wall - s->cpu_read_wall_ns;
                if (s->cpu_read_ns + d + d / 1024 < limit)
                        return false;
        }
        s->cpu_read_ns = elapsed_cpu_ns(s);   /* read after wall: the bound only grows */
        s->cpu_read_wall_ns = wall;
        s->cpu_read_list_ns = s->ps.list_wall_ns;
        s->cpu_read = true;
        return s->cpu_read_ns >= limit;
}

/* Each process a tick starts may be measured in up to this many windows of
 * each kind it holds past the tick's time budget (never past its page
 * budgets, nor past the draws its share of the process's budget gives):
 * its first-sight smaps read (9-32 ms for a 1 GiB shared segment under
 * load) can spend the whole budget before its first window, and a process
 * sampled without a block says nothing that tick. Measured on pgbench -S:
 * the two backends were each first sampled with 0 blocks, one a tick, and
 * shmem was raised on the third tick of the workload instead of the first
 * it could. The floor costs at most 2 x 4 windows (50-60 us each at worst,
 * mincore) a process; the tick starts no further process once over budget. */
#define DENSITY_FLOOR_WINDOWS 4

static bool below_floor(const struct proc_ctx *c, int kind) {
        return c->windows[kind] < DENSITY_FLOOR_WINDOWS;
}

/* May a window costing `pages` start now? Sets the reason it may not. */
static bool budget_allows(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, uint64_t pages) {
        if (c->examined + c->queued + pages > s->b.max_pages_per_proc) {
                c->cut = true;
                return false;
        }
        if (s->tick_examined + s->tick_queued + pages > s->b.max_pages_per_tick ||
            (density_spent(s, s->b.max_usec) && !below_floor(c, kind))) {
                s->exhausted = c->cut = true;
                return false;
        }
        return true;
}

/* ---- pagemap ---- */

/* Touched = present but not the shared zero page, or swapped. */
int density_pm_scan(struct mthp_density_sampler *s, int fd, uint64_t start, uint64_t end, size_t vec_len,
                   uint64_t max_pages, size_t *n) {
        int r = mthp_pagemap_scan(fd, start, end, s->vec, vec_len, max_pages, PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                                  PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_HUGE, NULL);
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
        int r = density_pm_scan(s, fd, a, b, 1, 1, &n);
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

/* ---- shmem: the object's page cache ---- */

/* What a larger shmem folio costs is decided by the object's page cache,
 * which every process mapping it shares, not by which of its pages this
 * process has mapped: a process that mapped 1 page in 4 of a segment
 * another process filled would read 0.25 from its PTEs while a larger
 * folio there would cost nothing. So a shmem window's touched pages are
 * its PTE-touched ones plus the pages the mapped object holds, read
 * through /proc/PID/map_files/START-END (CAP_SYS_ADMIN or
 * CAP_CHECKPOINT_RESTORE in the host user namespace), cheapest first:
 *  - fstat: an object whose every page is allocated (st_blocks; swapped
 *    pages count, as pagemap's swapped bit does) fills every window;
 *  - cachestat(2) over the window (6.5+; EPERM under a seccomp filter that
 *    does not know it): wholly resident or wholly empty needs no more;
 *  - else mincore() over a PROT_READ view of the mapping's range mapped
 *    into mthpd and never touched (mincore of a file mapping reports the
 *    page cache, not PTEs).
 * Without map_files (not privileged, another namespace, a fake host) the
 * window keeps the PTE view. */

static struct region *region_at(struct mthp_density_sampler *s, int kind, uint64_t a) {
        struct region *r = NULL;
        for (size_t lo = 0, hi = s->n_reg[kind]; lo < hi;) {
                size_t mid = (lo + hi) / 2;
                if (s->reg[kind][mid].end <= a)
                        lo = mid + 1;
                else
                        hi = mid, r = &s->reg[kind][mid];
        }
        return r && r->start <= a ? r : NULL;
}

static void object_open(struct mthp_density_sampler *s, struct proc_ctx *c, struct region *g) {
        char name[64];
        struct stat st;
        g->obj = -1;
        if (!s->host->real || c->dfd < 0)
                return;
        snprintf(name, sizeof(name), "map_files/%llx-%llx", (unsigned long long) g->map_start,
                 (unsigned long long) g->map_end);
        int fd = openat(c->dfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return;
        }
        /* O_NOATIME (the mincore view's mmap touches atime): mthpd looking
         * is not a use of a /dev/shm file. Only the owner or CAP_FOWNER
         * may ask, which the unit does not grant: asked at open, it failed
         * with EPERM for every other user's segment, a refusal the
         * sandbox check counts as a missing capability. */
        if (s->cap_fowner || st.st_uid == geteuid())
                (void) fcntl(fd, F_SETFL, O_NOATIME);
        g->obj_fd = fd;
        g->obj_size = (uint64_t) st.st_size;
        g->obj_whole = st.st_size > 0 &&
                       (uint64_t) st.st_blocks * 512 >= ((uint64_t) st.st_size + PAGE - 1) / PAGE * PAGE;
        g->obj = 1;
}

static bool object_view(const struct mthp_density_sampler *s, struct region *g) {
        if (g->obj_view == 0) {
                g->obj_view = -1;
                if (!mthp_mincore_truthful(g->obj_fd, s->cap_fowner))
                        return false;
                void *v = mmap(NULL, g->map_end - g->map_start, PROT_READ, MAP_SHARED, g->obj_fd, (off_t) g->map_off);
                if (v == MAP_FAILED)
                        return false;
                g->obj_map = v;
                g->obj_view = 1;
        }
        return g->obj_view > 0;
}

void density_object_release(struct mthp_density_sampler *s) {
        for (size_t i = 0; i < s->n_reg[MTHP_SHMEM]; i++) {
                struct region *g = &s->reg[MTHP_SHMEM][i];
                if (g->obj_view > 0)
                        munmap(g->obj_map, g->map_end - g->map_start);
                if (g->obj > 0)
                        close(g->obj_fd);
                g->obj = g->obj_view = 0;
                g->obj_fd = -1;
                g->obj_map = NULL;
        }
}

/* Add the window's pages the mapped object holds to its touched bits.
 * 1 if the object was read, 0 if the PTE view stays. */
static int object_window(struct mthp_density_sampler *s, struct proc_ctx *c, const struct win *w, struct wmap *m) {
        struct region *g = region_at(s, MTHP_SHMEM, w->start);
        if (!g)
                return 0;
        if (g->obj == 0)
                object_open(s, c, g);
        if (g->obj < 0)
                return 0;
        unsigned n = (unsigned) ((w->end - w->start) / PAGE);
        uint64_t off = w->start - g->map_start, foff = g->map_off + off;
        if (g->obj_whole && foff + (uint64_t) n * PAGE <= g->obj_size) {
                set_bits(m->touched, w->lo, n);
                return 1;
        }
        if (!g->no_cachestat) {
                uint64_t nr_cache;
                if (mthp_cachestat(g->obj_fd, foff, (uint64_t) n * PAGE, &nr_cache) == 0) {
                        if (nr_cache == 0)
                                return 1;                       /* nothing resident: the PTE view is it */
                        if (nr_cache >= n) {
                                set_bits(m->touched, w->lo, n); /* every page resident */
                                return 1;
                        }
                } else {
                        g->no_cachestat = true;   /* ENOSYS, a seccomp filter's EPERM: mincore alone */
                }
        }
        if (!object_view(s, g))
                return 0;
        unsigned char vec[WIN_PAGES_MAX];
        if (mincore(g->obj_map + off, (size_t) n * PAGE, vec) < 0)
                return 0;
        for (unsigned i = 0; i < n; i++)
                if (vec[i] & 1)
                        set_bits(m->touched, w->lo + i, 1);
        return 1;
}

static int map_window_ptes(struct mthp_density_sampler *s, struct proc_ctx *c, const struct win *w, struct wmap *m);

static int map_window(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, const struct win *w,
                      struct wmap *m) {
        int r = map_window_ptes(s, c, w, m);
        if (r < 0 || kind != MTHP_SHMEM)
                return r;
        r = object_window(s, c, w, m);
        if (r > 0)
                c->object_windows++;
        return r < 0 ? r : 0;
}

static int map_window_ptes(struct mthp_density_sampler *s, struct proc_ctx *c, const struct win *w, struct wmap *m) {
        memset(m, 0, sizeof(*m));
        if (s->scan > 0) {
                size_t n = 0;
                int r = density_pm_scan(s, c->fd, w->start, w->end, WIN_PAGES_MAX, 0, &n);
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
                        if (g->categories & PAGE_IS_HUGE)
                                set_bits(m->huge, from, len);
                }
                m->huge_known = true;
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

/* Is the page at addr a base-page folio the process touched: 1; a large
 * folio's subpage or the shared zero page: 0; -ENODATA unknown (no
 * kpageflags; no PFNs in pagemap: they need CAP_SYS_ADMIN, checked once on
 * a page of our own when the sampler is made; or unmapped since). A zero
 * subpage is bloat only inside a large folio: where the folio is a single
 * 4K page, present means touched (written zeros: PostgreSQL's WAL buffers,
 * free space in a page, memset structures), and a larger size would have
 * added nothing there. Two preads, for zero pages only. */
int density_page_flags(const struct mthp_density_sampler *s, int pm_fd, uint64_t addr, uint64_t *flags) {
        uint64_t e;
        if (s->kpf_fd < 0)
                return -ENODATA;
        if (pread(pm_fd, &e, sizeof(e), (off_t) (addr / PAGE * sizeof(e))) != (ssize_t) sizeof(e))
                return -EIO;
        uint64_t pfn = e & PM_PFN_MASK;
        if (!(e & PM_PRESENT) || pfn == 0)
                return -ENOENT;
        if (pread(s->kpf_fd, flags, sizeof(*flags), (off_t) (pfn * sizeof(*flags))) != (ssize_t) sizeof(*flags))
                return -EIO;
        return 0;
}

static int base_folio(struct mthp_density_sampler *s, const struct proc_ctx *c, uint64_t addr) {
        uint64_t f;
        if (s->pfn_hidden || density_page_flags(s, c->fd, addr, &f) < 0)
                return -ENODATA;
        return (f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL | KPF_ZERO_PAGE)) ? 0 : 1;
}

/* A zero subpage counts as bloat only inside a large folio (base_folio).
 * Without PFNs (the unit has no CAP_SYS_ADMIN) the folio is unknown, but
 * where the PMD size is on for the kind (mthp_density_set_pmd_on) a fault in
 * a block a PMD could map gets a PMD-size folio, mapped by a PMD, whenever
 * the block holds no page yet: a page of such a block mapped by PTEs is in
 * a smaller folio that was there before (4K folios faulted before the
 * raise: PostgreSQL's WAL buffers, zeroed at its start and mapped by its
 * walwriter 16 s into pgbench with 2M on, read 0.53-0.56 used and stepped
 * shmem down from 2M every run), or one that filled a hole beside them
 * (64K-1M: counted small too, though its untouched subpages are bloat).
 * The daemon says so for shmem only: a shmem 2M folio whose whole PMD was
 * zapped is mapped by a PMD again on its next fault, while an anon one is
 * often left mapped by PTEs (a fork's copy-on-write, MADV_DONTNEED of part
 * of it). Needs PAGEMAP_SCAN (6.7) for PAGE_IS_HUGE. Other limits, read as
 * small though 2M: a shmem folio a partial MADV_DONTNEED, mprotect or
 * munmap left mapped by PTEs (until khugepaged retracts them), or that a
 * process with THP disabled maps by PTEs; and the folio a failed PMD
 * allocation falls back to (the engine steps down on the fallback rate,
 * MaxFallback=, instead). Only while 2M is on: after a step down from 2M
 * for another reason those zeros count again. */
static void tally_read(struct mthp_density_sampler *s, const struct proc_ctx *c, const struct read_req *q,
                       bool zero) {
        struct window_rec *rec = &s->recs[q->rec];
        int bf = zero ? base_folio(s, c, q->addr) : 0;
        bool base = zero && (bf == 1 || (bf == -ENODATA && q->small));
        if (!zero)
                s->reg[rec->kind][rec->reg].data = true;
        for (unsigned i = 0; i < s->n_sizes; i++)
                if (q->size_mask & (1u << i)) {
                        rec->read[i]++;
                        rec->zero[i] += zero;
                        rec->zero_base[i] += base;
                }
}

int density_flush_reads(struct mthp_density_sampler *s, struct proc_ctx *c) {
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
                        tally_read(s, c, &s->rq[i + k], mthp_density_page_is_zero(s->rbuf + k * PAGE));
                c->reads += done;
                i += done + (done < n - i);   /* skip the page that failed */
        }
        s->n_rq = 0;
        return c->gone ? -ESRCH : 0;
}

static int queue_read(struct mthp_density_sampler *s, struct proc_ctx *c, uint64_t addr, uint32_t rec,
                      uint32_t mask, bool small) {
        if (s->n_rq == READ_BATCH) {
                int r = density_flush_reads(s, c);
                if (r < 0)
                        return r;
        }
        s->rq[s->n_rq++] = (struct read_req) { addr, rec, mask, small };
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

        bool hg = s->reg[kind][rec->reg].hg;
        for (unsigned i = 0; i < s->n_sizes; i++) {
                struct acc *a = &s->acc[kind][i], *ah = &s->acc_hg[kind][i];
                unsigned bp = s->bp[i], lbp = s->lbp[i];
                /* only blocks wholly inside the mapping: a folio cannot cross it */
                for (unsigned j = (w->lo + bp - 1) / bp; (j + 1) * bp <= w->hi; j++) {
                        unsigned t = block_count(&tc, lbp, j);
                        if (!t)
                                continue;
                        a->blocks++;
                        a->cov_num += u * t;
                        a->cov_den += u * bp;
                        if (hg) {
                                ah->blocks++;
                                ah->cov_num += u * t;
                                ah->cov_den += u * bp;
                        }
                        if (t == bp) {
                                a->full++;
                                ah->full += hg;
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
        /* a whole block of the largest size, which is the PMD size when
         * pmd_on, aligned in the address space too (shmem: address and
         * file offset agree modulo its size), with 2M on: a PMD maps it
         * unless its pages came before (tally_read) */
        bool pmd_block = s->pmd_on[kind] && m->huge_known && w->lo == 0 && w->hi == s->wpages &&
                         s->reg[kind][rec->reg].delta % s->wbytes == 0;
        unsigned need = avail < s->b.reads_per_window ? avail : s->b.reads_per_window;
        for (unsigned j = w->lo / bp0; j < w->hi / bp0 && need; j++) {
                if (!test_bit(full[0], j))
                        continue;
                for (unsigned idx = j * bp0; idx < (j + 1) * bp0 && need; idx++) {
                        if (!test_bit(m->present, idx) || density_rng_below(&s->rng, avail--) >= need)
                                continue;
                        uint32_t mask = 0;
                        for (unsigned i = 0; i < s->n_sizes; i++)
                                if (test_bit(full[i], idx >> s->lbp[i]))
                                        mask |= 1u << i;
                        r = queue_read(s, c, w->start + (uint64_t) (idx - w->lo) * PAGE, ri, mask,
                                       pmd_block && !test_bit(m->huge, idx));
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

uint64_t density_window_cost(const struct mthp_density_sampler *s, const struct proc_ctx *c) {
        return s->wpages + (c->can_read ? s->b.reads_per_window : 0);
}

static int window_at(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, const struct win *w, double u) {
        struct wmap m;
        int r = map_window(s, c, kind, w, &m);
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
                        if (density_spent(s, s->b.max_usec))
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
                if (density_rng_below(&s->rng, n - j) >= need)
                        continue;
                if (!budget_allows(s, c, kind, density_window_cost(s, c)))
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
                if (!budget_allows(s, c, kind, density_window_cost(s, c)))
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
                window_of(s, g, g->start + density_rng_below(&s->rng, span / PAGE) * PAGE, &w);
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

int density_sample_kind(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, uint64_t draws) {
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
                /* out of time before the list was whole: the floor's
                 * windows are drawn at random (each weighted by its
                 * chance), and the process is listed again next time */
                return below_floor(c, kind) ? draw(s, c, kind, DENSITY_FLOOR_WINDOWS) : 0;
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
