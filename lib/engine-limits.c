/* SPDX-License-Identifier: MIT */
/* The engine's limited-cgroup invariant: what a raise could
 * cost each memory-limited cgroup, the level every one of them affords, the
 * guard's step-down between ticks, and the safety net under 2M (the THP
 * shrinker's knobs). Pure (mthp/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/util.h"

#include "engine-internal.h"

/* ---- memory-limited cgroups: the invariant (engine.h, mthp_engine_limited) ---- */

#define GUARD_BACKOFF_TICKS 30     /* a tripped cgroup counts as sparse this long ... */
/* The burst before the guard's step-down takes effect: assumed until a
 * trip measures it (usage at the wake-up minus the threshold), at most the
 * cap (a daemon stopped for a while must not block every raise for good).
 * Measured here, 2 vCPUs beside 6 faulting programs: 25-52 MiB. */
#define GUARD_OVERSHOOT_KB (32 * 1024)
#define GUARD_OVERSHOOT_CAP_KB (256 * 1024)
/* What a limited cgroup may lose to bloat in such a burst: a third of its
 * headroom, the rest stays for growth at 4K (a limit 1.5x the 4K need
 * leaves a third of the headroom a program starts with). */
#define LIMITED_BURST_SHARE (1.0 / 3.0)
#define GUARD_BACKOFF_MAX 3600     /* ... doubling on each repeat, up to this */

void engine_remember_limited(const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        if (!snap->limited_valid)
                return; /* not scanned (an old recording): nothing is known, nothing changes */
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED; j++)
                st->limited[j].present = false;
        for (unsigned i = 0; i < snap->n_limited && i < MTHP_SNAP_LIMITED; i++) {
                const struct mthp_limited_cgroup *c = &snap->limited[i];
                struct mthp_engine_limited *m = NULL, *free_slot = NULL;
                for (unsigned j = 0; j < MTHP_SNAP_LIMITED && !m; j++) {
                        struct mthp_engine_limited *e = &st->limited[j];
                        if (e->path[0] && strcmp(e->path, c->path) == 0)
                                m = e;
                        else if (!free_slot && (!e->path[0] || (e->trip_until <= snap->tick &&
                                                                  e->seen_tick + PROC_FORGET_TICKS < snap->tick)))
                                free_slot = e;
                }
                bool known = m != NULL;
                if (!m) {
                        if (!free_slot)
                                continue;
                        m = free_slot;
                        memset(m, 0, sizeof(*m));
                        mthp_strcpy(m->path, sizeof(m->path), c->path);
                }
                m->growth_kb = known && c->usage_kb > m->usage_kb ? c->usage_kb - m->usage_kb : 0;
                m->usage_kb = c->usage_kb;
                m->limit_kb = c->limit_kb;
                m->populated = c->populated;
                m->present = true;
                m->seen_tick = snap->tick;
        }
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED; j++) {
                struct mthp_engine_limited *e = &st->limited[j];
                if (e->path[0] && !e->present && e->trip_until <= snap->tick &&
                    e->seen_tick + PROC_FORGET_TICKS < snap->tick)
                        memset(e, 0, sizeof(*e));
        }
}

static bool path_inside(const char *path, const char *parent) {
        size_t len = strlen(parent);
        if (strcmp(parent, "/") == 0)
                return path[0] == '/';
        return strncmp(path, parent, len) == 0 && (path[len] == 0 || path[len] == '/');
}

/* bloat_C(S): how many times its 4K memory a limited cgroup could take with
 * folios of caps size `size`. From the remembered density of its sampled
 * processes (the worst one), else S/4K: a cgroup nobody sampled is not
 * known to be dense, and neither is one that tripped the guard. */
