/* SPDX-License-Identifier: MIT */
/* When to sample and when to tick: the density
 * back-off (is the decision steady enough to sample density less often?),
 * whether a tick wants density, whether a tick awaits fault samples that
 * an early tick should bring, and the next tick's time. Pure functions of
 * config, snapshot and engine state, as the engine is. */

#include <math.h>

#include "mthp/engine.h"

#include "engine-internal.h"

bool mthp_engine_density_steady(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                                const struct mthp_engine_state *st) {
        if (st->steady_ticks < MTHP_ENGINE_STEADY_TICKS || !st->density_tick || st->density_alert || snap->dt <= 0)
                return false;
        double raise, lower;
        engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
        if (snap->fault_pages_rate > 2 * st->density_rate + raise)
                return false; /* a jump: a new faulting process, or a phase */
        if (snap->psi.present && snap->psi.some_avg10 >= cfg->psi_some_max)
                return false;
        if (snap->mem.total_kb &&
            100.0 * (double) snap->mem.available_kb / (double) snap->mem.total_kb < cfg->min_available)
                return false;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (engine_any_grace(cfg, snap, k))
                        return false;
        /* a churner whose last sample read its zeros beside its data: the
         * next sample says whether it turned sparse (data_sparse) */
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        for (unsigned z = 0; z < MTHP_SIZES_MAX; z++)
                                if (m->churn[k] && m->data_sparse[k][z] > 0 &&
                                    m->data_sparse[k][z] < ENGINE_DATA_SPARSE_SAMPLES)
                                        return false;
        }
        return true;
}

/* The back-off holds for a host that faults at the raise rate with
 * nothing raised too: a busy server's background (a compile loop, short
 * scripts: ~7,000 faults/s here, where FaultCost=auto puts the raise rate
 * near 1,900) crosses it with no process that could gain, and a sample
 * every tick for a raise the last ones found no reason for cost 0.53-0.62%
 * of a core against <= 0.1% quiet. A steady decision (no raise the sample
 * allowed waiting, mthp_engine_density_steady) with no process that could
 * gain (density_saw_gain) is what those samples found; a jump of the host's rate, pressure or a start grace samples at
 * once. Every MTHP_ENGINE_DENSITY_EVERY ticks, not more seldom: the engine
 * remembers a sample PROC_RECENT_TICKS ticks, after which a kind whose
 * demand stands at the raise rate would climb blind (UnmeasuredMaxSize=). */
/* A process the engine decides on (sampled lately) that a raise could
 * give something: it faults at the hot rate (MinProcessFaultRate=) and its
 * memory read dense enough at some size for a raise to it under its
 * policy's MaxBloat=. While one does, nothing raised samples every tick:
 * its rate may be a first sight's lifetime average (a workload starting
 * up) that the next sample finds at the raise rate. */
static bool density_saw_gain(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st) {
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS || m->fault_rate < cfg->min_proc_fault_rate)
                        continue;
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double thr = engine_raise_threshold(engine_keep_threshold(cfg, pol));
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        for (unsigned z = 0; z < MTHP_SIZES_MAX; z++) {
                                double u = engine_remembered(m, (enum mthp_kind) k, z);
                                if (!isnan(u) && u >= thr)
                                        return true;
                        }
        }
        return false;
}

bool mthp_engine_wants_density(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                               const struct mthp_engine_state *st) {
        bool raised = false;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                raised = raised || st->kind[k].level > 0;
        if (!raised) {
                double raise, lower;
                engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
                if (!(snap->dt > 0 && snap->fault_pages_rate >= raise))
                        return false;
                if (density_saw_gain(cfg, st))
                        return true;
        }
        return !mthp_engine_density_steady(cfg, snap, st) || snap->tick >= st->density_tick + MTHP_ENGINE_DENSITY_EVERY;
}

/* Could the tick after st's raise the kind at all? Not at the top of its
 * ladder (AnonSizes=, ShmemSizes=, the sizes the kernel offers), nor with
 * the next level barred after a failure (step_down_failed, kind_target),
 * nor at the level every limited cgroup affords (engine_limited_afford).
 * Policy files are not asked: a process's cgroup policy bounds its own
 * say, but its faults are demand all the same and may raise the kind for
 * another party. */
