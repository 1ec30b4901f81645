/* SPDX-License-Identifier: MIT */
/* Giving bloat back (GiveBack=auto): the processes the observer found grown
 * under a raise and quiet now (mthp/bloat.h) get their sparse 2M windows
 * paged out with process_madvise(MADV_PAGEOUT), within GiveBackBudget= a
 * tick, only on a host without swap: there the kernel splits the large
 * folios and frees their zero subpages, keeping the touched ones; with swap
 * the same call would swap touched data out: there, on a cgroup v2 memory
 * controller, the process's cgroup is asked to reclaim its bloat with
 * swappiness=0 (memory.reclaim), which runs that memcg's THP deferred-split
 * shrinker without swapping anon (it reclaims page cache of the cgroup
 * too); elsewhere (v1, hybrid, the root cgroup) the bloat is left to the
 * PMD size's shrinker (max_ptes_none below 511 while 2M is raised). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "daemon.h"
#include "mthp/bloat.h"
#include "mthp/escape.h"
#include "mthp/log.h"
#include "mthp/observe.h"
#include "mthp/procinfo.h"
#include "mthp/util.h"

/* A window is sparse when at least half of the present pages read in it
 * are zeros: a 64K-folio program touching 1 byte per 64K reads 15/16
 * zeros, a dense one none; below half, splitting its folios costs more
 * than the bytes it frees. */
#define GIVE_BACK_MIN_ZERO 0.5
/* The tick's time for it: a tenth of the Interval (100 ms at 1 s), the
 * bytes left waiting for the next tick. MADV_PAGEOUT costs 0.3 ms a MB on
 * an idle host and up to 2.5 ms a MB on a loaded one (measured). */
#define GIVE_BACK_TIME_SHARE 10

/* memory.reclaim asks below this much bloat are not worth a reclaim pass
 * (one 2M folio split is 2 MiB at most) */
#define GIVE_BACK_RECLAIM_MIN_KB 2048

/* With swap: each candidate's bloat (growth beyond what its faults would
 * have mapped at 4K), within the tick's GiveBackBudget= and time share,
 * as a memory.reclaim of its cgroup with swappiness=0; a cgroup once a
 * tick. Returns false where the host cannot (not v2, no swappiness= key):
 * the caller logs the shrinker fallback. Not measured on a real v2 host. */
