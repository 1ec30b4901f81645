/* SPDX-License-Identifier: MIT */
/* A density step-down and what sets it aside: a sparse process steps the
 * level down (the bloat guard), a churner it blamed may raise back without
 * the dwell, and a quiet process, bloat measured against 4K or a churner
 * proved resident hold the level instead (the dwell, the flap bar). Pure
 * functions of config, snapshot and engine state, as the engine is. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* A density step-down this soon after the last one, for the same process,
 * is a flap: the raise between them was undone for the same reason. 60 ticks:
 * the mixed host (tests/bench/mixed-host) went down and up every 5-9 ticks,
 * and a workload that turns sparse once a minute is no flap. */
#define ENGINE_FLAP_TICKS 60

/* The remembered process of a pid, or NULL. */
const struct mthp_engine_proc *engine_churn_proc(const struct mthp_engine_state *st, int pid) {
        for (unsigned i = 0; pid && i < MTHP_ENGINE_PROCS; i++)
                if (st->proc[i].pid == pid)
                        return &st->proc[i];
        return NULL;
}

/* The keep threshold of a process's density: 1 / (1 + its MaxBloat). */
static double keep_threshold(const struct mthp_engine_config *cfg, const struct mthp_engine_proc *m) {
        return engine_keep_threshold(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0));
}

/* The RSS of a kind a process may hold and keep a size by the churn rule:
 * (1 + its MaxBloat) of what it held when it read dense there. */
static double churn_held_kb(const struct mthp_engine_config *cfg, const struct mthp_engine_proc *m,
                            enum mthp_kind kind, unsigned z) {
        return (1.0 + engine_max_bloat(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0)) / 100.0) *
               (double) m->peak_rss_kb[kind][z];
}

/* The process a density step-down is blamed on, when it churns and the
 * churn rule could not keep it at the size it failed at: it has no dense
 * sample there, so its zeros may be a buffer it was caught writing
 * (stress-ng --vm, trace stress-vm-2w), which the rule cannot tell from
 * bloat without one; or its RSS grew past what it held when it read dense
 * (a stress-ng --vm worker first sampled while it populated its
 * buffer), which a sample with the sizes off tells apart; or its zeros
 * read beside its data, ENGINE_DATA_SPARSE_SAMPLES samples in a row (it
 * turned sparse: a phased workload's 0.05-0.08 of each 2M block). *grown says
 * whether it read dense there, *beside whether its zeros lay beside its
 * data. NULL otherwise. */
static struct mthp_engine_proc *churn_blamed(const struct mthp_engine_config *cfg, struct mthp_engine_state *next,
                                             const struct kind_step *k, bool *grown, bool *beside) {
        *grown = *beside = false;
        if (k->dens.holder < 0)
                return NULL;
        const struct party *p = &k->dens.party[k->dens.holder];
        if (p->proc < 0 || p->capped)
                return NULL;
        struct mthp_engine_proc *m = &next->proc[p->proc];
        if (!m->churn[k->kind])
                return NULL;
        /* a churner with a dense sample there failed the keep because
         * its RSS grew, or its zeros lay beside its data (the churn rule,
         * engine-density.c) */
        bool dense = m->peak_u[k->kind][p->fail_size] >= keep_threshold(cfg, m);
        *beside = dense && m->data_sparse[k->kind][p->fail_size] >= ENGINE_DATA_SPARSE_SAMPLES;
        *grown = dense && !*beside;
        return m;
}

/* A raise after a step-down blamed on a churner (struct mthp_engine_kind
 * churn_pid) need not wait DwellTicks: the same process was sampled since,
 * with the sizes off (presence), its densest sample of every size the
 * raise turns on is dense, and its RSS is within MaxBloat of what it held
 * when it read dense (the churn rule will keep the sizes). Not above the level it stepped down from
 * (k->churn_to): a target above it waits for the next tick's second raise,
 * as after any raise. */
