/* SPDX-License-Identifier: MIT */
/* The engine's density judgement: the parties of an arbitration (each
 * counting process, each managed cgroup with an explicit mode), their
 * ceilings from remembered density and policy, the level every objection
 * allows, and who was outranked; and the descriptions the reasons quote.
 * Pure, like the rest of the engine (mthp/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* What a process faults in of one kind, in base pages per second: its fault
 * rate split between the kinds (engine_fault_share: by its sampled fault
 * addresses, else by the memory it holds; a shmem workload's small heap must
 * not speak for anon; memory no size can reach, nh mappings or a process
 * with THP disabled, speaks for nothing), times the pages each
 * fault brings in: a
 * process that uses the current top size densely gets folios of that size,
 * one fault each; any other counts a base page a fault. Counting events instead
 * would let a compiler's 700 faults/s outvote a workload faulting 2M
 * folios 2000 times a second. */
static double kind_rate(const struct mthp_engine_proc *m, enum mthp_kind kind, const struct mthp_caps *caps, int top,
                        double keep_thr) {
        double share = engine_fault_share(m, kind, true);
        if (share <= 0)
                return 0;
        double pages_per_fault = 1;
        if (top >= 0 && m->w[kind][top] > 0 &&
            (m->u[kind][top] / m->w[kind][top] >= keep_thr || (kind == MTHP_ANON && m->data_sparse[kind][top] > 0)))
                pages_per_fault = caps->sizes[top].kb / (double) mthp_caps_page_kb(caps);
        return m->fault_rate * share * pages_per_fault;
}

double mthp_engine_proc_pages_rate(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                   const struct mthp_engine_state *st, unsigned j, enum mthp_kind kind) {
        if (j >= MTHP_ENGINE_PROCS || !st->proc[j].pid)
                return 0;
        const struct mthp_engine_proc *m = &st->proc[j];
        /* a split by memory held, or a lifetime average: a page a fault (a
         * process holding a shared segment and faulting its heap would
         * otherwise count as faulting folios of the top size) */
        if (m->new_proc || (!m->fs_known && engine_fault_samples(m) < ENGINE_FAULT_SAMPLES_MIN))
                return m->fault_rate * engine_fault_share(m, kind, true);
        unsigned ladder[MTHP_SIZES_MAX], n = mthp_engine_ladder(cfg, caps, kind, ladder);
        unsigned level = st->kind[kind].level;
        return kind_rate(m, kind, caps, level && level <= n ? (int) ladder[level - 1] : -1,
                         engine_keep_threshold(cfg, NULL));
}

/* Which processes count: recently seen, and faulting memory of this kind
 * both fast enough and with a real share of the kind's faults. A process
 * seen once has only a lifetime average (a 'sleep' that faulted 100 pages
 * while starting): it may hold a raise back or back one, but it can take
 * no size away until a second sample measures its rate. */
static bool counts(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, unsigned j,
                   enum mthp_kind kind, double total, const struct mthp_caps *caps, int top, double keep_thr) {
        const struct mthp_engine_proc *m = &st->proc[j];
        double pages = kind_rate(m, kind, caps, top, keep_thr);
        return m->pid && st->tick <= m->seen_tick + PROC_RECENT_TICKS && pages > 0 &&
               pages >= cfg->min_proc_fault_rate && pages >= total * cfg->min_proc_share / 100.0;
}

/* A process too small a share of the kind's faults to count may still be
 * the one a raise harms: above the level, each of its faults would
 * allocate a whole folio, 1/u pages for each page it uses of it. It counts
 * against a raise (never for a step-down) when the pages it would fault in
 * at the sparsest size above the level reach MinProcessShare of the kind's
 * pages now. A sparse process beside a dense one (one page of each 64K;
 * 8% of the faults) did not count, anon went to 2M at the burst tick, and
 * it held 13 times its 4K RSS for two seconds (in 2 of 5 runs of
 * mthp-bench --scenario mixed). A process seen once has only a lifetime
 * average, mostly its start (a test's mthpd: 2,085 faults/s, 0.01 of each
 * 2M block, trace limited-sparse): it counts so only on the tick that
 * first saw it, which holds the raise for that tick; the next sample
 * measures its rate. */
static bool counts_ahead(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_engine_state *st, unsigned j, enum mthp_kind kind, double total,
                         const unsigned *ladder, unsigned n_ladder, unsigned level, const bool *madvised) {
        const struct mthp_engine_proc *m = &st->proc[j];
        if (!m->pid || level >= n_ladder || st->tick > m->seen_tick + PROC_RECENT_TICKS ||
            (m->new_proc && m->seen_tick != st->tick))
                return false;
        double rate = m->fault_rate * engine_fault_share(m, kind, true);
        if (!(rate > 0) || rate < cfg->min_proc_fault_rate)
                return false;
        double least = 1;
        for (unsigned r = level; r < n_ladder; r++) {
                double u = engine_remembered_raise(m, kind, ladder[r], madvised[r]);
                double one = (double) mthp_caps_page_kb(caps) / (double) caps->sizes[ladder[r]].kb;
                if (!isnan(u))
                        least = fmin(least, fmax(u, one));
        }
        return rate / least >= total * cfg->min_proc_share / 100.0;
}

int mthp_engine_cgroup_dense_kb(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_engine_state *st, const char *managed, enum mthp_kind kind,
                                unsigned *n_procs) {
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder), n = 0;
        int dense = -1;
        size_t len = strlen(managed);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                bool inside = strcmp(managed, "/") == 0 ||
                              (strncmp(m->cgroup, managed, len) == 0 && (m->cgroup[len] == 0 || m->cgroup[len] == '/'));
                if (!inside)
                        continue;
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = engine_max_bloat(cfg, pol);
                double keep_thr = 1.0 / (1.0 + bloat / 100.0);
                int kb = 0;
                bool any = false;
                for (unsigned r = 0; r < n_ladder; r++) {
                        double u = engine_remembered(m, kind, ladder[r]);
                        if (isnan(u))
                                continue;
                        any = true;
                        if (u < keep_thr)
                                break;
                        kb = (int) caps->sizes[ladder[r]].kb;
                }
                if (!any)
                        continue;
                n++;
                dense = dense < 0 || kb < dense ? kb : dense;
        }
        if (n_procs)
                *n_procs = n;
        return dense;
}

