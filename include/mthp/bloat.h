/* SPDX-License-Identifier: MIT */
#pragma once

/* Bloat after the fact: processes whose memory grew under a raise, found
 * whether or not they fault now, and the give-back of their zero subpages.
 *
 * The tracker (the observer owns it) reads /proc/PID/stat of every process
 * while an anon size is raised and for MTHP_BLOAT_AFTER_USEC after a
 * step-down (a process that grew under the raise may go quiet only after
 * it), and nothing otherwise: all of them on the
 * raise's first tick (the baselines), then in rotation, each once in
 * MTHP_BLOAT_PASS_USEC (at least MTHP_BLOAT_MIN_READS a tick; /proc
 * listed once a pass), so that a raise held on a host of thousands of
 * processes costs a tenth of reading them all each tick; a process
 * started under the raise (a new ID in /proc/loadavg) is read at once and
 * every tick of its first 5 s. A
 * process's growth since the raise (since its start when it started after
 * it) is its RSS now against its RSS then; its faults since are the pages
 * a 4K kernel would have given it. Its anonymous share (statm's resident
 * less shared, read at the baseline and for a candidate) must have grown
 * as much: file pages mapped by fault-around are no bloat of ours. A
 * process is a candidate when it grew
 * by more than MTHP_BLOAT_FLOOR_KB and by more than MTHP_BLOAT_RATIO times
 * what its faults since would have mapped at 4K (large folios filled it),
 * or by MTHP_BLOAT_EXCESS_KB beyond that (it grew partly under the raise),
 * and is quiet now (fewer faults a second than the quiet rate given, since
 * its last read): the fault-driven density sampler does not see such a
 * process. A candidate is
 * offered once, then again after MTHP_BLOAT_RECHECK_USEC (or at once after
 * mthp_bloat_again: a give-back cut short by its budget).
 *
 * The give-back (mthp_bloat_give_back) reads the candidate's private
 * anonymous mappings in aligned 2M windows: pagemap for the present pages,
 * then up to MTHP_BLOAT_READS of them (process_vm_readv, real host only);
 * a window whose present pages are many and mostly zeros is sparse, and
 * only sparse windows are handed to process_madvise(MADV_PAGEOUT). Without
 * swap the kernel splits their large folios and frees the zero subpages,
 * keeping the touched ones (docs/kernel-bloat.md); with swap it would swap
 * touched data out, so the caller must check that first
 * (mthp_bloat_swap_kb). Dense windows are never advised: PAGEOUT there
 * only splits their folios. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "mthp/host.h"
#include "mthp/procfs.h"
#include "mthp/types.h"

#define MTHP_BLOAT_FLOOR_KB (8u * 1024)            /* growth below this is no bloat worth a look */
#define MTHP_BLOAT_RATIO 4                         /* RSS grown over 4x what its faults map at 4K */
#define MTHP_BLOAT_EXCESS_KB (64u * 1024)          /* ... or this much beyond it */
#define MTHP_BLOAT_RECHECK_USEC (10 * 1000000ULL)  /* a candidate offered again after this */
#define MTHP_BLOAT_FORGET_USEC (60 * 1000000ULL)   /* baselines outlive a step-down this long */
#define MTHP_BLOAT_AFTER_USEC (30 * 1000000ULL)    /* and are read on this long after it (< FORGET) */
#define MTHP_BLOAT_PASS_USEC (10 * 1000000ULL)    /* every process read once in this, while raised */
#define MTHP_BLOAT_MIN_READS 128                   /* stat files a tick at least (a small host: all) */
#define MTHP_BLOAT_CANDIDATES 8                    /* offered per tick, largest growth first */
#define MTHP_BLOAT_READS 16                        /* subpages read per 2M window */
#define MTHP_BLOAT_ADVISE_KB (32u * 1024)          /* one process_madvise call at most */
#define MTHP_BLOAT_MIN_PRESENT 64                  /* a window with fewer present pages is not read */

struct mthp_bloat_candidate {
        pid_t pid;
        uint64_t starttime;           /* tells it from a later process at its PID */
        char comm[MTHP_PROC_COMM_MAX];
        uint64_t rss_kb;              /* now */
        uint64_t grown_kb;            /* anon RSS grown since the raise (or its start) */
        uint64_t faults_kb;           /* what its faults since would have mapped at 4K */
        double fault_rate;            /* faults a second since the last tick */
};

