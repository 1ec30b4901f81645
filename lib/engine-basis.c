/* SPDX-License-Identifier: MIT */
/* The basis every step of the engine stands on: the ladder of sizes a
 * kind may use and the names of its levels, what a size's knob means now,
 * this tick's fault rates, the policy that rules a cgroup, the density
 * thresholds, a cgroup's start grace, a process that awaits its fault
 * samples. Calls nothing else of the engine. Pure (mthp/engine.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"
#include "mthp/escape.h"
#include "mthp/util.h"

#include "engine-internal.h"

unsigned mthp_engine_ladder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps, enum mthp_kind kind,
                            unsigned ladder[MTHP_SIZES_MAX]) {
        unsigned n = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size *sz = &caps->sizes[i];
                if (sz->knob[kind] < 0 || sz->kb < cfg->min_kb[kind] || sz->kb > cfg->max_kb[kind])
                        continue;
                if (!mthp_knob_allows(&caps->knobs[sz->knob[kind]], "always"))
                        continue;
                /* a size the kernel command line set to never (thp_anon=) */
                if (!cfg->override_thp_off && sz->kb && (cfg->thp_off_kb[kind] >> __builtin_ctz(sz->kb) & 1))
                        continue;
                ladder[n++] = i;
        }
        return n;
}

/* What a per-size knob means now: its value, or for inherit the global
 * knob's of its kind. */
const char *engine_effective_value(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind,
                                  int knob) {
        if (strcmp(snap->knob[knob], "inherit") != 0)
                return snap->knob[knob];
        int g = mthp_caps_find_knob(caps, kind == MTHP_ANON ? "global/enabled" : "global/shmem_enabled");
        return g >= 0 ? snap->knob[g] : snap->knob[knob];
}

bool engine_size_madvised(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind,
                          unsigned size) {
        int k = caps->sizes[size].knob[kind];
        return k >= 0 && strcmp(engine_effective_value(caps, snap, kind, k), kind == MTHP_ANON ? "madvise" : "advise") == 0;
}

void engine_level_name(const struct mthp_caps *caps, const unsigned *ladder, unsigned level, char *buf, size_t n) {
        mthp_format_size(level ? caps->sizes[ladder[level - 1]].kb : mthp_caps_page_kb(caps), buf, n);
}

/* The fault rates (4K pages/s) a raise needs and a step-down falls below:
 * RaiseFaultRate and LowerFaultRate, or where the host's 4K fault cost is
 * known and RaiseFaultTime is on, the rate at which faults take that share
 * of one core when it is lower. The lower rate scales with it, keeping
 * LowerFaultRate's share of RaiseFaultRate but at least a tenth (a
 * RaiseFaultRate set out of reach, 1e12, would otherwise put it at 6e-6
 * pages/s: a raised size that never steps down) and never above
 * LowerFaultRate. */
bool mthp_engine_fault_rates(const struct mthp_engine_config *cfg, double fault_cost_ns, double *raise,
                             double *lower) {
        *raise = cfg->raise_fault_rate;
        *lower = cfg->lower_fault_rate;
        /* outside FaultCost='s range (1ns-1s) it is unknown: a hand-made
         * recording's inf or 1e30 would make a raise rate of about 0 */
        if (!(fault_cost_ns >= 1 && fault_cost_ns <= 1e9) || !(cfg->raise_fault_time > 0))
                return false;
        double at = cfg->raise_fault_time / 100 * 1e9 / fault_cost_ns;
        if (!(at < cfg->raise_fault_rate))
                return false;
        double share = cfg->lower_fault_rate / cfg->raise_fault_rate;
        *lower = fmin(cfg->lower_fault_rate, at * fmax(share, 0.1));
        *raise = at;
        return true;
}

/* This tick's rates; why (may be NULL) says when RaiseFaultTime set them. */
void engine_fault_rates(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, double *raise,
                        double *lower, char *why, size_t why_size) {
        bool timed = mthp_engine_fault_rates(cfg, snap->fault_cost_ns, raise, lower);
        if (why)
                *why = 0;
        if (timed && why)
                snprintf(why, why_size, " (RaiseFaultTime %g%% of a core at %.2f us a 4K fault)",
                         cfg->raise_fault_time, snap->fault_cost_ns / 1e3);
}

/* A process fault-heavy enough to speak (MinProcessFaultRate) whose
 * faults wait for their address samples to be split between the kinds
 * (fs_pending), seen within the last `recent` ticks: the early tick and the
 * density back-off both wait on it. */
bool engine_proc_awaits_samples(const struct mthp_engine_config *cfg, const struct mthp_engine_proc *p, uint64_t tick,
                                unsigned recent) {
        return p->pid && p->fs_pending && tick <= p->seen_tick + recent && p->fault_rate >= cfg->min_proc_fault_rate;
}

