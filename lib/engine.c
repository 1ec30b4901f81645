/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

#define SPARSE_CONFIRM_TICKS 1  /* block-weighted memory already filters odd samples */
#define DEFRAG_MIN_PAGES 128      /* sizes whose allocation needs compaction: order 7 (512K on 4K pages) */

/* The kind's fault demand in 4K pages per second, and its share of the
 * faults no mTHP allocation explains. */
static void kind_demand(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                        const struct mthp_engine_state *mem, enum mthp_kind kind, struct signals *s) {
        /* Faults no mTHP allocation explains are 4K faults of either kind (or
         * of files). Split them by the faulting processes' shares
         * (engine_fault_share: their sampled fault addresses, else the
         * memory they hold), else by the host's anon and shmem totals, so
         * an anon-only workload does not raise shmem sizes too. */
        double explained = snap->kind_pages_rate[MTHP_ANON] + snap->kind_pages_rate[MTHP_SHMEM];
        double unexplained = snap->fault_pages_rate > explained ? snap->fault_pages_rate - explained : 0;
        double w_kind = 0, w_all = 0, opted_out = 0;
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++) {
                const struct mthp_engine_proc *p = &mem->proc[i];
                bool split_known = engine_fault_samples(p) >= ENGINE_FAULT_SAMPLES_MIN ||
                                   p->rss_kb[MTHP_ANON] + p->rss_kb[MTHP_SHMEM] > 0;
                if (!p->pid || mem->tick > p->seen_tick + PROC_RECENT_TICKS || p->fault_rate < cfg->min_proc_fault_rate ||
                    !split_known)
                        continue; /* only processes that fault enough to count speak */
                w_all += p->fault_rate;
                /* Holding shared memory, its faults sampled but too few
                 * samples in to split them (sampling starts when it is
                 * first seen: a tick; or its share of the host's faults is
                 * too small for 8): none of its faults are any kind's
                 * demand, and they still weigh in w_all, so they can hold
                 * a raise back but never cause one. By memory held they
                 * would all be shmem's, heap faults included: after anon
                 * went to 2M the fault-kinds workload faulted 150 times
                 * less, never had 8 samples, and once it had waited 3
                 * ticks every shmem size was raised for it (1 run of
                 * realkernel fault-kinds in 12). Its density still counts
                 * (kind_rate), by memory held. */
                if (p->fs_pending)
                        continue;
                double share = engine_fault_share(p, kind, false);
                w_kind += p->fault_rate * share;
                /* 4K faults no size can change: THP disabled for it, or nh memory */
                opted_out += p->fault_rate * (share - engine_fault_share(p, kind, true));
        }
        if (w_all > 0)
                s->share = w_kind / w_all;
        else {
                double total_kb = (double) snap->mem.anon_kb + (double) snap->mem.shmem_kb;
                s->share = total_kb > 0 ? (double) (kind == MTHP_ANON ? snap->mem.anon_kb : snap->mem.shmem_kb) /
                                                  total_kb
                                        : 0.5;
        }
        /* a process that opted out asks for no size: its faults are no demand */
        double small = unexplained * s->share;
        s->opted_out = opted_out < small ? opted_out : small;
        s->demand = snap->kind_pages_rate[kind] + small - s->opted_out;
}

/* Pressure from cgroups: a faulting process near its cgroup's limit, a
 * managed cgroup stalled beyond its MaxPressure= or growing to its limit.
 * The first found sets s->pressure and s->pressure_why. */
static void cgroup_pressure(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                            enum mthp_kind kind, struct signals *s) {
        /* a faulting process of this kind close to its memory cgroup's limit:
         * larger folios would take it there sooner */
        for (unsigned i = 0; snap->density.valid && i < snap->density.n_procs && !s->pressure; i++) {
                const struct mthp_proc_density *p = &snap->density.proc[i];
                /* any faulting at all: with 2M folios a fast grower is 60 faults/s */
                if (p->fault_rate <= 0 || p->rss_kb[kind] == 0 || !p->cg_limit_kb)
                        continue;
                double used = 100.0 * (double) p->cg_usage_kb / (double) p->cg_limit_kb;
                if (used >= 100.0 - cfg->cgroup_headroom) {
                        char cg[ENGINE_PATH_QUOTED];
                        s->pressure = true;
                        snprintf(s->pressure_why, sizeof(s->pressure_why),
                                 "cgroup %s of pid %d at %.0f%% of its %llu MiB limit",
                                 engine_quote_path(p->cgroup, cg, sizeof(cg)), p->pid, used,
                                 (unsigned long long) p->cg_limit_kb / 1024);
                }
        }
        /* a managed cgroup that faults this kind, stalled beyond its MaxPressure= */
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS && !s->pressure; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, c->path, NULL, 0);
                double limit = pol && !isnan(pol->max_pressure) ? pol->max_pressure : cfg->psi_some_max;
                uint64_t kind_kb = kind == MTHP_ANON ? c->anon_kb : c->shmem_kb;
                if (!c->psi_present || kind_kb == 0 || c->fault_rate < cfg->min_proc_fault_rate ||
                    c->psi_some_avg10 < limit)
                        continue;
                char cg[ENGINE_PATH_QUOTED];
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "cgroup %s memory.pressure some %.1f%% >= %.0f%%%s%s",
                         engine_quote_path(c->path, cg, sizeof(cg)), c->psi_some_avg10, limit, pol ? " of policy " : "", pol ? pol->name : "");
        }
        /* a managed cgroup that faults and grows towards its limit */
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS && !s->pressure; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                uint64_t kind_kb = kind == MTHP_ANON ? c->anon_kb : c->shmem_kb;
                if (!c->limit_kb || kind_kb == 0 || c->fault_rate < cfg->min_proc_fault_rate)
                        continue;
                double used = 100.0 * (double) c->usage_kb / (double) c->limit_kb;
                if (used < 100.0 - cfg->cgroup_headroom)
                        continue;
                char cg[ENGINE_PATH_QUOTED];
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "cgroup %s at %.0f%% of its %llu MiB limit",
                         engine_quote_path(c->path, cg, sizeof(cg)), used, (unsigned long long) c->limit_kb / 1024);
        }
}