void engine_churn_raise_back(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                             struct kind_step *k) {
        const struct mthp_engine_kind *st = k->st;
        k->churn_back = false;
        const struct mthp_engine_proc *m = engine_churn_proc(next, st->churn_pid);
        unsigned to = k->target < st->churn_from ? k->target : st->churn_from;
        if (!m || !k->dens.measured || to <= st->level || m->seen_tick <= st->churn_tick ||
            snap->tick > m->seen_tick + PROC_RECENT_TICKS ||
            (st->churn_beside && m->seen_tick < st->churn_tick + ENGINE_CHURN_BESIDE_TICKS))
                return;
        double keep = keep_threshold(cfg, m), least = 1;
        for (unsigned r = 0; r < to; r++) {
                double u = m->peak_u[k->kind][k->ladder[r]];
                if (!(u >= keep) || (double) m->rss_kb[k->kind] > churn_held_kb(cfg, m, k->kind, k->ladder[r]))
                        return;
                least = u < least ? u : least;
        }
        char at[16], comm[ENGINE_NAME_QUOTED];
        engine_level_name(caps, k->ladder, st->level, at, sizeof(at));
        k->churn_back = true;
        k->churn_to = to;
        snprintf(k->churn_note, sizeof(k->churn_note),
                 "no DwellTicks wait: pid %d (%s) stepped %s down at tick %llu for %s (it churns), reads "
                 "dense at %s (at least %.2f of each block) at %llu MiB",
                 m->pid, engine_quote_name(m->comm, comm, sizeof(comm)), k->kname, (unsigned long long) st->churn_tick,
                 st->churn_grown ? "the RSS it grew to" : st->churn_beside ? "zeros beside its data" : "zeros it was writing",
                 at, least,
                 (unsigned long long) (m->rss_kb[k->kind] / 1024));
}

/* A faulting process reads sparse at the level (the bloat guard): down to
 * the level the density keeps; a churner blamed for it may raise back
 * without the dwell, once. */
void engine_step_down_sparse(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        char to[16];
        /* bloat guard: no dwell, a faulting sparse process pays now */
        char hd[320];
        engine_describe_holder(cfg, caps, next, snap, k->kind, &k->dens, k->ladder, k->n_ladder, hd, sizeof(hd));
        engine_level_name(caps, k->ladder, k->dens.keep, to, sizeof(to));
        /* a churner caught writing: a raise back once it reads
         * dense need not wait the dwell, once for each process */
        bool grown, beside;
        struct mthp_engine_proc *m = churn_blamed(cfg, next, k, &grown, &beside);
        char note[240] = "", why[120] = "never read dense there";
        if (beside)
                snprintf(why, sizeof(why), "its zeros lay beside its data in %d samples in a row: it "
                         "turned sparse", ENGINE_DATA_SPARSE_SAMPLES);
        if (grown) {
                unsigned z = k->dens.party[k->dens.holder].fail_size;
                snprintf(why, sizeof(why), "its RSS, %llu MiB, grew past %.0f%% of the %llu MiB it held "
                         "when it read dense there",
                         (unsigned long long) (m->rss_kb[k->kind] / 1024),
                         100 + engine_max_bloat(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0)),
                         (unsigned long long) (m->peak_rss_kb[k->kind][z] / 1024));
        }
        if (m && !m->churn_spent[k->kind]) {
                char later[32] = "";
                if (beside)   /* its folios of before may read dense by presence at first */
                        snprintf(later, sizeof(later), " %d ticks on", ENGINE_CHURN_BESIDE_TICKS);
                snprintf(note, sizeof(note),
                         "; it churns (its memory turned over %g times a second or more) and %s: a "
                         "raise back once it reads dense%s need not wait DwellTicks",
                         ENGINE_CHURN_TURNOVER, why, later);
                m->churn_spent[k->kind] = true;
                st->churn_pid = m->pid;
                st->churn_from = st->level;
                st->churn_tick = snap->tick;
                st->churn_grown = grown;
                st->churn_beside = beside;
                k->churn_armed = true;
        } else if (m)
                snprintf(note, sizeof(note), "; it churns and %s, but was stepped down for that before: "
                         "DwellTicks applies", why);
        k->rule = k->churn_armed ? MTHP_RULE_STEP_DOWN_CHURN : MTHP_RULE_STEP_DOWN_SPARSE;
        /* a flap: down for density again soon after the last time, for
         * the same process, the raise between undone (another process is
         * news, not a flap); bar the levels above the one it goes to,
         * as after a failure (4 DwellTicks, doubling while it repeats).
         * Not where a raise back is armed: a sample proves that one. */
        char flap[160] = "";
        uint64_t prev = st->sparse_down_tick;
        const struct party *hp = k->dens.holder >= 0 ? &k->dens.party[k->dens.holder] : NULL;
        int pid = hp && hp->proc >= 0 ? next->proc[hp->proc].pid : 0;
        bool flapped = !k->churn_armed && prev && snap->tick < prev + ENGINE_FLAP_TICKS && pid &&
                       pid == st->sparse_down_pid;
        st->sparse_down_tick = snap->tick ? snap->tick : 1;
        st->sparse_down_pid = pid;
        if (flapped) {
                unsigned level = st->level;
                st->level = k->dens.keep + 1;   /* step_down_failed bars st->level and above */
                engine_step_down_failed(cfg, st, k->dens.keep, snap->tick);
                st->level = level;
                snprintf(flap, sizeof(flap),
                         "; down for density %llu ticks after the last time it was stepped down for it: a flap, "
                         "the sizes above barred for %u ticks",
                         (unsigned long long) (snap->tick - prev), st->backoff);
        }
        snprintf(k->why, sizeof(k->why), "%s: step %s down from %s to %s%s%s", hd, k->kname, k->top, to, note, flap);
        st->level = k->dens.keep;
        st->verify_left = 0;
}