const struct mthp_policy *mthp_engine_policy(const struct mthp_engine_config *cfg, const char *cgroup, char *managed,
                                             size_t size) {
        if (!cfg->policies || !cgroup || !cgroup[0])
                return NULL;
        int i = mthp_policy_match(cfg->policies, cgroup, managed, size);
        return i < 0 ? NULL : &cfg->policies->p[i];
}

double engine_max_bloat(const struct mthp_engine_config *cfg, const struct mthp_policy *pol) {
        return pol && !isnan(pol->max_bloat) ? pol->max_bloat : cfg->max_bloat;
}

double engine_min_bloat_kb(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap) {
        if (!cfg->min_bloat_auto)
                return (double) cfg->min_bloat_kb;
        double floor_kb = 16 * 1024.0;
        double share = snap ? (double) snap->mem.total_kb / 1000.0 : 0;
        return share > floor_kb ? share : floor_kb;
}

double engine_keep_threshold(const struct mthp_engine_config *cfg, const struct mthp_policy *pol) {
        return 1.0 / (1.0 + engine_max_bloat(cfg, pol) / 100.0);
}

double engine_raise_threshold(double keep) {
        return keep + (1.0 - keep) / 2;
}

bool engine_cgroup_grace(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                         const struct mthp_cgroup_view *c, enum mthp_kind kind, double *age_s) {
        if (!cfg->start_grace_usec || !c->appeared_usec || snap->t_usec < c->appeared_usec ||
            snap->t_usec - c->appeared_usec >= cfg->start_grace_usec)
                return false;
        const struct mthp_policy *pol = mthp_engine_policy(cfg, c->path, NULL, 0);
        if (!pol || pol->mode[kind] != MTHP_POLICY_ALWAYS)
                return false;
        if (age_s)
                *age_s = (double) (snap->t_usec - c->appeared_usec) / 1e6;
        return true;
}

bool engine_any_grace(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, enum mthp_kind kind) {
        for (unsigned c = 0; c < snap->n_cgroups && c < MTHP_SNAP_CGROUPS; c++)
                if (engine_cgroup_grace(cfg, snap, &snap->cgroup[c], kind, NULL))
                        return true;
        return false;
}

/* A name as it is when it holds none of the characters delims (those a
 * reason puts around it) and is clean text, else in double quotes with
 * '"' and '\\' escaped by a backslash; either way through mthp_escape(),
 * which doubles a backslash and writes a control or a byte of invalid
 * UTF-8 as \xNN: a backslash alone needs no quotes (a systemd cgroup's
 * "\x2d" reads "\\x2d", never the escaped "-"). */
static const char *quote_name(const char *name, const char *delims, char *buf, size_t n) {
        if (name[0] && !strpbrk(name, delims) && mthp_text_is_clean(name))
                return mthp_escape(buf, n, name);
        size_t l = 0;
        buf[0] = 0;
        if (n < 3)
                return buf;
        buf[l++] = '"';
        for (const char *c = name; *c && l + 2 < n;) {
                size_t run = strcspn(c, "\"\\");
                if (run) {
                        size_t w = mthp_escape_n(buf + l, n - 1 - l, c, run);
                        if (w >= n - 1 - l) { /* cut: what fitted */
                                l = strlen(buf);
                                break;
                        }
                        l += w;
                        c += run;
                } else if (l + 3 < n) {
                        buf[l++] = '\\';
                        buf[l++] = *c++;
                } else
                        break;
        }
        buf[l++] = '"';
        buf[l] = 0;
        return buf;
}

_Static_assert(sizeof(((struct mthp_engine_proc *) 0)->comm) <= ENGINE_NAME_MAX, "a comm fits the quoting");

const char *engine_quote_name(const char *name, char *buf, size_t n) {
        return quote_name(name, "()\",", buf, n);
}

const char *engine_quote_path(const char *path, char *buf, size_t n) {
        return quote_name(path, " ()\",;:", buf, n);
}

