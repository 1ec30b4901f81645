/* SPDX-License-Identifier: MIT */
/* The closed-loop simulation of the engine tests (engine-sim.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <ctype.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/sample.h"

#include "engine-caps.h"
#include "engine-sim.h"

#define MEM_TOTAL_KB 16000000ULL /* round, so that percentages are exact */

int size_index(const struct mthp_caps *c, unsigned kb) {
        for (unsigned i = 0; i < c->n_sizes; i++)
                if (c->sizes[i].kb == kb)
                        return (int) i;
        fail_msg("no %uK size", kb);
        return -1;
}

/* ---- the simulation: its setup, the kernel model, a tick and its checks ---- */

void sim_init(struct sim *s) {
        struct mthp_config c;
        memset(s, 0, sizeof(*s));
        mthp_config_defaults(&c);
        s->cfg = c.engine;
        /* These scenarios exercise the blind (no density sample) engine on
         * the 16K-64K ladder; the density tests widen it. */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->cfg.max_kb[k] = 64;
        /* the idle advise of the top shmem size has tests of its own
         * (test_shmem_align_*); the others count level changes */
        s->cfg.shmem_align = false;
        caps_init(&s->caps);
        sim_knobs_init(s);
}
/* The boot state: global enabled and defrag madvise, shmem_enabled never,
 * the PMD size inherit, every other size never. */
void sim_knobs_init(struct sim *s) {
        caps_boot_knobs(&s->caps, s->orig, s->knob);
}

int sim_setup(void **state) {
        struct sim *s = malloc(sizeof(*s));
        assert_non_null(s);
        sim_init(s);
        *state = s;
        return 0;
}

int sim_teardown(void **state) {
        free(*state);
        return 0;
}

static void set_rate(struct sim *s, struct mthp_snapshot *snap, unsigned size, const char *stat, double rate) {
        int j = mthp_stat_index(&s->caps.sizes[size], stat);
        assert_true(j >= 0);
        snap->size[size].stat[j].rate = rate;
        snap->size[size].stat[j].present = true;
}

/* The kernel tries the largest "always" size first and falls back to the
 * next smaller enabled one, counting a fallback at each size that failed;
 * each fault is one pgfault event however many pages it maps. */
