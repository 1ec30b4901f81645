/* SPDX-License-Identifier: MIT */
/* How the collapser works (its contract is in mthp/collapse.h):
 *
 *  - Blocks are PMD-aligned blocks lying wholly inside a private, readable,
 *    writable anonymous mapping (no name, [heap], [stack], [anon:*], private
 *    /dev/zero), as mthp_proc_mapping_kind() says MTHP_ANON.
 *  - "Present" counts pages in the page table that are not the shared zero
 *    page; swapped pages do not count (collapsing them would swap them in).
 *    The shmem repair also counts, in a block the process touched, what the
 *    segment's page cache holds (mthp_collapser_run_shm).
 *  - Long-lived: a block is eligible when it was a candidate on the previous
 *    pass too and was first seen at least min_interval_usec ago (so a pass
 *    resumed on the next tick after a cut does not fast-track new blocks).
 *    At most MTHP_COLLAPSE_TRACK_MAX block addresses are remembered over all
 *    processes, and MTHP_COLLAPSE_PROCS_MAX processes; the least recently run
 *    process is forgotten first.
 *  - One iovec per block, MTHP_COLLAPSE_BATCH_MAX per process_madvise call.
 *    A call that stops early (it returns the bytes advised before the block
 *    that failed) is retried from that block to learn its errno, so such a
 *    block is tried twice.
 *  - Errors per block: EAGAIN is a failure, the pass goes on; ENOMEM (no
 *    huge page to be had) is a failure and ends the pass; EINVAL (THP off
 *    for the mapping, MADV_NOHUGEPAGE, or it changed under us) is a failure
 *    and the mapping is left alone for MTHP_COLLAPSE_REFUSE_PASSES passes.
 *    Whether the kernel knows MADV_COLLAPSE at all is probed once with a
 *    zero-length madvise() of our own memory: if not, every call returns
 *    -EOPNOTSUPP. EPERM/EACCES are logged once per collapser and that
 *    process is not tried again until it is forgotten.
 *  - Time (max_usec, and the result's usec) is this thread's CPU time, in
 *    which the kernel does the collapse, but at least a quarter of the wall
 *    time (as the density sampler counts: on a busy host wall time is mostly
 *    waiting for a CPU). The first batch is one block, later ones are sized
 *    from the measured cost per block (it goes up at once, down slowly), so a
 *    tick overruns max_usec by about one block, at worst by one batch when
 *    the cost jumps (1.5 to 5 ms a 2M block measured here). kB count blocks
 *    attempted, collapsed or not.
 *  - An overrun is a debt: the next ticks get max_usec less it (a tick with
 *    none left passes nothing: run says deferred), so over ticks the work
 *    takes max_usec a tick, whatever a block costs.
 *  - Progress, however small max_usec: a pass walks at least one chunk
 *    (64 blocks) of the address space, and the first pass of a tick with
 *    time left at its start tries at least one block, even when the walk
 *    spent that time. (Else a budget below a walk plus a block, 2 ms a tick
 *    at 100 ms x 2% against 1.5 to 13 ms a block, collapses nothing ever.)
 *  - On a fake root (host->real false) every run returns -EOPNOTSUPP: the
 *    syscalls would act on real processes whose maps we did not read.
 *    Unit tests replace the kernel calls (mthp_collapser_set_ops), which
 *    lifts this; /proc/PID/{stat,status,maps} are then read from the tree. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mthp/collapse.h"
#include "mthp/procinfo.h"
#include "mthp/procfs.h"
#include "mthp/log.h"
#include "mthp/util.h"

#include "pagemap-scan.h"
#include "process-madvise.h"
#include "pagecache.h"

#define PAGE 4096u
#define CHUNK_BLOCKS 64u                /* blocks per PAGEMAP_SCAN walk (128 MiB) */
#define VEC_LEN 1024u                   /* page_region runs per ioctl; the walk resumes if it fills */
#define REFUSED_MAX 4u                  /* mappings per process left alone after EINVAL */

struct refused {
        uint64_t start, end;
        unsigned passes_left;
};

struct proc_ent {
        pid_t pid;                      /* 0: free */
        uint64_t starttime;
        uint64_t last_pass;             /* t_usec of the last pass */
        uint64_t last_seen;             /* t_usec of the last run call */
        uint64_t lru;
        bool has_pass, resume, denied;
        bool shm;                       /* a shmem repair entry (run_shm), apart from the anon one */
        uint64_t resume_at;             /* a pass cut short: where the next one starts */
        struct mthp_collapse_block *set;
        size_t n_set;
        struct refused refused[REFUSED_MAX];
};

struct cand {
        uint64_t addr, map_start, map_end;
};

/* A point in time on two clocks: wall and this thread's CPU time. */
struct stamp {
        uint64_t wall, cpu;
};

struct mthp_collapser {
        const struct mthp_host *host;
        struct mthp_collapse_budget b;
        uint64_t pmd_bytes;
        unsigned pmd_kb, pmd_pages;
        int support;                    /* MADV_COLLAPSE: 1 yes, 0 not probed, -1 no */
        bool perm_logged;
        bool cache_logged;              /* the shmem repair fell back to the process's own pages */
        bool have_ops;
        struct mthp_collapse_ops ops;
        /* the pass under way repairs shmem in [shm_lo, shm_hi) (run_shm) */
        bool shm_mode;
        uint64_t shm_lo, shm_hi;