static const char *const rule_names[_MTHP_RULE_MAX] = {
        [MTHP_RULE_NONE] = "none",
        [MTHP_RULE_FIRST_SAMPLE] = "first-sample",
        [MTHP_RULE_STEP_DOWN_LIMIT] = "step-down-limit",
        [MTHP_RULE_STEP_DOWN_PRESSURE] = "step-down-pressure",
        [MTHP_RULE_STEP_DOWN_PROBE] = "step-down-probe",
        [MTHP_RULE_STEP_DOWN_SPARSE] = "step-down-sparse",
        [MTHP_RULE_STEP_DOWN_CHURN] = "step-down-churn",
        [MTHP_RULE_STEP_DOWN_STALL] = "step-down-stall",
        [MTHP_RULE_STEP_DOWN_FALLBACK] = "step-down-fallback",
        [MTHP_RULE_STEP_DOWN_DEMAND] = "step-down-demand",
        [MTHP_RULE_RAISE_GRACE] = "raise-grace",
        [MTHP_RULE_RAISE_POLICY] = "raise-policy",
        [MTHP_RULE_RAISE_DENSE] = "raise-dense",
        [MTHP_RULE_RAISE_DEMAND] = "raise-demand",
        [MTHP_RULE_RAISE_CHURN_BACK] = "raise-churn-back",
        [MTHP_RULE_HOLD] = "hold",
        [MTHP_RULE_HOLD_PRESSURE] = "hold-pressure",
        [MTHP_RULE_HOLD_LIMIT] = "hold-limit",
        [MTHP_RULE_HOLD_SPARSE] = "hold-sparse",
        [MTHP_RULE_HOLD_NO_HIGHER] = "hold-no-higher",
        [MTHP_RULE_HOLD_GRACE] = "hold-grace",
        [MTHP_RULE_HOLD_WANTED] = "hold-wanted",
        [MTHP_RULE_HOLD_BARRED] = "hold-barred",
        [MTHP_RULE_HOLD_DWELL] = "hold-dwell",
        [MTHP_RULE_HOLD_ADMIN] = "hold-admin",
        [MTHP_RULE_GUARD_LIMIT] = "guard-limit",
        [MTHP_RULE_DEFRAG_DEFER] = "defrag-defer",
        [MTHP_RULE_DEFRAG_ADMIN] = "defrag-admin",
        [MTHP_RULE_NET_HELD] = "net-held",
        [MTHP_RULE_NET_LINGER] = "net-linger",
        [MTHP_RULE_NET_OFF] = "net-off",
        [MTHP_RULE_SIZE_IN_USE] = "size-in-use",
        [MTHP_RULE_SIZE_SHM_FILE] = "size-shm-file",
        [MTHP_RULE_SIZE_SHM_SYSV] = "size-shm-sysv",
        [MTHP_RULE_SIZE_SHM_UNALIGNED] = "size-shm-unaligned",
        [MTHP_RULE_SIZE_SHM_FILLED] = "size-shm-filled",
        [MTHP_RULE_SIZE_SHM_REPAIRING] = "size-shm-repairing",
        [MTHP_RULE_SIZE_REPAIRED] = "size-repaired",
        [MTHP_RULE_SIZE_MADVISE] = "size-madvise",
        [MTHP_RULE_SIZE_ALIGN] = "size-align",
        [MTHP_RULE_SIZE_ALIGN_CAPPED] = "size-align-capped",
        [MTHP_RULE_SIZE_OFF] = "size-off",
        [MTHP_RULE_SIZE_OUTSIDE] = "size-outside",
        [MTHP_RULE_HOLD_SHORT_LIVED] = "hold-short-lived",
        [MTHP_RULE_STEP_DOWN_BUDGET] = "step-down-budget",
        [MTHP_RULE_HOLD_BUDGET] = "hold-budget",
        /* a raise is a trial (engine-pay.c) */
        [MTHP_RULE_STEP_BACK_FALLBACK] = "step-back-fallback",
        [MTHP_RULE_STEP_BACK_CPU] = "step-back-cpu",
        [MTHP_RULE_HOLD_UNPAID] = "hold-unpaid",
};

bool mthp_engine_thp_off(const struct mthp_engine_config *cfg, enum mthp_kind kind) {
        return !cfg->override_thp_off && cfg->thp_off[kind][0];
}

const char *mthp_rule_name(enum mthp_rule rule) {
        return (unsigned) rule < _MTHP_RULE_MAX && rule_names[rule] ? rule_names[rule] : "?";
}

#define BACKOFF_MAX_TICKS 3600

/* Step down after a failure (pressure, fragmentation, a probe that did not
 * verify) and bar the level that failed for a while, longer each time it
 * fails again. */
void engine_step_down_failed(const struct mthp_engine_config *cfg, struct mthp_engine_kind *st, unsigned to,
                             uint64_t tick) {
        unsigned base = cfg->dwell_ticks ? 4 * cfg->dwell_ticks : 4;
        if (st->ceiling == st->level && st->backoff)
                st->backoff = st->backoff * 2 > BACKOFF_MAX_TICKS ? BACKOFF_MAX_TICKS : st->backoff * 2;
        else
                st->backoff = base;
        st->ceiling = st->level;
        st->ceiling_until = tick + st->backoff;
        st->level = to;
}