static void read_signals(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, const struct mthp_engine_state *mem, enum mthp_kind kind,
                         int top_size, struct signals *s) {
        memset(s, 0, sizeof(*s));
        s->measured = snap->dt > 0;
        engine_fault_rates(cfg, snap, &s->raise_at, &s->lower_at, s->rate_why, sizeof(s->rate_why));
        kind_demand(cfg, snap, mem, kind, s);
        /* Folios of a size at "madvise" go to hg (MADV_HUGEPAGE) mappings
         * alone, which have them whatever mthpd does: no demand for always. */
        double madvised = 0;
        for (unsigned z = 0; z < caps->n_sizes; z++)
                if (engine_size_madvised(caps, snap, kind, z))
                        madvised += mthp_stat_rate(caps, snap, z, kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc") *
                                    caps->sizes[z].kb / mthp_caps_page_kb(caps);
        s->madvised = madvised < snap->kind_pages_rate[kind] ? madvised : snap->kind_pages_rate[kind];
        s->demand -= s->madvised;

        /* The kernel counts a fallback at every size it tries, so only the
         * largest enabled size's own ratio says whether it is failing. */
        if (top_size >= 0) {
                double alloc = mthp_stat_rate(caps, snap, (unsigned) top_size,
                                         kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc");
                double fb = mthp_stat_rate(caps, snap, (unsigned) top_size,
                                      kind == MTHP_ANON ? "anon_fault_fallback" : "shmem_fallback");
                s->top_alloc = alloc;
                if (alloc + fb >= 10) {
                        s->fallback_pct = 100.0 * fb / (alloc + fb);
                        s->fragmented = s->fallback_pct >= cfg->max_fallback;
                }
        }

        s->avail_pct = snap->mem.total_kb ? 100.0 * (double) snap->mem.available_kb / (double) snap->mem.total_kb : 100;
        cgroup_pressure(cfg, snap, kind, s);
        /* direct compaction stalls: large folios cost the faulting process time */
        for (unsigned i = 0; snap->density.valid && i < snap->density.n_procs && !s->fragmented; i++) {
                const struct mthp_proc_density *p = &snap->density.proc[i];
                if (p->fault_rate < cfg->min_proc_fault_rate || p->rss_kb[kind] == 0 || isnan(p->compact_ms))
                        continue;
                if (p->compact_ms >= cfg->max_compact_ms && top_size >= 0) {
                        s->fragmented = true;
                        s->stall_pid = p->pid;
                        s->stall_ms = p->compact_ms;
                }
        }
        if (s->pressure)
                ;
        else if (snap->psi.present && snap->psi.some_avg10 >= cfg->psi_some_max) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "PSI memory some %.1f%% >= %.0f%%",
                         snap->psi.some_avg10, cfg->psi_some_max);
        } else if (s->avail_pct < cfg->min_available) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "MemAvailable %.1f%% < %.0f%%", s->avail_pct,
                         cfg->min_available);
        }
}

static void describe_proc(const struct mthp_engine_proc *p, enum mthp_kind kind, char *buf, size_t n) {
        char split[64];
        char comm[ENGINE_NAME_QUOTED];
        engine_fault_split_note(p, kind, split, sizeof(split));
        snprintf(buf, n, "pid %d (%s, %.0f faults/s%s)", p->pid, engine_quote_name(p->comm, comm, sizeof(comm)),
                 p->fault_rate, split);
}