void kernel_model(struct sim *s, const struct workload *w, struct mthp_snapshot *snap) {
        double pgfault = 0, four_k[_MTHP_KIND_MAX] = { 0 };
        unsigned largest = 0;

        memset(snap, 0, sizeof(*snap));
        snap->tick = s->tick;
        snap->t_usec = 1000000 * (s->tick + 1);
        snap->given_back_kb = w->given_back_kb;
        snap->given_back_pid = w->given_back_pid;
        snap->dt = s->tick ? 1.0 : 0.0; /* the sampler's first snapshot has no rates */

        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                double alloc[MTHP_SIZES_MAX] = { 0 }, fallback[MTHP_SIZES_MAX] = { 0 };
                double reach = 1, pages_per_fault = 0, top_tries = 0, top_fails = 0;
                bool top_seen = false;
                for (unsigned i = s->caps.n_sizes; i-- > 0;) {
                        int k = s->caps.sizes[i].knob[kind];
                        if (k < 0 || strcmp(s->knob[k], "always") != 0)
                                continue;
                        if (w->never_kb && s->caps.sizes[i].kb >= w->never_kb)
                                continue;
                        double f = s->caps.sizes[i].kb >= w->fail_min_kb ? w->fail : 0;
                        alloc[i] = reach * (1 - f);
                        fallback[i] = reach * f;
                        pages_per_fault += alloc[i] * s->caps.sizes[i].kb / mthp_caps_page_kb(&s->caps);
                        reach *= f;
                        if (alloc[i] > 0 && s->caps.sizes[i].kb > largest)
                                largest = s->caps.sizes[i].kb;
                }
                pages_per_fault += reach; /* the rest get a 4K page */
                double faults = snap->dt > 0 ? w->pages[kind] / pages_per_fault : 0;
                pgfault += faults + (snap->dt > 0 ? w->optout_pages[kind] : 0);
                four_k[kind] = faults * reach;
                double hg_faults = snap->dt > 0 ? w->madvised_pages[kind] * mthp_caps_page_kb(&s->caps) / s->caps.pmd_kb : 0;
                pgfault += hg_faults;
                for (unsigned i = 0; i < s->caps.n_sizes; i++) {
                        set_rate(s, snap, i, kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc",
                                 faults * alloc[i] + (s->caps.sizes[i].kb == s->caps.pmd_kb ? hg_faults : 0));
                        set_rate(s, snap, i, kind == MTHP_ANON ? "anon_fault_fallback" : "shmem_fallback",
                                 faults * fallback[i]);
                }
                /* the engine judges fragmentation by the largest enabled size alone */
                for (unsigned i = s->caps.n_sizes; i-- > 0 && !top_seen;) {
                        int k = s->caps.sizes[i].knob[kind];
                        if (k < 0 || strcmp(s->knob[k], "always") != 0)
                                continue;
                        top_seen = true;
                        if (w->never_kb && s->caps.sizes[i].kb >= w->never_kb)
                                break; /* no tries at the top: no ratio */
                        top_tries = faults * (alloc[i] + fallback[i]);
                        top_fails = faults * fallback[i];
                }
                s->expect[kind].fallback_pct = top_tries > 0 ? 100 * top_fails / top_tries : 0;
                s->expect[kind].fallback_counted = top_tries >= 10;
        }
        /* resident memory follows what each kind faults in */
        snap->mem.anon_kb = (uint64_t) w->pages[MTHP_ANON] * mthp_caps_page_kb(&s->caps);
        snap->mem.shmem_kb = (uint64_t) w->pages[MTHP_SHMEM] * mthp_caps_page_kb(&s->caps);
        double mem_total = (double) snap->mem.anon_kb + (double) snap->mem.shmem_kb;
        /* 4K faults carry no kind: the engine splits them by resident memory */
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                double share = mem_total > 0 ? (double) (kind == MTHP_ANON ? snap->mem.anon_kb : snap->mem.shmem_kb) /
                                                       mem_total
                                             : 0.5;
                s->expect[kind].demand =
                        w->demand_unmodelled ? NAN
                        : snap->dt > 0       ? w->pages[kind] - four_k[kind] + (four_k[0] + four_k[1]) * share
                                             : 0;
        }

        snap->vm[MTHP_VM_PGFAULT].present = true;
        snap->vm[MTHP_VM_PGFAULT].rate = pgfault;
        snap->psi.present = !w->psi_absent;
        snap->psi.some_avg10 = w->psi_some; /* a level, valid on the first sample too */
        if (!w->no_meminfo) {
                double avail = w->avail_pct > 0 ? w->avail_pct : 50;
                if (w->bloat_kb && largest >= w->bloat_kb)
                        avail = w->bloat_avail_pct;
                snap->mem.total_kb = MEM_TOTAL_KB;
                snap->mem.available_kb = (uint64_t) llround((double) MEM_TOTAL_KB * avail / 100);
        }
        memcpy(snap->knob, s->knob, sizeof(snap->knob));
        if (w->dens)
                snap->density = *w->dens;
        if (w->limited) {
                snap->limited_valid = true;
                snap->n_limited = w->n_limited;
                for (unsigned i = 0; i < w->n_limited; i++)
                        snap->limited[i] = w->limited[i];
        }
        snap->n_cgroups = w->n_cgroups;
        for (unsigned i = 0; i < w->n_cgroups; i++)
                snap->cgroup[i] = w->cgroups[i];
        mthp_snapshot_derive(&s->caps, snap);
}