        struct proc_ent ent[MTHP_COLLAPSE_PROCS_MAX];
        uint64_t lru_clock;
        size_t tracked;                 /* sum of the entries' n_set */

        struct stamp tick_t0;
        uint64_t tick_kb;
        uint64_t tick_used;             /* the tick's passes' own time */
        bool settled;                   /* a reload settled the last tick at its budget */
        uint64_t debt;                  /* time earlier ticks overran max_usec by, not yet paid */
        uint64_t usec_per_block;        /* what a block costs: 0 unknown, up at once, down slowly */
        struct mthp_collapse_result tot;

        bool cap_fowner;                /* mincore tells any file's page cache */
        bool no_cachestat;              /* for good (mthp_pc_object_count) */
        bool no_map_files;              /* EPERM: not CAP_CHECKPOINT_RESTORE */

        /* one pass */
        int pm_fd, pidfd;
        struct mthp_pc_object obj;      /* shmem repair: the segment of the mapping at hand */
        char *text;
        size_t cap_text;
        struct cand *cand;              /* MTHP_COLLAPSE_TRACK_MAX each */
        uint64_t *cur;
        bool *elig;
        struct mthp_collapse_block *next;
        struct page_region vec[VEC_LEN];
        uint16_t present[CHUNK_BLOCKS];
        bool huge[CHUNK_BLOCKS];
        struct iovec iov[MTHP_COLLAPSE_BATCH_MAX];
};

/* ---- kernel calls ---- */

static uint64_t mono_usec(void *user) {
        (void) user;
        return mthp_now_usec(CLOCK_MONOTONIC);
}

/* Present pages (not the zero page) and PMD mapping of n blocks, one
 * PAGEMAP_SCAN walk that resumes where it stopped when the vector fills. */
static int real_scan(void *user, pid_t pid, uint64_t start, size_t n, uint16_t *present, bool *huge) {
        struct mthp_collapser *c = user;
        uint64_t end = start + n * c->pmd_bytes, at = start;
        (void) pid;

        memset(present, 0, n * sizeof(*present));
        memset(huge, 0, n * sizeof(*huge));
        while (at < end) {
                uint64_t walk_end = end;
                int r = mthp_pagemap_scan(c->pm_fd, at, end, c->vec, VEC_LEN, 0, PAGE_IS_PRESENT,
                                          PAGE_IS_PRESENT | PAGE_IS_HUGE, &walk_end);
                if (r < 0)
                        return r == -ENOTTY ? -EOPNOTSUPP : r;
                for (int k = 0; k < r; k++) {
                        const struct page_region *g = &c->vec[k];
                        uint64_t s = g->start < start ? start : g->start;
                        uint64_t e = g->end > end ? end : g->end;
                        while (s < e) {
                                size_t i = (size_t) ((s - start) / c->pmd_bytes);
                                uint64_t be = start + (i + 1) * c->pmd_bytes;
                                uint64_t t = e < be ? e : be;
                                present[i] += (uint16_t) ((t - s) / PAGE);
                                if (g->categories & PAGE_IS_HUGE)
                                        huge[i] = true;
                                s = t;
                        }
                }
                if (walk_end >= end)
                        break;
                if (walk_end <= at)
                        return -EIO;    /* no progress: should not happen */
                at = walk_end;
        }
        return 0;
}

/* The first present page (not the zero page) in [start, end), or end: one
 * PAGEMAP_SCAN that stops at the first page it finds (with nothing found,
 * the kernel walks to end). */
static int real_next_present(void *user, pid_t pid, uint64_t start, uint64_t end, uint64_t *next) {
        struct mthp_collapser *c = user;
        (void) pid;
        int r = mthp_pagemap_scan(c->pm_fd, start, end, c->vec, 1, 1, PAGE_IS_PRESENT, PAGE_IS_PRESENT, NULL);
        if (r < 0)
                return r == -ENOTTY ? -EOPNOTSUPP : r;
        if (r == 0)
                *next = end;
        else
                *next = c->vec[0].start > start ? c->vec[0].start : start;
        return 0;
}

/* The segment's page cache over the PMD block at addr (lib/pagecache.c);
 * the object is opened once a pass per mapping. */
static int real_cached(void *user, pid_t pid, uint64_t ms, uint64_t me, uint64_t mo, uint64_t addr, unsigned *pages) {
        struct mthp_collapser *c = user;
        if (!c->obj.tried || c->obj.start != ms || c->obj.end != me) {
                if (c->no_map_files) {
                        mthp_pc_object_close(&c->obj);
                        return -EPERM;
                }
                int r = mthp_pc_object_open(&c->obj, c->host, pid, ms, me, c->cap_fowner);
                if (r == -EPERM)
                        c->no_map_files = true;   /* no CAP_CHECKPOINT_RESTORE: for every process (EACCES: this one) */
                if (r < 0)
                        return r;
        }
        int r = mthp_pc_object_count(&c->obj, mo, addr, c->pmd_bytes, &c->no_cachestat);
        if (r < 0)
                return r;
        *pages = (unsigned) r;
        return 0;
}

