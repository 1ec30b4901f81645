/* SPDX-License-Identifier: MIT */
/* The host's bloat budget (MaxHostBloat=): what a process would hold in
 * bloat at a size, what the host would hold in all, and the largest level
 * that fits. Pure, like the rest of the engine (mthp/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* The bloat (kB) a process would hold at rung r: its stake, times
 * 1/usage - 1 (no block of the size: none; a usage below one page a folio
 * reads as one page, so a usage of 0 costs a finite amount). */
double engine_rung_bloat_kb(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                            unsigned size, bool madvised) {
        double u = engine_remembered_raise(m, kind, size, madvised);
        if (isnan(u))
                return 0;
        u = fmax(u, (double) mthp_caps_page_kb(caps) / (double) caps->sizes[size].kb);
        return u >= 1 ? 0 : engine_stake_kb(caps, m, kind) * (1 / u - 1);
}

void engine_proc_host_bloat(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                            const unsigned *ladder, unsigned cap, unsigned n_ladder, const bool *madvised,
                            double bloat_pct, double keep_thr, bool existing, double *host_kb) {
        double most = 0;
        for (unsigned r = 0; r < n_ladder; r++) {
                unsigned z = ladder[r];
                /* a churner's zeros are a write it had not finished, in
                 * memory it holds at any size (engine-density.c
                 * party_rungs); a shmem process mapping page cache already
                 * there allocates nothing (quiet_shmem_alloc); above its
                 * policy's Sizes= it gets no larger folio */
                bool churn = engine_churn_dense(m, kind, z, bloat_pct, keep_thr);
                if (r < cap && !existing && !churn)
                        most = fmax(most, engine_rung_bloat_kb(caps, m, kind, z, madvised[r]));
                host_kb[r] = most;
        }
}

void engine_host_bloat_sum(struct density_verdict *v, unsigned n_ladder) {
        for (unsigned r = 0; r < n_ladder && r < MTHP_SIZES_MAX; r++) {
                v->host_kb[r] = v->host_keep_kb[r] = 0;
                v->host_top[r] = -1;
                for (unsigned p = 0; p < v->n_parties; p++) {
                        const struct party *pt = &v->party[p];
                        if (pt->proc < 0)
                                continue;
                        v->host_kb[r] += pt->host_kb[r];
                        if (!pt->host_raise_only)
                                v->host_keep_kb[r] += pt->host_kb[r];
                        if (pt->host_kb[r] > 0 && (v->host_top[r] < 0 || pt->host_kb[r] > v->party[v->host_top[r]].host_kb[r]))
                                v->host_top[r] = (int) p;
                }
        }
}

/* Meta's production recipe, THP always with max_ptes_none 409, pays
 * +2.4% of memory for +1.7% of performance (DESIGN.md): a host that
 * accepts that bill for all of its memory accepts 2.5% of MemTotal lost
 * to bloat; mthpd spends it only where a size pays. */
#define HOST_BLOAT_AUTO_PCT 2.5

double engine_max_host_bloat_kb(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap) {
        double total = snap ? (double) snap->mem.total_kb : 0;
        if (!cfg->max_host_bloat_set || cfg->max_host_bloat_is_pct) {
                double pct = cfg->max_host_bloat_set ? cfg->max_host_bloat_pct : HOST_BLOAT_AUTO_PCT;
                return total > 0 ? total * pct / 100.0 : INFINITY;
        }
        return cfg->max_host_bloat_kb == UINT64_MAX ? INFINITY : (double) cfg->max_host_bloat_kb;
}

/* Bloat the observer measured (grown and quiet under a raise, bloat.h) is
 * offered again every 10 s while it stays (MTHP_BLOAT_RECHECK_USEC): the
 * engine keeps the last figure a little longer than that. */
#define ENGINE_GROWN_KEEP_USEC (15 * 1000000ULL)

static void remember_grown(const struct mthp_snapshot *snap, struct mthp_engine_state *next) {
        /* what the give-back freed since is bloat no longer there: held
         * for 15 s it kept a dense program at 4K after a sparse one it
         * stepped down for had been given back (realkernel
         * sparse-after-raise: no raise back within 15 s in 1 run of 3) */
        if (snap->given_back_kb && next->grown_usec) {
                double given = (double) snap->given_back_kb;
                next->grown_kb = next->grown_kb > given ? next->grown_kb - given : 0;
                if (snap->given_back_pid == next->grown_pid)
                        next->grown_max_kb = next->grown_max_kb > given ? next->grown_max_kb - given : 0;
                if (next->grown_kb <= 0 && next->grown_max_kb <= 0) {
                        next->grown_kb = next->grown_max_kb = 0;
                        next->grown_pid = 0;
                        next->grown_comm[0] = 0;
                        next->grown_usec = 0;
                }
        }
        bool stale = next->grown_usec && snap->t_usec > next->grown_usec + ENGINE_GROWN_KEEP_USEC;
        if (snap->grown_bloat_kb && (stale || !next->grown_usec || (double) snap->grown_bloat_kb >= next->grown_kb)) {
                next->grown_kb = (double) snap->grown_bloat_kb;
                next->grown_max_kb = (double) snap->grown_max_kb;
                next->grown_pid = snap->grown_pid;
                mthp_strcpy(next->grown_comm, sizeof(next->grown_comm), snap->grown_comm);
                next->grown_usec = snap->t_usec;
        } else if (stale || snap->t_usec < next->grown_usec) {
                next->grown_kb = next->grown_max_kb = 0;
                next->grown_pid = 0;
                next->grown_comm[0] = 0;
                next->grown_usec = 0;
        }
}