static bool give_back_reclaim(struct daemon *d, const struct mthp_bloat_candidate *c, unsigned n) {
        if (d->give_back_reclaim_error == -EINVAL || d->give_back_reclaim_error == -EOPNOTSUPP ||
            d->caps.cg_layout != MTHP_CG_V2)
                return false;
        uint64_t budget = d->cfg.give_back_budget_kb;
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC), max_usec = d->cfg.interval_usec / GIVE_BACK_TIME_SHARE;
        char done[4][256];
        unsigned n_done = 0;
        for (unsigned i = 0; i < n && budget >= GIVE_BACK_RECLAIM_MIN_KB; i++) {
                uint64_t bloat = c[i].grown_kb > c[i].faults_kb ? c[i].grown_kb - c[i].faults_kb : 0;
                if (bloat < GIVE_BACK_RECLAIM_MIN_KB)
                        continue;
                if (mthp_now_usec(CLOCK_MONOTONIC) - t0 >= max_usec) {
                        mthp_observer_grown_again(d->observer, c[i].pid);   /* its turn next tick */
                        continue;
                }
                uint64_t ask = bloat < budget ? bloat : budget;
                struct mthp_bloat_reclaim res;
                bool again = false;
                /* a cgroup once a tick: its reclaim already ran its queue */
                char cg[256] = "";
                char path[64], text[2048];
                snprintf(path, sizeof(path), "/proc/%d/cgroup", c[i].pid);
                if (mthp_host_read(d->host, path, text, sizeof(text)) > 0)
                        (void) mthp_procinfo_parse_cgroup(text, d->caps.cg_layout, cg, sizeof(cg));
                for (unsigned j = 0; j < n_done && !again; j++)
                        again = strcmp(done[j], cg) == 0;
                if (again)
                        continue;
                int r = mthp_bloat_memcg_reclaim(d->host, &d->caps, c[i].pid, ask, &res);
                if (n_done < 4)
                        mthp_strcpy(done[n_done++], sizeof(done[0]), res.cgroup);
                if (r == -ESRCH || r == -EPERM)
                        continue;   /* gone; or the root cgroup: the whole host's reclaim, not done */
                if (r < 0 && r != -EAGAIN) {
                        if (r != d->give_back_reclaim_error)
                                mthp_log(LOG_WARNING, "give-back: memory.reclaim of pid %d (%s)'s cgroup failed: %s%s",
                                         c[i].pid, c[i].comm, mthp_errno_words(r),
                                         r == -EINVAL ? " (no swappiness= key: Linux 6.13 or later); left to the "
                                                        "THP shrinker from now on" : "");
                        d->give_back_reclaim_error = r;
                        if (r == -EINVAL || r == -EOPNOTSUPP)
                                return false;
                        continue;
                }
                d->give_back_reclaim_error = 0;
                budget -= ask;
                d->give_back_last.advised_kb += ask;
                d->give_back_last.usec += res.usec;
                uint64_t freed = res.anon_thp_before_kb > res.anon_thp_after_kb ?
                                 res.anon_thp_before_kb - res.anon_thp_after_kb : 0;
                d->give_back_last.freed_kb += freed;
                /* the budget's remembered bloat loses it too, as after a
                 * page-out; the cgroup's drop may be other processes' too */
                if (freed)
                        mthp_observer_given_back(d->observer, c[i].pid, freed < bloat ? freed : bloat);
                d->give_back_total.processes++;
                d->give_back_total.advised_kb += ask;
                d->give_back_total.freed_kb += freed;
                char esc[512];
                mthp_log(LOG_NOTICE, "give-back: pid %d (%s) grew %llu MiB under the raise with faults for %llu MiB "
                         "at 4K, quiet (%.0f faults/s), on a host with swap: cgroup %s asked to reclaim %llu MiB "
                         "with swappiness=0 (its THP shrinker splits underused 2M folios; page cache of the cgroup "
                         "may go too): anon_thp %llu -> %llu MiB, memory.current %llu -> %llu MiB in %.1f ms%s",
                         c[i].pid, c[i].comm, (unsigned long long) c[i].grown_kb >> 10,
                         (unsigned long long) c[i].faults_kb >> 10, c[i].fault_rate,
                         mthp_escape(esc, sizeof(esc), res.cgroup), (unsigned long long) ask >> 10,
                         (unsigned long long) res.anon_thp_before_kb >> 10,
                         (unsigned long long) res.anon_thp_after_kb >> 10,
                         (unsigned long long) res.current_before_kb >> 10,
                         (unsigned long long) res.current_after_kb >> 10, (double) res.usec / 1000,
                         r == -EAGAIN ? " (less than asked was reclaimable)" : "");
        }
        return true;
}