struct mthp_bloat_stats {
        unsigned scanned;             /* stat files read this tick */
        uint64_t usec;                /* the tick's scan, wall time */
};

struct mthp_bloat;
int mthp_bloat_new(const struct mthp_host *h, struct mthp_bloat **ret);
void mthp_bloat_free(struct mthp_bloat *b);

/* One tick at t_usec (CLOCK_MONOTONIC). raised: an anon size is raised now
 * (false: nothing read; the baselines are kept for a raise that comes back
 * within MTHP_BLOAT_FORGET_USEC, as the engine's step-down and raise again
 * under a changing load, and dropped after). quiet_rate: a candidate
 * faults less than this a second. Up to max candidates in out[], largest
 * growth first, *n their number. 0 or a negative errno (/proc unreadable). */
/* It read processes at its last tick (raised, or shortly after). */
bool mthp_bloat_tracking(const struct mthp_bloat *b);
int mthp_bloat_tick(struct mthp_bloat *b, bool raised, uint64_t t_usec, double quiet_rate,
                    struct mthp_bloat_candidate *out, unsigned max, unsigned *n, struct mthp_bloat_stats *stats);
/* The last PID handed out (/proc/loadavg's last field, -1 unreadable) as
 * the caller read it for the next tick, which then reads none of its own
 * (the observer reads it once a tick for the fault-rate scan and this).
 * Given for that one tick. */
void mthp_bloat_set_last_pid(struct mthp_bloat *b, long last_pid);
/* Offer pid again on the next tick (its give-back stopped at the budget). */
void mthp_bloat_again(struct mthp_bloat *b, pid_t pid);

/* On a host with swap, where MADV_PAGEOUT would swap touched data out:
 * ask the process's cgroup v2 memory controller to reclaim kb with
 * swappiness=0 ("<bytes> swappiness=0" to memory.reclaim, Linux 6.13+).
 * That reclaim runs the shrinkers of that memcg alone, the THP
 * deferred-split one among them, which splits underused 2M folios and
 * frees their zero subpages; anon is not swapped, but the cgroup's page
 * cache is reclaimed too, up to kb (docs/kernel-bloat.md, sections 2 and
 * 5). Not measured on a real v2 host (this project's test host has the v1
 * memory controller). memory.stat's anon_thp before and after in res.
 * -EOPNOTSUPP: not a v2 memory controller (or no memory.reclaim); -EPERM:
 * the process is in the root cgroup (that would be the whole host's
 * reclaim: not done); -EINVAL from the write: the kernel has no
 * swappiness= key; -EAGAIN: the kernel reclaimed less than kb (res says
 * what moved); -ESRCH: gone. */
struct mthp_bloat_reclaim {
        char cgroup[256];             /* the cgroup, relative to the memory controller's mount */
        uint64_t asked_kb;
        uint64_t anon_thp_before_kb, anon_thp_after_kb, current_before_kb, current_after_kb;
        uint64_t usec;
};
int mthp_bloat_memcg_reclaim(const struct mthp_host *h, const struct mthp_caps *caps, pid_t pid, uint64_t kb,
                             struct mthp_bloat_reclaim *res);

/* The swap the host offers anon memory, from /proc/meminfo's SwapTotal
 * through the host root: 0 none. Negative errno when unreadable. */
int mthp_bloat_swap_kb(const struct mthp_host *h, uint64_t *kb);

struct mthp_bloat_result {
        unsigned windows;             /* 2M windows read */
        unsigned sparse;              /* of those, advised */
        uint64_t advised_kb;          /* their span */
        uint64_t rss_before_kb, rss_after_kb;
        uint64_t usec;                /* the whole give-back, wall time */
        bool budget_hit;              /* windows were left for the next tick */
};
/* Give back c's sparse windows (zero share of their present pages at least
 * min_zero), at most budget_kb of them, advised MTHP_BLOAT_ADVISE_KB at a
 * time and no more once max_usec of wall time is spent (a tick may overrun
 * by one such call, ~0.3-2.5 ms a MB): see above. The process must still
 * be c (its start time). 0, -ESRCH (gone), -EPERM/-EACCES (no ptrace read
 * access, no CAP_SYS_NICE), -ENOSYS, or another negative errno; res holds
 * what was done. */
int mthp_bloat_give_back(const struct mthp_host *h, const struct mthp_bloat_candidate *c, double min_zero,
                         uint64_t budget_kb, uint64_t max_usec, struct mthp_bloat_result *res);