/* The reason's figures: "host bloat at 2M 410 MiB of MaxHostBloat 600 MiB
 * (sparse pid 123 (name) 380 MiB; ...)", in k->lim_why. */
static void describe(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                     const struct mthp_engine_state *next, struct kind_step *k, unsigned r, double need,
                     double predicted, double grown, double allow, double budget) {
        const struct density_verdict *v = &k->dens;
        char at[16], who[160] = "", g[160] = "", later[80] = "", gain[96] = "", comm[ENGINE_NAME_QUOTED];
        mthp_format_size(caps->sizes[k->ladder[r]].kb, at, sizeof(at));
        if (v->host_top[r] >= 0) {
                const struct party *p = &v->party[v->host_top[r]];
                const struct mthp_engine_proc *m = &next->proc[p->proc];
                snprintf(who, sizeof(who), ", the most: sparse pid %d (%s) %.0f MiB", m->pid,
                         engine_quote_name(m->comm, comm, sizeof(comm)), p->host_kb[r] / 1024);
        }
        if (grown > 0)
                snprintf(g, sizeof(g), "; grown under a raise, not given back %.0f MiB (the most: pid %d (%s))",
                         grown / 1024, next->grown_pid, engine_quote_name(next->grown_comm, comm, sizeof(comm)));
        if (allow > 0)
                snprintf(later, sizeof(later), "; for a process started later %.0f MiB", allow / 1024);
        /* the gain the size would buy: the kind's 4K faults it saves, at
         * most all but one of each folio's (FaultCost=) */
        double pages = caps->sizes[k->ladder[r]].kb / (double) mthp_caps_page_kb(caps);
        int w = snprintf(gain, sizeof(gain), "; its gain: %s fault demand %.0f pages/s", k->kname, k->sig.demand);
        if (snap->fault_cost_ns > 0 && k->sig.demand > 0 && w > 0 && (size_t) w < sizeof(gain))
                snprintf(gain + w, sizeof(gain) - (size_t) w, ", at most %.1f%% of a core in 4K faults",
                         k->sig.demand * (1 - 1 / pages) * snap->fault_cost_ns / 1e7);
        snprintf(k->lim_why, sizeof(k->lim_why), "host bloat at %s %.0f MiB of MaxHostBloat %.0f MiB (predicted "
                 "%.0f MiB%s%s%s)%s", at, need / 1024, budget / 1024, predicted / 1024, who, g, later, gain);
}

void engine_budget_afford(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k) {
        const struct density_verdict *v = &k->dens;
        double budget = engine_max_host_bloat_kb(cfg, snap);
        unsigned level = k->st->level;
        if (k->kind == MTHP_ANON)
                remember_grown(snap, next);
        /* bloat measured under a raise: anon's (the tracker reads anon RSS) */
        double grown = k->kind == MTHP_ANON ? next->grown_kb : 0;
        /* A process started later is sampled within a tick or two, and
         * has its say then; until then it may take what the largest
         * process started under a raise took lately, or MinBloatBytes
         * (what no one process is noticed for) */
        double allow = fmax(v->min_bloat_kb, k->kind == MTHP_ANON ? next->grown_max_kb : 0);
        next->host_budget_kb = budget;
        memset(next->host_bloat_kb[k->kind], 0, sizeof(next->host_bloat_kb[k->kind]));
        for (unsigned r = 0; v->measured && r < k->n_ladder; r++)
                next->host_bloat_kb[k->kind][k->ladder[r]] = v->host_kb[r] + grown;
        if (!isfinite(budget) || !v->measured)
                return;
        /* Holding a level needs its predicted bloat within the budget, of
         * the processes that may take a size away (a process seen once
         * has a lifetime average for a rate: it weighs on a raise only,
         * as in the density); stepping down gives back neither the bloat
         * already measured nor that of a process not started yet. A raise
         * needs them all in: the band between the two keeps a level from
         * flapping. */
        unsigned a = 0;
        double need = 0, add = 0;
        bool raise = false;
        for (; a < k->n_ladder; a++) {
                raise = a + 1 > level;
                add = raise ? grown + allow : 0;
                need = (raise ? v->host_kb[a] : v->host_keep_kb[a]) + add;
                if (need > budget)
                        break;
        }
        /* the budget binds only below what the rest allows: the limited
         * cgroups (k->afford), and the density, which holds the level at
         * what it keeps or raises it to k->target; a sparse process that
         * holds a size back alone says so itself (MinBloatBytes=) */
        unsigned dens = k->target > level ? k->target : level < v->keep ? level : v->keep;
        if (a >= k->afford || a >= dens)
                return;
        k->afford = a;
        k->budget_capped = true;
        describe(caps, snap, next, k, a, need, raise ? v->host_kb[a] : v->host_keep_kb[a], add > 0 ? grown : 0,
                 add > 0 ? allow : 0, budget);
}