/* Its zeros are memory it holds at 4K too at size z: it is quiet (fewer
 * faults a second than MinProcessFaultRate=: it has not replaced its
 * memory since) and a sample read it dense there (by presence with the
 * size off, or by content) at an RSS of the kind it is still within (1 +
 * MaxBloat) of; or a raise back proved its growth resident (struct
 * mthp_engine_kind resident_pid) and it is within (1 + MaxBloat)^2 of the
 * RSS it was proved at. Whether its zeros lie beside its data does not
 * matter here: pages it touched and no longer uses are resident at 4K too
 * (a JVM's heap reads so, objects beside zeroed space); a program that
 * turned sparse in new memory grew its RSS. What a larger folio adds to
 * such a process is no more than MaxBloat of what 4K gives it. A process that faults and never
 * had a raise back proved it is judged by its samples as before: one that
 * holds as much but maps new memory as fast as it frees the old (the
 * slow-turnover worker, tests/engine/test-engine-churn.c) cannot be told
 * from one that turned sparse. */
static bool resident_at(const struct mthp_engine_config *cfg, const struct mthp_engine_kind *st,
                        const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned z) {
        double rss = (double) m->rss_kb[kind];
        if (m->fault_rate < cfg->min_proc_fault_rate && m->peak_u[kind][z] >= keep_threshold(cfg, m) &&
            rss <= churn_held_kb(cfg, m, kind, z))
                return true;
        double f = 1.0 + engine_max_bloat(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0)) / 100.0;
        return st->resident_pid && st->resident_pid == m->pid && rss <= f * f * (double) st->resident_kb;
}

/* A density step-down set aside (mthpd(8), the minimum dwell): every party
 * that objects to the level is a process, and each either holds its zeros
 * at 4K too at every size up to the level it objects to (resident_at), or
 * is quiet (fewer faults a second than MinProcessFaultRate=, so the
 * give-back pages its bloat out, daemon GiveBack=) within DwellTicks of the
 * kind's last raise. A size raised is not stepped down within the dwell
 * but for pressure, a limited cgroup, fallback, a failed probe or a
 * process whose bloat grows now (it faults). Returns MTHP_RULE_NONE where
 * the step-down stands; else the hold's rule (hold-dwell where a party
 * waits the dwell, hold where all hold their zeros at 4K), why in buf. */