static bool kind_has_room(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_engine_state *st, enum mthp_kind kind) {
        const struct mthp_engine_kind *k = &st->kind[kind];
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
        if (k->level >= n_ladder || mthp_engine_thp_off(cfg, kind))
                return false;
        if (k->ceiling && st->tick + 1 < k->ceiling_until && k->level + 1 >= k->ceiling)
                return false;
        int blocker;
        return k->level < engine_limited_afford(cfg, caps, st, kind, ladder, n_ladder, &blocker, NULL, 0);
}

/* Could a start grace under pol raise anything now? Only a kind its
 * policy says always for, below the largest size its Sizes= allow (the
 * party's ceiling in the density verdict) and with room to rise at all.
 * Where every such kind is there already, a new cgroup of the policy
 * needs no check before the next tick: the sizes it wants are on. */
bool mthp_engine_grace_room(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_engine_state *st, const struct mthp_policy *pol) {
        if (!pol)
                return false;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                if (pol->mode[k] != MTHP_POLICY_ALWAYS)
                        continue;
                unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, (enum mthp_kind) k, ladder);
                unsigned cap = 0;
                while (cap < n_ladder && (!pol->max_kb || caps->sizes[ladder[cap]].kb <= pol->max_kb))
                        cap++;
                if (st->kind[k].level < cap && kind_has_room(cfg, caps, st, (enum mthp_kind) k))
                        return true;
        }
        return false;
}

bool mthp_engine_awaits_samples(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_snapshot *snap, const struct mthp_engine_state *st, double *rate) {
        double raise, lower, pending = 0;
        for (unsigned i = 0; snap->dt > 0 && i < MTHP_ENGINE_PROCS; i++)
                if (engine_proc_awaits_samples(cfg, &st->proc[i], st->tick, 0))   /* seen this tick */
                        pending += st->proc[i].fault_rate;
        if (rate)
                *rate = pending;
        engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
        if (!(pending > 0 && pending >= raise))
                return false;
        /* the samples split its faults between anon and shmem: a raise of
         * either may come of them, and of neither where both are as high
         * as they can go (an early tick and a faster perf rate for nothing) */
        return kind_has_room(cfg, caps, st, MTHP_ANON) || kind_has_room(cfg, caps, st, MTHP_SHMEM);
}

bool mthp_engine_burst_unexplained(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                   const struct mthp_snapshot *snap, const struct mthp_engine_state *st) {
        double raise, lower;
        if (snap->dt <= 0)
                return false;
        engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
        if (!(raise > 0) || snap->fault_pages_rate < raise)
                return false;
        if (mthp_engine_awaits_samples(cfg, caps, snap, st, NULL))
                return false;   /* the early tick for the samples comes anyway */
        /* the tick acted (a level changed), or the processes it saw fault
         * at the raise rate between them (judged: too sparse, say) */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (st->kind[k].last_change_tick == st->tick)
                        return false;
        double seen = 0;
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++)
                if (st->proc[i].pid && st->proc[i].seen_tick == st->tick)
                        seen += st->proc[i].fault_rate;
        if (seen >= raise)
                return false;
        return kind_has_room(cfg, caps, st, MTHP_ANON) || kind_has_room(cfg, caps, st, MTHP_SHMEM);
}

size_t mthp_engine_awaited_pids(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, int *pids,
                                size_t max) {
        size_t n = 0;
        double rate[MTHP_ENGINE_PROCS];
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++) {
                const struct mthp_engine_proc *p = &st->proc[i];
                if (!engine_proc_awaits_samples(cfg, p, st->tick, PROC_RECENT_TICKS))
                        continue;
                size_t at = n < max ? n : max;   /* insertion, most faulting first */
                while (at > 0 && rate[at - 1] < p->fault_rate)
                        at--;
                if (at >= max)
                        continue;
                size_t last = n < max ? n : max - 1;
                for (size_t j = last; j > at; j--) {
                        pids[j] = pids[j - 1];
                        rate[j] = rate[j - 1];
                }
                pids[at] = p->pid;
                rate[at] = p->fault_rate;
                if (n < max)
                        n++;
        }
        return n;
}