static ssize_t real_advise(void *user, pid_t pid, const struct iovec *iov, size_t n) {
        struct mthp_collapser *c = user;
        (void) pid;
        long r = syscall(SYS_process_madvise, c->pidfd, iov, n, MADV_COLLAPSE, 0u);
        if (r < 0)
                return errno == ENOSYS ? -EOPNOTSUPP : -errno;
        return r;
}

static struct stamp stamp_now(const struct mthp_collapser *c) {
        if (c->have_ops) {
                uint64_t t = c->ops.now_usec(c->ops.user);
                return (struct stamp) { t, t };
        }
        return (struct stamp) { mthp_now_usec(CLOCK_MONOTONIC), mthp_now_usec(CLOCK_THREAD_CPUTIME_ID) };
}

/* What the work since t0 cost: our thread's CPU time (the collapse runs in
 * it, in the kernel), as the density sampler counts, since on a busy host
 * (2 CPUs, the target itself running) wall time mostly measures waiting for
 * a CPU. Wall time still caps it at 4x. */
static uint64_t elapsed_usec(const struct mthp_collapser *c, struct stamp t0) {
        struct stamp t = stamp_now(c);
        uint64_t cpu = t.cpu - t0.cpu, wall = t.wall - t0.wall;
        return cpu > wall / 4 ? cpu : wall / 4;
}

/* Does the kernel know MADV_COLLAPSE? A zero-length madvise checks the
 * advice and returns before looking at any mapping. */
static bool probe_support(void) {
        static char page[PAGE] __attribute__((aligned(PAGE)));
        return madvise(page, 0, MADV_COLLAPSE) == 0;
}

/* ---- construction ---- */

void mthp_collapse_budget_default(struct mthp_collapse_budget *b) {
        *b = (struct mthp_collapse_budget) {
                .max_kb_per_tick = 64 * 1024,
                .min_coverage = 0.9,
                .min_interval_usec = 10 * 1000000ULL,
                .max_usec = 20 * 1000,
        };
}

static bool budget_ok(const struct mthp_collapse_budget *b) {
        return b->min_coverage >= 0 && b->min_coverage <= 1 && b->max_usec > 0;
}

int mthp_collapser_new(const struct mthp_host *h, const struct mthp_collapse_budget *b, struct mthp_collapser **ret) {
        struct mthp_collapse_budget bb;
        char buf[64];

        if (!h || !ret)
                return -EINVAL;
        if (b)
                bb = *b;
        else
                mthp_collapse_budget_default(&bb);
        if (!budget_ok(&bb))
                return -EINVAL;
        struct mthp_collapser *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->host = h;
        c->b = bb;
        c->pm_fd = c->pidfd = -1;
        mthp_pc_object_init(&c->obj);
        c->cap_fowner = mthp_cap_fowner();
        c->ops = (struct mthp_collapse_ops) { real_scan, real_advise, mono_usec, c, real_next_present, real_cached };
        /* no PMD size (THP not built in): every run says -EOPNOTSUPP */
        if (sysconf(_SC_PAGESIZE) == PAGE &&
            mthp_host_read(h, "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", buf, sizeof(buf)) > 0) {
                unsigned long long v = strtoull(buf, NULL, 10);
                if (v >= 2 * PAGE && v <= (64ULL << 20) && !(v & (v - 1))) {
                        c->pmd_bytes = v;
                        c->pmd_kb = (unsigned) (v / 1024);
                        c->pmd_pages = (unsigned) (v / PAGE);
                }
        }
        c->cand = malloc(MTHP_COLLAPSE_TRACK_MAX * sizeof(*c->cand));
        c->cur = malloc(MTHP_COLLAPSE_TRACK_MAX * sizeof(*c->cur));
        c->elig = malloc(MTHP_COLLAPSE_TRACK_MAX * sizeof(*c->elig));
        c->next = malloc(MTHP_COLLAPSE_TRACK_MAX * sizeof(*c->next));
        if (!c->cand || !c->cur || !c->elig || !c->next) {
                mthp_collapser_free(c);
                return -ENOMEM;
        }
        c->tick_t0 = stamp_now(c);
        *ret = c;
        return 0;
}

static void ent_clear(struct mthp_collapser *c, struct proc_ent *e) {
        c->tracked -= e->n_set;
        free(e->set);
        memset(e, 0, sizeof(*e));
}

void mthp_collapser_free(struct mthp_collapser *c) {
        if (!c)
                return;
        for (unsigned i = 0; i < MTHP_COLLAPSE_PROCS_MAX; i++)
                free(c->ent[i].set);
        free(c->text);
        free(c->cand);
        free(c->cur);
        free(c->elig);
        free(c->next);
        free(c);
}