/* The kind's ladder, signals and density verdict, and its streaks. */
static void kind_inputs(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                        const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        k->n_ladder = mthp_engine_ladder(cfg, caps, k->kind, k->ladder);
        if (st->level > k->n_ladder)
                st->level = k->n_ladder; /* config shrank the ladder */
        read_signals(cfg, caps, snap, next, k->kind, st->level ? (int) k->ladder[st->level - 1] : -1, &k->sig);
        /* density speaks for a kind only while the kind faults: a shmem
         * workload's heap must not decide anon sizes; or while a cgroup in
         * its start grace wants the kind before it faults */
        if (k->sig.demand >= k->sig.lower_at || engine_any_grace(cfg, snap, k->kind))
                engine_judge_density(cfg, caps, snap, next, k->kind, k->ladder, k->n_ladder, st->level, k->sig.raise_at,
                                     &k->dens);
        else {
                memset(&k->dens, 0, sizeof(k->dens));
                k->dens.holder = k->dens.raise_holder = k->dens.best = k->dens.unknown = k->dens.grace = -1;
                k->dens.keep = k->n_ladder;
                k->dens.raise = st->level;
                engine_madvise_wishes(cfg, caps, snap, k->kind, k->ladder, k->n_ladder, k->dens.madvise);
        }

        if (k->sig.measured) {
                st->pressure_streak = k->sig.pressure ? st->pressure_streak + 1 : 0;
                bool want_up = k->sig.demand >= k->sig.raise_at && !k->sig.pressure && !k->sig.fragmented;
                st->raise_streak = want_up ? st->raise_streak + 1 : 0;
                st->lower_streak = k->sig.demand < k->sig.lower_at ? st->lower_streak + 1 : 0;
                st->sparse_streak = k->dens.measured && k->dens.keep < st->level ? st->sparse_streak + 1 : 0;
        }
        k->dwell_ok = st->last_change_tick == 0 || snap->tick >= st->last_change_tick + cfg->dwell_ticks;
        if (k->dwell_ok)
                st->churn_pid = 0; /* the dwell is over: nothing to skip */
        if (st->resident_pid && !engine_churn_proc(next, st->resident_pid))
                st->resident_pid = 0; /* forgotten: a later process at its pid proved nothing */
        engine_left_out(cfg, next, k->kind, k->left_out, sizeof(k->left_out));
}

/* Where a raise may go, what bars it, who wants the sizes, and whether the
 * last raise's probe failed. */
static void kind_target(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                        const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        const struct density_verdict *dens = &k->dens;
        unsigned blind = 0; /* levels allowed without a density sample */
        while (blind < k->n_ladder && caps->sizes[k->ladder[blind]].kb <= cfg->unmeasured_max_kb)
                blind++;
        /* where a raise may go: density says how far; blind, one step */
        /* Climb blind only where no process that counts could be
         * measured: if one that counts has no sample yet, wait a tick
         * for it rather than give a sparse one large folios. */
        /* Nor on a demand the sampler saw no persistent process fault
         * (dens->blind_held: short-lived processes, engine-density.c). */
        bool blind_ok = dens->unknown < 0 && !dens->blind_held;
        k->target = dens->measured ? dens->raise : blind_ok && st->level < blind ? st->level + 1 : st->level;
        if (k->target > k->n_ladder)
                k->target = k->n_ladder;
        /* the limited-cgroup invariant: no policy priority outranks it
         * (arbitration trades memory within a limit, never a process) */
        k->afford = engine_limited_afford(cfg, caps, next, k->kind, k->ladder, k->n_ladder, &k->lim_blocker, k->lim_why,
                                   sizeof(k->lim_why));
        engine_budget_afford(cfg, caps, snap, next, k); /* MaxHostBloat=, under the limited cgroups' */
        k->lim_capped = k->target > k->afford;
        if (k->lim_capped)
                k->target = k->afford;
        if (st->ceiling && snap->tick < st->ceiling_until && k->target >= st->ceiling) {
                k->target = st->ceiling - 1;
                k->barred = true;
        }
        k->old_level = st->level;
        engine_level_name(caps, k->ladder, st->level, k->top, sizeof(k->top));
        if (dens->best >= 0)
                describe_proc(&next->proc[dens->best], k->kind, k->who, sizeof(k->who));
        /* who wants the sizes: the highest-priority party that accepts
         * the target (raise) or the level (hold) */
        int pr = -1, pk = -1;
        for (unsigned p = 0; p < dens->n_parties; p++) {
                const struct party *pp = &dens->party[p];
                if (k->target > 0 && pp->keep >= k->target && (pr < 0 || pp->prio > dens->party[pr].prio))
                        pr = (int) p;
                if (st->level > 0 && pp->keep >= st->level && (pk < 0 || pp->prio > dens->party[pk].prio))
                        pk = (int) p;
        }
        if (pr >= 0)
                engine_describe_party(caps, next, snap, k->kind, &dens->party[pr], k->raiser, sizeof(k->raiser));
        if (pk >= 0 && dens->party[pk].pol)
                engine_describe_party(caps, next, snap, k->kind, &dens->party[pk], k->keeper, sizeof(k->keeper));

        /* probe-then-verify: a raise must show allocations at its new
         * top size while the kind is faulting */
        /* only once the kernel holds the new value (a dry run never does) */
        int top_knob = st->level ? caps->sizes[k->ladder[st->level - 1]].knob[k->kind] : -1;
        bool holds = top_knob >= 0 && strcmp(snap->knob[top_knob], "always") == 0;
        if (k->sig.measured && st->verify_left && st->level && holds) {
                /* a shmem mapping repaired to PMD folios (MADV_COLLAPSE,
                 * daemon/manager.c) uses 2M without allocating on faults */
                if (k->sig.top_alloc > 0 ||
                    (k->kind == MTHP_SHMEM && caps->sizes[k->ladder[st->level - 1]].kb == caps->pmd_kb &&
                     engine_shm_repaired(next, snap->tick, NULL, 0)))
                        st->verify_left = 0;
                else if (k->sig.demand >= k->sig.raise_at && --st->verify_left == 0)
                        k->probe_failed = true;
        }
        engine_pay_judge(cfg, caps, snap, next, k);
        engine_churn_raise_back(cfg, caps, snap, next, k);
}