static double limited_bloat(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                            const struct mthp_engine_limited *c, enum mthp_kind kind, unsigned size, char *how,
                            size_t n) {
        double assumed = caps->sizes[size].kb / (double) mthp_caps_page_kb(caps);
        if (c->trip_until > st->tick) {
                snprintf(how, n, "tripped the guard at tick %llu: assumed sparse", (unsigned long long) c->trip_tick);
                return assumed;
        }
        double worst = 0;
        unsigned procs = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS || !m->cgroup[0] ||
                    !path_inside(m->cgroup, c->path))
                        continue;
                if (m->thp_off || (m->rss_kb[kind] && engine_eligible_kb(m, kind) == 0)) {
                        procs++; /* opted out (prctl, mostly nh): no size reaches its memory */
                        if (worst < 1)
                                worst = 1;
                        continue;
                }
                double u = engine_remembered(m, kind, size);
                if (isnan(u))
                        continue;
                procs++;
                double b = u > 1.0 / assumed ? 1.0 / u : assumed;
                if (b > worst)
                        worst = b;
        }
        if (!procs) {
                snprintf(how, n, "no sampled process: assumed sparse");
                return assumed;
        }
        snprintf(how, n, "measured on %u process(es)", procs);
        return worst < 1 ? 1 : worst;
}

/* The highest level of the kind's ladder that every present, populated
 * limited cgroup affords; *blocker: the slot of the one that stops it
 * (-1: none), why: its numbers. */
unsigned engine_limited_afford(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                               const struct mthp_engine_state *st, enum mthp_kind kind, const unsigned *ladder,
                               unsigned n_ladder, int *blocker, char *why, size_t n) {
        unsigned afford = n_ladder;
        *blocker = -1;
        if (why && n)
                why[0] = 0;
        double over = st->guard_overshoot_kb > GUARD_OVERSHOOT_KB ? (double) st->guard_overshoot_kb
                                                                  : GUARD_OVERSHOOT_KB;
        if (over > GUARD_OVERSHOOT_CAP_KB)
                over = GUARD_OVERSHOOT_CAP_KB;
        for (unsigned i = 0; i < MTHP_SNAP_LIMITED; i++) {
                const struct mthp_engine_limited *c = &st->limited[i];
                if (!c->path[0] || !c->present || !c->limit_kb)
                        continue;
                double headroom = c->limit_kb > c->usage_kb ? (double) (c->limit_kb - c->usage_kb) : 0;
                double budget = headroom * (1 - cfg->guard_headroom / 100.0);
                double floor = (double) c->limit_kb * cfg->guard_floor / 100.0;
                double r = (double) c->growth_kb > floor ? (double) c->growth_kb : floor;
                if (c->trip_until > st->tick && (double) c->trip_growth_kb > r)
                        r = (double) c->trip_growth_kb; /* it showed it can fault that much between ticks */
                /* the burst: a program (already there, or one starting in an
                 * empty cgroup) faulting as fast as the kernel charges runs
                 * to the guard's threshold and past it for as long as the
                 * step-down takes; of that, the share 1 - 1/x is bloat that
                 * stays (no shrinker below 2M) */
                double burst = headroom * cfg->guard_headroom / 100.0 + over;
                double burst_budget = headroom * LIMITED_BURST_SHARE;
                for (unsigned rung = 0; rung < afford; rung++) {
                        char how[96];
                        double b = limited_bloat(caps, st, c, kind, ladder[rung], how, sizeof(how));
                        double waste = burst * (1 - 1 / b);
                        bool tick_ok = !c->populated || b * r <= budget;
                        if (tick_ok && waste <= burst_budget)
                                continue;
                        afford = rung;
                        *blocker = (int) i;
                        if (why && n) {
                                char sz[16], cg[ENGINE_PATH_QUOTED];
                                mthp_format_size(caps->sizes[ladder[rung]].kb, sz, sizeof(sz));
                                engine_quote_path(c->path, cg, sizeof(cg));
                                if (!tick_ok)
                                        snprintf(why, n,
                                                 "limited cgroup %s (usage %.0f MiB, limit %.0f MiB, headroom %.0f "
                                                 "MiB; %s: x%.1f at %s) cannot afford %s: x%.1f of %.1f MiB/tick = "
                                                 "%.0f MiB > %.0f MiB (%.0f%% of its headroom)",
                                                 cg, (double) c->usage_kb / 1024, (double) c->limit_kb / 1024,
                                                 headroom / 1024, how, b, sz, sz, b, r / 1024, b * r / 1024,
                                                 budget / 1024, 100 - cfg->guard_headroom);
                                else
                                        snprintf(why, n,
                                                 "limited cgroup %s (%s, usage %.0f MiB, limit %.0f MiB, headroom %.0f "
                                                 "MiB; %s: x%.1f at %s) cannot afford %s: a burst to the guard's "
                                                 "threshold (%.0f MiB) and %.0f MiB past it before the step-down "
                                                 "would leave %.0f MiB of bloat > %.0f MiB (a third of its headroom)",
                                                 cg, c->populated ? "populated" : "empty",
                                                 (double) c->usage_kb / 1024, (double) c->limit_kb / 1024,
                                                 headroom / 1024, how, b, sz, sz,
                                                 headroom * cfg->guard_headroom / 100.0 / 1024, over / 1024,
                                                 waste / 1024, burst_budget / 1024);
                        }
                        break;
                }
        }
        return afford;
}