bool mthp_engine_climbing(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, const struct mthp_engine_state *st) {
        if (snap->dt <= 0 || !snap->density.valid)
                return false;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (st->kind[k].last_change_tick == st->tick && st->kind[k].last_dir > 0 && st->kind[k].climb &&
                    st->kind[k].verify_left > 0 && kind_has_room(cfg, caps, st, (enum mthp_kind) k))
                        return true;
        return false;
}

uint64_t mthp_tick_next(struct mthp_tick_plan *plan, uint64_t tick, uint64_t tick_usec, uint64_t interval_usec,
                        bool awaits, bool look, bool climb) {
        bool was_early = plan->early, was_look = plan->look;
        uint64_t regular = was_early ? plan->regular_usec : tick_usec + interval_usec;
        uint64_t early = interval_usec / 4 > MTHP_TICK_EARLY_MIN_USEC ? interval_usec / 4 : MTHP_TICK_EARLY_MIN_USEC;
        bool start = awaits && !plan->awaited;
        plan->awaited = awaits;
        plan->early = plan->look = false;
        /* a look (none where an await starts: its early tick comes) is not
         * held by the spacing, and the tick it asks for may start an await */
        bool as_look = (look && !start) || climb;
        /* a climb goes on after an early tick too: each asks for a raise
         * at its own tick, so the ladder bounds them, and the grid kept
         * (regular) ends them within an Interval */
        bool held = climb     ? false
                    : as_look ? was_early
                              : !start || (was_early && !was_look) ||
                                        (plan->early_tick && tick < plan->early_tick + MTHP_TICK_EARLY_SPACING);
        if (held || early >= interval_usec || tick_usec + early >= regular)
                return regular;
        plan->early = true;
        plan->look = as_look;
        if (!as_look)
                plan->early_tick = tick;
        plan->regular_usec = regular;
        return tick_usec + early;
}

uint64_t mthp_tick_alarm_period(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_snapshot *snap, const struct mthp_engine_state *st,
                                const struct mthp_tick_plan *plan, uint64_t interval_usec, unsigned n_cpus) {
        double raise, lower;
        if (snap->dt <= 0 || plan->early || !n_cpus || !interval_usec ||
            (plan->burst_tick && st->tick < plan->burst_tick + MTHP_TICK_EARLY_SPACING))
                return 0;
        engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
        if (!(raise > 0) || snap->fault_pages_rate >= raise)
                return 0;
        if (!kind_has_room(cfg, caps, st, MTHP_ANON) && !kind_has_room(cfg, caps, st, MTHP_SHMEM))
                return 0;
        uint64_t span = interval_usec / 4 > MTHP_TICK_EARLY_MIN_USEC ? interval_usec / 4 : MTHP_TICK_EARLY_MIN_USEC;
        double count = ceil(raise * (double) span / 1e6 / n_cpus);
        return count < 16 ? 16 : count > 1e12 ? (uint64_t) 1e12 : (uint64_t) count;
}

bool mthp_tick_burst(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, uint64_t now_usec,
                     uint64_t pgfault_now, double *rate, uint64_t *tick_usec) {
        double raise, lower;
        const struct mthp_counter *c = &snap->vm[MTHP_VM_PGFAULT];
        *rate = 0;
        *tick_usec = 0;
        if (!c->present || now_usec <= snap->t_usec || pgfault_now < c->value)
                return false;
        uint64_t faults = pgfault_now - c->value;
        *rate = (double) faults / ((double) (now_usec - snap->t_usec) / 1e6);
        engine_fault_rates(cfg, snap, &raise, &lower, NULL, 0);
        /* and at least MTHP_TICK_EARLY_MIN_USEC's worth of it: a few ms
         * after a tick, one exec's faults would read as the raise rate */
        if (!(raise > 0) || *rate < raise || (double) faults < raise * (double) MTHP_TICK_EARLY_MIN_USEC / 1e6)
                return false;
        *tick_usec = snap->t_usec + MTHP_TICK_EARLY_MIN_USEC > now_usec ? snap->t_usec + MTHP_TICK_EARLY_MIN_USEC
                                                                         : now_usec;
        return true;
}