/* Rungs of the ladder at or below a policy's top size (all without one). */
static unsigned sizes_cap(const struct mthp_caps *caps, const unsigned *ladder, unsigned n_ladder,
                          const struct mthp_policy *pol) {
        unsigned c = 0;
        while (c < n_ladder && (!pol || !pol->max_kb || caps->sizes[ladder[c]].kb <= pol->max_kb))
                c++;
        return c;
}

/* Managed cgroups with madvise want their Sizes= as madvise, whether they
 * fault or not: madvise hands large folios only to memory a program asks
 * for, so nobody's objection blocks it. */
void engine_madvise_wishes(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const unsigned *ladder,
                           unsigned n_ladder, bool madvise[MTHP_SIZES_MAX]) {
        for (unsigned c = 0; c < snap->n_cgroups && c < MTHP_SNAP_CGROUPS; c++) {
                const struct mthp_policy *pol = mthp_engine_policy(cfg, snap->cgroup[c].path, NULL, 0);
                if (!pol || pol->mode[kind] != MTHP_POLICY_MADVISE)
                        continue;
                for (unsigned r = 0; r < n_ladder; r++) {
                        unsigned kb = caps->sizes[ladder[r]].kb;
                        if ((!pol->min_kb || kb >= pol->min_kb) && (!pol->max_kb || kb <= pol->max_kb))
                                madvise[r] = true;
                }
        }
}

/* Does every party whose ceiling (keep or raise) is below level get
 * outranked by one that accepts it with a strictly higher priority? Ties go
 * to the smaller size. */
static bool level_ok(const struct density_verdict *v, unsigned level, bool raise, int *blocker) {
        bool ok = true;
        if (blocker)
                *blocker = -1;
        for (unsigned q = 0; q < v->n_parties; q++) {
                const struct party *pq = &v->party[q];
                unsigned cq = raise ? pq->raise : pq->keep;
                if (cq >= level)
                        continue;
                bool outranked = false;
                for (unsigned p = 0; p < v->n_parties && !outranked; p++) {
                        const struct party *pp = &v->party[p];
                        outranked = (raise ? pp->raise : pp->keep) >= level && pp->prio > pq->prio;
                }
                if (!outranked) {
                        /* name the strongest objection: highest priority,
                         * then the lowest ceiling */
                        if (!blocker)
                                return false;
                        const struct party *pb = *blocker >= 0 ? &v->party[*blocker] : NULL;
                        if (!pb || (raise ? pb->raise : pb->keep) >= level || pq->prio > pb->prio ||
                            (pq->prio == pb->prio && cq < (raise ? pb->raise : pb->keep)))
                                *blocker = (int) q;
                        ok = false;
                }
        }
        return ok;
}

void engine_describe_party(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const struct party *p, char *buf,
                           size_t n) {
        char pol[96] = "";
        if (p->pol)
                snprintf(pol, sizeof(pol), ", policy %s: %s=%s, priority %u", p->pol->name,
                         kind == MTHP_ANON ? "Anon" : "Shmem", mthp_policy_mode_name(p->pol->mode[kind]), p->prio);
        if (p->proc >= 0) {
                const struct mthp_engine_proc *m = &st->proc[p->proc];
                char split[64], comm[ENGINE_NAME_QUOTED], cg[ENGINE_PATH_QUOTED];
                engine_fault_split_note(m, kind, split, sizeof(split));
                snprintf(buf, n, "pid %d (%s, %.0f faults/s%s%s%s%s)", m->pid,
                         engine_quote_name(m->comm, comm, sizeof(comm)), m->fault_rate, split,
                         m->cgroup[0] ? ", cgroup " : "", m->cgroup[0] ? engine_quote_path(m->cgroup, cg, sizeof(cg)) : "",
                         pol);
        } else {
                const struct mthp_cgroup_view *c = &snap->cgroup[p->cgroup];
                const struct mthp_engine_cgroup *mc = engine_remembered_cgroup(st, c->path);
                char grace[64] = "", cg[ENGINE_PATH_QUOTED];
                if (p->grace)
                        snprintf(grace, sizeof(grace), "appeared %.0f s ago, ",
                                 (double) (snap->t_usec - c->appeared_usec) / 1e6);
                snprintf(buf, n, "cgroup %s (%s%.0f faults/s%s)", engine_quote_path(c->path, cg, sizeof(cg)), grace,
                         mc ? mc->fault_rate : c->fault_rate, pol);
        }
        (void) caps;
}

/* Shmem with a size raised: a process whose faults bring no large folios
 * in (the kind's mTHP allocations, host-wide, under a tenth of its fault
 * pages) maps page cache that is already there. A larger size cannot cost
 * it memory, whatever its subpages hold, so its sparseness takes no size
 * away (it may still hold a further raise back). PostgreSQL's walwriter
 * maps the 16 MiB of WAL buffers the server zeroed at start, 4,090 faults
 * in one second, none allocating: read sparse (half its subpages zero, in
 * 4K folios a sampler without PFNs, the unit's, cannot tell), it stepped
 * shmem down from 2M for the whole host. Host-wide allocations are the
 * conservative side: another process's allocating keeps the objection, and
 * so does any allocation above MinProcessFaultRate= pages a second. */
static double quiet_shmem_alloc(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                 const struct mthp_snapshot *snap, enum mthp_kind kind, int top) {
        /* the host's shmem mTHP allocation pages a second, or NAN where the
         * rule does not apply: a kernel without per-size shmem counters
         * would read no allocation ever; and the host's allocations must be
         * next to none, not only small beside a process's faults: one that
         * refaults a lot could otherwise hide a sparse segment it grows */
        double alloc = snap->kind_pages_rate[MTHP_SHMEM];
        if (kind != MTHP_SHMEM || top < 0 || snap->dt <= 0 ||
            mthp_stat_index(&caps->sizes[top], "shmem_alloc") < 0 || alloc >= cfg->min_proc_fault_rate)
                return NAN;
        return alloc;
}

