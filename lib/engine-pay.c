/* SPDX-License-Identifier: MIT */
/* A raise is a trial: did the size pay?
 *
 * When the engine raises a kind from level a to b (lib/engine.c
 * raise_level), it notes what the processes that drove the raise (the
 * persistent ones faulting the kind hardest, up to
 * MTHP_ENGINE_TRIAL_PROCS) paid before: their system and total CPU (cores,
 * /proc/PID/stat through the observer's snapshot) and the MB/s of the kind
 * they faulted in, smoothed over their last samples. Over the next
 * ENGINE_PAY_TICKS ticks at b (at least ENGINE_PAY_MIN_S seconds) it adds
 * up the same, and the new top size's allocations and fallbacks. Then:
 *   - b fell back on MaxFallback= of its faults or more (at least
 *     ENGINE_PAY_MIN_ATTEMPTS of them): it did not pay (rule
 *     step-back-fallback; the fallbacks the memory cgroup's charge
 *     refused, anon_fault_fallback_charge, are named: a limit, not
 *     fragmentation);
 *   - a process faulting a comparable amount (within a factor
 *     ENGINE_PAY_DEMAND_BAND of before) spent ENGINE_PAY_SYS_MARGIN times
 *     the system CPU per MB faulted in, or with its fault rate and RSS
 *     steady ENGINE_PAY_CPU_MARGIN times the CPU a second (an open-loop
 *     service doing the same work for more CPU): it did not pay (rule
 *     step-back-cpu);
 *   - else b is kept, and the climb may go on.
 * A size that did not pay: the level goes back to a (never below it) and
 * b is barred with the failure backoff (engine_step_down_failed, doubling
 * on a repeat), so the engine does not flap; while barred, the holds say
 * why b was not taken (rule hold-unpaid). A raise while a trial runs (a
 * climb) extends it: the new top is judged against what the processes
 * paid before the first raise. Pure, like the rest of the engine. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

static bool trial_holds(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const struct kind_step *k,
                        unsigned level) {
        if (!level || level > k->n_ladder)
                return false;
        int knob = caps->sizes[k->ladder[level - 1]].knob[k->kind];
        return knob >= 0 && strcmp(snap->knob[knob], "always") == 0;
}

/* MB/s of the kind a process faults in at the level on now: its faults of
 * the kind a size can change, each a folio of the top size where it uses
 * that size densely and the kernel gave it (the top size's allocations
 * against its fallbacks this tick), else a page; and no more pages a fault
 * than the host's faults brought in on average (memcached at 2M: 150
 * faults/s, most of them not of its heap, and its RSS grew 16 MB/s, not
 * the 300 MB/s of 150 2M folios). */