bool mthp_engine_limited_at_risk(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                 const struct mthp_engine_state *st, unsigned i) {
        const struct mthp_engine_limited *c = i < MTHP_SNAP_LIMITED ? &st->limited[i] : NULL;
        if (!c || !c->path[0] || !c->present || !c->limit_kb)
                return false;
        if (!c->populated)
                return true; /* a program may start in it any moment: nothing known of it */
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                unsigned lvl = st->kind[kind].level;
                if (!lvl || lvl > n_ladder)
                        continue;
                char how[96];
                if (limited_bloat(caps, st, c, kind, ladder[lvl - 1], how, sizeof(how)) > 1 + cfg->max_bloat / 100.0)
                        return true;
        }
        return false;
}

/* The tripped cgroup's slot: its own, a free one, else the oldest whose
 * backoff is over (the last one when none is). */
static struct mthp_engine_limited *guard_slot(struct mthp_engine_state *next, const char *path) {
        uint64_t tick = next->tick;
        struct mthp_engine_limited *c = NULL, *free_slot = NULL, *oldest = NULL;
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED && !c; j++) {
                struct mthp_engine_limited *e = &next->limited[j];
                if (e->path[0] && strcmp(e->path, path) == 0)
                        c = e;
                else if (!free_slot && !e->path[0])
                        free_slot = e;
                else if (e->path[0] && e->trip_until <= tick && (!oldest || e->seen_tick < oldest->seen_tick))
                        oldest = e;
        }
        if (!c) {
                c = free_slot ? free_slot : oldest ? oldest : &next->limited[MTHP_SNAP_LIMITED - 1];
                memset(c, 0, sizeof(*c));
                mthp_strcpy(c->path, sizeof(c->path), path);
        }
        return c;
}

/* One kind after a trip: down to the base page size at once, a decision
 * for each size it leaves; returns the count of decisions in out. */