/* A process party's ceilings (pt->keep, pt->raise) from its usage of
 * each rung up to cap; returns the highest level it has a block of, as
 * far as the walk went. */
static unsigned party_rungs(const struct mthp_engine_proc *m, enum mthp_kind kind, const unsigned *ladder,
                            unsigned cap, const bool *madvised, int top, double bloat, double keep_thr,
                            double raise_thr, bool existing, bool ahead, struct party *pt) {
        unsigned blocks = 0;
        for (unsigned r = 0; r < cap; r++) {
                /* at a size that is madvise now, its hg mappings have the
                 * folios already: the others alone say what always costs */
                double u = engine_remembered_raise(m, kind, ladder[r], madvised[r]);
                if (!isnan(u))
                        blocks = r + 1;
                /* a churning process that read dense once and holds
                 * no more than it held then: the zeros are a write it
                 * had not finished, in memory it holds at any size
                 * (struct mthp_engine_proc churn) */
                unsigned z = ladder[r];
                /* ...unless its zeros sit beside its data, sample
                 * after sample: it turned sparse (a phased workload:
                 * 0.05-0.08 of each 2M block, for 5 s at 13x its 4K
                 * RSS) */
                bool churn = engine_churn_dense(m, kind, z, bloat, keep_thr);
                /* and a raise through a size on now that it keeps
                 * so, with the raise threshold: what keeps a size
                 * must not bar a raise past it (stress-ng --vm was
                 * held at 512K for 20 ticks by zeros read there). Not onto a size off now: there
                 * its presence says what it uses, and an old dense
                 * sample must not outvote it (peak_u never decays) */
                bool churn_raise = churn && (int) z <= top && m->peak_u[kind][z] >= raise_thr;
                /* no block of this size in its mappings: the kernel cannot
                 * give it folios of this size, so it cannot bloat with them */
                bool ok_keep = isnan(u) || u >= keep_thr || m->new_proc || existing || churn || ahead;
                bool ok_raise = isnan(u) || u >= raise_thr || churn_raise;
                if (!ok_raise && r < pt->raise) {
                        pt->raise = r;
                        pt->raise_size = ladder[r];
                        pt->raise_usage = u;
                }
                if (!ok_keep) {
                        pt->keep = r;
                        pt->fail_size = ladder[r];
                        pt->fail_usage = u;
                        pt->fail_plain = madvised[r] && m->hg[kind][ladder[r]];
                        pt->capped = false;
                        break;
                }
        }
        return blocks;
}

/* Bytes at stake, not a ratio, give a process a say: its density's
 * objection at a rung stands only where the bloat it would hold there
 * reaches MinBloatBytes=. A compiler of a few MB reading 0.66 of each 16K
 * block stepped a host from 2M to 4K beside a dense workload (0.20x its
 * throughput with every size always), and a compile loop alone made the
 * host flap 66 times in 70 s: each cc1 or bash a few hundred KB at stake.
 * Its ceilings move up to the first rung where its bloat reaches the
 * floor; what it held back below that is counted into the small ones' sum
 * (v->small_kb, at the rung it objected at first), and when that sum
 * reaches the floor they object together as they would alone (*alone:
 * the party as its density alone made it). */
static void small_party(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                        const unsigned *ladder, unsigned cap, unsigned n_ladder, const bool *madvised,
                        double floor_kb, struct party *pt, struct party *alone, struct density_verdict *v) {
        if (pt->raise >= cap || floor_kb <= 0)
                return; /* no objection of its density, or every process has its say */
        unsigned keep = pt->keep, raise = pt->raise;
        while (keep < cap && engine_rung_bloat_kb(caps, m, kind, ladder[keep], madvised[keep]) < floor_kb)
                keep++;
        while (raise < cap && engine_rung_bloat_kb(caps, m, kind, ladder[raise], madvised[raise]) < floor_kb)
                raise++;
        if (raise > keep)
                raise = keep;
        if (keep == pt->keep && raise == pt->raise)
                return;
        *alone = *pt;
        pt->small = true;
        pt->bloat_kb = engine_rung_bloat_kb(caps, m, kind, ladder[pt->raise], madvised[pt->raise]);
        v->small_kb += pt->bloat_kb;
        v->n_small++;
        if (keep != pt->keep && keep < cap) {
                pt->fail_size = ladder[keep];
                pt->fail_usage = engine_remembered_raise(m, kind, ladder[keep], madvised[keep]);
                pt->fail_plain = madvised[keep] && m->hg[kind][ladder[keep]];
        }
        if (raise != pt->raise && raise < cap) {
                pt->raise_size = ladder[raise];
                pt->raise_usage = engine_remembered_raise(m, kind, ladder[raise], madvised[raise]);
        }
        if (keep >= cap)
                pt->capped = cap < n_ladder;
        pt->keep = keep;
        pt->raise = raise;
}

/* The processes under auto (a policy's or the defaults) that count: each
 * is a party whose ceilings its remembered density sets. */