static double proc_mb_rate(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                           const struct mthp_snapshot *snap, const struct mthp_engine_proc *m, enum mthp_kind kind,
                           unsigned level) {
        unsigned ladder[MTHP_SIZES_MAX], n = mthp_engine_ladder(cfg, caps, kind, ladder);
        double page_kb = mthp_caps_page_kb(caps), ppf = 1;
        if (level && level <= n) {
                unsigned z = ladder[level - 1];
                double u = engine_remembered(m, kind, z);
                double alloc = mthp_stat_rate(caps, snap, z, kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc");
                double fb = mthp_stat_rate(caps, snap, z, kind == MTHP_ANON ? "anon_fault_fallback" : "shmem_fallback");
                double got = alloc + fb > 0 ? alloc / (alloc + fb) : 1;
                if (!isnan(u) && u >= engine_keep_threshold(cfg, mthp_engine_policy(cfg, m->cgroup, NULL, 0)))
                        ppf = 1 + ((double) caps->sizes[z].kb / page_kb - 1) * got;
                double events = snap->vm[MTHP_VM_PGFAULT].rate;
                if (events > 0 && snap->fault_pages_rate >= events && snap->fault_pages_rate / events < ppf)
                        ppf = snap->fault_pages_rate / events;
        }
        return m->fault_rate * engine_fault_share(m, kind, true) * ppf * page_kb / 1024;
}

void engine_pay_remember(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        const struct mthp_density_view *dv = &snap->density;
        for (unsigned i = 0; dv->valid && i < dv->n_procs && i < MTHP_DENSITY_PROCS; i++) {
                const struct mthp_proc_density *p = &dv->proc[i];
                if (!p->cpu_known || !isfinite(p->utime_rate) || !isfinite(p->stime_rate) || p->utime_rate < 0 ||
                    p->stime_rate < 0)
                        continue;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                        struct mthp_engine_proc *m = &st->proc[j];
                        if (m->pid != p->pid || m->seen_tick != snap->tick)
                                continue;
                        bool first = !m->pay_tick;
                        m->sys_rate = p->stime_rate;
                        m->cpu_rate = p->utime_rate + p->stime_rate;
                        m->pay_sys = first ? m->sys_rate : (m->pay_sys + m->sys_rate) / 2;
                        m->pay_cpu = first ? m->cpu_rate : (m->pay_cpu + m->cpu_rate) / 2;
                        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                                /* the level whose knobs were on over the interval measured */
                                m->mb_rate[k] = proc_mb_rate(cfg, caps, snap, m, k, st->kind[k].level);
                                m->pay_mb[k] = first ? m->mb_rate[k] : (m->pay_mb[k] + m->mb_rate[k]) / 2;
                        }
                        m->pay_tick = snap->tick ? snap->tick : 1;
                        break;
                }
        }
}

/* The processes that drive a raise of the kind: seen lately, persistent,
 * their CPU measured, faulting the kind at MinProcessFaultRate at least;
 * the hardest faulting first. */
static void trial_pick(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_engine_state *st, enum mthp_kind kind, struct mthp_engine_trial *tr) {
        tr->n_procs = 0;
        memset(tr->proc, 0, sizeof(tr->proc));
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || !m->pay_tick || st->tick > m->seen_tick + PROC_RECENT_TICKS ||
                    m->pay_mb[kind] * 1024 / mthp_caps_page_kb(caps) < cfg->min_proc_fault_rate ||
                    !engine_persistent(caps, m, kind, st->min_bloat_kb))
                        continue;
                unsigned at = tr->n_procs;
                while (at > 0 && tr->proc[at - 1].mb0 < m->pay_mb[kind])
                        at--;
                if (at >= MTHP_ENGINE_TRIAL_PROCS)
                        continue;
                unsigned last = tr->n_procs < MTHP_ENGINE_TRIAL_PROCS ? tr->n_procs : MTHP_ENGINE_TRIAL_PROCS - 1;
                memmove(&tr->proc[at + 1], &tr->proc[at], (last - at) * sizeof(tr->proc[0]));
                tr->proc[at] = (struct mthp_engine_trial_proc) {
                        .pid = m->pid, .sys0 = m->pay_sys, .cpu0 = m->pay_cpu, .mb0 = m->pay_mb[kind],
                        .rss0_kb = m->rss_kb[kind],
                };
                memcpy(tr->proc[at].comm, m->comm, sizeof(tr->proc[at].comm));
                if (tr->n_procs < MTHP_ENGINE_TRIAL_PROCS)
                        tr->n_procs++;
        }
}

void engine_pay_start(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_snapshot *snap, const struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_trial *tr = &k->st->trial;
        if (k->target <= k->st->level)
                return;
        bool climb = tr->to && tr->to == k->st->level;
        if (!climb) {
                memset(tr, 0, sizeof(*tr));
                tr->from = k->st->level;
                trial_pick(cfg, caps, next, k->kind, tr);
        }
        /* a climb: judged at its new top, against what they paid before it */
        tr->to = k->target;
        tr->tick = snap->tick;
        tr->ticks = 0;
        tr->dt = tr->alloc = tr->fallback = tr->charge = 0;
        for (unsigned i = 0; i < tr->n_procs; i++)
                tr->proc[i].sys = tr->proc[i].cpu = tr->proc[i].mb = tr->proc[i].dt = 0;
}

