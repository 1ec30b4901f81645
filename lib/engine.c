/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"

#define BACKOFF_MAX_TICKS 3600

unsigned mthp_engine_ladder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps, enum mthp_kind kind,
                            unsigned ladder[MTHP_SIZES_MAX]) {
        unsigned n = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size *sz = &caps->sizes[i];
                if (sz->knob[kind] < 0 || sz->kb < cfg->min_kb[kind] || sz->kb > cfg->max_kb[kind])
                        continue;
                if (!mthp_knob_allows(&caps->knobs[sz->knob[kind]], "always"))
                        continue;
                ladder[n++] = i;
        }
        return n;
}

struct signals {
        double demand, fallback_pct, avail_pct, share;
        bool pressure, fragmented, measured;
        char pressure_why[96];
};

static double size_rate(const struct mthp_caps *caps, const struct mthp_snapshot *snap, unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 ? 0 : snap->size[i].stat[j].rate;
}

static void read_signals(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, enum mthp_kind kind, int top_size, struct signals *s) {
        memset(s, 0, sizeof(*s));
        s->measured = snap->dt > 0;
        /* Faults no mTHP allocation explains are 4K faults of either kind:
         * split them by how much anon and shmem memory the host holds, so an
         * anon-only workload does not raise shmem sizes too. */
        double explained = snap->kind_pages_rate[MTHP_ANON] + snap->kind_pages_rate[MTHP_SHMEM];
        double unexplained = snap->fault_pages_rate > explained ? snap->fault_pages_rate - explained : 0;
        double total_kb = (double) snap->mem.anon_kb + (double) snap->mem.shmem_kb;
        s->share = total_kb > 0 ? (double) (kind == MTHP_ANON ? snap->mem.anon_kb : snap->mem.shmem_kb) / total_kb
                                : 0.5;
        s->demand = snap->kind_pages_rate[kind] + unexplained * s->share;

        /* The kernel counts a fallback at every size it tries, so only the
         * largest enabled size's own ratio says whether it is failing. */
        if (top_size >= 0) {
                double alloc = size_rate(caps, snap, (unsigned) top_size,
                                         kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc");
                double fb = size_rate(caps, snap, (unsigned) top_size,
                                      kind == MTHP_ANON ? "anon_fault_fallback" : "shmem_fallback");
                if (alloc + fb >= 10) {
                        s->fallback_pct = 100.0 * fb / (alloc + fb);
                        s->fragmented = s->fallback_pct >= cfg->max_fallback;
                }
        }

        s->avail_pct = snap->mem.total_kb ? 100.0 * (double) snap->mem.available_kb / (double) snap->mem.total_kb : 100;
        if (snap->psi.present && snap->psi.some_avg10 >= cfg->psi_some_max) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "PSI memory some %.1f%% >= %.0f%%",
                         snap->psi.some_avg10, cfg->psi_some_max);
        } else if (s->avail_pct < cfg->min_available) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "MemAvailable %.1f%% < %.0f%%", s->avail_pct,
                         cfg->min_available);
        }
}

static void size_name(const struct mthp_caps *caps, unsigned idx, char *buf, size_t n) {
        mthp_format_size(caps->sizes[idx].kb, buf, n);
}

/* Step down after a failure (pressure, fragmentation) and bar the level that
 * failed for a while, longer each time it fails again. */
static void step_down_failed(const struct mthp_engine_config *cfg, struct mthp_engine_kind *st, uint64_t tick) {
        unsigned base = cfg->dwell_ticks ? 4 * cfg->dwell_ticks : 4;
        if (st->ceiling == st->level && st->backoff)
                st->backoff = st->backoff * 2 > BACKOFF_MAX_TICKS ? BACKOFF_MAX_TICKS : st->backoff * 2;
        else
                st->backoff = base;
        st->ceiling = st->level;
        st->ceiling_until = tick + st->backoff;
        st->level--;
}