/* The reason of a raise to k->target. */
static void explain_raise(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                          const struct mthp_engine_state *next, struct kind_step *k) {
        const struct signals *sig = &k->sig;
        char to[16];
        engine_level_name(caps, k->ladder, k->target, to, sizeof(to));
        k->rule = !k->dens.measured ? MTHP_RULE_RAISE_DEMAND
                  : k->dens.best < 0 ? MTHP_RULE_RAISE_POLICY
                                     : MTHP_RULE_RAISE_DENSE;
        if (k->dens.measured && k->dens.best < 0)
                snprintf(k->why, sizeof(k->why),
                         "%s fault demand %.0f pages/s >= %.0f%s for %u ticks; wanted by policy: %s; "
                         "no pressure (MemAvailable %.0f%%): raise to %s (probe)",
                         k->kname, sig->demand, sig->raise_at, sig->rate_why, k->st->raise_streak, k->raiser,
                         sig->avail_pct, to);
        else if (k->dens.measured) {
                /* its use at the largest size up to the target it has a
                 * block of: the most faulting process need not have one of
                 * the target (a compiler beside a program with 2M blocks),
                 * and no block reads NAN */
                const struct mthp_engine_proc *m = &next->proc[k->dens.best];
                unsigned r = k->target;
                double u = NAN;
                while (r > 0 && isnan(u = engine_remembered(m, k->kind, k->ladder[r - 1])))
                        r--;
                char use[64] = "no block sampled yet", at[16];
                if (r > 0) {
                        mthp_format_size(caps->sizes[k->ladder[r - 1]].kb, at, sizeof(at));
                        snprintf(use, sizeof(use), "%.2f of each %s block", u, at);
                }
                snprintf(k->why, sizeof(k->why),
                         "%s fault demand %.0f pages/s >= %.0f%s for %u ticks; densest use by %s: "
                         "%s; no pressure (MemAvailable %.0f%%): raise to %s (probe)",
                         k->kname, sig->demand, sig->raise_at, sig->rate_why, k->st->raise_streak, k->who, use,
                         sig->avail_pct, to);
        }
        else
                snprintf(k->why, sizeof(k->why),
                         "%s fault demand %.0f pages/s >= %.0f%s for %u ticks, no pressure (PSI some "
                         "%.1f%%, MemAvailable %.0f%%), fallback %.0f%%, no density sample: step up",
                         k->kname, sig->demand, sig->raise_at, sig->rate_why, k->st->raise_streak,
                         snap->psi.present ? snap->psi.some_avg10 : 0.0, sig->avail_pct, sig->fallback_pct);
        if (k->lim_capped) {
                size_t l = strlen(k->why);
                snprintf(k->why + l, sizeof(k->why) - l, "; stops there: %s", k->lim_why);
        }
        if (k->churn_back && !k->dwell_ok) {
                k->rule = MTHP_RULE_RAISE_CHURN_BACK;
                size_t l = strlen(k->why);
                snprintf(k->why + l, sizeof(k->why) - l, "; %s", k->churn_note);
        }
}

/* The reason of a raise for a cgroup in its start grace. */
static void explain_grace_raise(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_snapshot *snap, struct kind_step *k) {
        const struct party *p = &k->dens.party[k->dens.grace];
        const struct mthp_cgroup_view *c = &snap->cgroup[p->cgroup];
        char to[16], want[16], cg[ENGINE_PATH_QUOTED];
        engine_level_name(caps, k->ladder, k->target, to, sizeof(to));
        engine_level_name(caps, k->ladder, p->keep, want, sizeof(want));
        k->rule = MTHP_RULE_RAISE_GRACE;
        snprintf(k->why, sizeof(k->why),
                 "cgroup %s appeared %.0f s ago, policy %s wants %s %s always (%s=always, priority %u): set before "
                 "its first faults (StartGrace %.0f s; %.0f faults/s so far); %s fault demand %.0f pages/s, no "
                 "pressure (MemAvailable %.0f%%): raise to %s",
                 engine_quote_path(c->path, cg, sizeof(cg)), (double) (snap->t_usec - c->appeared_usec) / 1e6,
                 p->pol->name, k->kname, want,
                 k->kind == MTHP_ANON ? "Anon" : "Shmem", p->prio, (double) cfg->start_grace_usec / 1e6,
                 c->fault_rate, k->kname, k->sig.demand, k->sig.avail_pct, to);
        if (k->lim_capped) {
                size_t l = strlen(k->why);
                snprintf(k->why + l, sizeof(k->why) - l, "; stops there: %s", k->lim_why);
        }
}

/* Does a cgroup in its start grace want the kind's current level? */
static bool grace_holds(const struct kind_step *k) {
        return k->dens.grace >= 0 && k->st->level > 0 && k->dens.party[k->dens.grace].keep >= k->st->level;
}