void mthp_collapser_set_ops(struct mthp_collapser *c, const struct mthp_collapse_ops *ops) {
        c->ops = *ops;
        if (!c->ops.now_usec)
                c->ops.now_usec = mono_usec;
        c->have_ops = true;
        c->support = 1;
        c->tick_t0 = stamp_now(c);
}

/* What the last tick took beyond its max_usec is paid from the next
 * one's, what it left unused pays off debt (never a credit). */
static void settle(struct mthp_collapser *c) {
        uint64_t owed = c->debt + c->tick_used;
        c->debt = owed > c->b.max_usec ? owed - c->b.max_usec : 0;
        c->tick_used = 0;
}

int mthp_collapser_set_budget(struct mthp_collapser *c, const struct mthp_collapse_budget *b) {
        if (!c || !b || !budget_ok(b))
                return -EINVAL;
        /* the last tick is settled at the budget it ran under (a smaller
         * one would turn a tick within its old share into debt); the debt
         * stays: it is time already spent */
        if (!c->settled)
                settle(c);
        c->settled = true;
        c->b = *b;
        return 0;
}

void mthp_collapser_get_budget(const struct mthp_collapser *c, struct mthp_collapse_budget *b) {
        *b = c->b;
}

void mthp_collapser_begin_tick(struct mthp_collapser *c, uint64_t t_usec) {
        if (!c->settled)
                settle(c);
        c->settled = false;
        c->tick_t0 = stamp_now(c);
        c->tick_kb = 0;
        /* forget processes not asked about for a long time */
        uint64_t idle = 10 * c->b.min_interval_usec + 60 * 1000000ULL;
        for (unsigned i = 0; i < MTHP_COLLAPSE_PROCS_MAX; i++) {
                struct proc_ent *e = &c->ent[i];
                if (e->pid && t_usec > e->last_seen && t_usec - e->last_seen > idle)
                        ent_clear(c, e);
        }
}

void mthp_collapser_totals(const struct mthp_collapser *c, struct mthp_collapse_result *tot) {
        *tot = c->tot;
}

/* ---- one pass ---- */

static struct proc_ent *ent_get(struct mthp_collapser *c, pid_t pid, bool shm) {
        struct proc_ent *free_e = NULL, *old = NULL;
        for (unsigned i = 0; i < MTHP_COLLAPSE_PROCS_MAX; i++) {
                struct proc_ent *e = &c->ent[i];
                if (e->pid == pid && e->shm == shm)
                        return e;
                if (!e->pid) {
                        if (!free_e)
                                free_e = e;
                } else if (!old || e->lru < old->lru) {
                        old = e;
                }
        }
        if (!free_e) {
                ent_clear(c, old);
                free_e = old;
        }
        free_e->pid = pid;
        free_e->shm = shm;
        return free_e;
}

