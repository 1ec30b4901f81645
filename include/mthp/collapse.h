/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mthp/host.h"
#include "mthp/types.h"
#include <sys/types.h>
#include <sys/uio.h>

/* MADV_COLLAPSE for the processes of Collapse=yes cgroups: their dense,
 * long-lived anon regions become PMD-mapped THPs, from outside, with
 * process_madvise(pidfd, ..., MADV_COLLAPSE) (Linux 6.1+, CAP_SYS_NICE and
 * ptrace access to the target).
 *
 * A candidate is a PMD-aligned block of a private anon mapping that is at
 * least min_coverage present and not yet PMD-mapped (PAGEMAP_SCAN), and was
 * a candidate on the previous pass over the same process too (long-lived:
 * memory that is freed again soon is not worth a copy). Work per tick is
 * bounded in kB collapsed and in time; per process a pass runs at most every
 * min_interval_usec. */

struct mthp_collapse_budget {
        uint64_t max_kb_per_tick;     /* default 64 MiB */
        double min_coverage;          /* default 0.9 */
        uint64_t min_interval_usec;   /* per process, default 10 s */
        uint64_t max_usec;            /* per tick, default 20 ms; mthpd: Interval= x CollapseCPU= */
};
void mthp_collapse_budget_default(struct mthp_collapse_budget *b);
/* The time a tick may take for cpu_percent of one core at interval_usec a
 * tick, rounded, at least 1; 0 if cpu_percent is not in (0, 100] or the
 * interval is 0. 1 s x 2% = 20 ms, 100 ms x 2% = 2 ms. */
uint64_t mthp_collapse_usec_per_tick(uint64_t interval_usec, double cpu_percent);

struct mthp_collapse_result {
        unsigned candidates;          /* dense blocks not PMD-mapped seen this pass */
        unsigned attempted, collapsed, failed;
        uint64_t kb_collapsed;
        int last_error;               /* negative errno of the last failure, 0 none */
        uint64_t usec;
        /* what the pass saw of the blocks, and why it did not run or stopped */
        unsigned huge;                /* blocks seen already PMD-mapped */
        unsigned eligible;            /* candidates that were candidates on the previous pass too */
        bool deferred;                /* no pass: min_interval not over, or the tick's budget spent */
        bool cut;                     /* the tick's budget ended the pass early; the next tick resumes it */
        bool thp_disabled;            /* PR_SET_THP_DISABLE (THP_enabled: 0): nothing to do */
};

struct mthp_collapser;

int mthp_collapser_new(const struct mthp_host *h, const struct mthp_collapse_budget *b, struct mthp_collapser **ret);
void mthp_collapser_free(struct mthp_collapser *c);
/* A new budget for the collapser as it is (a reload): what it remembers of
 * each process (candidate sets, min_interval, resume points) stays, and so
 * does the time earlier ticks overran by. -EINVAL for a budget that new()
 * refuses (min_coverage outside [0, 1], max_usec 0), the old one kept. */
int mthp_collapser_set_budget(struct mthp_collapser *c, const struct mthp_collapse_budget *b);
void mthp_collapser_get_budget(const struct mthp_collapser *c, struct mthp_collapse_budget *b);
/* Start a tick at t_usec: resets the per-tick budget. */
void mthp_collapser_begin_tick(struct mthp_collapser *c, uint64_t t_usec);
/* One pass over pid within what is left of the tick's budget. -ESRCH if it
 * exited, -EPERM/-EACCES if not allowed, -EOPNOTSUPP if the kernel lacks
 * process_madvise or MADV_COLLAPSE; 0 otherwise (res filled). Only on the
 * real root ("/"): under a fake root returns -EOPNOTSUPP. */
int mthp_collapser_run(struct mthp_collapser *c, pid_t pid, uint64_t t_usec, struct mthp_collapse_result *res);
/* The same for a process found in cgroup (its cgroup.procs or a child's):
 * after pidfd_open, /proc/PID/cgroup is read and the pidfd asked whether
 * the process still lives, so a PID reused by a process of another cgroup
 * is never collapsed on this cgroup's budget: -ESRCH then. */
int mthp_collapser_run_in(struct mthp_collapser *c, pid_t pid, const char *cgroup, enum mthp_cg_layout layout,
                          uint64_t t_usec, struct mthp_collapse_result *res);
/* Shmem repair: the same for the shared mapping(s) of pid within [addr,
 * addr + bytes) (a shmem mapping the density sampler probed: its page cache
 * was filled at small folios before a 2M raise). Only PMD blocks whose
 * address and file offset are both PMD-aligned are tried, never a
 * misaligned mapping (the kernel returns EINVAL for it); a block is
 * eligible on first sight (the page cache outlives the mappings; the probe
 * already saw it small). A block pid touched counts as present as much as
 * the segment's page cache holds there (/proc/PID/map_files, then
 * cachestat or mincore, as the density sampler reads it), not only the
 * pages pid mapped: what a 2M folio there would add is what nobody filled
 * yet, and a database backend maps a fraction of the shared structures
 * its postmaster wrote. Where the page cache cannot be read (no map_files;
 * cachestat refused and mincore would not tell the truth) the process's own
 * count stays. A process is passed over again after
 * min_interval_usec / MTHP_COLLAPSE_SHM_INTERVAL_DIV. Kept apart from the
 * anon collapse of the same process (its own remembered set and interval);
 * shares the tick's budget with it. EINVAL on a block is a failure but does
 * not refuse the mapping: with misaligned and MADV_NOHUGEPAGE mappings left
 * out, it means the mapping was replaced while the kernel collapsed. */