/* This tick's figures into the trial. */
static void trial_add(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                      const struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_trial *tr = &k->st->trial;
        unsigned z = k->ladder[tr->to - 1];
        bool anon = k->kind == MTHP_ANON;
        tr->ticks++;
        tr->dt += snap->dt;
        tr->alloc += mthp_stat_rate(caps, snap, z, anon ? "anon_fault_alloc" : "shmem_alloc") * snap->dt;
        tr->fallback += mthp_stat_rate(caps, snap, z, anon ? "anon_fault_fallback" : "shmem_fallback") * snap->dt;
        tr->charge += mthp_stat_rate(caps, snap, z, anon ? "anon_fault_fallback_charge" : "shmem_fallback_charge") *
                      snap->dt;
        for (unsigned i = 0; i < tr->n_procs; i++) {
                struct mthp_engine_trial_proc *t = &tr->proc[i];
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                        const struct mthp_engine_proc *m = &next->proc[j];
                        if (m->pid != t->pid || m->pay_tick != (snap->tick ? snap->tick : 1))
                                continue;
                        t->sys += m->sys_rate * snap->dt;
                        t->cpu += m->cpu_rate * snap->dt;
                        t->mb += m->mb_rate[k->kind] * snap->dt;
                        t->dt += snap->dt;
                        t->rss_kb = m->rss_kb[k->kind];
                }
        }
}

/* What a process's CPU says of the trial: which comparison holds (per MB
 * faulted at a comparable demand where its faults made its system CPU;
 * per second with its faults and RSS steady) and its ratio. */
struct pay_look {
        bool per_mb, per_s;
        double r_mb, r_s;
        double mb1, fault_share;
        bool fail_mb, fail_s;
};

static bool proc_look(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                      const struct mthp_engine_trial_proc *t, struct pay_look *o) {
        memset(o, 0, sizeof(*o));
        if (t->dt < ENGINE_PAY_MIN_S / 2)
                return false;
        double sys1 = t->sys / t->dt, cpu1 = t->cpu / t->dt, mb1 = t->mb / t->dt;
        o->mb1 = mb1;
        /* what its faults before cost at the host's 4K fault cost: only
         * where they made most of its system CPU does that CPU per MB
         * measure the faults (memcached's is its network I/O: 1 % faults) */
        double cost_ns = snap->fault_cost_ns > 0 ? snap->fault_cost_ns : ENGINE_PAY_FAULT_NS;
        double fault_sys0 = t->mb0 * 1024 / mthp_caps_page_kb(caps) * cost_ns * 1e-9;
        o->fault_share = t->sys0 > 0 ? fault_sys0 / t->sys0 : 0;
        /* system CPU per MB faulted in, at a comparable fault demand */
        if (t->mb0 >= ENGINE_PAY_MIN_MB && mb1 >= ENGINE_PAY_MIN_MB && mb1 <= t->mb0 * ENGINE_PAY_DEMAND_BAND &&
            mb1 * ENGINE_PAY_DEMAND_BAND >= t->mb0 && t->sys0 > 0 && o->fault_share >= ENGINE_PAY_FAULT_SHARE) {
                o->per_mb = true;
                o->r_mb = (sys1 / mb1) / (t->sys0 / t->mb0);
                o->fail_mb = o->r_mb >= ENGINE_PAY_SYS_MARGIN && sys1 - t->sys0 * mb1 / t->mb0 >= ENGINE_PAY_MIN_SYS;
        }
        /* the CPU a second, its faults and RSS steady */
        bool flt_steady = (mb1 < ENGINE_PAY_MIN_MB && t->mb0 < ENGINE_PAY_MIN_MB) ||
                          fabs(mb1 - t->mb0) <= ENGINE_PAY_STEADY * t->mb0;
        double rss0 = (double) t->rss0_kb, rss1 = (double) t->rss_kb;
        bool rss_steady = rss0 > 0 && fabs(rss1 - rss0) <= ENGINE_PAY_STEADY * rss0;
        if (flt_steady && rss_steady && t->cpu0 > 0) {
                o->per_s = true;
                o->r_s = cpu1 / t->cpu0;
                o->fail_s = o->r_s >= ENGINE_PAY_CPU_MARGIN && cpu1 - t->cpu0 >= ENGINE_PAY_MIN_CPU;
        }
        return true;
}