static int read_text(struct mthp_collapser *c, const char *path, size_t *len) {
        _cleanup_close_ int fd = mthp_host_open_file(c->host, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fd;
        return mthp_proc_read_fd(fd, &c->text, &c->cap_text, len);
}

/* A /proc file of a process that is gone reads as ENOENT or ESRCH. */
static int gone_errno(int r) {
        return r == -ENOENT || r == -ESRCH ? -ESRCH : r;
}

/* starttime from stat, THP_enabled from status (absent before 5.0: 1). */
static int read_identity(struct mthp_collapser *c, pid_t pid, uint64_t *starttime, bool *thp_enabled) {
        char path[48], buf[4096];

        int r = mthp_proc_read_starttime(c->host, pid, starttime);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        r = mthp_host_read(c->host, path, buf, sizeof(buf));
        if (r < 0)
                return gone_errno(r);
        const char *p = strstr(buf, "\nTHP_enabled:");
        *thp_enabled = !p || strtol(p + strlen("\nTHP_enabled:"), NULL, 10) != 0;
        return 0;
}

static bool is_refused(const struct proc_ent *e, uint64_t start, uint64_t end) {
        for (unsigned i = 0; i < REFUSED_MAX; i++)
                if (e->refused[i].passes_left && e->refused[i].start == start && e->refused[i].end == end)
                        return true;
        return false;
}

static void refuse(struct proc_ent *e, uint64_t start, uint64_t end) {
        struct refused *slot = &e->refused[0];
        if (is_refused(e, start, end))
                return;
        for (unsigned i = 0; i < REFUSED_MAX; i++)
                if (e->refused[i].passes_left < slot->passes_left)
                        slot = &e->refused[i];
        *slot = (struct refused) { start, end, MTHP_COLLAPSE_REFUSE_PASSES };
}

/* The tick's time so far, the debt of earlier ticks counted as spent
 * at its start: a tick gets max_usec - debt, none while the debt is
 * max_usec or more. */
static uint64_t tick_usec(struct mthp_collapser *c) {
        uint64_t u = elapsed_usec(c, c->tick_t0) + c->debt;
        return u < c->debt ? UINT64_MAX : u;
}

static bool out_of_time(struct mthp_collapser *c) {
        return tick_usec(c) >= c->b.max_usec;
}

/* The walk stops at half the tick's budget: what it found eligible gets
 * the other half, else a walk that always runs out of time (a large
 * mapping to get through) would find blocks that never get collapsed. */
static bool walk_out_of_time(struct mthp_collapser *c) {
        uint64_t left = c->debt < c->b.max_usec ? c->b.max_usec - c->debt : 0;
        return elapsed_usec(c, c->tick_t0) >= left / 2;
}

/* Shmem repair: the pages of the block at ba the segment's page cache
 * holds, whichever process mapped them; 0 when that cannot be read. */
static unsigned shm_cached(struct mthp_collapser *c, pid_t pid, uint64_t ms, uint64_t me, uint64_t mo, uint64_t ba) {
        unsigned k = 0;
        if (!c->ops.cached)
                return 0;
        int r = c->ops.cached(c->ops.user, pid, ms, me, mo, ba, &k);
        if (r < 0) {
                if (mthp_once_set(&c->cache_logged))
                        mthp_log(LOG_INFO, "shmem repair: cannot read the page cache of pid %d's segment (%s): "
                                 "a block counts only the pages that process mapped", (int) pid,
                                 mthp_errno_words(r));
                return 0;
        }
        return k;
}

/* Walk the maps text from address `from` on, collect candidates into
 * c->cand. *scanned_to: the address below which every block from `from` on
 * was looked at (UINT64_MAX: to the end); *cut: time ran out. */
static int find_candidates(struct mthp_collapser *c, struct proc_ent *e, pid_t pid, size_t len, uint64_t from,
                           size_t *n_cand, uint64_t *scanned_to, bool *cut, struct mthp_collapse_result *res) {
        const char *p = c->text, *end = c->text + len;
        unsigned need = (unsigned) (c->b.min_coverage * c->pmd_pages + 0.999999);
        size_t n = 0;
        bool empty = false;     /* the last scanned chunk held nothing */
        bool scanned = false;   /* a chunk was scanned on this pass */

        if (need == 0)
                need = 1;       /* an empty block is never a candidate */
        *scanned_to = UINT64_MAX;
        *cut = false;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *le = nl ? nl : end;
                uint64_t first, last, ms = 0, me = 0, mo = 0;
                struct mthp_mapping m;
                int r = c->shm_mode ? mthp_collapse_shm_maps_line(p, (size_t) (le - p), c->pmd_bytes, c->shm_lo,
                                                                  c->shm_hi, &first, &last)
                                    : mthp_collapse_maps_line(p, (size_t) (le - p), c->pmd_bytes, &first, &last);
                if (r < 0)
                        return -EBADMSG;
                if (r > 0 && mthp_proc_parse_maps_line(p, (size_t) (le - p), &m) == 0) {
                        ms = m.start;
                        me = m.end;
                        mo = m.offset;
                        if (is_refused(e, ms, me))
                                r = 0;
                }
                p = nl ? nl + 1 : end;
                if (r == 0 || last <= from)
                        continue;
                if (first < from)
                        first = from; /* block-aligned: where a block walk stopped */
                for (uint64_t a = first; a < last;) {
                        /* at least one chunk a pass: else a pass begun late
                         * in its tick (the maps of many mappings read, other
                         * passes before it) would stop where it starts, tick
                         * after tick */
                        bool late = scanned && walk_out_of_time(c);
                        if (late || n == MTHP_COLLAPSE_TRACK_MAX) {
                                *scanned_to = a;
                                *cut = late;
                                *n_cand = n;
                                return 0;
                        }
                        if (empty && c->ops.next_present) {
                                /* in an empty stretch (a reservation, a sanitizer's
                                 * shadow): jump to the next present page */
                                uint64_t nx;
                                r = c->ops.next_present(c->ops.user, pid, a, last, &nx);
                                if (r < 0)
                                        return r;
                                empty = false;
                                if (nx >= last)
                                        break;
                                if (nx > a)
                                        a += (nx - a) / c->pmd_bytes * c->pmd_bytes;
                        }
                        size_t k = (size_t) ((last - a) / c->pmd_bytes);
                        if (k > CHUNK_BLOCKS)
                                k = CHUNK_BLOCKS;
                        r = c->ops.scan(c->ops.user, pid, a, k, c->present, c->huge);
                        if (r < 0)
                                return r;
                        scanned = true;
                        empty = true;
                        for (size_t i = 0; i < k; i++) {
                                uint64_t ba = a + i * c->pmd_bytes;
                                if (c->present[i] || c->huge[i])
                                        empty = false;
                                if (c->huge[i]) {
                                        res->huge++;
                                } else if (c->present[i] >= need ||
                                           (c->shm_mode && c->present[i] && shm_cached(c, pid, ms, me, mo, ba) >= need)) {
                                        res->candidates++;
                                        if (n < MTHP_COLLAPSE_TRACK_MAX)
                                                c->cand[n++] = (struct cand) { ba, ms, me };
                                }
                        }
                        a += k * c->pmd_bytes;
                }
        }
        *n_cand = n;
        return 0;
}

/* The new set replaces the entry's; the total stays under the cap by
 * forgetting the least recently run processes' sets first. */