/* The reason of holding the level: the numbers, and what holds it back. */
static void explain_hold(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                         struct kind_step *k) {
        const struct mthp_engine_kind *st = k->st;
        char extra[480] = "";
        k->rule = MTHP_RULE_HOLD;
        if (k->sig.pressure) {
                k->rule = MTHP_RULE_HOLD_PRESSURE;
                snprintf(extra, sizeof(extra), "; pressure: %s", k->sig.pressure_why);
        } else if ((k->lim_blocker >= 0 || k->budget_capped) && k->afford <= st->level) {
                k->rule = k->budget_capped ? MTHP_RULE_HOLD_BUDGET : MTHP_RULE_HOLD_LIMIT;
                snprintf(extra, sizeof(extra), "; held back by %s", k->lim_why);
        } else if (k->dens.measured && k->dens.holder >= 0 && k->dens.keep <= st->level) {
                char hd[320];
                k->rule = MTHP_RULE_HOLD_SPARSE;
                engine_describe_holder(cfg, caps, next, snap, k->kind, &k->dens, k->ladder, k->n_ladder, hd, sizeof(hd));
                snprintf(extra, sizeof(extra), "; held back by %s", hd);
        } else if (k->dens.measured && st->level < k->n_ladder && k->target <= st->level &&
                   st->raise_streak >= cfg->density_confirm_ticks && (k->dwell_ok || st->last_dir > 0) &&
                   !k->sig.fragmented && k->dens.raise <= st->level &&
                   engine_describe_raise_holder(cfg, caps, next, snap, k->kind, &k->dens, extra + 13,
                                                sizeof(extra) - 13)) {
                /* a raise is due but density allows none: say who bars it */
                k->rule = MTHP_RULE_HOLD_NO_HIGHER;
                memcpy(extra, "; no higher: ", 13);
        } else if (k->dens.blind_held && st->raise_streak >= cfg->confirm_ticks) {
                /* the demand is due, but from short-lived processes */
                k->rule = MTHP_RULE_HOLD_SHORT_LIVED;
                engine_describe_short_lived(caps, next, k->kind, &k->dens, k->sig.demand, extra, sizeof(extra));
        } else if (grace_holds(k)) {
                char who[200];
                k->rule = MTHP_RULE_HOLD_GRACE;
                engine_describe_party(caps, next, snap, k->kind, &k->dens.party[k->dens.grace], who, sizeof(who));
                snprintf(extra, sizeof(extra), "; wanted by %s in its start grace (StartGrace %.0f s): sizes set "
                         "before its first faults", who, (double) cfg->start_grace_usec / 1e6);
        } else if (k->keeper[0]) {
                k->rule = MTHP_RULE_HOLD_WANTED;
                snprintf(extra, sizeof(extra), "; wanted by %s", k->keeper);
        } else if (k->barred && engine_pay_barred_note(k, snap->tick, extra, sizeof(extra))) {
                k->rule = MTHP_RULE_HOLD_UNPAID;
        } else if (k->barred) {
                k->rule = MTHP_RULE_HOLD_BARRED;
                snprintf(extra, sizeof(extra), "; level %u failed before, barred for %llu more ticks", st->ceiling,
                         (unsigned long long) (st->ceiling_until - snap->tick));
        } else if (!k->dwell_ok) {
                k->rule = MTHP_RULE_HOLD_DWELL;
                snprintf(extra, sizeof(extra), "; dwelling after last change");
        }
        snprintf(k->why, sizeof(k->why),
                 "holding %s at %s: demand %.0f pages/s (raise at %.0f%s for %u ticks: streak %u; lower "
                 "below %.0f for %u: streak %u), fallback %.0f%%%s",
                 k->kname, k->top, k->sig.demand, k->sig.raise_at, k->sig.rate_why, cfg->confirm_ticks,
                 st->raise_streak, k->sig.lower_at, cfg->lower_ticks, st->lower_streak, k->sig.fallback_pct, extra);
        if (k->pay_note[0]) {
                size_t l = strlen(k->why);
                snprintf(k->why + l, sizeof(k->why) - l, "%s", k->pay_note);
        }
}

/* A failed probe: back to the largest enabled size the kernel did use. */
static void step_back_probe(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                            struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        char to[16];
        unsigned back = st->verify_from < st->level ? st->verify_from : st->level - 1;
        const char *alloc = k->kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc";
        for (unsigned r = st->level - 1; r > back; r--)
                if (mthp_stat_rate(caps, snap, k->ladder[r - 1], alloc) > 0) {
                        back = r;
                        break;
                }
        engine_level_name(caps, k->ladder, back, to, sizeof(to));
        char cause[380] = "";
        if (k->kind == MTHP_SHMEM &&
            engine_shm_unreachable(next, snap->tick, caps->sizes[k->ladder[st->level - 1]].kb, cause + 2,
                                   sizeof(cause) - 2) != MTHP_RULE_NONE)
                memcpy(cause, "; ", 2);
        k->rule = MTHP_RULE_STEP_DOWN_PROBE;
        snprintf(k->why, sizeof(k->why),
                 "probe of %s %s failed: no %s allocations at %s in %u ticks of %.0f pages/s "
                 "demand: back to %s, the largest size in use%s",
                 k->kname, k->top, k->kname, k->top, cfg->verify_ticks, k->sig.demand, to, cause);
        engine_step_down_failed(cfg, st, back, snap->tick);
        st->ceiling = back + 1; /* every size above it went unused */
}

/* A memory-limited cgroup cannot afford the level: down to what it
 * affords at once. */