unsigned ladder_of(const struct sim *s, enum mthp_kind kind, unsigned ladder[MTHP_SIZES_MAX]) {
        return mthp_engine_ladder(&s->cfg, &s->caps, kind, ladder);
}

/* The decisions of one kind: anon's come first, in ladder order. */
const struct mthp_decision *kind_decisions(const struct sim *s, enum mthp_kind kind) {
        /* the decision of the kind's first ladder rung; the others follow it */
        unsigned ladder[MTHP_SIZES_MAX];
        assert_true(ladder_of(s, kind, ladder) > 0);
        int knob = s->caps.sizes[ladder[0]].knob[kind];
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == knob)
                        return &s->dec[i];
        fail_msg("no decision for the first ladder rung");
        return NULL;
}

const char *kind_reason(const struct sim *s, enum mthp_kind kind) {
        unsigned ladder[MTHP_SIZES_MAX];
        assert_true(ladder_of(s, kind, ladder) > 0);
        return kind_decisions(s, kind)->reason;
}

/* noinline: inlined under ASan, gcc 12 sees a NULL %s on a path that cannot
 * happen (-Wformat-overflow false positive) */
__attribute__((noinline)) void assert_contains(const char *haystack, const char *needle) {
        assert_non_null(haystack);
        if (!strstr(haystack, needle))
                fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

/* What a size decision's rule must quote: the numbers behind it. */
static void check_rule(const struct sim *s, const struct mthp_engine_state *next, int kind,
                       const struct mthp_decision *d) {
        char num[64];
        if (s->tick == 0) {
                assert_int_equal(d->rule, MTHP_RULE_FIRST_SAMPLE);
                return;
        }
        switch (d->rule) {
        case MTHP_RULE_STEP_DOWN_PRESSURE:
        case MTHP_RULE_HOLD_PRESSURE:
                /* the host's own pressure (a cgroup's comes first, when there is one) */
                if (s->snap.n_cgroups || s->snap.density.n_procs)
                        break;
                if (s->snap.psi.present && s->snap.psi.some_avg10 >= s->cfg.psi_some_max)
                        snprintf(num, sizeof(num), "%.1f", s->snap.psi.some_avg10);
                else
                        snprintf(num, sizeof(num), "%.1f",
                                 100.0 * (double) s->snap.mem.available_kb / (double) s->snap.mem.total_kb);
                assert_tokens(d->reason, num);
                break;
        case MTHP_RULE_STEP_DOWN_STALL:
                assert_true(s->snap.density.valid);
                break;
        case MTHP_RULE_STEP_DOWN_SPARSE:
        case MTHP_RULE_STEP_DOWN_CHURN: {
                /* a density step down names the party: a process by pid, a cgroup by its policy */
                bool named = false;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS && !named; j++) {
                        snprintf(num, sizeof(num), "%d", next->proc[j].pid);
                        named = next->proc[j].pid && strstr(d->reason, num);
                }
                for (size_t j = 0; s->cfg.policies && j < s->cfg.policies->n && !named; j++)
                        named = strstr(d->reason, s->cfg.policies->p[j].name) != NULL;
                if (!named)
                        fail_msg("the step down names no party: %s", d->reason);
                break;
        }
        case MTHP_RULE_STEP_DOWN_LIMIT: {
                /* the invariant names the cgroup */
                bool named = false;
                for (unsigned j = 0; j < s->snap.n_limited && !named; j++)
                        named = strstr(d->reason, s->snap.limited[j].path) != NULL;
                if (!named)
                        fail_msg("the step down names no limited cgroup: %s", d->reason);
                break;
        }
        case MTHP_RULE_STEP_DOWN_FALLBACK:
                snprintf(num, sizeof(num), "%.0f", s->expect[kind].fallback_pct);
                assert_tokens(d->reason, num);
                assert_tokens(d->reason, mthp_kind_name(kind));
                break;
        default:
                /* raise, lower and hold all quote the demand */
                if (!isnan(s->expect[kind].demand)) {
                        snprintf(num, sizeof(num), "%.0f", s->expect[kind].demand);
                        assert_tokens(d->reason, num);
                }
        }
}