static int store_set(struct mthp_collapser *c, struct proc_ent *e, size_t n) {
        c->tracked -= e->n_set;
        e->n_set = 0;
        while (c->tracked + n > MTHP_COLLAPSE_TRACK_MAX) {
                struct proc_ent *old = NULL;
                for (unsigned i = 0; i < MTHP_COLLAPSE_PROCS_MAX; i++) {
                        struct proc_ent *o = &c->ent[i];
                        if (o != e && o->n_set && (!old || o->lru < old->lru))
                                old = o;
                }
                if (!old) {
                        n = MTHP_COLLAPSE_TRACK_MAX - c->tracked;
                        break;
                }
                c->tracked -= old->n_set;
                old->n_set = 0;
                free(old->set);
                old->set = NULL;
        }
        struct mthp_collapse_block *s = NULL;
        if (n) {
                s = malloc(n * sizeof(*s));
                if (!s) {
                        free(e->set);
                        e->set = NULL;
                        return -ENOMEM;
                }
                memcpy(s, c->next, n * sizeof(*s));
        }
        free(e->set);
        e->set = s;
        e->n_set = n;
        c->tracked += n;
        return 0;
}

static void note_cost(struct mthp_collapser *c, uint64_t usec, size_t blocks) {
        if (!blocks)
                return;
        uint64_t per = usec / blocks;
        /* 1.5 to 13 ms a block measured on 6.18 (2 CPUs, a busy target):
         * an overrun costs the host, an underrun only the next tick */
        c->usec_per_block = per >= c->usec_per_block ? per : (c->usec_per_block * 3 + per) / 4;
        if (c->usec_per_block == 0)
                c->usec_per_block = 1;
}

/* Collapse the eligible candidates within the tick's budget. Returns 0,
 * -ESRCH, -EPERM/-EACCES, -EOPNOTSUPP; *pending: eligible blocks left. */
static int collapse(struct mthp_collapser *c, struct proc_ent *e, pid_t pid, size_t n_cand,
                    struct mthp_collapse_result *res, bool *pending) {
        size_t i = 0;
        *pending = false;
        for (;;) {
                while (i < n_cand && !c->elig[i])
                        i++;
                if (i == n_cand)
                        return 0;
                unsigned max = mthp_collapse_batch_blocks(&c->b, c->tick_kb, tick_usec(c), c->usec_per_block,
                                                          c->pmd_kb, MTHP_COLLAPSE_BATCH_MAX);
                if (max > 1 && c->usec_per_block == 0)
                        max = 1;                /* cost unknown: learn it from one block */
                /* The tick had time left when this pass began (run() saw
                 * it) but the walk spent it, and nothing was tried yet this
                 * tick: one block all the same. A budget smaller than a walk
                 * plus a block (2 ms a tick, at 100 ms x 2%, against 1.5 to
                 * 13 ms a block) would otherwise never collapse anything,
                 * and a repair would go on for ever. What this overruns is
                 * the debt the next ticks pay, so the share holds over
                 * ticks. */
                if (max == 0 && c->tick_kb == 0 && c->pmd_kb <= c->b.max_kb_per_tick)
                        max = 1;
                if (max == 0) {
                        *pending = true;
                        res->cut = true;
                        return 0;
                }
                size_t idx[MTHP_COLLAPSE_BATCH_MAX], n = 0;
                for (size_t j = i; j < n_cand && n < max; j++)
                        if (c->elig[j]) {
                                idx[n] = j;
                                c->iov[n++] = (struct iovec) { (void *) (uintptr_t) c->cand[j].addr, c->pmd_bytes };
                        }
                struct stamp t0 = stamp_now(c);
                ssize_t r = c->ops.advise(c->ops.user, pid, c->iov, n);
                size_t done = r > 0 ? (size_t) r / c->pmd_bytes : 0, tried = done;
                if (r >= 0 && done == 0)
                        r = -EAGAIN;            /* advised nothing and said no error: count a failure */
                if (done > n)
                        done = tried = n;
                if (r < 0)
                        tried = 1;              /* idx[0] failed */
                /* else stopped before idx[done] (if done < n): retried next round to learn its errno */
                note_cost(c, elapsed_usec(c, t0), tried ? tried : 1);
                res->attempted += (unsigned) tried;
                res->collapsed += (unsigned) done;
                res->kb_collapsed += (uint64_t) done * c->pmd_kb;
                c->tick_kb += (uint64_t) tried * c->pmd_kb;
                for (size_t k = 0; k < done; k++)
                        c->elig[idx[k]] = false;
                if (r >= 0) {
                        i = done < n ? idx[done] : idx[n - 1] + 1;
                        continue;
                }
                int err = (int) r;
                c->elig[idx[0]] = false;
                i = idx[0] + 1;
                switch (err) {
                case -ESRCH:
                case -EPERM:
                case -EACCES:
                case -EOPNOTSUPP:
                        res->attempted--;       /* never got to try */
                        c->tick_kb -= c->pmd_kb;
                        return err;
                case -EINVAL:
                        res->failed++;
                        res->last_error = err;
                        /* shmem repair picked only aligned blocks of a mapping
                         * without MADV_NOHUGEPAGE: EINVAL there is the mapping
                         * replaced while the kernel collapsed (a map/unmap
                         * loop; measured under ASan), so the next may do */
                        if (c->shm_mode)
                                break;
                        refuse(e, c->cand[idx[0]].map_start, c->cand[idx[0]].map_end);
                        /* the mapping's other blocks would fail the same way */
                        for (size_t j = i; j < n_cand; j++)
                                if (c->cand[j].map_start == c->cand[idx[0]].map_start)
                                        c->elig[j] = false;
                        break;
                case -ENOMEM:
                        res->failed++;
                        res->last_error = err;
                        for (size_t j = i; j < n_cand; j++)
                                *pending |= c->elig[j];
                        return 0;               /* no huge page to be had: next tick */
                default:                        /* EAGAIN: busy pages, the next may do */
                        res->failed++;
                        res->last_error = err;
                        break;
                }
        }
}