enum mthp_rule engine_sparse_set_aside(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                       const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                                       const struct kind_step *k, char *buf, size_t n) {
        const struct mthp_engine_kind *st = k->st;
        bool dwell = st->last_dir > 0 && cfg->dwell_ticks && snap->tick < st->last_change_tick + cfg->dwell_ticks;
        bool waits = false;
        size_t l = 0;
        buf[0] = 0;
        for (unsigned i = 0; i < k->dens.n_parties; i++) {
                const struct party *p = &k->dens.party[i];
                if (p->keep >= st->level)
                        continue;
                if (p->proc < 0 || p->capped)
                        return MTHP_RULE_NONE; /* a policy's objection stands */
                const struct mthp_engine_proc *m = &next->proc[p->proc];
                double keep = keep_threshold(cfg, m);
                bool resident = true;
                unsigned z = p->fail_size;
                for (unsigned r = 0; r < st->level && resident; r++) {
                        double u = engine_remembered(m, k->kind, k->ladder[r]);
                        if (!(isnan(u) || u >= keep) && !resident_at(cfg, st, m, k->kind, k->ladder[r])) {
                                resident = false;
                                z = k->ladder[r];
                        }
                }
                char comm[ENGINE_NAME_QUOTED], at[16];
                engine_quote_name(m->comm, comm, sizeof(comm));
                mthp_format_size(caps->sizes[p->fail_size].kb, at, sizeof(at));
                int w;
                if (resident) {
                        double rss = (double) m->rss_kb[k->kind];
                        bool proved = st->resident_pid == m->pid &&
                                      !(m->fault_rate < cfg->min_proc_fault_rate &&
                                        m->peak_u[k->kind][p->fail_size] >= keep &&
                                        rss <= churn_held_kb(cfg, m, k->kind, p->fail_size));
                        if (proved)
                                w = snprintf(buf + l, n - l,
                                             "%spid %d (%s) reads %.2f of each %s block, but its zeros are memory "
                                             "it holds at 4K too: a raise back found it dense with the sizes off at "
                                             "the %llu MiB it had grown to, and it holds %llu MiB",
                                             l ? "; " : "", m->pid, comm, p->fail_usage, at,
                                             (unsigned long long) (st->resident_kb / 1024),
                                             (unsigned long long) (m->rss_kb[k->kind] / 1024));
                        else
                                w = snprintf(buf + l, n - l,
                                             "%spid %d (%s) reads %.2f of each %s block, but its zeros are memory "
                                             "it holds at 4K too: quiet (%.0f faults/s), it read %.2f there at %llu "
                                             "MiB and holds %llu MiB (within MaxBloat)",
                                             l ? "; " : "", m->pid, comm, p->fail_usage, at, m->fault_rate,
                                             m->peak_u[k->kind][p->fail_size],
                                             (unsigned long long) (m->peak_rss_kb[k->kind][p->fail_size] / 1024),
                                             (unsigned long long) (m->rss_kb[k->kind] / 1024));
                } else if (dwell && m->fault_rate < cfg->min_proc_fault_rate) {
                        waits = true;
                        mthp_format_size(caps->sizes[z].kb, at, sizeof(at));
                        w = snprintf(buf + l, n - l,
                                     "%spid %d (%s, %.0f faults/s) reads sparse at %s, but it is quiet (< "
                                     "MinProcessFaultRate %.0f): its bloat is paged out by the give-back, not "
                                     "stopped by a step-down; %s was raised %llu ticks ago and a step-down for "
                                     "density waits DwellTicks %u",
                                     l ? "; " : "", m->pid, comm, m->fault_rate, at, cfg->min_proc_fault_rate,
                                     k->kname, (unsigned long long) (snap->tick - st->last_change_tick),
                                     cfg->dwell_ticks);
                } else
                        return MTHP_RULE_NONE;
                if (w > 0)
                        l = (size_t) w < n - l ? l + (size_t) w : n - 1;
        }
        if (!l)
                return MTHP_RULE_NONE;
        return waits ? MTHP_RULE_HOLD_DWELL : MTHP_RULE_HOLD;
}

/* The level holds though a party reads sparse: sparse_set_aside said why. */
void engine_hold_aside(const struct mthp_engine_config *cfg, struct kind_step *k, enum mthp_rule rule,
                       const char *aside) {
        const struct mthp_engine_kind *st = k->st;
        k->rule = rule;
        snprintf(k->why, sizeof(k->why), "holding %s at %s: demand %.0f pages/s (raise at %.0f%s, lower below %.0f "
                 "for %u: streak %u); no step-down: %s",
                 k->kname, k->top, k->sig.demand, k->sig.raise_at, k->sig.rate_why, k->sig.lower_at,
                 cfg->lower_ticks, st->lower_streak, aside);
}