static void process_parties(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_snapshot *snap, const struct mthp_engine_state *st,
                            enum mthp_kind kind, const unsigned *ladder, unsigned n_ladder, unsigned level,
                            double keep_default, double total, const bool *madvised, struct density_verdict *v) {
        int top = level ? (int) ladder[level - 1] : -1;
        struct party alone[MAX_PARTIES];
        /* once a judgement, not once a process */
        double quiet = quiet_shmem_alloc(cfg, caps, snap, kind, top);
        /* processes under auto (a policy's or the defaults) speak for themselves */
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = engine_max_bloat(cfg, pol);
                double keep_thr = engine_keep_threshold(cfg, pol);
                double raise_thr = engine_raise_threshold(keep_thr);
                if (pol && pol->mode[kind] != MTHP_POLICY_AUTO)
                        continue; /* its cgroup speaks for it, below */
                /* ahead: it counts only against a raise (counts_ahead) */
                bool ahead = !counts(cfg, st, j, kind, total, caps, top, keep_default);
                if (ahead && !counts_ahead(cfg, caps, st, j, kind, total, ladder, n_ladder, level, madvised))
                        continue;
                bool any = false;
                for (unsigned r = 0; r < n_ladder; r++)
                        any = any || !isnan(engine_remembered(m, kind, ladder[r]));
                if (!any) {
                        v->unknown = (int) j;
                        continue;
                }
                v->measured = true;
                if (!ahead && (v->best < 0 || kind_rate(m, kind, caps, top, keep_default) >
                                                      kind_rate(&st->proc[v->best], kind, caps, top, keep_default)))
                        v->best = (int) j;
                if (v->n_parties >= MAX_PARTIES)
                        continue;
                struct party *pt = &v->party[v->n_parties++];
                unsigned cap = sizes_cap(caps, ladder, n_ladder, pol);
                double rate = kind_rate(m, kind, caps, top, keep_default);
                bool existing = !isnan(quiet) && rate > 0 && quiet < rate * ENGINE_ALLOC_SHARE;
                *pt = (struct party){ .proc = (int) j, .cgroup = -1, .pol = pol,
                                      .prio = pol ? pol->priority : cfg->default_priority,
                                      .keep = cap, .raise = cap, .capped = cap < n_ladder };
                /* the highest level it has a block of, as far as the walk went */
                unsigned blocks = party_rungs(m, kind, ladder, cap, madvised, top, bloat, keep_thr, raise_thr,
                                              existing, ahead, pt);
                if (pt->raise > pt->keep)
                        pt->raise = pt->keep;
                pt->blocks = ahead ? 0 : blocks;
                engine_proc_host_bloat(caps, m, kind, ladder, cap, n_ladder, madvised, bloat, keep_thr, existing,
                                       pt->host_kb);
                pt->host_raise_only = ahead || m->new_proc;
                small_party(caps, m, kind, ladder, cap, n_ladder, madvised, v->min_bloat_kb, pt,
                            &alone[v->n_parties - 1], v);
        }
        /* the small ones together: their sum of bloat reaches the floor;
         * under a host budget their bytes count there instead (engine-budget.c) */
        v->small_say = !v->host_budget && v->n_small && v->small_kb >= v->min_bloat_kb;
        for (unsigned p = 0; p < v->n_parties; p++) {
                struct party *pt = &v->party[p];
                if (pt->proc < 0)
                        continue;
                if (pt->small && v->small_say) {
                        double bloat_kb = pt->bloat_kb;
                        *pt = alone[p];
                        pt->small = true;
                        pt->bloat_kb = bloat_kb;
                }
                /* the sizes it has blocks of, up to its raise ceiling */
                pt->gain = pt->blocks < pt->raise ? pt->blocks : pt->raise;
        }
}

/* The managed cgroups that say always, madvise or never while they fault,
 * and those that say always in their start grace, faulting or not: each is
 * a party whose ceiling its policy sets. */
static void cgroup_parties(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                           const struct mthp_snapshot *snap, const struct mthp_engine_state *st, enum mthp_kind kind,
                           const unsigned *ladder, unsigned n_ladder, struct density_verdict *v) {
        /* managed cgroups that say always, madvise or never, while they fault */
        for (unsigned c = 0; c < snap->n_cgroups && c < MTHP_SNAP_CGROUPS; c++) {
                const struct mthp_cgroup_view *cv = &snap->cgroup[c];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, cv->path, NULL, 0);
                if (!pol || pol->mode[kind] == MTHP_POLICY_AUTO)
                        continue;
                uint64_t kind_kb = kind == MTHP_ANON ? cv->anon_kb : cv->shmem_kb;
                /* No share rule here, unlike processes: memcg pgfault counts
                 * events, so a cgroup that gets 2M folios faults 512 times less
                 * often for the same memory and would lose its say to a
                 * sparse neighbour the moment it got what it asked for. */
                const struct mthp_engine_cgroup *mc = engine_remembered_cgroup(st, cv->path);
                /* in its start grace it speaks before it faults or holds
                 * memory of the kind: a segment mapped with the size off
                 * is never aligned for it */
                bool grace = engine_cgroup_grace(cfg, snap, cv, kind, NULL);
                bool say = mc && mc->say_tick && st->tick <= mc->say_tick + PROC_RECENT_TICKS && kind_kb > 0;
                if ((!say && !grace) || v->n_parties >= MAX_PARTIES)
                        continue;
                unsigned ceil = pol->mode[kind] == MTHP_POLICY_ALWAYS ? sizes_cap(caps, ladder, n_ladder, pol) : 0;
                v->party[v->n_parties++] = (struct party){ .proc = -1, .cgroup = (int) c, .pol = pol,
                                                           .prio = pol->priority, .keep = ceil, .raise = ceil,
                                                           .capped = true, .grace = grace && !say,
                                                           .gain = ceil };
                v->measured = true;
        }
}

static void name_outranked(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                           const struct mthp_engine_state *st, enum mthp_kind kind, unsigned n_ladder,
                           struct density_verdict *v) {
        /* madvise above the level for policy parties that accept a size but
         * were outranked there; and name who lost, for the explanation */
        size_t len = 0;
        for (unsigned p = 0; p < v->n_parties; p++) {
                const struct party *pp = &v->party[p];
                bool lost = false;
                for (unsigned r = v->keep; r < n_ladder; r++) {
                        if (pp->keep <= r)
                                break;
                        for (unsigned q = 0; q < v->n_parties; q++)
                                if (v->party[q].keep <= r && v->party[q].prio > pp->prio) {
                                        if (pp->pol)
                                                v->madvise[r] = true;
                                        lost = true;
                                }
                }
                /* an objector that lost: its ceiling is below the level */
                lost = lost || pp->keep < v->keep;
                if (lost && len < sizeof(v->outranked) - 8) {
                        char d[160];
                        engine_describe_party(caps, st, snap, kind, pp, d, sizeof(d));
                        int w = snprintf(v->outranked + len, sizeof(v->outranked) - len, "%s%s", len ? "; " : "", d);
                        len += w > 0 ? (size_t) w : 0;
                        if (len >= sizeof(v->outranked))
                                len = sizeof(v->outranked) - 1;
                }
        }
}