static size_t guard_step_kind(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                              const struct mthp_guard_trip *trip, const struct mthp_engine_limited *c,
                              struct mthp_engine_state *next, int kind, struct mthp_decision *out, size_t n,
                              size_t n_out) {
        uint64_t tick = next->tick;
        struct mthp_engine_kind *st = &next->kind[kind];
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
        char lim_why[400], top[16], to[16], why[MTHP_REASON_MAX - 64];
        int blocker;
        if (st->level > n_ladder)
                st->level = n_ladder;
        /* The tripped cgroup has just shown that it faults faster than
         * one tick's worth: every kind goes back to 4K (the boot
         * default, what it was sized for) at once; the next ticks'
         * invariant decides how far back up, with it counted sparse. */
        (void) engine_limited_afford(cfg, caps, next, kind, ladder, n_ladder, &blocker, lim_why, sizeof(lim_why));
        unsigned afford = 0;
        if (blocker < 0 || strcmp(next->limited[blocker].path, c->path) != 0) {
                char sz[16];
                mthp_format_size(caps->sizes[ladder[0]].kb, sz, sizeof(sz));
                snprintf(lim_why, sizeof(lim_why), "it faulted %.0f MiB since the last tick",
                         (double) c->growth_kb / 1024);
        }
        if (st->level <= afford)
                return n;
        unsigned old = st->level;
        engine_level_name(caps, ladder, old, top, sizeof(top));
        engine_level_name(caps, ladder, afford, to, sizeof(to));
        char cg[ENGINE_PATH_QUOTED];
        int w = snprintf(why, sizeof(why),
                 "guard: cgroup %s crossed its %s (%.0f MiB = %.0f MiB + %.0f%% of its headroom, limit "
                 "%.0f MiB), now %.0f MiB; reacted %.0f us after the wake-up; %s: step %s down from %s to "
                 "%s at once, the cgroup counts as sparse for %u ticks",
                 engine_quote_path(trip->path, cg, sizeof(cg)), trip->what ? trip->what : "usage threshold", (double) trip->threshold_kb / 1024,
                 (double) trip->armed_usage_kb / 1024, cfg->guard_headroom, (double) trip->limit_kb / 1024,
                 (double) trip->usage_kb / 1024, trip->latency_us, lim_why, mthp_kind_name(kind), top, to,
                 c->trip_backoff);
        if (w >= (int) sizeof(why))
                why[sizeof(why) - 2] = '~';
        st->level = afford;
        next->steady_ticks = 0;   /* the density back-off: a change, fresh samples */
        st->verify_left = 0;
        st->last_dir = -1;
        st->last_change_tick = tick ? tick : 1;
        st->raise_streak = st->lower_streak = st->sparse_streak = 0;
        st->churn_pid = 0; /* no quick raise back after the guard */
        /* largest first: it bloats most */
        for (unsigned r = old; r-- > afford && n < n_out;) {
                struct mthp_decision *d = &out[n++];
                char sname[16];
                mthp_format_size(caps->sizes[ladder[r]].kb, sname, sizeof(sname));
                d->knob = caps->sizes[ladder[r]].knob[kind];
                d->value[0] = 0;
                d->rule = MTHP_RULE_GUARD_LIMIT;
                d->size_rule = MTHP_RULE_SIZE_OFF;
                if (snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s not affordable: original value)",
                             why, afford, n_ladder, sname) >= (int) sizeof(d->reason))
                        d->reason[sizeof(d->reason) - 2] = '~';
        }
        return n;
}

int mthp_engine_guard(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_guard_trip *trip, const struct mthp_engine_state *prev,
                      struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out) {
        size_t n = 0;
        *next = *prev;
        uint64_t tick = next->tick;
        struct mthp_engine_limited *c = guard_slot(next, trip->path);
        /* the guard's burst, measured: how far past its threshold the
         * cgroup got before the step-down (the next ticks' invariant) */
        if (!trip->hit_limit && trip->usage_kb > trip->threshold_kb) {
                uint64_t o = trip->usage_kb - trip->threshold_kb;
                if (o > GUARD_OVERSHOOT_CAP_KB)
                        o = GUARD_OVERSHOOT_CAP_KB;
                if (o > next->guard_overshoot_kb)
                        next->guard_overshoot_kb = o;
        }
        c->usage_kb = trip->usage_kb;
        c->limit_kb = trip->limit_kb;
        c->growth_kb = trip->usage_kb > trip->armed_usage_kb ? trip->usage_kb - trip->armed_usage_kb : 0;
        c->present = c->populated = true;
        c->seen_tick = tick;
        /* a repeat while the last backoff (or as long again after it) runs doubles it */
        if (c->trip_backoff && tick < c->trip_until + c->trip_backoff)
                c->trip_backoff = c->trip_backoff * 2 > GUARD_BACKOFF_MAX ? GUARD_BACKOFF_MAX : c->trip_backoff * 2;
        else
                c->trip_backoff = GUARD_BACKOFF_TICKS;
        c->trip_tick = tick;
        c->trip_until = tick + c->trip_backoff;
        c->trip_growth_kb = trip->hit_limit ? c->limit_kb : c->growth_kb;
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++)
                n = guard_step_kind(cfg, caps, trip, c, next, kind, out, n, n_out);
        return (int) n;
}