static void step_down_limited(const struct mthp_caps *caps, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        char to[16];
        /* no dwell, no confirmation: the cgroup pays at once */
        engine_level_name(caps, k->ladder, k->afford, to, sizeof(to));
        k->rule = k->budget_capped ? MTHP_RULE_STEP_DOWN_BUDGET : MTHP_RULE_STEP_DOWN_LIMIT;
        snprintf(k->why, sizeof(k->why), "%s: step %s down from %s to %s", k->lim_why, k->kname, k->top, to);
        st->level = k->afford;
        st->verify_left = 0;
}

/* Memory pressure two ticks in a row: one step down, and bar the level. */
static void step_down_pressure(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                               struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        const struct signals *sig = &k->sig;
        /* pressure acts without waiting for dwell: memory is the emergency */
        k->rule = MTHP_RULE_STEP_DOWN_PRESSURE;
        snprintf(k->why, sizeof(k->why), "memory pressure for %u ticks (%s): step %s down from %s",
                 st->pressure_streak, sig->pressure_why, k->kname, k->top);
        engine_step_down_failed(cfg, st, st->level - 1, snap->tick);
        st->pressure_streak = 0; /* PSI lags: give the step time to show */
}

/* Compaction stalls or fallbacks say memory is too fragmented: one step
 * down, and bar the level. */
static void step_down_fragmented(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                                 struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        const struct signals *sig = &k->sig;
        k->rule = sig->stall_pid ? MTHP_RULE_STEP_DOWN_STALL : MTHP_RULE_STEP_DOWN_FALLBACK;
        if (sig->stall_pid)
                snprintf(k->why, sizeof(k->why),
                         "pid %d stalls %.0f ms/s in direct compaction (>= %.0f, taskstats) with "
                         "%s %s folios: step down",
                         sig->stall_pid, sig->stall_ms, cfg->max_compact_ms, k->kname, k->top);
        else
                snprintf(k->why, sizeof(k->why),
                         "%.0f%% of %s mTHP faults at %s fall back (>= %.0f%%): memory too "
                         "fragmented, step down",
                         sig->fallback_pct, k->kname, k->top, cfg->max_fallback);
        engine_step_down_failed(cfg, st, st->level - 1, snap->tick);
}

/* A managed cgroup in its start grace: up to its target at once. */
static void raise_grace(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                        const struct mthp_snapshot *snap, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        /* no demand, confirmation or dwell: the sizes must be on
         * before the new service maps its memory (a shared segment
         * mapped with the size off is never aligned for it) */
        explain_grace_raise(cfg, caps, snap, k);
        st->verify_from = st->level;
        st->verify_left = cfg->verify_ticks;
        st->level = k->target;
        st->climb = false;
}

/* Demand, density and dwell allow a raise: up to the target, verified
 * for VerifyTicks. */
static void raise_level(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                        const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        /* dwell guards against reversals: a second raise right
         * after the first (a sample that saw more) is no flap; nor
         * is a raise back once a churner blamed for a step-down
         * reads dense (once for each process: churn_spent) */
        if (!k->dwell_ok && !(k->dens.measured && st->last_dir > 0)) {
                k->target = k->churn_to; /* the churn case: back where it was, no higher */
                const struct mthp_engine_proc *m = engine_churn_proc(next, st->churn_pid);
                if (m && st->churn_grown) {
                        /* its growth read dense with the sizes off: resident at 4K */
                        st->resident_pid = m->pid;
                        st->resident_kb = m->rss_kb[k->kind];
                }
        }
        explain_raise(caps, snap, next, k);
        engine_pay_start(cfg, caps, snap, next, k);
        st->verify_from = st->level;
        st->verify_left = cfg->verify_ticks;
        st->level = k->target;
        /* a process's density held it below the top: at the new
         * size it may read denser (mthp_engine_climbing) */
        const struct density_verdict *v = &k->dens;
        st->climb = v->measured && k->target == v->raise && k->target < k->n_ladder && !k->lim_capped &&
                    !k->barred &&
                    (v->raise_holder >= 0 ||
                     (v->holder >= 0 && v->party[v->holder].proc >= 0 && !v->party[v->holder].capped));
}

/* Fault demand under LowerFaultRate for LowerTicks: a step down. While
 * the top size is still allocated at MinProcessFaultRate pages/s or more
 * (engine_level_in_use), one size, where those faults go next, as before.
 * Otherwise in one step to the largest size still allocated that much, or
 * to the boot or policy values if none is: the sizes above it are idle,
 * and taking them away one every LowerTicks only delays the same end.
 * When pgbench stopped, shmem took 80 ticks and 8 level changes (with
 * ShmemAlign= 2 knob writes each) to come down from 2M; anon alike after a
 * dense program exits, and a sparse program started meanwhile got the
 * sizes still raised. A raise goes to its target in one step too. */