/* A raise pays for the processes that get its folios, by their faults:
 * those that count and have blocks of the size. When their pages/s fall
 * short of the rate a raise needs (RaiseFaultRate=, RaiseFaultTime=), the
 * demand that made it due comes from processes no sample judged (short
 * ones, or too small a share to count), and a raise hands its folios to
 * them, sparse or not: a bash loop (347 faults/s, one 256K block) raised
 * anon to 256K on the harness's 3,838 pages/s, and a sparse program
 * started a second later held 13 times its 4K RSS until the step-down 3
 * s later (in 1 of 5 runs of mthp-bench --scenario mixed). A
 * policy party speaks for its cgroup whatever its rate. */
static void gain_rate(const struct mthp_caps *caps, const struct mthp_engine_state *st, enum mthp_kind kind,
                      int top, double keep_default, unsigned level, double need, struct density_verdict *v) {
        /* a churner caught mid-write reads sparse at the top size and
         * counts a page a fault in kind_rate, though its faults fill whole
         * folios of it */
        double top_pages = top >= 0 ? caps->sizes[top].kb / (double) mthp_caps_page_kb(caps) : 1;
        v->short_party = -1;
        for (; v->n_parties && v->raise > level; v->raise--) {
                double rate = 0, fastest = -1;
                int fast = -1;
                bool policy = false;
                for (unsigned p = 0; p < v->n_parties && !policy; p++) {
                        const struct party *pp = &v->party[p];
                        if (pp->gain < v->raise)
                                continue;
                        if (pp->proc < 0) {
                                policy = true;
                                continue;
                        }
                        const struct mthp_engine_proc *m = &st->proc[pp->proc];
                        /* holding shared memory, its faults not yet split by
                         * samples: no kind's demand (kind_demand), so no
                         * kind's raise either */
                        if (m->fs_pending)
                                continue;
                        /* a process neither seen alive a while nor with
                         * MinBloatBytes at stake: its faults say nothing
                         * of tomorrow's (a compiler job, a script) */
                        if (!engine_persistent(caps, m, kind, v->min_bloat_kb))
                                continue;
                        double r = kind_rate(m, kind, caps, top, keep_default);
                        if (top >= 0 && m->churn[kind] && m->peak_u[kind][top] >= keep_default)
                                r = fmax(r, m->fault_rate * engine_fault_share(m, kind, true) * top_pages);
                        rate += r;
                        if (r > fastest) {
                                fastest = r;
                                fast = (int) p;
                        }
                }
                if (policy || rate >= need)
                        break;
                v->raise_holder = -1; /* not its density: the rate holds the raise */
                v->short_party = fast;
                v->short_held = true;
                v->short_rate = rate;
                v->short_need = need;
        }
}

/* What the processes seen lately fault of the kind, persistent
 * (engine_persistent) or not, and whether that holds a blind step-up:
 * with the sampler running, a demand no persistent process faults comes
 * from processes gone before a sample saw them, or seen young with little
 * at stake (a build box: each cc1 lived 0.2-3 s; anon climbed blind to
 * 64K on that demand, a cc1 dense at 64K then counted 16 pages a fault
 * and raised 2M for the host, 11 knob writes in 70 s). Where the sampler
 * never saw a process (mthp_engine_state procs_seen_tick) the blind
 * step-up stands. */
static void persistent_evidence(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_engine_state *st,
                                enum mthp_kind kind, const unsigned *ladder, unsigned n_ladder, unsigned level,
                                double raise_at, double keep_default, struct density_verdict *v) {
        int top = level ? (int) ladder[level - 1] : -1;
        v->young = -1;
        v->raise_at = raise_at;
        v->sampler = st->procs_seen_tick != 0;
        double young_best = 0;
        double persist_any = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                /* Persistent and faulting, its faults not known to be
                 * split between the kinds yet: the sampler cannot say the
                 * demand is short-lived. A process holding shared memory waits for
                 * fault samples to split its faults (fs_pending), and one
                 * just started may have them all on the other kind: a
                 * shmem writer was held at 4K for good otherwise. */
                double stake = fmax(engine_stake_kb(caps, m, MTHP_ANON), engine_stake_kb(caps, m, MTHP_SHMEM));
                if ((m->fs_pending || !m->fs_known) &&
                    (m->seen_usec >= m->first_usec + ENGINE_PERSIST_USEC || stake >= v->min_bloat_kb ||
                     m->fault_rate * mthp_caps_page_kb(caps) >= v->min_bloat_kb))
                        persist_any += m->fault_rate;
                if (m->fs_pending)
                        continue;
                double r = kind_rate(m, kind, caps, top, keep_default);
                if (!(r > 0))
                        continue;
                if (engine_persistent(caps, m, kind, v->min_bloat_kb)) {
                        v->persist_rate += r;
                        continue;
                }
                if (r < cfg->min_proc_fault_rate)
                        continue; /* too few faults to name */
                v->young_rate += r;
                v->n_young++;
                if (r > young_best) {
                        young_best = r;
                        v->young = (int) j;
                }
        }
        unsigned blind = 0;
        while (blind < n_ladder && caps->sizes[ladder[blind]].kb <= cfg->unmeasured_max_kb)
                blind++;
        v->blind_held = v->sampler && !v->measured && v->unknown < 0 && level < blind &&
                       v->persist_rate < raise_at && persist_any < raise_at;
}