void engine_pay_judge(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_snapshot *snap, const struct mthp_engine_state *next, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        struct mthp_engine_trial *tr = &st->trial;
        char to[16];
        if (!tr->to)
                return;
        if (st->level != tr->to || tr->to > k->n_ladder) {
                tr->to = 0; /* moved by another step, or the config's ladder */
                return;
        }
        engine_level_name(caps, k->ladder, tr->to, to, sizeof(to));
        /* the tick of the raise decided before its knobs were written */
        if (k->sig.measured && snap->tick > tr->tick && snap->dt > 0 && trial_holds(caps, snap, k, tr->to))
                trial_add(caps, snap, next, k);
        if (tr->ticks < ENGINE_PAY_TICKS || tr->dt < ENGINE_PAY_MIN_S) {
                snprintf(k->pay_note, sizeof(k->pay_note), "; %s on trial since tick %llu (%u of %u ticks)", to,
                         (unsigned long long) tr->tick, tr->ticks, ENGINE_PAY_TICKS);
                return;
        }
        struct mthp_engine_unpaid u = {
                .level = tr->to, .from = tr->from, .tick = snap->tick, .ticks = tr->ticks,
                .kb = caps->sizes[k->ladder[tr->to - 1]].kb,
                .from_kb = tr->from ? caps->sizes[k->ladder[tr->from - 1]].kb : mthp_caps_page_kb(caps),
        };
        double attempts = tr->alloc + tr->fallback;
        double fb_pct = attempts > 0 ? 100.0 * tr->fallback / attempts : 0;
        if (attempts >= ENGINE_PAY_MIN_ATTEMPTS && fb_pct >= cfg->max_fallback) {
                u.rule = MTHP_RULE_STEP_BACK_FALLBACK;
                u.value = fb_pct;
                u.charge_pct = 100.0 * tr->charge / attempts;
        }
        int first = -1;
        struct pay_look first_look = { 0 };
        for (unsigned i = 0; !u.rule && i < tr->n_procs; i++) {
                struct pay_look o;
                if (!proc_look(caps, snap, &tr->proc[i], &o))
                        continue;
                if (first < 0) {
                        first = (int) i;
                        first_look = o;
                }
                double r = o.fail_mb ? o.r_mb : o.fail_s ? o.r_s : 0;
                if (r > u.value) {
                        u.value = r;
                        u.per_mb = o.fail_mb;
                        u.pid = tr->proc[i].pid;
                        memcpy(u.comm, tr->proc[i].comm, sizeof(u.comm));
                }
        }
        if (!u.rule && u.value > 0)
                u.rule = MTHP_RULE_STEP_BACK_CPU;
        if (u.rule) {
                st->unpaid = u;
                k->pay_failed = true;
                return;
        }
        /* it paid, or nothing said it did not: what the hardest faulting
         * process's CPU said, or why it could not say */
        char cpu[120] = "";
        if (first >= 0) {
                const struct mthp_engine_trial_proc *t = &tr->proc[first];
                char comm[ENGINE_NAME_QUOTED];
                int l = snprintf(cpu, sizeof(cpu), "; pid %d (%s): ", t->pid, engine_quote_name(t->comm, comm, sizeof(comm)));
                size_t o = l > 0 && (size_t) l < sizeof(cpu) ? (size_t) l : 0;
                if (first_look.per_mb)
                        snprintf(cpu + o, sizeof(cpu) - o, "%.2fx the system CPU per MB faulted", first_look.r_mb);
                else if (first_look.per_s)
                        snprintf(cpu + o, sizeof(cpu) - o, "%.2fx the CPU a second", first_look.r_s);
                else
                        snprintf(cpu + o, sizeof(cpu) - o, "not comparable (%.0f MB/s faulted, %.0f before; faults "
                                 "%.0f%% of its system CPU)", first_look.mb1, t->mb0, 100 * first_look.fault_share);
        }
        snprintf(k->pay_note, sizeof(k->pay_note), "; %s kept after a %u-tick trial (fallback %.0f%% of %.0f%s)", to,
                 tr->ticks, fb_pct, attempts, cpu);
        tr->to = 0;
}