/* A reason quotes numbers, never a 0/0 or x/0: no "nan" or "inf" word
 * (any case, a word: "info" or "inherit" are fine). */
static void assert_finite_text(const char *r) {
        for (const char *p = r; *p; p++) {
                if (p > r && isalpha((unsigned char) p[-1]))
                        continue;
                if ((strncasecmp(p, "nan", 3) == 0 || strncasecmp(p, "inf", 3) == 0) &&
                    !isalpha((unsigned char) p[3]))
                        fail_msg("a reason prints a number that is not one: %s", r);
        }
}

/* Invariants of every tick: one decision per ladder knob, in order, "always"
 * below the level and "" (original) above, each with a reason quoting the
 * numbers behind it. */
static void check_decisions(const struct sim *s, const struct mthp_engine_state *next) {
        int n = 0;
        for (int i = 0; i < s->n_dec; i++)
                assert_finite_text(s->dec[i].reason);
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n_ladder = ladder_of(s, kind, ladder);
                unsigned level = next->kind[kind].level;
                assert_true(level <= n_ladder);
                for (unsigned sz = 0; sz < s->caps.n_sizes; sz++) {
                        if (s->caps.sizes[sz].knob[kind] < 0)
                                continue;
                        const struct mthp_decision *d = &s->dec[n++];
                        assert_true(n <= s->n_dec);
                        assert_int_equal(d->knob, s->caps.sizes[sz].knob[kind]);
                        int rung = -1;
                        for (unsigned r = 0; r < n_ladder; r++)
                                if (ladder[r] == sz)
                                        rung = (int) r;
                        if (rung < 0) {
                                /* off the ladder: back to the original value */
                                assert_string_equal(d->value, "");
                                assert_int_equal(d->rule, MTHP_RULE_SIZE_OUTSIDE);
                                continue;
                        }
                        unsigned i = (unsigned) rung;
                        if (i >= level && d->value[0] && d->size_rule == MTHP_RULE_SIZE_ALIGN) {
                                /* ShmemAlign=: the top shmem size, off, at advise */
                                assert_true(s->cfg.shmem_align);
                                assert_int_equal(kind, MTHP_SHMEM);
                                assert_int_equal(i, n_ladder - 1);
                                assert_string_equal(d->value, "advise");
                        } else if (i >= level && d->value[0]) {
                                /* above the level only a policy's madvise */
                                assert_non_null(s->cfg.policies);
                                assert_string_equal(d->value, kind == MTHP_ANON ? "madvise" : "advise");
                                assert_int_equal(d->size_rule, MTHP_RULE_SIZE_MADVISE);
                        } else
                                assert_string_equal(d->value, i < level ? "always" : "");
                        assert_true(d->reason[0] != 0);
                        char lv[32];
                        snprintf(lv, sizeof(lv), "%u/%u", level, n_ladder);
                        assert_tokens(d->reason, lv);
                        check_rule(s, next, kind, d);
                }
        }
        /* last: global/defrag, the administrator's value unless large sizes fall back */
        const struct mthp_decision *d = &s->dec[n++];
        assert_true(n <= s->n_dec);
        assert_int_equal(s->caps.knobs[d->knob].type, MTHP_KNOB_DEFRAG);
        assert_true(d->reason[0] != 0);
        /* then the THP shrinker's numbers, where the host has them */
        while (n < s->n_dec && s->caps.knobs[s->dec[n].knob].type == MTHP_KNOB_NUMBER) {
                assert_true(s->dec[n].reason[0] != 0);
                n++;
        }
        assert_int_equal(s->n_dec, n);
}