void daemon_give_back(struct daemon *d) {
        const struct mthp_bloat_candidate *c;
        struct mthp_bloat_stats stats;
        unsigned n = mthp_observer_grown(d->observer, &c, &stats);
        d->give_back_last = (struct daemon_give_back) { 0 };
        d->give_back_last.scan_usec = stats.usec;
        d->give_back_last.scanned = stats.scanned;
        d->give_back_last.candidates = n;
        if (!n || d->cfg.mode == MTHP_MODE_OBSERVE || !d->cfg.give_back || !d->cfg.give_back_budget_kb)
                return;
        uint64_t swap_kb = 0;
        int r = mthp_bloat_swap_kb(d->host, &swap_kb);
        if (r == 0 && swap_kb > 0 && give_back_reclaim(d, c, n))
                return;
        if (r < 0 || swap_kb > 0) {
                if (!d->give_back_swap_logged) {
                        d->give_back_swap_logged = true;
                        if (r < 0)
                                mthp_log(LOG_WARNING, "give-back: cannot read SwapTotal (%s): not paging out",
                                         mthp_errno_words(r));
                        else
                                mthp_log(LOG_INFO, "give-back: pid %d (%s) grew %llu MiB under the raise, but the "
                                         "host has %llu MiB of swap: MADV_PAGEOUT would swap its touched pages "
                                         "out; its 2M folios are left to the THP shrinker (max_ptes_none)",
                                         c[0].pid, c[0].comm, (unsigned long long) c[0].grown_kb >> 10,
                                         (unsigned long long) swap_kb >> 10);
                }
                return;
        }
        uint64_t budget = d->cfg.give_back_budget_kb;
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC), max_usec = d->cfg.interval_usec / GIVE_BACK_TIME_SHARE;
        for (unsigned i = 0; i < n && budget > 0; i++) {
                struct mthp_bloat_result res;
                uint64_t spent = mthp_now_usec(CLOCK_MONOTONIC) - t0;
                if (spent >= max_usec) {
                        mthp_observer_grown_again(d->observer, c[i].pid);   /* its turn next tick */
                        continue;
                }
                r = mthp_bloat_give_back(d->host, &c[i], GIVE_BACK_MIN_ZERO, budget, max_usec - spent, &res);
                budget = budget > res.advised_kb ? budget - res.advised_kb : 0;
                d->give_back_last.windows += res.windows;
                d->give_back_last.advised_kb += res.advised_kb;
                d->give_back_last.usec += res.usec;
                uint64_t freed = res.rss_before_kb > res.rss_after_kb ? res.rss_before_kb - res.rss_after_kb : 0;
                d->give_back_last.freed_kb += freed;
                if (freed)
                        mthp_observer_given_back(d->observer, c[i].pid, freed);
                if (res.budget_hit)
                        mthp_observer_grown_again(d->observer, c[i].pid);
                if (r < 0 && r != -ESRCH) {
                        if (r != d->give_back_error)
                                mthp_log(LOG_WARNING, "give-back: MADV_PAGEOUT of pid %d (%s) failed: %s", c[i].pid,
                                         c[i].comm, mthp_errno_words(r));
                        d->give_back_error = r;
                        if (r == -ENOSYS || r == -EOPNOTSUPP)
                                break;
                        continue;
                }
                d->give_back_error = 0;
                if (!res.sparse) {
                        mthp_log(LOG_INFO, "give-back: pid %d (%s) grew %llu MiB under the raise with faults for "
                                 "%llu MiB at 4K, quiet: none of its %u 2M windows read is sparse (under %.0f%% "
                                 "zeros): left as is", c[i].pid, c[i].comm, (unsigned long long) c[i].grown_kb >> 10,
                                 (unsigned long long) c[i].faults_kb >> 10, res.windows, GIVE_BACK_MIN_ZERO * 100);
                        continue;
                }
                d->give_back_total.processes++;
                d->give_back_total.advised_kb += res.advised_kb;
                d->give_back_total.freed_kb += freed;
                mthp_log(LOG_NOTICE, "give-back: pid %d (%s) grew %llu MiB under the raise with faults for %llu MiB "
                         "at 4K, quiet (%.0f faults/s): paged out %u of %u 2M windows (%llu MiB, at least %.0f%% "
                         "zeros), RSS %llu -> %llu MiB in %.1f ms%s",
                         c[i].pid, c[i].comm, (unsigned long long) c[i].grown_kb >> 10,
                         (unsigned long long) c[i].faults_kb >> 10, c[i].fault_rate, res.sparse, res.windows,
                         (unsigned long long) res.advised_kb >> 10, GIVE_BACK_MIN_ZERO * 100,
                         (unsigned long long) res.rss_before_kb >> 10, (unsigned long long) res.rss_after_kb >> 10,
                         (double) res.usec / 1000, res.budget_hit ? "; the rest next tick (GiveBackBudget=, a tenth of Interval=)" : "");
        }
}