void engine_pay_unpaid_note(const struct mthp_engine_unpaid *u, const char *kname,
                            char *buf, size_t n) {
        char size[16], from[16], comm[ENGINE_NAME_QUOTED];
        mthp_format_size(u->kb, size, sizeof(size));
        mthp_format_size(u->from_kb, from, sizeof(from));
        if (u->rule == MTHP_RULE_STEP_BACK_FALLBACK) {
                int l = snprintf(buf, n, "%s %s not taken: fell back on %.0f%% of its faults in a %u-tick trial at tick %llu",
                                 kname, size, u->value, u->ticks, (unsigned long long) u->tick);
                if (u->charge_pct >= 1 && l > 0 && (size_t) l < n)
                        snprintf(buf + l, n - (size_t) l, " (%.0f%% refused by a memory cgroup's charge: a limit)",
                                 u->charge_pct);
        } else if (u->per_mb)
                snprintf(buf, n, "%s %s not taken: pid %d (%s) spent %.1fx the system CPU per MB faulted at %s as at %s "
                         "in a %u-tick trial at tick %llu",
                         kname, size, u->pid, engine_quote_name(u->comm, comm, sizeof(comm)), u->value, size, from,
                         u->ticks, (unsigned long long) u->tick);
        else
                snprintf(buf, n, "%s %s not taken: pid %d (%s) spent %.1fx the CPU a second at %s as at %s, its faults "
                         "and RSS steady, in a %u-tick trial at tick %llu",
                         kname, size, u->pid, engine_quote_name(u->comm, comm, sizeof(comm)), u->value, size, from,
                         u->ticks, (unsigned long long) u->tick);
}

void engine_step_back_unpaid(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, struct kind_step *k) {
        struct mthp_engine_kind *st = k->st;
        char note[MTHP_REASON_MAX / 2], back[16];
        engine_level_name(caps, k->ladder, st->unpaid.from, back, sizeof(back));
        engine_pay_unpaid_note(&st->unpaid, k->kname, note, sizeof(note));
        k->rule = (enum mthp_rule) st->unpaid.rule;
        /* the level that failed is barred, longer at each repeat */
        engine_step_down_failed(cfg, st, st->unpaid.from, snap->tick);
        snprintf(k->why, sizeof(k->why),
                 "%s: back to %s, the level before the trial; %s barred for %u ticks (%s fault demand %.0f pages/s)",
                 note, back, k->top, st->backoff, k->kname, k->sig.demand);
        st->trial.to = 0;
        st->verify_left = 0;
}

bool engine_pay_barred_note(const struct kind_step *k, uint64_t tick, char *buf,
                            size_t n) {
        const struct mthp_engine_kind *st = k->st;
        if (!st->unpaid.rule || !st->ceiling || st->unpaid.level != st->ceiling || tick >= st->ceiling_until)
                return false;
        char note[MTHP_REASON_MAX / 2];
        engine_pay_unpaid_note(&st->unpaid, k->kname, note, sizeof(note));
        snprintf(buf, n, "; %s; barred for %llu more ticks", note, (unsigned long long) (st->ceiling_until - tick));
        return true;
}