void sim_step(struct sim *s, const struct workload *w) {
        struct mthp_engine_state next, prev = s->st;

        kernel_model(s, w, &s->snap);
        memset(s->dec, 0x5a, sizeof(s->dec));
        memset(&next, 0x5a, sizeof(next));
        s->n_dec = mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &s->st, &next, s->dec, MTHP_KNOBS_MAX);
        assert_memory_equal(&prev, &s->st, sizeof(prev)); /* prev is input only */
        assert_int_equal(next.tick, s->tick);
        check_decisions(s, &next);
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                unsigned a = s->st.kind[kind].level, b = next.kind[kind].level;
                if (a == b)
                        continue;
                /* blind: one step at a time; a tick the density back-off
                 * skips decides on the processes sampled within
                 * PROC_RECENT_TICKS (3) instead; demand that stopped
                 * steps down in one go past the sizes no longer allocated */
                if (!s->snap.density.valid && !(prev.density_tick && s->tick <= prev.density_tick + 3))
                        assert_true(a + 1 == b || b + 1 == a ||
                                    (b < a && kind_decisions(s, kind)->rule == MTHP_RULE_STEP_DOWN_DEMAND));
                if (b > a)
                        s->ups[kind]++;
                else
                        s->downs[kind]++;
                s->last_change[kind] = s->tick;
        }
        apply_decisions(s->dec, s->n_dec, s->knob, s->orig);
        s->st = next;
        s->tick++;
}

void sim_run(struct sim *s, const struct workload *w, unsigned ticks) {
        for (unsigned i = 0; i < ticks; i++)
                sim_step(s, w);
}

unsigned level(const struct sim *s, enum mthp_kind kind) {
        return s->st.kind[kind].level;
}

unsigned changes(const struct sim *s, enum mthp_kind kind) {
        return s->ups[kind] + s->downs[kind];
}

/* Run a steady workload until a kind reaches lvl; returns the tick it got there. */
uint64_t sim_climb(struct sim *s, const struct workload *w, enum mthp_kind kind, unsigned lvl) {
        for (unsigned i = 0; i < 1000 && level(s, kind) < lvl; i++)
                sim_step(s, w);
        assert_int_equal(level(s, kind), lvl);
        return s->last_change[kind];
}

const struct workload anon_hot = { .pages = { [MTHP_ANON] = 100000 } };
const struct workload shmem_hot = { .pages = { [MTHP_SHMEM] = 100000 } };
const struct workload idle = { .pages = { [MTHP_ANON] = 1000 } };

/* ---- density: what the sampler saw decides how far to go ---- */

void dens_proc(struct mthp_proc_density *p, int pid, double cov_16k, double zero) {
        /* coverage halves with each size doubling above the 4K a sparse
         * process really touches: cov_16k at 16K, cov_16k/2 at 32K, ... */
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        snprintf(p->comm, sizeof(p->comm), "proc%d", pid);
        p->fault_rate = 50000;
        p->rss_kb[MTHP_ANON] = 500000;
        p->compact_ms = p->thrash_ms = p->reclaim_ms = NAN;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                for (unsigned i = 0; i < MTHP_SIZES_MAX; i++) {
                        double c = cov_16k >= 1 ? 1 : cov_16k * 16.0 / (i < 1 ? 16 : 16u << (i - 1));
                        p->coverage[k][i] = c > 1 ? 1 : c;
                        p->zero[k][i] = zero;
                        p->zero_data[k][i] = NAN;   /* unknown, as the sampler says it */
                }
}

void wide(struct sim *s) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->cfg.max_kb[k] = 2048; /* the shipped ladder */
}

/* ---- cgroups ---- */

const char *knob_of(const struct sim *s, unsigned kb, enum mthp_kind kind) {
        return s->knob[s->caps.sizes[size_index(&s->caps, kb)].knob[kind]];
}

struct mthp_limited_cgroup lim_600 = { .path = "/lim", .usage_kb = 2048, .limit_kb = 600 * 1024,
                                       .populated = true };