void engine_judge_density(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, const struct mthp_engine_state *st, enum mthp_kind kind,
                          const unsigned *ladder, unsigned n_ladder, unsigned level, double raise_at,
                          struct density_verdict *v) {
        double total = 0;
        int top = level ? (int) ladder[level - 1] : -1;
        double keep_default = 1.0 / (1.0 + cfg->max_bloat / 100.0);

        memset(v, 0, sizeof(*v));
        v->holder = v->raise_holder = v->best = v->unknown = v->grace = -1;
        v->keep = v->raise = n_ladder;
        v->min_bloat_kb = engine_min_bloat_kb(cfg, snap);
        v->host_budget = isfinite(engine_max_host_bloat_kb(cfg, snap));
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (st->proc[j].pid && st->tick <= st->proc[j].seen_tick + PROC_RECENT_TICKS)
                        total += kind_rate(&st->proc[j], kind, caps, top, keep_default);

        bool madvised[MTHP_SIZES_MAX];
        for (unsigned r = 0; r < n_ladder; r++)
                madvised[r] = engine_size_madvised(caps, snap, kind, ladder[r]);
        process_parties(cfg, caps, snap, st, kind, ladder, n_ladder, level, keep_default, total, madvised, v);
        engine_host_bloat_sum(v, n_ladder);

        engine_madvise_wishes(cfg, caps, snap, kind, ladder, n_ladder, v->madvise);
        cgroup_parties(cfg, caps, snap, st, kind, ladder, n_ladder, v);

        /* the level: climb while every objection is outranked */
        unsigned keep = 0, raise = 0;
        int blocker = -1;
        while (keep < n_ladder && level_ok(v, keep + 1, false, &blocker))
                keep++;
        while (raise < keep && level_ok(v, raise + 1, true, NULL))
                raise++;
        if (v->n_parties) {
                v->keep = keep;
                v->raise = raise;
                v->holder = keep < n_ladder ? blocker : -1;
                if (raise < keep && !level_ok(v, raise + 1, true, &blocker) && blocker >= 0 &&
                    v->party[blocker].proc >= 0 && v->party[blocker].raise < v->party[blocker].keep)
                        v->raise_holder = blocker;
        }

        name_outranked(caps, snap, st, kind, n_ladder, v);
        /* the grace party (the highest priority) that accepts the level
         * every objection allows: it raises, and holds, without faults */
        for (unsigned p = 0; p < v->n_parties; p++)
                if (v->party[p].grace && v->party[p].keep >= v->keep && v->keep > 0 &&
                    (v->grace < 0 || v->party[p].prio > v->party[v->grace].prio))
                        v->grace = (int) p;
        for (unsigned r = 0; r < v->keep && r < n_ladder; r++)
                v->madvise[r] = false; /* always already */
        /* A raise to a size no party has a block of gains nobody
         * anything, and hands its folios to the next program that maps
         * one: a bash loop (310 faults/s, no 2M block) raised anon to 2M
         * before the workload started, and a sparse process started
         * there held 13 times its 4K RSS (mthp-bench --scenario
         * mixed). No higher than the largest size a party that
         * counts has blocks of, or a policy asks for. */
        unsigned gain = 0;
        for (unsigned p = 0; p < v->n_parties; p++)
                gain = v->party[p].gain > gain ? v->party[p].gain : gain;
        if (v->n_parties && v->raise > level && v->raise > gain) {
                v->raise = gain > level ? gain : level;
                v->raise_holder = -1; /* no party's density: nobody's blocks */
        }
        gain_rate(caps, st, kind, top, keep_default, level, raise_at, v);
        persistent_evidence(cfg, caps, st, kind, ladder, n_ladder, level, raise_at, keep_default, v);
        /* a process that counts but has no sample yet may be sparse: no raise */
        if (v->unknown >= 0 && v->raise > level) {
                v->raise = level;
                v->raise_holder = -1; /* it bars the raise, whatever the others read */
        }
}

/* Why a party holds the level at keep: its density or its policy. */
void engine_describe_holder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_engine_state *st, const struct mthp_snapshot *snap, enum mthp_kind kind,
                            const struct density_verdict *v, const unsigned *ladder, unsigned n_ladder, char *buf,
                            size_t n) {
        const struct party *p = &v->party[v->holder];
        char who[200], hs[16];
        engine_describe_party(caps, st, snap, kind, p, who, sizeof(who));
        if (p->proc >= 0 && !p->capped) {
                double bloat = engine_max_bloat(cfg, p->pol);
                mthp_format_size(caps->sizes[p->fail_size].kb, hs, sizeof(hs));
                const struct mthp_engine_proc *m = &st->proc[p->proc];
                double u = fmax(p->fail_usage, (double) mthp_caps_page_kb(caps) / caps->sizes[p->fail_size].kb);
                double mib = engine_stake_kb(caps, m, kind) * (1 / u - 1) / 1024;
                char stake[160];
                if (p->small && v->small_say)
                        snprintf(stake, sizeof(stake), "; %u processes each under MinBloatBytes %.0f MiB predict "
                                 "%.0f MiB together", v->n_small, v->min_bloat_kb / 1024, v->small_kb / 1024);
                else
                        snprintf(stake, sizeof(stake), ", %.0f MiB >= MinBloatBytes %.0f MiB", mib,
                                 v->min_bloat_kb / 1024);
                snprintf(buf, n, "%s uses %.2f of each %s block%s (predicted RSS x%.1f > MaxBloat %.0f%%%s)", who,
                         p->fail_usage, hs, p->fail_plain ? " outside its MADV_HUGEPAGE mappings" : "",
                         1 / u, bloat, stake);
        } else {
                unsigned r = p->keep < n_ladder ? p->keep : n_ladder - 1;
                mthp_format_size(caps->sizes[ladder[r]].kb, hs, sizeof(hs));
                snprintf(buf, n, "%s accepts no %s folios of %s as always", who, mthp_kind_name(kind), hs);
        }
}

/* One process for a reason: "pid N (comm, F faults/s, seen S s, M MiB)", M
 * its stake (engine_stake_kb). */
static void describe_young(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                           char *buf, size_t n) {
        char comm[ENGINE_NAME_QUOTED];
        snprintf(buf, n, "pid %d (%s, %.0f faults/s, seen %.1f s, %.1f MiB)", m->pid,
                 engine_quote_name(m->comm, comm, sizeof(comm)), m->fault_rate, engine_seen_s(m),
                 engine_stake_kb(caps, m, kind) / 1024);
}

/* What gain_rate left out: "; short-lived, no say in a raise (...): N,
 * R pages/s (the most: ...)". */