int mthp_engine_decide(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *prev,
                       struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out) {
        size_t n = 0;

        *next = *prev;
        next->tick = snap->tick;
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct mthp_engine_kind *st = &next->kind[kind];
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                struct signals sig;
                char why[MTHP_REASON_MAX - 96] = "";
                const char *kname = mthp_kind_name(kind);

                if (st->level > n_ladder)
                        st->level = n_ladder; /* config shrank the ladder */
                read_signals(cfg, caps, snap, kind, st->level ? (int) ladder[st->level - 1] : -1, &sig);

                if (sig.measured) {
                        st->pressure_streak = sig.pressure ? st->pressure_streak + 1 : 0;
                        bool want_up = sig.demand >= cfg->raise_fault_rate && !sig.pressure && !sig.fragmented;
                        st->raise_streak = want_up ? st->raise_streak + 1 : 0;
                        st->lower_streak = sig.demand < cfg->lower_fault_rate ? st->lower_streak + 1 : 0;
                }
                bool dwell_ok = st->last_change_tick == 0 || snap->tick >= st->last_change_tick + cfg->dwell_ticks;
                bool barred = st->ceiling && st->level + 1 >= st->ceiling && snap->tick < st->ceiling_until;
                unsigned old_level = st->level;
                char top[16] = "4K";
                if (st->level)
                        size_name(caps, ladder[st->level - 1], top, sizeof(top));

                if (!sig.measured) {
                        snprintf(why, sizeof(why), "first sample: no rates yet, holding %s at %s", kname, top);
                } else if (st->level > 0 && st->pressure_streak >= 2) {
                        /* pressure acts without waiting for dwell: memory is the emergency */
                        snprintf(why, sizeof(why), "memory pressure for %u ticks (%s): step %s down from %s",
                                 st->pressure_streak, sig.pressure_why, kname, top);
                        step_down_failed(cfg, st, snap->tick);
                        st->pressure_streak = 0; /* PSI lags: give the step time to show */
                } else if (st->level > 0 && sig.fragmented && dwell_ok) {
                        snprintf(why, sizeof(why),
                                 "%.0f%% of %s mTHP faults at %s fall back (>= %.0f%%): memory too fragmented, "
                                 "step down",
                                 sig.fallback_pct, kname, top, cfg->max_fallback);
                        step_down_failed(cfg, st, snap->tick);
                } else if (st->level < n_ladder && st->raise_streak >= cfg->confirm_ticks && dwell_ok && !barred) {
                        st->level++;
                        snprintf(why, sizeof(why),
                                 "%s fault demand %.0f pages/s >= %.0f for %u ticks, no pressure (PSI some %.1f%%, "
                                 "MemAvailable %.0f%%), fallback %.0f%%: step up",
                                 kname, sig.demand, cfg->raise_fault_rate, st->raise_streak,
                                 snap->psi.present ? snap->psi.some_avg10 : 0.0, sig.avail_pct, sig.fallback_pct);
                } else if (st->level > 0 && st->lower_streak >= cfg->lower_ticks && dwell_ok) {
                        st->level--;
                        snprintf(why, sizeof(why), "%s fault demand %.0f pages/s < %.0f for %u ticks: step down", kname,
                                 sig.demand, cfg->lower_fault_rate, st->lower_streak);
                } else {
                        char extra[160] = "";
                        if (sig.pressure)
                                snprintf(extra, sizeof(extra), "; pressure: %s", sig.pressure_why);
                        else if (barred)
                                snprintf(extra, sizeof(extra), "; level %u failed before, barred for %llu more ticks",
                                         st->ceiling, (unsigned long long) (st->ceiling_until - snap->tick));
                        else if (!dwell_ok)
                                snprintf(extra, sizeof(extra), "; dwelling after last change");
                        snprintf(why, sizeof(why),
                                 "holding %s at %s: demand %.0f pages/s (raise at %.0f for %u ticks: streak %u; lower "
                                 "below %.0f for %u: streak %u), fallback %.0f%%%s",
                                 kname, top, sig.demand, cfg->raise_fault_rate, cfg->confirm_ticks, st->raise_streak,
                                 cfg->lower_fault_rate, cfg->lower_ticks, st->lower_streak, sig.fallback_pct, extra);
                }
                if (st->level != old_level) {
                        st->last_change_tick = snap->tick ? snap->tick : 1;
                        st->raise_streak = st->lower_streak = 0;
                }
                if (st->ceiling && snap->tick >= st->ceiling_until + 10 * st->backoff)
                        st->ceiling = st->backoff = 0; /* long clean spell: forget the failure */

                /* One decision for every per-size knob of this kind: sizes off
                 * the ladder (e.g. after a reload narrowed it) go back to their
                 * original value instead of staying as we left them. */
                for (unsigned i = 0; i < caps->n_sizes && n < n_out; i++) {
                        int knob = caps->sizes[i].knob[kind];
                        if (knob < 0)
                                continue;
                        int rung = -1;
                        for (unsigned r = 0; r < n_ladder; r++)
                                if (ladder[r] == i)
                                        rung = (int) r;
                        struct mthp_decision *d = &out[n++];
                        char sname[16];
                        size_name(caps, i, sname, sizeof(sname));
                        d->knob = knob;
                        bool on = rung >= 0 && (unsigned) rung < st->level;
                        snprintf(d->value, sizeof(d->value), "%s", on ? "always" : "");
                        if (rung < 0)
                                snprintf(d->reason, sizeof(d->reason),
                                         "%s is outside the %s sizes mthpd may use: original value", sname, kname);
                        else
                                snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s %s)", why, st->level,
                                         n_ladder, sname, on ? "in use" : "not needed: original value");
                }
        }
        return (int) n;
}