static int pass(struct mthp_collapser *c, struct proc_ent *e, pid_t pid, uint64_t t_usec,
                struct mthp_collapse_result *res) {
        char path[48];
        uint64_t starttime, scanned_to;
        bool thp_on, cut, pending = false;
        size_t len = 0, n_cand = 0;
        int r;

        r = read_identity(c, pid, &starttime, &thp_on);
        if (r < 0)
                return r;
        if (e->has_pass && e->starttime != starttime) {   /* the PID was reused */
                pid_t keep = e->pid;
                bool shm = e->shm;
                ent_clear(c, e);
                e->pid = keep;
                e->shm = shm;
        }
        e->starttime = starttime;
        if (e->denied)
                return -EPERM;
        if (!thp_on) {
                res->thp_disabled = true;
                e->has_pass = true;
                e->last_pass = t_usec;
                e->resume = false;
                return 0;
        }
        snprintf(path, sizeof(path), "/proc/%d/maps", (int) pid);
        r = read_text(c, path, &len);
        if (r < 0)
                return gone_errno(r);
        if (!c->have_ops) {
                snprintf(path, sizeof(path), "/proc/%d/pagemap", (int) pid);
                c->pm_fd = mthp_host_open_file(c->host, path, O_RDONLY | O_CLOEXEC);
                if (c->pm_fd < 0)
                        return gone_errno(c->pm_fd);
        }
        /* A pass cut short resumes where it stopped: a process whose first
         * mappings take longer to walk than a tick's budget (a large empty
         * reservation) still gets to the memory after them. */
        uint64_t from = e->resume_at;
        r = find_candidates(c, e, pid, len, from, &n_cand, &scanned_to, &cut, res);
        if (r < 0)
                return r;
        /* (a walk stopped by a full remembered set starts over: its blocks
         * are collapsed first, then the walk gets further) */
        e->resume_at = cut && scanned_to != UINT64_MAX ? scanned_to : 0;
        for (size_t i = 0; i < n_cand; i++)
                c->cur[i] = c->cand[i].addr;
        size_t n_next = mthp_collapse_merge(e->set, e->n_set, c->cur, n_cand, from, scanned_to, t_usec,
                                            c->b.min_interval_usec, c->elig, c->next, MTHP_COLLAPSE_TRACK_MAX);
        r = store_set(c, e, n_next);
        if (r < 0)
                return r;
        /* shmem repair: the page cache was filled before the raise and
         * outlives the mappings; the probe saw it at small folios, so no
         * second pass is waited for */
        for (size_t i = 0; c->shm_mode && i < n_cand; i++)
                c->elig[i] = true;
        for (size_t i = 0; i < n_cand; i++)
                res->eligible += c->elig[i];
        r = collapse(c, e, pid, n_cand, res, &pending);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < REFUSED_MAX; i++)
                if (e->refused[i].passes_left)
                        e->refused[i].passes_left--;
        res->cut |= cut;
        e->has_pass = true;
        e->last_pass = t_usec;
        e->resume = cut || pending;
        return 0;
}

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Is pid (whose pidfd, if any, is open) in cgroup or below it? Read
 * /proc/PID/cgroup, then ask the pidfd whether its process still lives: if
 * it does, the PID was not reused between pidfd_open and the read, and the
 * cgroup read was that process's. -ESRCH: gone or elsewhere. */