static void step_down_demand(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        const struct signals *sig = &k->sig;
        double in_use;
        unsigned from = st->level, used = engine_level_in_use(cfg, caps, snap, k, st->level, &in_use);
        st->level = used >= from ? from - 1 : used;
        k->rule = MTHP_RULE_STEP_DOWN_DEMAND;
        char to[16];
        engine_level_name(caps, k->ladder, st->level, to, sizeof(to));
        int n = snprintf(k->why, sizeof(k->why), "%s fault demand %.0f pages/s < %.0f%s for %u ticks: step down",
                         k->kname, sig->demand, sig->lower_at, sig->rate_why, st->lower_streak);
        if (n < 0 || (size_t) n >= sizeof(k->why) || from == st->level + 1)
                return;   /* one size: as it always read */
        if (st->level)
                snprintf(k->why + n, sizeof(k->why) - (size_t) n,
                         " to %s, the largest size still allocated (%.0f pages/s >= %.0f)", to, in_use,
                         cfg->min_proc_fault_rate);
        else
                snprintf(k->why + n, sizeof(k->why) - (size_t) n,
                         " to %s, no size allocated at %.0f pages/s or more", to, cfg->min_proc_fault_rate);
}

/* The administrator turned THP of the kind off (mthp_engine_thp_off): the
 * kind stays at 4K whatever the demand; a level raised before (a reload
 * that took OverrideThpOff=yes away) steps down a size a tick, as every
 * step down goes. */
static void hold_admin(const struct mthp_engine_config *cfg, const struct mthp_caps *caps, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        if (st->level)
                st->level--;
        st->verify_left = 0;
        engine_level_name(caps, k->ladder, st->level, k->top, sizeof(k->top));
        k->rule = MTHP_RULE_HOLD_ADMIN;
        snprintf(k->why, sizeof(k->why),
                 "THP off by the administrator (%s): %s %s at %s whatever the demand (%.0f pages/s); only "
                 "a policy's madvise is written ([Daemon] OverrideThpOff=yes lets mthpd raise sizes)",
                 cfg->thp_off[k->kind], st->level ? "stepping" : "holding", k->kname, k->top, k->sig.demand);
}

/* The transition: the first condition that holds, in order of urgency,
 * moves the level (or holds it), and k->why says why. */
static void decide_kind(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                        const struct mthp_snapshot *snap, struct mthp_engine_state *next,
                        struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        const struct signals *sig = &k->sig;
        if (st->level > k->afford && !mthp_engine_thp_off(cfg, k->kind))
                step_down_limited(caps, k);
        else if (!sig->measured) {
                k->rule = MTHP_RULE_FIRST_SAMPLE;
                snprintf(k->why, sizeof(k->why), "first sample: no rates yet, holding %s at %s", k->kname, k->top);
        } else if (mthp_engine_thp_off(cfg, k->kind))
                hold_admin(cfg, caps, k);
        else if (st->level > 0 && st->pressure_streak >= 2)
                step_down_pressure(cfg, snap, k);
        else if (k->probe_failed)
                step_back_probe(cfg, caps, snap, next, k);
        else if (k->pay_failed)
                engine_step_back_unpaid(cfg, caps, snap, k);
        else if (st->level > 0 && st->sparse_streak >= SPARSE_CONFIRM_TICKS) {
                char aside[MTHP_REASON_MAX - 256];
                enum mthp_rule r = engine_sparse_set_aside(cfg, caps, snap, next, k, aside, sizeof(aside));
                if (r == MTHP_RULE_NONE)
                        engine_step_down_sparse(cfg, caps, snap, next, k);
                else if (sig->fragmented && k->dwell_ok)
                        step_down_fragmented(cfg, snap, k);
                else if (st->lower_streak >= cfg->lower_ticks && k->dwell_ok)
                        step_down_demand(cfg, caps, snap, k);
                else {
                        engine_hold_aside(cfg, k, r, aside);
                        if (r == MTHP_RULE_HOLD)
                                st->sparse_streak = 0; /* nothing to wait for: the density back-off may go on */
                }
        } else if (st->level > 0 && sig->fragmented && k->dwell_ok)
                step_down_fragmented(cfg, snap, k);
        else if (k->dens.grace >= 0 && k->target > st->level && !sig->pressure && !sig->fragmented)
                raise_grace(cfg, caps, snap, k);
        else if (k->target > st->level &&
                 st->raise_streak >= (k->dens.measured ? cfg->density_confirm_ticks : cfg->confirm_ticks) &&
                 (k->dwell_ok || (k->dens.measured && st->last_dir > 0) || k->churn_back))
                raise_level(cfg, caps, snap, next, k);
        else if (st->level > 0 && st->lower_streak >= cfg->lower_ticks && k->dwell_ok && !grace_holds(k))
                step_down_demand(cfg, caps, snap, k);
        else
                explain_hold(cfg, caps, snap, next, k);
}

/* After the transition: its bookkeeping, and whether the kind's top size
 * wants defrag=defer (want_defer and defer_why set if so). */
