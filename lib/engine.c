/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"

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
        double demand, fallback_pct, avail_pct;
        bool pressure, fragmented, measured;
        char pressure_why[96];
};

static void read_signals(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, enum mthp_kind kind,
                         struct signals *s) {
        memset(s, 0, sizeof(*s));
        s->measured = snap->dt > 0;
        /* faults not explained by mTHP allocations of either kind are 4K
         * faults, which could come from either: each kind may claim them */
        double explained = snap->kind_pages_rate[MTHP_ANON] + snap->kind_pages_rate[MTHP_SHMEM];
        double unexplained = snap->fault_pages_rate > explained ? snap->fault_pages_rate - explained : 0;
        s->demand = snap->kind_pages_rate[kind] + unexplained;

        double tries = snap->kind_alloc_rate[kind] + snap->kind_fallback_rate[kind];
        s->fallback_pct = tries >= 10 ? 100.0 * snap->kind_fallback_rate[kind] / tries : 0;
        s->fragmented = s->fallback_pct >= cfg->max_fallback && tries >= 10;

        s->avail_pct = snap->mem.total_kb ? 100.0 * (double) snap->mem.available_kb / (double) snap->mem.total_kb : 100;
        if (snap->psi.present && snap->psi.some_avg10 >= cfg->psi_some_max) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "PSI memory some %.1f%% >= %.0f%%",
                         snap->psi.some_avg10, cfg->psi_some_max);
        } else if (snap->mem.total_kb && s->avail_pct < cfg->min_available) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "MemAvailable %.1f%% < %.0f%%", s->avail_pct,
                         cfg->min_available);
        }
}

static void size_name(const struct mthp_caps *caps, unsigned idx, char *buf, size_t n) {
        mthp_format_size(caps->sizes[idx].kb, buf, n);
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
                char why[MTHP_REASON_MAX] = "";
                const char *kname = mthp_kind_name(kind);

                if (st->level > n_ladder)
                        st->level = n_ladder; /* config shrank the ladder */
                read_signals(cfg, snap, kind, &sig);

                if (sig.measured) {
                        st->pressure_streak = sig.pressure ? st->pressure_streak + 1 : 0;
                        bool want_up = sig.demand >= cfg->raise_fault_rate && !sig.pressure && !sig.fragmented;
                        st->raise_streak = want_up ? st->raise_streak + 1 : 0;
                        st->lower_streak = sig.demand < cfg->lower_fault_rate ? st->lower_streak + 1 : 0;
                }
                bool dwell_ok = st->last_change_tick == 0 || snap->tick >= st->last_change_tick + cfg->dwell_ticks;
                unsigned old_level = st->level;
                char top[16] = "4K";
                if (st->level)
                        size_name(caps, ladder[st->level - 1], top, sizeof(top));

                if (!sig.measured) {
                        snprintf(why, sizeof(why), "first sample: no rates yet, holding %s at %s", kname, top);
                } else if (st->level > 0 && st->pressure_streak >= 2) {
                        /* pressure acts without waiting for dwell: memory is the emergency */
                        st->level--;
                        snprintf(why, sizeof(why), "memory pressure for %u ticks (%s): step %s down", st->pressure_streak,
                                 sig.pressure_why, kname);
                } else if (st->level > 0 && sig.fragmented && dwell_ok) {
                        st->level--;
                        snprintf(why, sizeof(why),
                                 "%.0f%% of %s mTHP faults fall back (>= %.0f%%): memory too fragmented, step down",
                                 sig.fallback_pct, kname, cfg->max_fallback);
                } else if (st->level < n_ladder && st->raise_streak >= cfg->confirm_ticks && dwell_ok) {
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
                        snprintf(why, sizeof(why),
                                 "holding %s at %s: demand %.0f pages/s (raise at %.0f for %u ticks: streak %u; lower "
                                 "below %.0f for %u: streak %u)%s%s%s",
                                 kname, top, sig.demand, cfg->raise_fault_rate, cfg->confirm_ticks, st->raise_streak,
                                 cfg->lower_fault_rate, cfg->lower_ticks, st->lower_streak,
                                 sig.pressure ? "; pressure: " : "", sig.pressure ? sig.pressure_why : "",
                                 dwell_ok ? "" : "; dwelling after last change");
                }
                if (st->level != old_level) {
                        st->last_change_tick = snap->tick ? snap->tick : 1;
                        st->raise_streak = st->lower_streak = 0;
                }

                for (unsigned i = 0; i < n_ladder && n < n_out; i++) {
                        struct mthp_decision *d = &out[n++];
                        d->knob = caps->sizes[ladder[i]].knob[kind];
                        snprintf(d->value, sizeof(d->value), "%s", i < st->level ? "always" : "");
                        char sname[16];
                        size_name(caps, ladder[i], sname, sizeof(sname));
                        /* a reason longer than the buffer is cut, never lost */
                        if (snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s %s)", why, st->level,
                                     n_ladder, sname, i < st->level ? "in use" : "not needed: original value") >=
                            (int) sizeof(d->reason))
                                d->reason[sizeof(d->reason) - 2] = '~';
                }
        }
        return (int) n;
}