static void young_note(const struct mthp_caps *caps, const struct mthp_engine_state *st, enum mthp_kind kind,
                       const struct density_verdict *v, char *buf, size_t n) {
        char who[200];
        describe_young(caps, &st->proc[v->young], kind, who, sizeof(who));
        snprintf(buf, n, "; short-lived, no say in a raise (seen < %.0f s, < MinBloatBytes %.1f MiB at stake): "
                 "%u, %.0f pages/s (the most: %s)",
                 ENGINE_PERSIST_USEC / 1e6, v->min_bloat_kb / 1024, v->n_young, v->young_rate, who);
}

void engine_describe_short_lived(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                                 enum mthp_kind kind, const struct density_verdict *v, double demand, char *buf,
                                 size_t n) {
        char who[200], seen[300] = "";
        if (v->young >= 0) {
                describe_young(caps, &st->proc[v->young], kind, who, sizeof(who));
                snprintf(seen, sizeof(seen), "%u seen younger with less at stake, %.0f pages/s (the most: %s); the "
                         "others ", v->n_young, v->young_rate, who);
        }
        snprintf(buf, n, "; no step up: the processes seen %.0f s or more or with MinBloatBytes %.1f MiB at stake "
                 "fault %.0f of the %.0f pages/s (a raise needs %.0f); the rest comes from short-lived processes: "
                 "%sgone before a sample saw them or too young for one (under 2 s)",
                 ENGINE_PERSIST_USEC / 1e6, v->min_bloat_kb / 1024, v->persist_rate, demand, v->raise_at, seen);
}

bool engine_describe_raise_holder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                  const struct mthp_engine_state *st, const struct mthp_snapshot *snap,
                                  enum mthp_kind kind, const struct density_verdict *v, char *buf, size_t n) {
        char who[200], hs[16];
        if (v->raise_holder >= 0) {
                const struct party *p = &v->party[v->raise_holder];
                double keep = engine_keep_threshold(cfg, p->pol);
                engine_describe_party(caps, st, snap, kind, p, who, sizeof(who));
                mthp_format_size(caps->sizes[p->raise_size].kb, hs, sizeof(hs));
                snprintf(buf, n, "%s uses %.3f of each %s block (a raise needs %.3f: MaxBloat %.0f%% and its "
                         "hysteresis)", who, p->raise_usage, hs, engine_raise_threshold(keep),
                         engine_max_bloat(cfg, p->pol));
                return true;
        }
        if (v->unknown >= 0) {
                const struct mthp_engine_proc *m = &st->proc[v->unknown];
                char comm[ENGINE_NAME_QUOTED];
                snprintf(buf, n, "pid %d (%s, %.0f faults/s) counts but has no density sample yet", m->pid,
                         engine_quote_name(m->comm, comm, sizeof(comm)), m->fault_rate);
                return true;
        }
        if (v->short_held) {
                char fast[200] = "none";
                if (v->short_party >= 0)
                        engine_describe_party(caps, st, snap, kind, &v->party[v->short_party], fast, sizeof(fast));
                int w = snprintf(buf, n, "the processes a raise would give folios to fault %.0f pages/s (the most: "
                                 "%s), a raise needs %.0f: the rest of the demand comes from processes no sample "
                                 "judged or with no blocks of the size", v->short_rate, fast, v->short_need);
                if (v->young >= 0 && w > 0 && (size_t) w < n)
                        young_note(caps, st, kind, v, buf + w, n - (size_t) w);
                return true;
        }
        return false;
}

/* Why a recently faulting process has no say for kind, in why (n bytes);
 * false: it has its say. */
static bool left_out_why(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st,
                         const struct mthp_engine_proc *m, enum mthp_kind kind, char *why, size_t n) {
        if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                return false;
        if (m->fs_pending && m->fault_rate >= cfg->min_proc_fault_rate) {
                /* its faults are no kind's demand until their samples split them */
                snprintf(why, n, "fault kind not known yet (%.0f of %.0f samples)", engine_fault_samples(m),
                         ENGINE_FAULT_SAMPLES_MIN);
                return true;
        }
        if (!m->rss_kb[kind] || engine_eligible_kb(m, kind) > 0 ||
            m->fault_rate * engine_fault_share(m, kind, false) < cfg->min_proc_fault_rate)
                return false;
        snprintf(why, n, "%s", m->thp_off ? "THP disabled for it (prctl)"
                               : kind == MTHP_ANON ? "its anon memory is mostly MADV_NOHUGEPAGE"
                                                   : "its shmem memory is mostly MADV_NOHUGEPAGE");
        return true;
}

/* The processes left out, most faulting first, as many as fit whole in
 * buf; then "and N more". */
void engine_left_out(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, enum mthp_kind kind,
                     char *buf, size_t n) {
        unsigned order[MTHP_ENGINE_PROCS], k = 0, more = 0;
        size_t len = 0;
        if (!n)
                return;
        buf[0] = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                unsigned i = k++;
                for (; i > 0 && st->proc[order[i - 1]].fault_rate < st->proc[j].fault_rate; i--)
                        order[i] = order[i - 1];
                order[i] = j;
        }
        for (unsigned i = 0; i < k; i++) {
                const struct mthp_engine_proc *m = &st->proc[order[i]];
                char why[96], one[240], comm[ENGINE_NAME_QUOTED];
                if (!left_out_why(cfg, st, m, kind, why, sizeof(why)))
                        continue;
                int w = snprintf(one, sizeof(one), "%spid %d (%s) left out: %s", len ? "; " : "", m->pid,
                                 engine_quote_name(m->comm, comm, sizeof(comm)), why);
                /* room kept for "; and N more"; after one that did not fit,
                 * the less faulting ones are counted, not listed */
                if (more || w < 0 || (size_t) w >= sizeof(one) || len + (size_t) w + 16 >= n) {
                        more++;
                        continue;
                }
                memcpy(buf + len, one, (size_t) w + 1);
                len += (size_t) w;
        }
        if (more && len + 16 < n)
                snprintf(buf + len, n - len, "%sand %u more", len ? "; " : "", more);
}