/* ---- the safety net under 2M: the THP shrinker's knobs ---- */

/* The safety net under 2M: while mthpd holds the PMD size at
 * always for anon, the THP shrinker may split, under reclaim, PMD folios
 * whose zero subpages exceed khugepaged/max_ptes_none, and maps those
 * subpages to the zero page (content kept, memory freed). Sizes below PMD
 * have no such shrinker. The kernel counts a subpage as zero by its content
 * (thp_underused(): memchr_inv, pages_identical with ZERO_PAGE), as the
 * density sampler's zero share does, and 511 turns the shrinker off.
 * The value: the MaxBloat boundary (a folio with more zero subpages costs
 * more than MaxBloat), raised to keep whole the folios of every process
 * measured dense enough to hold 2M (its zero subpages + 1/NET_MARGIN of the
 * folio's subpages, 32 of 512 with 4K pages), at most
 * 510. Also khugepaged then collapses only regions at least that full.
 * The net outlives the raise by NET_LINGER_TICKS: stepping 2M down (a tick,
 * or the guard for a limited cgroup heading for its limit) stops new PMD
 * folios, but those faulted meanwhile stay, and under the limit the
 * shrinker splitting them is what saves the cgroup (taking the
 * net down with the size got a sparse program OOM-killed). */
#define NET_MARGIN 16 /* the margin: 1/16 of the subpages */
#define NET_LINGER_TICKS 600

/* The max_ptes_none that keeps a 2M folio with MaxBloat's share of zero
 * subpages, raised for a recent process that uses 2M less densely and is
 * still held for it; why says which. */
static unsigned net_value(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_engine_state *st, int pmd, unsigned subpages, const char *pmd_name,
                          char *why, size_t why_size) {
        double keep_default = 1.0 / (1.0 + cfg->max_bloat / 100.0);
        unsigned val = (unsigned) ceil((double) subpages * (1 - keep_default));
        int w = snprintf(why, why_size, "the MaxBloat %.0f%% boundary: %u of %u subpages zero", cfg->max_bloat, val,
                         subpages);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = engine_max_bloat(cfg, pol);
                double u = engine_remembered(m, MTHP_ANON, (unsigned) pmd);
                if (isnan(u) || u < 1.0 / (1.0 + bloat / 100.0))
                        continue; /* not one 2M is held for */
                /* Nor one whose folios are negligible: under MinBloatBytes
                 * at stake (a cc1 of 15 MiB, 0.83 of each 2M block, moved
                 * the net from 86 to 118 on a build box and was gone a
                 * second later; a stress-ng --vm worker reading the same
                 * holds 99 MiB and more) */
                if (engine_stake_kb(caps, m, MTHP_ANON) < st->min_bloat_kb)
                        continue;
                unsigned margin = subpages / NET_MARGIN;
                unsigned z = (unsigned) ceil((1 - u) * subpages) + margin;
                if (z > val) {
                        char comm[ENGINE_NAME_QUOTED];
                        val = z;
                        w = snprintf(why, why_size,
                                     "pid %d (%s) uses %.2f of each %s block: its %u zero subpages + %u kept whole",
                                     m->pid, engine_quote_name(m->comm, comm, sizeof(comm)), u, pmd_name, z - margin,
                                     margin);
                }
        }
        (void) w;
        return val;
}