#define MTHP_COLLAPSE_SHM_INTERVAL_DIV 10u
int mthp_collapser_run_shm(struct mthp_collapser *c, pid_t pid, uint64_t addr, uint64_t bytes, uint64_t t_usec,
                           struct mthp_collapse_result *res);
/* Totals since start. */
void mthp_collapser_totals(const struct mthp_collapser *c, struct mthp_collapse_result *tot);

/* Limits of the collapser; how it walks, batches, times and fails is
 * described at the top of lib/collapse.c. */
#define MTHP_COLLAPSE_TRACK_MAX 4096u
#define MTHP_COLLAPSE_PROCS_MAX 64u
#define MTHP_COLLAPSE_BATCH_MAX 4u
#define MTHP_COLLAPSE_REFUSE_PASSES 8u

/* For tests: the kernel calls, replaced. scan: for n PMD blocks from start,
 * present pages (not the zero page) and whether each is PMD-mapped; 0 or
 * -errno. advise: process_madvise(MADV_COLLAPSE) semantics (bytes advised, or
 * -errno if none). now_usec: the clock of the time budget. next_present
 * (may be NULL): the lowest address in [start, end) of a present page, or
 * end; lets the walk jump over a large reservation holding nothing in one
 * call instead of one scan per 64 blocks. cached (may be NULL; shmem repair
 * only): *pages = how many pages of the PMD block at addr the object mapped
 * at [map_start, map_end) from file offset map_off holds in its page cache,
 * whoever mapped them; 0, or -errno if that cannot be read (the block keeps
 * the process's own count). */
struct mthp_collapse_ops {
        int (*scan)(void *user, pid_t pid, uint64_t start, size_t n, uint16_t *present, bool *huge);
        ssize_t (*advise)(void *user, pid_t pid, const struct iovec *iov, size_t n);
        uint64_t (*now_usec)(void *user);
        void *user;
        int (*next_present)(void *user, pid_t pid, uint64_t start, uint64_t end, uint64_t *next);
        int (*cached)(void *user, pid_t pid, uint64_t map_start, uint64_t map_end, uint64_t map_off, uint64_t addr,
                      unsigned *pages);
};
void mthp_collapser_set_ops(struct mthp_collapser *c, const struct mthp_collapse_ops *ops);

/* Pure helpers, exposed for tests. */

/* One /proc/PID/maps line: 1 and the PMD-aligned blocks [*first, *end) if the
 * mapping is private writable anon memory holding at least one whole block;
 * 0 if not; -EBADMSG if the line does not parse. */
int mthp_collapse_maps_line(const char *line, size_t len, uint64_t pmd_bytes, uint64_t *first, uint64_t *end);

/* The same for shmem repair: 1 and the PMD blocks [*first, *end) of a shmem
 * mapping (shared anonymous, memfd, /dev/shm, SysV) that lie inside [lo, hi),
 * if its address minus its file offset is PMD-aligned and it holds one whole
 * such block there; 0 if not (a misaligned mapping: none of its blocks can
 * take a PMD folio); -EBADMSG if the line does not parse. */
int mthp_collapse_shm_maps_line(const char *line, size_t len, uint64_t pmd_bytes, uint64_t lo, uint64_t hi,
                                uint64_t *first, uint64_t *end);

/* A remembered candidate block and when it was first seen. */
struct mthp_collapse_block {
        uint64_t addr;
        uint64_t since_usec;
};
/* The set for the next pass. cur: this pass's candidates, ascending, all in
 * [scanned_from, scanned_to), the part of the address space the pass looked
 * at (a pass cut short by its time budget ends early, and the next one
 * resumes there); what of prev lies outside it is kept as it is. prev
 * ascending. eligible[i] (may be NULL): cur[i] was in prev and first seen at
 * least min_age_usec before now_usec. Writes at most cap blocks to out,
 * lowest addresses first, and returns their number. */
size_t mthp_collapse_merge(const struct mthp_collapse_block *prev, size_t n_prev, const uint64_t *cur, size_t n_cur,
                           uint64_t scanned_from, uint64_t scanned_to, uint64_t now_usec, uint64_t min_age_usec, bool *eligible,
                           struct mthp_collapse_block *out, size_t cap);
/* Blocks the next batch may hold: what is left of the tick's kB, and of its
 * time at usec_per_block each (0: not known, no limit from time; at least one
 * while any time is left), at most
 * max_batch. */
unsigned mthp_collapse_batch_blocks(const struct mthp_collapse_budget *b, uint64_t kb_used, uint64_t usec_used,
                                    uint64_t usec_per_block, unsigned pmd_kb, unsigned max_batch);