/* A shmem size the kernel cannot give a recently sampled process's largest
 * shared mapping (measured on 6.18: README, "Shmem as it really behaves"):
 * a mapping whose address and file offset are not aligned for the size, a
 * linked tmpfs file or a SysV segment (the per-size knobs never reach
 * them), or one whose sampled pages all sit in 4K folios (the page cache
 * was filled before the raise, and a fault maps the folio it finds). On a
 * 2M-aligned mapping the probe tells PMD-mapped pages from the rest
 * (MTHP_SHM_PROBE_PMD, PFNs or not): that speaks of 2M alone, and says "not
 * mapped by 2M folios", not "4K". The most faulting such process is
 * described in buf. */
static enum mthp_rule shm_describe(const struct mthp_engine_proc *p, unsigned kb, char *buf, size_t n) {
        const struct mthp_shm_mapping *m = &p->shm;
        /* one that holds shmem worth a folio of the size */
        if (m->reach == MTHP_SHM_NONE || m->bytes < (uint64_t) kb * 1024 || p->rss_kb[MTHP_SHMEM] < kb)
                return MTHP_RULE_NONE;
        char sz[16], al[16], who[64 + ENGINE_NAME_QUOTED], small[96], comm[ENGINE_NAME_QUOTED];
        bool pmd = m->probe == MTHP_SHM_PROBE_PMD;
        mthp_format_size(kb, sz, sizeof(sz));
        mthp_format_size(m->align_kb, al, sizeof(al));
        snprintf(who, sizeof(who), "pid %d (%s)'s %llu MiB", p->pid, engine_quote_name(p->comm, comm, sizeof(comm)),
                 (unsigned long long) (m->bytes >> 20));
        if (pmd)
                snprintf(small, sizeof(small), "is not mapped by 2M folios (%u of %u sampled pages not PMD-mapped)",
                         m->sampled - m->large, m->sampled);
        else
                snprintf(small, sizeof(small), "holds 4K folios (%u of %u sampled pages in large folios)", m->large,
                         m->sampled);
        enum mthp_rule rule;
        if (m->reach == MTHP_SHM_TMPFS_FILE) {
                rule = MTHP_RULE_SIZE_SHM_FILE;
                snprintf(buf, n,
                         "%s tmpfs file mapping at 0x%llx is a linked file: the per-size knobs never reach it (its "
                         "mount's huge= does, 2M only); MADV_COLLAPSE can",
                         who, (unsigned long long) m->addr);
        } else if (m->reach == MTHP_SHM_SYSV) {
                rule = MTHP_RULE_SIZE_SHM_SYSV;
                snprintf(buf, n,
                         "%s SysV segment at 0x%llx takes large folios only from the global shmem_enabled (2M), "
                         "never from the per-size knobs",
                         who, (unsigned long long) m->addr);
        } else if (m->align_kb < kb) {
                rule = MTHP_RULE_SIZE_SHM_UNALIGNED;
                snprintf(buf, n,
                         "%s segment at 0x%llx is not %s-aligned (its address allows %s): its faults keep folios of "
                         "%s at most; restart it with the size on (MADV_COLLAPSE cannot repair a misaligned range)",
                         who, (unsigned long long) m->addr, sz, al, al);
        } else if (pmd && kb < m->align_kb) {
                return MTHP_RULE_NONE; /* the PMD probe runs where align_kb is the PMD size, and says
                                        * nothing of smaller folios */
        } else if (m->sampled >= 4 && m->large == 0 && p->shm_repaired_kb) {
                rule = MTHP_RULE_SIZE_SHM_REPAIRING;
                snprintf(buf, n,
                         "%s segment at 0x%llx %s: its page cache was filled before the raise; being repaired by "
                         "MADV_COLLAPSE: %llu MiB so far",
                         who, (unsigned long long) m->addr, small, (unsigned long long) (p->shm_repaired_kb >> 10));
        } else if (m->sampled >= 4 && m->large == 0) {
                rule = MTHP_RULE_SIZE_SHM_FILLED;
                snprintf(buf, n,
                         "%s segment at 0x%llx %s: its page cache was filled before the raise and keeps its folios; "
                         "MADV_COLLAPSE (2M) can repair it",
                         who, (unsigned long long) m->addr, small);
        } else
                return MTHP_RULE_NONE;
        return rule;
}

bool engine_shm_repaired(const struct mthp_engine_state *st, uint64_t tick, char *buf, size_t n) {
        int best = -1;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *p = &st->proc[j];
                if (p->pid && tick <= p->seen_tick + PROC_RECENT_TICKS && p->shm_repaired_kb &&
                    (best < 0 || p->shm_repaired_kb > st->proc[best].shm_repaired_kb))
                        best = (int) j;
        }
        if (best < 0)
                return false;
        const struct mthp_engine_proc *p = &st->proc[best];
        bool pmd = p->shm.probe == MTHP_SHM_PROBE_PMD;
        char now[96] = "no page sampled now", comm[ENGINE_NAME_QUOTED];
        if (p->shm.sampled)
                snprintf(now, sizeof(now), "%u of %u sampled pages now %s", p->shm.large, p->shm.sampled,
                         pmd ? "mapped by 2M folios" : "in large folios");
        snprintf(buf, n,
                 "pid %d (%s)'s %llu MiB segment at 0x%llx %s (page cache filled before the "
                 "raise): repaired by MADV_COLLAPSE: %llu MiB (%s)",
                 p->pid, engine_quote_name(p->comm, comm, sizeof(comm)), (unsigned long long) (p->shm.bytes >> 20),
                 (unsigned long long) p->shm.addr,
                 pmd ? "was not mapped by 2M folios" : "was held at 4K folios",
                 (unsigned long long) (p->shm_repaired_kb >> 10), now);
        return true;
}

enum mthp_rule engine_shm_unreachable(const struct mthp_engine_state *st, uint64_t tick, unsigned kb, char *buf,
                                      size_t n) {
        int best = -1;
        char tmp[512];
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *p = &st->proc[j];
                if (!p->pid || tick > p->seen_tick + PROC_RECENT_TICKS || shm_describe(p, kb, tmp, sizeof(tmp)) == MTHP_RULE_NONE)
                        continue;
                if (best < 0 || p->fault_rate > st->proc[best].fault_rate)
                        best = (int) j;
        }
        if (best < 0)
                return MTHP_RULE_NONE;
        return shm_describe(&st->proc[best], kb, buf, n);
}