static int check_member(struct mthp_collapser *c, pid_t pid, const char *cgroup, enum mthp_cg_layout layout) {
        char path[64], text[4096], memcg[MTHP_PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        int r = mthp_host_read(c->host, path, text, sizeof(text));
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;
        if (mthp_procinfo_parse_cgroup(text, layout, memcg, sizeof(memcg)) < 0)
                return -ESRCH;
        if (c->pidfd >= 0 && syscall(SYS_pidfd_send_signal, c->pidfd, 0, NULL, 0u) < 0)
                return errno == ESRCH ? -ESRCH : 0; /* EPERM: alive, just not ours to signal */
        size_t n = strlen(cgroup);
        while (n > 1 && cgroup[n - 1] == '/')
                n--;
        if (strcmp(cgroup, "/") == 0 || (strncmp(memcg, cgroup, n) == 0 && (memcg[n] == 0 || memcg[n] == '/')))
                return 0;
        return -ESRCH;
}

static int run(struct mthp_collapser *c, pid_t pid, const char *cgroup, enum mthp_cg_layout layout, uint64_t t_usec,
               struct mthp_collapse_result *res);

int mthp_collapser_run(struct mthp_collapser *c, pid_t pid, uint64_t t_usec, struct mthp_collapse_result *res) {
        c->shm_mode = false;
        return run(c, pid, NULL, MTHP_CG_NONE, t_usec, res);
}

int mthp_collapser_run_in(struct mthp_collapser *c, pid_t pid, const char *cgroup, enum mthp_cg_layout layout,
                          uint64_t t_usec, struct mthp_collapse_result *res) {
        c->shm_mode = false;
        return run(c, pid, cgroup, layout, t_usec, res);
}

int mthp_collapser_run_shm(struct mthp_collapser *c, pid_t pid, uint64_t addr, uint64_t bytes, uint64_t t_usec,
                           struct mthp_collapse_result *res) {
        if (bytes == 0 || addr + bytes < addr) {
                memset(res, 0, sizeof(*res));
                return -EINVAL;
        }
        c->shm_mode = true;
        c->shm_lo = addr;
        c->shm_hi = addr + bytes;
        int r = run(c, pid, NULL, MTHP_CG_NONE, t_usec, res);
        c->shm_mode = false;
        return r;
}

static int run(struct mthp_collapser *c, pid_t pid, const char *cgroup, enum mthp_cg_layout layout, uint64_t t_usec,
               struct mthp_collapse_result *res) {
        struct stamp t0 = stamp_now(c);
        int r;

        memset(res, 0, sizeof(*res));
        if (pid <= 0)
                return -EINVAL;
        if (!c->have_ops && !c->host->real)
                return -EOPNOTSUPP;
        if (c->pmd_bytes == 0 || c->support < 0)
                return -EOPNOTSUPP;
        if (c->support == 0)
                c->support = probe_support() ? 1 : -1;
        if (c->support < 0) {
                mthp_log(LOG_NOTICE, "MADV_COLLAPSE: this kernel does not know it (madvise says EINVAL): "
                         "no collapsing");
                return -EOPNOTSUPP;
        }

        struct proc_ent *e = ent_get(c, pid, c->shm_mode);
        e->last_seen = t_usec;
        e->lru = ++c->lru_clock;
        /* a shmem repair comes back sooner: what it left was busy (a
         * map/unmap loop between its mappings) or not yet resident */
        uint64_t interval = c->shm_mode ? c->b.min_interval_usec / MTHP_COLLAPSE_SHM_INTERVAL_DIV : c->b.min_interval_usec;
        if (e->has_pass && !e->resume && t_usec >= e->last_pass && t_usec - e->last_pass < interval) {
                res->deferred = true;
                return 0;
        }
        if (c->tick_kb + c->pmd_kb > c->b.max_kb_per_tick || out_of_time(c)) {
                res->deferred = true;
                return 0;
        }

        if (!c->have_ops) {
                c->pidfd = (int) syscall(SYS_pidfd_open, pid, 0u);
                if (c->pidfd < 0) {
                        r = errno == ENOSYS ? -EOPNOTSUPP : -errno;
                        goto out;
                }
        }
        /* a reused PID must not be collapsed on another cgroup's budget */
        if (cgroup && (r = check_member(c, pid, cgroup, layout)) < 0)
                goto out;
        r = pass(c, e, pid, t_usec, res);
out:
        mthp_pc_object_close(&c->obj);
        if (c->pm_fd >= 0)
                close(c->pm_fd);
        if (c->pidfd >= 0)
                close(c->pidfd);
        c->pm_fd = c->pidfd = -1;
        res->usec = elapsed_usec(c, t0);
        /* only the passes' own time is paid back later: not the daemon's
         * work between them in the tick, which is not MADV_COLLAPSE's */
        c->tick_used += res->usec;

        if (r == -ESRCH) {
                ent_clear(c, e);
        } else if (r == -EPERM || r == -EACCES) {
                e->denied = true;
                if (mthp_once_set(&c->perm_logged))
                        mthp_log(LOG_WARNING,
                                 "MADV_COLLAPSE on process %d: %s: collapsing needs CAP_SYS_NICE and ptrace "
                                 "read access to the target; not trying it again for this process (reported once)",
                                 (int) pid, strerror(-r));
        } else if (r == -EOPNOTSUPP) {
                c->support = -1;
                mthp_log(LOG_NOTICE, "MADV_COLLAPSE: process_madvise or PAGEMAP_SCAN is missing on this kernel: "
                         "no collapsing");
        }
        c->tot.candidates += res->candidates;
        c->tot.eligible += res->eligible;
        c->tot.huge += res->huge;
        c->tot.attempted += res->attempted;
        c->tot.collapsed += res->collapsed;
        c->tot.failed += res->failed;
        c->tot.kb_collapsed += res->kb_collapsed;
        c->tot.usec += res->usec;
        if (res->last_error)
                c->tot.last_error = res->last_error;
        else if (r < 0 && r != -ESRCH)
                c->tot.last_error = r;
        return r;
}