void engine_shrinker_net(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         struct mthp_engine_state *st, struct mthp_decision *out, size_t *n, size_t n_out) {
        int mk = mthp_caps_find_knob(caps, "khugepaged/max_ptes_none");
        int sk = mthp_caps_find_knob(caps, "global/shrink_underused");
        int pmd = mthp_caps_find_size(caps, caps->pmd_kb);
        if ((mk < 0 && sk < 0) || pmd < 0)
                return;
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, MTHP_ANON, ladder);
        bool held = false;
        for (unsigned r = 0; r < st->kind[MTHP_ANON].level && r < n_ladder; r++)
                held = held || ladder[r] == (unsigned) pmd;
        unsigned subpages = caps->pmd_kb / mthp_caps_page_kb(caps);   /* max_ptes_none counts base pages */
        char why[300], pmd_name[16];
        mthp_format_size(caps->pmd_kb, pmd_name, sizeof(pmd_name));
        unsigned val = net_value(cfg, caps, st, pmd, subpages, pmd_name, why, sizeof(why));
        if (val > subpages - 2)
                val = subpages - 2;
        bool linger = !held && st->net_until && st->tick < st->net_until;
        /* Written when 2M is raised, then held: a process's zero subpages
         * read differently from sample to sample (on a busy host 86, 114,
         * 107, 101, 113 ... of 512: a write almost every tick). The held
         * value moves up only when a process's zero subpages, without the
         * margin, exceed it (its folios would be split), and never down
         * while the net is up (2M held, or lingering). */
        bool up = st->net_until && st->tick < st->net_until;
        unsigned margin = subpages / NET_MARGIN;
        if (held && up && val < st->net_value + margin) {
                if (val != st->net_value)
                        snprintf(why, sizeof(why),
                                 "held while %s is always: %u now, and no process's zero subpages exceed %u",
                                 pmd_name, val, st->net_value);
                val = st->net_value;
        }
        if (held) {
                st->net_until = st->tick + NET_LINGER_TICKS;
                st->net_value = val;
        } else if (!linger)
                st->net_until = 0;
        if (mk >= 0 && *n < n_out) {
                struct mthp_decision *d = &out[(*n)++];
                d->knob = mk;
                d->rule = held ? MTHP_RULE_NET_HELD : linger ? MTHP_RULE_NET_LINGER : MTHP_RULE_NET_OFF;
                d->size_rule = MTHP_RULE_NONE;
                if (held) {
                        snprintf(d->value, sizeof(d->value), "%u", val);
                        snprintf(d->reason, sizeof(d->reason),
                                 "anon %s is always: the THP shrinker may split, under reclaim, %s folios with more "
                                 "than %u of %u subpages zero (%s)",
                                 pmd_name, pmd_name, val, subpages, why);
                } else if (linger) {
                        snprintf(d->value, sizeof(d->value), "%u", st->net_value);
                        snprintf(d->reason, sizeof(d->reason),
                                 "anon %s was always until %llu ticks ago: the %s folios faulted then stay until "
                                 "split, so the THP shrinker keeps splitting those with more than %u of %u subpages "
                                 "zero for %llu more ticks",
                                 pmd_name, (unsigned long long) (st->tick + NET_LINGER_TICKS - st->net_until),
                                 pmd_name, st->net_value, subpages, (unsigned long long) (st->net_until - st->tick));
                } else {
                        d->value[0] = 0;
                        snprintf(d->reason, sizeof(d->reason), "mthpd does not hold anon %s always: original value",
                                 pmd_name);
                }
        }
        if (sk >= 0 && *n < n_out) {
                struct mthp_decision *d = &out[(*n)++];
                d->knob = sk;
                d->rule = held ? MTHP_RULE_NET_HELD : linger ? MTHP_RULE_NET_LINGER : MTHP_RULE_NET_OFF;
                d->size_rule = MTHP_RULE_NONE;
                snprintf(d->value, sizeof(d->value), "%s", held || linger ? "1" : "");
                if (held || linger)
                        snprintf(d->reason, sizeof(d->reason),
                                 "anon %s %s: the shrinker of underused %s folios stays on", pmd_name,
                                 held ? "is always" : "was always lately", pmd_name);
                else
                        snprintf(d->reason, sizeof(d->reason), "mthpd does not hold anon %s always: original value",
                                 pmd_name);
        }
}