static void settle_kind(const struct mthp_caps *caps, const struct mthp_snapshot *snap, struct kind_step *k,
                        bool *want_defer, char *defer_why, size_t defer_size) {
        struct mthp_engine_kind *st = k->st;
        if (st->level != k->old_level) {
                if (!k->churn_armed)
                        st->churn_pid = 0; /* used, or another change: the dwell applies */
                st->last_dir = st->level > k->old_level ? 1 : -1;
                st->last_change_tick = snap->tick ? snap->tick : 1;
                st->raise_streak = st->lower_streak = st->sparse_streak = 0;
                if (st->level < k->old_level && st->level <= st->verify_from)
                        st->verify_left = 0;
                if (st->level < k->old_level)
                        st->trial.to = 0; /* a step down ends a trial: nothing raised to judge */
        }
        if (st->ceiling && snap->tick >= st->ceiling_until + 10 * st->backoff)
                st->ceiling = st->backoff = 0; /* long clean spell: forget the failure */

        /* large sizes that fall back a lot: let kcompactd work in the
         * background instead of stalling faults or giving up */
        if (st->level && caps->sizes[k->ladder[st->level - 1]].kb >= DEFRAG_MIN_PAGES * mthp_caps_page_kb(caps) &&
            k->sig.measured &&
            k->sig.fallback_pct >= DEFRAG_FALLBACK_PCT && !k->sig.pressure) {
                *want_defer = true;
                snprintf(defer_why, defer_size,
                         "%.0f%% of %s faults at %s fall back (>= %.0f%%): defer compaction to kcompactd",
                         k->sig.fallback_pct, k->kname, k->top, DEFRAG_FALLBACK_PCT);
        }
}

/* Nothing about to change for the kind (mthp_engine_density_steady): its
 * level held this tick and no streak or probe is under way; a raise
 * streak counts only where the density would let the level go higher. A
 * lower streak does not count: low demand steps down from the counters
 * alone, no sample needed (a database whose buffers are filled shows one
 * for most of its life). */
static bool kind_steady(const struct kind_step *k) {
        const struct mthp_engine_kind *st = k->st;
        return st->level == k->old_level && !st->sparse_streak && !st->pressure_streak &&
               !st->verify_left && !k->probe_failed && (!st->raise_streak || k->target <= st->level) &&
               k->dens.grace < 0 && !st->trial.to;
}

/* The density back-off's memory: when the last sample was taken and what
 * it saw that only a fresh sample can check again; how long the decision
 * has been steady. */
static void density_steady_note(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                                struct mthp_engine_state *next, bool steady) {
        if (snap->density.valid) {
                next->density_tick = snap->tick ? snap->tick : 1;
                next->density_rate = snap->fault_pages_rate;
                next->density_alert = false;
                for (unsigned i = 0; i < snap->density.n_procs; i++) {
                        const struct mthp_proc_density *p = &snap->density.proc[i];
                        if (p->fault_rate > 0 && p->cg_limit_kb &&
                            100.0 * (double) p->cg_usage_kb / (double) p->cg_limit_kb >= 100.0 - 2 * cfg->cgroup_headroom)
                                next->density_alert = true;
                        if (!isnan(p->compact_ms) && p->compact_ms >= cfg->max_compact_ms / 2)
                                next->density_alert = true;
                }
        }
        /* a process whose faults wait for their samples to be split
         * between the kinds (fs_pending) gets them only on a density
         * tick: no back-off until they are in */
        for (unsigned i = 0; steady && i < MTHP_ENGINE_PROCS; i++)
                if (engine_proc_awaits_samples(cfg, &next->proc[i], next->tick, PROC_RECENT_TICKS))
                        steady = false;
        next->steady_ticks = steady ? next->steady_ticks + 1 : 0;
}

/* Pure: no I/O, no clock, no globals. Per kind: its inputs, the level it
 * may go to, the transition and its reason, then one decision per size
 * knob; then defrag and the shrinker. */
int mthp_engine_decide(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *prev,
                       struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out) {
        size_t n = 0;
        bool want_defer = false;
        char defer_why[256] = "";

        *next = *prev;
        next->tick = snap->tick;
        engine_remember(cfg, caps, snap, next);
        engine_remember_cgroups(cfg, snap, next);
        engine_remember_limited(snap, next);
        engine_pay_remember(cfg, caps, snap, next);
        bool steady = snap->dt > 0;
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct kind_step k = { .kind = kind, .kname = mthp_kind_name(kind), .st = &next->kind[kind] };
                kind_inputs(cfg, caps, snap, next, &k);
                kind_target(cfg, caps, snap, next, &k);
                decide_kind(cfg, caps, snap, next, &k);
                settle_kind(caps, snap, &k, &want_defer, defer_why, sizeof(defer_why));
                steady = steady && kind_steady(&k);
                engine_kind_align(cfg, caps, snap, &k);
                engine_emit_size_decisions(caps, snap, next, &k, out, &n, n_out);
        }
        engine_decide_defrag(cfg, caps, snap, next, want_defer, defer_why, out, &n, n_out);
        engine_shrinker_net(cfg, caps, next, out, &n, n_out);
        density_steady_note(cfg, snap, next, steady);
        return (int) n;
}


void mthp_engine_note_applied(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                              struct mthp_engine_state *st, const bool failed[MTHP_KNOBS_MAX]) {
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct mthp_engine_kind *k = &st->kind[kind];
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                unsigned level = k->level <= n_ladder ? k->level : n_ladder;
                /* down to the largest rung whose "always" was not refused */
                while (level > 0 && caps->sizes[ladder[level - 1]].knob[kind] >= 0 &&
                       failed[caps->sizes[ladder[level - 1]].knob[kind]])
                        level--;
                if (level == k->level)
                        continue;
                k->level = level;
                k->climb = false;   /* the raise did not happen */
                if (level <= k->verify_from)
                        k->verify_left = 0; /* nothing raised to verify */
        }
}
