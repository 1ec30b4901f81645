/* SPDX-License-Identifier: MIT */
/* Unit tests for the pure engine, mthp_engine_decide(), on synthetic
 * snapshots. A small kernel model turns the engine's own decisions into the
 * next tick's counters (which size a fault gets, how often it falls back,
 * how many pgfault events that takes), so hysteresis is tested in closed
 * loop, the way the daemon runs it.
 *
 * Run without arguments: the tests that must pass. With one argument: the
 * known-issue test of that name, registered in meson with should_fail, so
 * fixing the engine turns it into an "unexpected pass" to promote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/policy.h"
#include "mthp/sample.h"

#include "engine-caps.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define MEM_TOTAL_KB 16000000ULL /* round, so that percentages are exact */

static int size_index(const struct mthp_caps *c, unsigned kb) {
        for (unsigned i = 0; i < c->n_sizes; i++)
                if (c->sizes[i].kb == kb)
                        return (int) i;
        fail_msg("no %uK size", kb);
        return -1;
}

/* ---- the workload and the kernel's answer to the current knobs ---- */

struct workload {
        double pages[_MTHP_KIND_MAX]; /* 4K pages/s the workload faults in, per kind */
        double fail;                  /* fraction of mTHP allocations failing at each size >= fail_min_kb */
        unsigned fail_min_kb;
        bool psi_absent;
        double psi_some;              /* PSI memory some avg10, percent */
        double avail_pct;             /* MemAvailable; 0 means a healthy 50% */
        bool no_meminfo;              /* MemTotal unknown */
        /* memory the workload's own folios cost: MemAvailable while its
         * largest folio is >= this size (0: no such effect) */
        unsigned bloat_kb;
        double bloat_avail_pct;
        unsigned never_kb;            /* the kernel never tries sizes >= this (e.g. small VMAs) */
        bool demand_unmodelled;       /* the engine's demand is not the model's: reasons not checked for it */
        const struct mthp_density_view *dens; /* what the density sampler sees, or NULL */
        const struct mthp_cgroup_view *cgroups; /* managed cgroups, or NULL */
        unsigned n_cgroups;
        const struct mthp_limited_cgroup *limited; /* every memory-limited cgroup, or NULL: not scanned */
        unsigned n_limited;
        /* 4K pages/s faulted by processes that opted out (THP disabled, nh
         * mappings): 4K faults whatever the knobs, and no demand */
        double optout_pages[_MTHP_KIND_MAX];
        /* 4K pages/s faulted as PMD folios by MADV_HUGEPAGE mappings while
         * the PMD size is at madvise (the boot default): no demand either */
        double madvised_pages[_MTHP_KIND_MAX];
};

/* What the reason of a kind should quote this tick. */
struct expect {
        double demand;        /* 4K pages/s the engine should see */
        double fallback_pct;  /* of the kind's mTHP attempts */
        bool fallback_counted;
};

struct sim;
static void sim_knobs_init(struct sim *s);
struct sim {
        struct mthp_engine_config cfg;
        struct mthp_caps caps;
        struct mthp_engine_state st;
        uint64_t tick;
        char orig[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        char knob[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        struct mthp_snapshot snap;
        struct expect expect[_MTHP_KIND_MAX];
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n_dec;
        unsigned ups[_MTHP_KIND_MAX], downs[_MTHP_KIND_MAX];
        uint64_t last_change[_MTHP_KIND_MAX]; /* tick of the last level change */
};

static void sim_init(struct sim *s) {
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
static void sim_knobs_init(struct sim *s) {
        caps_boot_knobs(&s->caps, s->orig, s->knob);
}

static int sim_setup(void **state) {
        struct sim *s = malloc(sizeof(*s));
        assert_non_null(s);
        sim_init(s);
        *state = s;
        return 0;
}

static int sim_teardown(void **state) {
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
static void kernel_model(struct sim *s, const struct workload *w, struct mthp_snapshot *snap) {
        double pgfault = 0, four_k[_MTHP_KIND_MAX] = { 0 };
        unsigned largest = 0;

        memset(snap, 0, sizeof(*snap));
        snap->tick = s->tick;
        snap->t_usec = 1000000 * (s->tick + 1);
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

static unsigned ladder_of(const struct sim *s, enum mthp_kind kind, unsigned ladder[MTHP_SIZES_MAX]) {
        return mthp_engine_ladder(&s->cfg, &s->caps, kind, ladder);
}

/* The decisions of one kind: anon's come first, in ladder order. */
static const struct mthp_decision *kind_decisions(const struct sim *s, enum mthp_kind kind) {
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

static const char *kind_reason(const struct sim *s, enum mthp_kind kind) {
        unsigned ladder[MTHP_SIZES_MAX];
        assert_true(ladder_of(s, kind, ladder) > 0);
        return kind_decisions(s, kind)->reason;
}

/* noinline: inlined under ASan, gcc 12 sees a NULL %s on a path that cannot
 * happen (-Wformat-overflow false positive) */
static __attribute__((noinline)) void assert_contains(const char *haystack, const char *needle) {
        assert_non_null(haystack);
        if (!strstr(haystack, needle))
                fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}

static void assert_containsf(const char *haystack, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void assert_containsf(const char *haystack, const char *fmt, ...) {
        char needle[128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(needle, sizeof(needle), fmt, ap);
        va_end(ap);
        assert_contains(haystack, needle);
}

/* Invariants of every tick: one decision per ladder knob, in order, "always"
 * below the level and "" (original) above, each with a reason quoting the
 * numbers behind it. */
static void check_decisions(const struct sim *s, const struct mthp_engine_state *next) {
        int n = 0;
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
                                assert_contains(d->reason, "outside");
                                continue;
                        }
                        unsigned i = (unsigned) rung;
                        if (i >= level && d->value[0] && strstr(d->reason, "-aligned, so a raise reaches it")) {
                                /* ShmemAlign=: the top shmem size, off, at advise */
                                assert_true(s->cfg.shmem_align);
                                assert_int_equal(kind, MTHP_SHMEM);
                                assert_int_equal(i, n_ladder - 1);
                                assert_string_equal(d->value, "advise");
                        } else if (i >= level && d->value[0]) {
                                /* above the level only a policy's madvise */
                                assert_non_null(s->cfg.policies);
                                assert_string_equal(d->value, kind == MTHP_ANON ? "madvise" : "advise");
                                assert_contains(d->reason, "madvise: a policy wants it");
                        } else
                                assert_string_equal(d->value, i < level ? "always" : "");
                        assert_true(d->reason[0] != 0);
                        assert_containsf(d->reason, "level %u/%u", level, n_ladder);
                        if (s->tick == 0) {
                                assert_contains(d->reason, "first sample");
                        } else if (strstr(d->reason, "memory pressure") && strstr(d->reason, "memory.pressure")) {
                                assert_contains(d->reason, "cgroup /");
                        } else if (strstr(d->reason, "memory pressure") && strstr(d->reason, "cgroup")) {
                                assert_contains(d->reason, "% of its");
                                assert_contains(d->reason, "MiB limit");
                        } else if (strstr(d->reason, "direct compaction")) {
                                assert_contains(d->reason, "ms/s in direct compaction");
                        } else if (strstr(d->reason, "memory pressure")) {
                                if (s->snap.psi.present && s->snap.psi.some_avg10 >= s->cfg.psi_some_max)
                                        assert_containsf(d->reason, "PSI memory some %.1f%%", s->snap.psi.some_avg10);
                                else
                                        assert_containsf(d->reason, "MemAvailable %.1f%%",
                                                         100.0 * (double) s->snap.mem.available_kb /
                                                                 (double) s->snap.mem.total_kb);
                        } else if (strstr(d->reason, "as always: step")) {
                                /* a policy's objection names the cgroup and its priority */
                                assert_contains(d->reason, "priority ");
                        } else if (strstr(d->reason, "MaxBloat")) {
                                /* a density step down names the process and its numbers */
                                assert_contains(d->reason, "pid ");
                                assert_contains(d->reason, " block");
                        } else if (strstr(d->reason, "limited cgroup /")) {
                                /* the invariant names the cgroup and its numbers */
                                assert_contains(d->reason, "MiB, limit ");
                                assert_contains(d->reason, "MiB, headroom ");
                                assert_contains(d->reason, "cannot afford ");
                        } else if (strstr(d->reason, "fall back")) {
                                assert_containsf(d->reason, "%.0f%% of %s", s->expect[kind].fallback_pct,
                                                 mthp_kind_name(kind));
                        } else {
                                /* raise, lower and hold all quote the demand */
                                if (!isnan(s->expect[kind].demand))
                                        assert_containsf(d->reason, "%.0f pages/s", s->expect[kind].demand);
                        }
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

static void sim_step(struct sim *s, const struct workload *w) {
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
                 * PROC_RECENT_TICKS (3) instead */
                if (!s->snap.density.valid && !(prev.density_tick && s->tick <= prev.density_tick + 3))
                        assert_true(a + 1 == b || b + 1 == a);
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

static void sim_run(struct sim *s, const struct workload *w, unsigned ticks) {
        for (unsigned i = 0; i < ticks; i++)
                sim_step(s, w);
}

static unsigned level(const struct sim *s, enum mthp_kind kind) {
        return s->st.kind[kind].level;
}

static unsigned changes(const struct sim *s, enum mthp_kind kind) {
        return s->ups[kind] + s->downs[kind];
}

/* Run a steady workload until a kind reaches lvl; returns the tick it got there. */
static uint64_t sim_climb(struct sim *s, const struct workload *w, enum mthp_kind kind, unsigned lvl) {
        for (unsigned i = 0; i < 1000 && level(s, kind) < lvl; i++)
                sim_step(s, w);
        assert_int_equal(level(s, kind), lvl);
        return s->last_change[kind];
}

static const struct workload anon_hot = { .pages = { [MTHP_ANON] = 100000 } };
static const struct workload shmem_hot = { .pages = { [MTHP_SHMEM] = 100000 } };
static const struct workload idle = { .pages = { [MTHP_ANON] = 1000 } };

/* ---- ladder ---- */

static void assert_ladder(struct sim *s, enum mthp_kind kind, const unsigned *kbs, unsigned n) {
        unsigned ladder[MTHP_SIZES_MAX];
        unsigned got = ladder_of(s, kind, ladder);
        assert_int_equal(got, n);
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(s->caps.sizes[ladder[i]].kb, kbs[i]);
}

static void test_ladder_default(void **state) {
        struct sim *s = *state;
        struct mthp_config c;
        static const unsigned want[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
        mthp_config_defaults(&c);
        s->cfg = c.engine; /* the shipped defaults: every size up to PMD */
        assert_ladder(s, MTHP_ANON, want, 8);
        assert_ladder(s, MTHP_SHMEM, want, 8);
        assert_int_equal(s->cfg.unmeasured_max_kb, 64);
}

static void test_ladder_ranges(void **state) {
        struct sim *s = *state;
        static const unsigned anon_all[] = { 16, 32, 64, 128, 256, 512, 1024, 2048 };
        static const unsigned shmem_all[] = { 8, 16, 32, 64, 128, 256, 512, 1024, 2048 };
        static const unsigned mid[] = { 128, 256, 512, 1024 };
        static const unsigned one[] = { 64 };

        /* 8K-2M: anon skips 8K, which has no enabled knob */
        s->cfg.min_kb[MTHP_ANON] = s->cfg.min_kb[MTHP_SHMEM] = 8;
        s->cfg.max_kb[MTHP_ANON] = s->cfg.max_kb[MTHP_SHMEM] = 2048;
        assert_ladder(s, MTHP_ANON, anon_all, ELEMENTSOF(anon_all));
        assert_ladder(s, MTHP_SHMEM, shmem_all, ELEMENTSOF(shmem_all));

        s->cfg.min_kb[MTHP_ANON] = 128;
        s->cfg.max_kb[MTHP_ANON] = 1024;
        assert_ladder(s, MTHP_ANON, mid, ELEMENTSOF(mid));
        s->cfg.min_kb[MTHP_SHMEM] = s->cfg.max_kb[MTHP_SHMEM] = 64;
        assert_ladder(s, MTHP_SHMEM, one, 1);

        /* "none" parses to 0-0 */
        assert_int_equal(mthp_parse_size_range("none", &s->cfg.min_kb[MTHP_ANON], &s->cfg.max_kb[MTHP_ANON]), 0);
        assert_ladder(s, MTHP_ANON, NULL, 0);
}

static void test_ladder_skips_sizes_without_always(void **state) {
        struct sim *s = *state;
        static const unsigned want[] = { 16, 64 };
        static const char *const no_always[] = { "inherit", "within_size", "advise", "never", NULL };
        int k = s->caps.sizes[size_index(&s->caps, 32)].knob[MTHP_SHMEM];
        s->caps.knobs[k].n_allowed = 0;
        for (; no_always[s->caps.knobs[k].n_allowed]; s->caps.knobs[k].n_allowed++)
                snprintf(s->caps.knobs[k].allowed[s->caps.knobs[k].n_allowed], MTHP_VALUE_MAX, "%s",
                         no_always[s->caps.knobs[k].n_allowed]);
        assert_ladder(s, MTHP_SHMEM, want, 2);
        /* and the engine never writes it */
        sim_run(s, &shmem_hot, 30);
        assert_int_equal(level(s, MTHP_SHMEM), 2);
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == k)
                        assert_string_equal(s->dec[i].value, ""); /* original, never "always" */
        assert_string_equal(s->knob[k], "never");
}

/* ---- first sample ---- */

static void test_first_sample_holds(void **state) {
        struct sim *s = *state;
        /* a state carried over with every streak one tick from acting */
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++)
                s->st.kind[kind] = (struct mthp_engine_kind) {
                        .level = 2, .raise_streak = 5, .lower_streak = 50, .pressure_streak = 1,
                };
        static const struct workload storm = { .pages = { 100000, 100000 }, .psi_some = 60, .avail_pct = 1,
                                               .fail = 0.9 };
        struct mthp_engine_state before = s->st;
        sim_step(s, &storm);
        assert_int_equal(s->snap.dt, 0);
        assert_memory_equal(&s->st.kind, &before.kind, sizeof(before.kind));
        for (int i = 0; i < s->n_dec; i++)
                if (s->caps.knobs[s->dec[i].knob].type != MTHP_KNOB_DEFRAG)
                        assert_contains(s->dec[i].reason,
                                        strstr(s->dec[i].reason, "outside") ? "outside" : "first sample");

        /* dt = 0 even if a replayed snapshot carries rates */
        struct mthp_engine_state next;
        struct mthp_decision out[MTHP_KNOBS_MAX];
        s->snap.vm[MTHP_VM_PGFAULT].rate = 1e6;
        mthp_snapshot_derive(&s->caps, &s->snap);
        before.kind[MTHP_ANON].level = 0;
        before.kind[MTHP_ANON].raise_streak = 1;
        assert_int_equal(mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &before, &next, out, MTHP_KNOBS_MAX), 18);
        assert_memory_equal(&next.kind, &before.kind, sizeof(before.kind));
}

static void test_first_sample_fresh(void **state) {
        struct sim *s = *state;
        static const struct workload hot_pressed = { .pages = { 100000 }, .psi_some = 60 };
        s->cfg.confirm_ticks = 1;
        sim_step(s, &anon_hot);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->st.kind[MTHP_ANON].raise_streak, 0);
        sim_step(s, &anon_hot); /* first measured tick: confirm 1 raises */
        assert_int_equal(level(s, MTHP_ANON), 1);

        sim_init(s);
        sim_step(s, &hot_pressed);
        assert_int_equal(s->st.kind[MTHP_ANON].pressure_streak, 0);
}

/* ---- raise and confirmation ---- */

static void test_raise_after_confirm(void **state) {
        struct sim *s = *state;
        static const struct workload hot = { .pages = { [MTHP_ANON] = 30000 } };
        sim_step(s, &hot); /* tick 0: first sample */
        sim_step(s, &hot);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->st.kind[MTHP_ANON].raise_streak, 1);
        assert_contains(kind_reason(s, MTHP_ANON), "streak 1");
        sim_step(s, &hot);
        assert_int_equal(level(s, MTHP_ANON), 1);
        const char *why = kind_reason(s, MTHP_ANON);
        assert_contains(why, "step up");
        assert_contains(why, "30000 pages/s >= 25000 for 2 ticks");
        assert_string_equal(kind_decisions(s, MTHP_ANON)[0].value, "always");

        sim_init(s);
        s->cfg.confirm_ticks = 4;
        sim_run(s, &hot, 4);
        assert_int_equal(level(s, MTHP_ANON), 0);
        sim_step(s, &hot);
        assert_int_equal(level(s, MTHP_ANON), 1);
        assert_int_equal(s->last_change[MTHP_ANON], 4);
}

/* The /proc scan runs only while a raise is possible or a size is raised:
 * an idle host's tick costs the same whatever its number of processes. */
static void test_wants_density(void **state) {
        struct sim *s = *state;
        static const struct workload idle = { .pages = { [MTHP_ANON] = 900 } };
        static const struct workload hot = { .pages = { [MTHP_ANON] = 30000 } };
        sim_step(s, &hot); /* first sample: no rates, nothing to decide */
        assert_false(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
        sim_step(s, &idle);
        assert_false(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
        sim_step(s, &hot); /* demand shows: sampled in the same tick */
        assert_true(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
        sim_run(s, &hot, 3);
        assert_true(level(s, MTHP_ANON) > 0);
        sim_step(s, &idle); /* raised: the bloat guard keeps watching */
        assert_true(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
        for (unsigned i = 0; i < 60 && level(s, MTHP_ANON) > 0; i++)
                sim_step(s, &idle);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_false(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
        s->cfg.raise_fault_rate = 500; /* the threshold is the configured one */
        assert_true(mthp_engine_wants_density(&s->cfg, &s->snap, &s->st));
}

static void test_raise_threshold(void **state) {
        struct sim *s = *state;
        static const struct workload below = { .pages = { [MTHP_ANON] = 24999 } };
        static const struct workload at = { .pages = { [MTHP_ANON] = 25000 } };
        sim_run(s, &below, 100);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        sim_run(s, &at, 2);
        assert_int_equal(level(s, MTHP_ANON), 1);
}

static void test_raise_streak_resets(void **state) {
        struct sim *s = *state;
        static const struct workload hi = { .pages = { [MTHP_ANON] = 30000 } };
        static const struct workload lo = { .pages = { [MTHP_ANON] = 20000 } };
        sim_step(s, &hi); /* first sample */
        sim_step(s, &hi);
        sim_step(s, &lo);
        assert_int_equal(s->st.kind[MTHP_ANON].raise_streak, 0);
        sim_step(s, &hi);
        assert_int_equal(level(s, MTHP_ANON), 0); /* 2 of 3 ticks high, not 2 in a row */
        sim_step(s, &hi);
        assert_int_equal(level(s, MTHP_ANON), 1);

        sim_init(s);
        s->cfg.confirm_ticks = 3;
        const struct workload *seq[] = { &hi, &hi, &hi, &lo, &hi, &hi, &lo, &hi, &hi };
        for (size_t i = 0; i < ELEMENTSOF(seq); i++)
                sim_step(s, seq[i]);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        sim_step(s, &hi);
        assert_int_equal(level(s, MTHP_ANON), 1);
}

/* ---- dwell ---- */

static void test_dwell(void **state) {
        struct sim *s = *state;
        /* defaults: confirm 2, dwell 5: changes at ticks 2, 7, 12 */
        static const uint64_t want[] = { 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3 };
        for (size_t t = 0; t < ELEMENTSOF(want); t++) {
                sim_step(s, &anon_hot);
                assert_int_equal(level(s, MTHP_ANON), want[t]);
                if (t > 2 && want[t] == want[t - 1] && want[t] < 3)
                        assert_contains(kind_reason(s, MTHP_ANON), "dwelling after last change");
        }

        /* dwell holds a step down too */
        sim_init(s);
        s->cfg.lower_ticks = 1;
        s->cfg.dwell_ticks = 10;
        uint64_t t = sim_climb(s, &anon_hot, MTHP_ANON, 1);
        while (s->tick < t + 10) {
                sim_step(s, &idle);
                assert_int_equal(level(s, MTHP_ANON), 1);
        }
        sim_step(s, &idle);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->last_change[MTHP_ANON], t + 10);

        /* dwell 0: confirmation alone paces the climb */
        sim_init(s);
        s->cfg.dwell_ticks = 0;
        s->cfg.confirm_ticks = 1;
        sim_run(s, &anon_hot, 4);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(changes(s, MTHP_ANON), 3);
}

/* ---- climbing the ladder ---- */

static void test_climb_to_max(void **state) {
        struct sim *s = *state;
        sim_run(s, &anon_hot, 200);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(s->ups[MTHP_ANON], 3);
        assert_int_equal(s->downs[MTHP_ANON], 0);
        const struct mthp_decision *d = kind_decisions(s, MTHP_ANON);
        for (int i = 0; i < 3; i++)
                assert_string_equal(d[i].value, "always");
        assert_contains(d[0].reason, "holding anon at 64K");
        assert_string_equal(s->knob[s->caps.sizes[size_index(&s->caps, 128)].knob[MTHP_ANON]], "never");
        assert_string_equal(s->knob[s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]], "inherit");
}

static void test_climb_wide_ladder(void **state) {
        struct sim *s = *state;
        static const struct workload both = { .pages = { 100000, 100000 } };
        s->cfg.min_kb[MTHP_ANON] = s->cfg.min_kb[MTHP_SHMEM] = 8;
        s->cfg.max_kb[MTHP_ANON] = s->cfg.max_kb[MTHP_SHMEM] = 2048;
        s->cfg.unmeasured_max_kb = 2048; /* blind climbing all the way */
        s->cfg.dwell_ticks = 1;
        s->cfg.confirm_ticks = 1;
        unsigned seen[_MTHP_KIND_MAX] = { 0 };
        for (int t = 0; t < 60; t++) {
                sim_step(s, &both);
                for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                        /* every level visited, in order (check_decisions checks the values) */
                        assert_true(level(s, kind) == seen[kind] || level(s, kind) == seen[kind] + 1);
                        seen[kind] = level(s, kind);
                }
        }
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(level(s, MTHP_SHMEM), 9);
        assert_int_equal(s->n_dec, 18);
        for (int i = 0; i < s->n_dec; i++) {
                const struct mthp_knob *k = &s->caps.knobs[s->dec[i].knob];
                assert_true(k->type == MTHP_KNOB_SIZE_ANON || k->type == MTHP_KNOB_SIZE_SHMEM ||
                            (k->type == MTHP_KNOB_DEFRAG && i == s->n_dec - 1));
        }
        assert_string_equal(s->knob[s->caps.sizes[0].knob[MTHP_SHMEM]], "always");

        /* a mid level: "always" up to it, original above */
        sim_init(s);
        s->cfg.min_kb[MTHP_ANON] = 8;
        s->cfg.max_kb[MTHP_ANON] = 2048;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        const struct mthp_decision *d = kind_decisions(s, MTHP_ANON);
        for (int i = 0; i < 8; i++) {
                assert_int_equal(s->caps.knobs[d[i].knob].size_kb, 16u << i);
                assert_string_equal(d[i].value, i < 3 ? "always" : "");
        }
        assert_contains(d[0].reason, "16K in use");
        assert_contains(d[3].reason, "128K not needed");
}

static void test_decisions_every_tick(void **state) {
        struct sim *s = *state;
        /* nothing to do still yields a decision per managed knob */
        sim_run(s, &idle, 3);
        assert_int_equal(s->n_dec, 18); /* every per-size knob (8 anon, no 8K; 9 shmem) + defrag */
        for (int i = 0; i < s->n_dec; i++)
                assert_string_equal(s->dec[i].value, "");

        /* an empty range manages nothing of that kind */
        s->cfg.min_kb[MTHP_ANON] = s->cfg.max_kb[MTHP_ANON] = 0;
        sim_run(s, &anon_hot, 20);
        assert_int_equal(s->n_dec, 18);
        assert_int_equal(level(s, MTHP_ANON), 0);
        for (int i = 0; i < s->n_dec; i++)
                if (s->caps.knobs[s->dec[i].knob].type == MTHP_KNOB_SIZE_ANON)
                        assert_string_equal(s->dec[i].value, ""); /* all anon back to original */
}

static void test_output_bounded(void **state) {
        struct sim *s = *state;
        struct mthp_engine_state next;
        struct mthp_decision out[3];
        sim_run(s, &anon_hot, 20);
        memset(out, 0x5a, sizeof(out));
        assert_int_equal(mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &s->st, &next, out, 2), 2);
        assert_int_equal(out[2].knob, 0x5a5a5a5a); /* untouched */
        assert_int_equal(mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &s->st, &next, out, 0), 0);
}

static void test_ladder_shrinks(void **state) {
        struct sim *s = *state;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        s->cfg.max_kb[MTHP_ANON] = 32;
        sim_step(s, &anon_hot);
        assert_int_equal(level(s, MTHP_ANON), 2);
        const struct mthp_decision *d = kind_decisions(s, MTHP_ANON);
        assert_string_equal(d[0].value, "always");
        assert_string_equal(d[1].value, "always");
}

/* ---- pressure ---- */

static void test_pressure_psi(void **state) {
        struct sim *s = *state;
        struct workload pressed = anon_hot;
        pressed.psi_some = 20;
        uint64_t t = sim_climb(s, &anon_hot, MTHP_ANON, 3);
        assert_int_equal(s->tick, t + 1);
        sim_step(s, &pressed); /* one tick: could be a blip */
        assert_int_equal(level(s, MTHP_ANON), 3);
        sim_step(s, &pressed); /* two: act, though still dwelling after t */
        assert_true(s->tick <= t + s->cfg.dwell_ticks);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "memory pressure for 2 ticks (PSI memory some 20.0% >= 10%)");
        /* sustained pressure keeps stepping down, dwell or not (today one
         * step a tick; any pace within a few ticks is fine) */
        sim_run(s, &pressed, 2 * s->cfg.dwell_ticks - 1);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_true(s->last_change[MTHP_ANON] < t + 2 * s->cfg.dwell_ticks);
        /* high demand under pressure never raises */
        sim_run(s, &pressed, 100);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->ups[MTHP_ANON], 3);
        assert_contains(kind_reason(s, MTHP_ANON), "pressure: PSI memory some 20.0%");
        /* relief: climbs again after confirmation */
        sim_run(s, &anon_hot, 2);
        assert_int_equal(level(s, MTHP_ANON), 1);
}

static void test_pressure_blips_ignored(void **state) {
        struct sim *s = *state;
        struct workload pressed = anon_hot, mild = anon_hot, absent = anon_hot;
        pressed.psi_some = 30;
        mild.psi_some = 9.9;
        absent.psi_some = 90;
        absent.psi_absent = true;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        for (int i = 0; i < 50; i++) {
                sim_step(s, &pressed);
                sim_step(s, &anon_hot);
        }
        sim_run(s, &mild, 20);
        sim_run(s, &absent, 20);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(s->downs[MTHP_ANON], 0);
        /* the limit itself counts as pressure */
        mild.psi_some = 10;
        sim_run(s, &mild, 2);
        assert_int_equal(level(s, MTHP_ANON), 2);
}

static void test_pressure_memavailable(void **state) {
        struct sim *s = *state;
        struct workload low = anon_hot, edge = anon_hot, unknown = anon_hot;
        low.avail_pct = 5;
        edge.avail_pct = 10;
        unknown.no_meminfo = true;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        sim_run(s, &edge, 20); /* at the limit is not below it */
        sim_run(s, &unknown, 20);
        assert_int_equal(level(s, MTHP_ANON), 3);
        sim_step(s, &low);
        assert_int_equal(level(s, MTHP_ANON), 3);
        sim_step(s, &low);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_contains(kind_reason(s, MTHP_ANON), "MemAvailable 5.0% < 10%");
        sim_run(s, &low, 50);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->ups[MTHP_ANON], 3);
}

/* ---- fragmentation ---- */

static void test_fragmentation(void **state) {
        struct sim *s = *state;
        struct workload frag = anon_hot, some = anon_hot;
        frag.fail = 0.8;
        some.fail = 0.3;
        uint64_t t = sim_climb(s, &anon_hot, MTHP_ANON, 3);
        /* fallbacks below the limit are the price of large folios */
        sim_run(s, &some, 30);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_float_equal(s->expect[MTHP_ANON].fallback_pct, 30, 1e-6);
        assert_true(s->tick > t + s->cfg.dwell_ticks);

        sim_step(s, &frag);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_contains(kind_reason(s, MTHP_ANON), "80% of anon mTHP faults at 64K fall back (>= 50%)");
        t = s->last_change[MTHP_ANON];
        /* a fragmentation step waits for dwell */
        while (s->tick < t + s->cfg.dwell_ticks) {
                sim_step(s, &frag);
                assert_int_equal(level(s, MTHP_ANON), 2);
        }
        sim_step(s, &frag);
        assert_int_equal(level(s, MTHP_ANON), 1);
        assert_int_equal(s->last_change[MTHP_ANON], t + s->cfg.dwell_ticks);
}

static void test_fragmentation_needs_volume(void **state) {
        struct sim *s = *state;
        /* 90% fail, but 8 attempts per second are noise, not a trend */
        struct workload trickle = { .pages = { [MTHP_ANON] = 10 }, .fail = 0.9 };
        s->cfg.lower_fault_rate = 1;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        for (int i = 0; i < 50; i++) {
                sim_step(s, &trickle);
                assert_false(s->expect[MTHP_ANON].fallback_counted);
                assert_true(s->expect[MTHP_ANON].fallback_pct > 80);
        }
        assert_int_equal(level(s, MTHP_ANON), 3);
        /* the same ratio at volume steps down */
        trickle.pages[MTHP_ANON] = 100000;
        sim_step(s, &trickle);
        assert_int_equal(level(s, MTHP_ANON), 2);
}

static void test_fragmentation_blocks_raise(void **state) {
        struct sim *s = *state;
        struct workload frag = anon_hot;
        frag.fail = 0.8;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        sim_run(s, &anon_hot, s->cfg.dwell_ticks);
        sim_step(s, &frag);
        uint64_t t = s->last_change[MTHP_ANON];
        assert_int_equal(t, s->tick - 1);
        assert_int_equal(level(s, MTHP_ANON), 2);
        /* fallbacks while dwelling build no raise streak ... */
        while (s->tick < t + s->cfg.dwell_ticks)
                sim_step(s, &frag);
        assert_int_equal(s->st.kind[MTHP_ANON].raise_streak, 0);
        /* ... and when they stop, the level that failed stays barred for a
         * backoff (4 x dwell), then a raise still needs its confirmation */
        sim_step(s, &anon_hot);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_contains(kind_reason(s, MTHP_ANON), "barred");
        while (s->tick < t + 4 * s->cfg.dwell_ticks) {
                sim_step(s, &anon_hot);
                assert_int_equal(level(s, MTHP_ANON), 2);
        }
        sim_run(s, &anon_hot, s->cfg.confirm_ticks + 1);
        assert_int_equal(level(s, MTHP_ANON), 3);
}

/* ---- lowering ---- */

static void test_lower(void **state) {
        struct sim *s = *state;
        static const struct workload warm = { .pages = { [MTHP_ANON] = 3000 } };
        sim_climb(s, &anon_hot, MTHP_ANON, 2);
        sim_run(s, &warm, 20); /* between the thresholds: hold */
        assert_int_equal(level(s, MTHP_ANON), 2);
        sim_run(s, &idle, 9);
        assert_int_equal(level(s, MTHP_ANON), 2);
        sim_step(s, &warm); /* resets the idle streak */
        sim_run(s, &idle, 9);
        assert_int_equal(level(s, MTHP_ANON), 2);
        sim_step(s, &idle);
        assert_int_equal(level(s, MTHP_ANON), 1);
        assert_contains(kind_reason(s, MTHP_ANON), "anon fault demand 1000 pages/s < 2500 for 10 ticks: step down");
        /* the next step needs a fresh streak */
        sim_run(s, &idle, 9);
        assert_int_equal(level(s, MTHP_ANON), 1);
        sim_step(s, &idle);
        assert_int_equal(level(s, MTHP_ANON), 0);
        sim_run(s, &idle, 50);
        assert_int_equal(changes(s, MTHP_ANON), 4);
}

/* ---- no flapping ---- */

static void test_no_flap_oscillation(void **state) {
        struct sim *s = *state;
        static const double around[][2] = { { 24000, 26000 }, { 20000, 30000 }, { 13000, 37000 }, { 5000, 45000 } };
        for (size_t a = 0; a < ELEMENTSOF(around); a++)
                for (unsigned period = 1; period <= 12; period++)
                        for (unsigned high = 1; high < 2 * period; high++) {
                                sim_init(s);
                                for (unsigned t = 0; t < 200; t++) {
                                        bool up = t % (2 * period) < high;
                                        struct workload w = { .pages = { around[a][up], around[a][!up] / 4 } };
                                        sim_step(s, &w);
                                }
                                for (int kind = 0; kind < _MTHP_KIND_MAX; kind++)
                                        if (changes(s, kind) > 3)
                                                fail_msg("%s flaps: %u changes with demand %.0f/%.0f, period %u, %u high",
                                                         mthp_kind_name(kind), changes(s, kind), around[a][1],
                                                         around[a][0], 2 * period, high);
                        }

        /* noise: a deterministic walk between 50% and 150% of raise_fault_rate */
        sim_init(s);
        uint32_t x = 12345;
        for (unsigned t = 0; t < 200; t++) {
                x = x * 1103515245u + 12345u;
                struct workload w = { .pages = { [MTHP_ANON] = 12500 + (double) (x >> 8 & 0xffff) / 65535 * 25000 } };
                sim_step(s, &w);
        }
        assert_true(changes(s, MTHP_ANON) <= 3);
        assert_true(changes(s, MTHP_SHMEM) <= 3);
}

static void test_no_flap_steady(void **state) {
        struct sim *s = *state;
        static const struct workload both = { .pages = { 60000, 60000 } };
        const struct workload *ws[] = { &anon_hot, &shmem_hot, &both };
        for (size_t i = 0; i < ELEMENTSOF(ws); i++) {
                sim_init(s);
                sim_run(s, ws[i], 200);
                for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                        assert_true(changes(s, kind) <= 3);
                        if (ws[i]->pages[kind] > 0) {
                                assert_int_equal(level(s, kind), 3);
                                assert_int_equal(s->downs[kind], 0);
                        }
                }
        }
}

static void test_no_flap_folio_pages(void **state) {
        struct sim *s = *state;
        /* above raise, but a 16th of it is below lower: counting pgfault
         * events instead of pages would step back down and flap */
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct workload w = { 0 };
                w.pages[kind] = 30000;
                sim_init(s);
                sim_run(s, &w, 200);
                assert_int_equal(level(s, kind), 3);
                assert_int_equal(s->ups[kind], 3);
                assert_int_equal(s->downs[kind], 0);
                assert_float_equal(s->snap.vm[MTHP_VM_PGFAULT].rate, 30000.0 / 16, 1e-6);
                assert_float_equal(s->snap.fault_pages_rate, 30000, 1e-6);
                assert_contains(kind_reason(s, kind), "demand 30000 pages/s");
        }
}

/* ---- purity ---- */

static void test_purity(void **state) {
        struct sim *s = *state;
        struct workload w = anon_hot;
        w.psi_some = 12;
        sim_climb(s, &anon_hot, MTHP_ANON, 2);
        sim_step(s, &w); /* streaks in flight */
        kernel_model(s, &w, &s->snap);

        const struct mthp_engine_config cfg = s->cfg;
        struct mthp_caps *caps = malloc(sizeof(*caps));
        struct mthp_snapshot *snap = malloc(sizeof(*snap));
        assert_non_null(caps);
        assert_non_null(snap);
        *caps = s->caps;
        *snap = s->snap;
        const struct mthp_engine_state prev = s->st;
        struct mthp_engine_state next[2];
        struct mthp_decision out[2][MTHP_KNOBS_MAX];
        int n[2];
        memset(next, 0, sizeof(next));
        memset(out, 0, sizeof(out));
        for (int i = 0; i < 2; i++)
                n[i] = mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &s->st, &next[i], out[i], MTHP_KNOBS_MAX);
        assert_int_equal(n[0], n[1]);
        assert_memory_equal(&next[0], &next[1], sizeof(next[0]));
        assert_memory_equal(out[0], out[1], sizeof(out[0]));
        assert_int_equal(next[0].kind[MTHP_ANON].level, 1); /* the call did act */
        assert_memory_equal(&prev, &s->st, sizeof(prev));
        assert_memory_equal(&cfg, &s->cfg, sizeof(cfg));
        assert_memory_equal(caps, &s->caps, sizeof(*caps));
        assert_memory_equal(snap, &s->snap, sizeof(*snap));
        free(caps);
        free(snap);
}

/* ---- regressions: each was a flaw found in the first engine ---- */

/* Fragmentation at 64K only: the engine steps down, fallbacks vanish, the
 * raise streak builds during dwell and it climbs straight back. */
static void known_fragmentation_flap(void **state) {
        struct sim *s = *state;
        struct workload w = anon_hot;
        w.fail = 1;
        w.fail_min_kb = 64;
        /* retrying is fine, but the bar on the failing level must grow:
         * after the first 100 ticks at most one retry (up + down) */
        sim_run(s, &w, 100);
        unsigned first = changes(s, MTHP_ANON);
        sim_run(s, &w, 100);
        if (changes(s, MTHP_ANON) - first > 2)
                fail_msg("anon changed level %u times in ticks 100-200 (%u in the first 100)",
                         changes(s, MTHP_ANON) - first, first);
}

/* A workload that runs the host short of memory only with 64K folios: step
 * down on MemAvailable, relief, raise again after dwell, and so on. */
static void known_pressure_flap(void **state) {
        struct sim *s = *state;
        struct workload w = anon_hot;
        w.bloat_kb = 64;
        w.bloat_avail_pct = 5;
        /* retrying is fine, but the bar on the failing level must grow:
         * after the first 100 ticks at most one retry (up + down) */
        sim_run(s, &w, 100);
        unsigned first = changes(s, MTHP_ANON);
        sim_run(s, &w, 100);
        if (changes(s, MTHP_ANON) - first > 2)
                fail_msg("anon changed level %u times in ticks 100-200 (%u in the first 100)",
                         changes(s, MTHP_ANON) - first, first);
}

/* 90% of 64K attempts fail, but each failure then succeeds at 32K, so the
 * kind-wide ratio fallback/(alloc+fallback) reads 47% and never trips 50%. */
static void known_fallback_ratio_diluted(void **state) {
        struct sim *s = *state;
        struct workload w = anon_hot;
        w.fail = 0.9;
        w.fail_min_kb = 64;
        sim_run(s, &w, 100);
        if (level(s, MTHP_ANON) == 3)
                fail_msg("64K stays enabled while 90%% of its attempts fail: %s", kind_reason(s, MTHP_ANON));
}

/* 4K faults count for both kinds: an anon-only workload enables shmem
 * sizes too, until anon's large folios explain the faults. */
static void known_anon_faults_raise_shmem(void **state) {
        struct sim *s = *state;
        sim_run(s, &anon_hot, 200);
        if (changes(s, MTHP_SHMEM) > 0)
                fail_msg("an anon-only workload moved shmem %u times (%u up, %u down)", changes(s, MTHP_SHMEM),
                         s->ups[MTHP_SHMEM], s->downs[MTHP_SHMEM]);
}

/* A size leaving the ladder (AnonSizes narrowed on reload) gets no decision
 * any more, so the "always" the engine wrote there is never given back. */
static void known_ladder_shrink_orphans_knob(void **state) {
        struct sim *s = *state;
        sim_climb(s, &anon_hot, MTHP_ANON, 3);
        s->cfg.max_kb[MTHP_ANON] = 32;
        sim_run(s, &anon_hot, 5);
        int k64 = s->caps.sizes[size_index(&s->caps, 64)].knob[MTHP_ANON];
        if (strcmp(s->knob[k64], "always") == 0)
                fail_msg("64K/anon left at \"always\" after it left the ladder (%d decisions, none for it)", s->n_dec);
}

/* ---- density: what the sampler saw decides how far to go ---- */

static void dens_proc(struct mthp_proc_density *p, int pid, double cov_16k, double zero) {
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

/* How many blocks of every size a sample saw: its weight in the memory. */
static void set_blocks(struct mthp_proc_density *p, double n) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                        p->blocks[k][i] = n;
}

static void wide(struct sim *s) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->cfg.max_kb[k] = 2048; /* the shipped ladder */
}

static void test_density_dense_jumps(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        /* tick 0 has no rates; tick 1's sample of a densely faulting process
         * is the confirmation (DensityConfirmTicks=1): the raise lands there */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_contains(kind_reason(s, MTHP_ANON), "raise to 2M (probe)");
        assert_contains(kind_reason(s, MTHP_ANON), "pid 100 (proc100");
        /* it verifies (allocations at 2M) and then holds, for good */
        sim_run(s, &w, 100);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(changes(s, MTHP_ANON), 1);
        assert_int_equal(level(s, MTHP_SHMEM), 0); /* an anon process does not raise shmem */
}

static void test_density_sparse_holds(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 200, 0.25, 0); /* one page per 64K: 0.25 of 16K, 1/16 of 64K */
        w.dens = &v;
        sim_run(s, &w, 60);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 200 (proc200");
        assert_contains(kind_reason(s, MTHP_ANON), "uses 0.25 of each 16K block");
}

/* fork+exec keeps the pid and changes comm: a new process, in the slot of
 * the old one. mthpd crashed on the real host here (sigterm-restore, 1 run in
 * ~20): a match in slot 0 with another comm left no slot to reuse. */
static unsigned slots_of(const struct sim *s, int pid, const char **comm) {
        unsigned n = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (s->st.proc[j].pid == pid) {
                        n++;
                        *comm = s->st.proc[j].comm;
                }
        return n;
}

static void test_density_pid_exec_reuses_slot(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = MTHP_DENSITY_PROCS };
        struct workload w = anon_hot;
        const char *comm = NULL;
        const int base = 800, n = MTHP_ENGINE_PROCS;
        wide(s);
        w.dens = &v;
        /* fill every slot the engine has: two ticks of 8 shells */
        for (int half = 0; half < n / MTHP_DENSITY_PROCS; half++) {
                for (int i = 0; i < MTHP_DENSITY_PROCS; i++) {
                        dens_proc(&v.proc[i], base + half * MTHP_DENSITY_PROCS + i, 1, 0);
                        snprintf(v.proc[i].comm, sizeof(v.proc[i].comm), "sh");
                }
                sim_step(s, &w);
        }
        for (int j = 0; j < n; j++)
                assert_int_not_equal(s->st.proc[j].pid, 0);
        /* the second eight exec a sparse workload under their pids, the
         * one in slot 0 (the last one placed) first */
        assert_int_equal(s->st.proc[0].pid, base + n - 1);
        for (int i = 0; i < MTHP_DENSITY_PROCS; i++)
                dens_proc(&v.proc[i], base + n - 1 - i, 0.25, 0);
        sim_step(s, &w);
        for (int i = 0; i < n; i++)
                assert_int_equal(slots_of(s, base + i, &comm), 1); /* the others are kept */
        char want[16];
        for (int i = MTHP_DENSITY_PROCS; i < n; i++) {
                slots_of(s, base + i, &comm);
                snprintf(want, sizeof(want), "proc%d", base + i);
                assert_string_equal(comm, want);
        }
        /* what the shells did is forgotten: the sparse processes hold anon back */
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 8");
}

static void test_density_mixed_sparse_wins(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 300, 1, 0);
        dens_proc(&v.proc[1], 301, 1, 0);
        v.proc[1].coverage[MTHP_ANON][3] = 0.5; /* 64K: half used, x2 RSS > MaxBloat 20% */
        for (unsigned i = 4; i < MTHP_SIZES_MAX; i++)
                v.proc[1].coverage[MTHP_ANON][i] = 0.5 / (1u << (i - 3));
        w.dens = &v;
        sim_run(s, &w, 30);
        /* 16K and 32K are dense for both: allowed; 64K is held back by 301 */
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 301");
        assert_contains(kind_reason(s, MTHP_ANON), "uses 0.50 of each 64K block");
}

static void test_density_bloat_steps_down_fast(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, sparse = dense;
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&dense.proc[0], 400, 1, 0);
        /* with 2M folios pagemap shows every page present; 15 of 16 are zero */
        dens_proc(&sparse.proc[0], 400, 1, 15.0 / 16);
        w.dens = &dense;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
        w.dens = &sparse;
        /* the next tick, no dwell: bloat costs memory now (a full-weight
         * sample this far from the memory restarts it) */
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "MaxBloat 20%");
        uint64_t down = s->last_change[MTHP_ANON];
        /* dense again: back up after dwell + confirmation, not barred */
        w.dens = &dense;
        while (level(s, MTHP_ANON) == 0 && s->tick < down + 20)
                sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_true(s->last_change[MTHP_ANON] <= down + s->cfg.dwell_ticks);
}

/* As the daemon runs it: the tick samples density only when
 * mthp_engine_wants_density says so (on the snapshot before density).
 * Returns whether it sampled. */
static bool sim_step_sampled(struct sim *s, const struct workload *w) {
        struct workload blind = *w;
        struct mthp_snapshot pre;
        blind.dens = NULL;
        kernel_model(s, &blind, &pre);
        bool want = mthp_engine_wants_density(&s->cfg, &pre, &s->st);
        sim_step(s, want ? w : &blind);
        return want;
}

/* Density back-off: once a raised level has held with nothing pending, the
 * sampler (most of a raised tick's CPU: 2-5 ms of CPU a tick under pgbench)
 * runs every MTHP_ENGINE_DENSITY_EVERY ticks instead of every tick. */
static void test_density_backoff_steady(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 400, 1, 0);
        w.dens = &v;
        for (unsigned i = 0; i < 5; i++)
                (void) sim_step_sampled(s, &w); /* raise and verify */
        assert_int_equal(level(s, MTHP_ANON), 8);
        unsigned sampled = 0;
        for (unsigned i = 0; i < 60; i++)
                sampled += sim_step_sampled(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(changes(s, MTHP_ANON), 1);
        /* the first MTHP_ENGINE_STEADY_TICKS in full, then one in DENSITY_EVERY */
        if (sampled > MTHP_ENGINE_STEADY_TICKS + 60 / MTHP_ENGINE_DENSITY_EVERY + 1)
                fail_msg("density sampled on %u of 60 steady ticks", sampled);
        assert_true(mthp_engine_density_steady(&s->cfg, &s->snap, &s->st));
        /* never more than DENSITY_EVERY - 1 ticks without a sample: the
         * process stays remembered (PROC_RECENT_TICKS) */
        assert_true(s->snap.tick < s->st.density_tick + MTHP_ENGINE_DENSITY_EVERY);
        assert_contains(kind_reason(s, MTHP_ANON), "in use");
}

/* Back to every tick on a change: the host's faults jump, pressure. */
static void test_density_backoff_wakes(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 410, 1, 0);
        w.dens = &v;
        for (unsigned i = 0; i < 40; i++)
                (void) sim_step_sampled(s, &w);
        assert_true(mthp_engine_density_steady(&s->cfg, &s->snap, &s->st));
        struct mthp_snapshot x = s->snap;
        x.tick = s->st.density_tick + 1;   /* a tick the back-off would skip */
        assert_false(mthp_engine_wants_density(&s->cfg, &x, &s->st));
        x.fault_pages_rate = 3 * s->st.density_rate + 100000;   /* a new process faults */
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &s->st));
        x = s->snap;
        x.tick = s->st.density_tick + 1;
        x.psi.present = true;
        x.psi.some_avg10 = s->cfg.psi_some_max;
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &s->st));
        x = s->snap;
        x.tick = s->st.density_tick + 1;
        x.mem.available_kb = 0;
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &s->st));
        /* a level change restarts the steady count */
        struct mthp_engine_state st = s->st;
        st.steady_ticks = MTHP_ENGINE_STEADY_TICKS - 1;
        x = s->snap;
        x.tick = s->st.density_tick + 1;
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &st));
        /* a sampled process near its cgroup's limit: every tick */
        st = s->st;
        st.density_alert = true;
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &st));
        /* a faulting process awaiting its fault samples (split between the
         * kinds only on a density tick): a tick that skips density ends
         * the steady count, so the next one samples */
        st = s->st;
        unsigned pending = MTHP_ENGINE_PROCS;
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS && pending == MTHP_ENGINE_PROCS; i++)
                if (st.proc[i].pid == 410)
                        pending = i;
        assert_true(pending < MTHP_ENGINE_PROCS);
        st.proc[pending].fs_pending = true;
        st.proc[pending].seen_tick = st.tick;
        x = s->snap;
        x.tick = s->st.tick + 1;
        x.density.valid = false;
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        (void) mthp_engine_decide(&s->cfg, &s->caps, &x, &st, &next, dec, MTHP_KNOBS_MAX);
        assert_int_equal(next.steady_ticks, 0);
        x.tick++;
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &next));
}

/* The bloat guard under the back-off: a sparse process that takes a dense
 * one's place without the host's fault rate showing it, right after a
 * sample, is stepped down within PROC_RECENT_TICKS (3) ticks, as when
 * every tick samples (the dense one's memory counts that long either way). */
static void test_density_backoff_sparse_arrives(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, sparse = dense;
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&dense.proc[0], 420, 1, 0);
        dens_proc(&sparse.proc[0], 421, 1, 15.0 / 16); /* with 2M folios: 15 of 16 pages zero */
        w.dens = &dense;
        for (unsigned i = 0; i < 40; i++)
                (void) sim_step_sampled(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_true(mthp_engine_density_steady(&s->cfg, &s->snap, &s->st));
        while (s->st.density_tick != s->tick - 1)
                (void) sim_step_sampled(s, &w);
        uint64_t arrive = s->tick;
        w.dens = &sparse;
        while (level(s, MTHP_ANON) == 8 && s->tick < arrive + 10)
                (void) sim_step_sampled(s, &w);
        assert_true(level(s, MTHP_ANON) < 8);
        if (s->last_change[MTHP_ANON] > arrive + 3)
                fail_msg("stepped down %llu ticks after a sparse process arrived",
                         (unsigned long long) (s->last_change[MTHP_ANON] - arrive));
        assert_contains(kind_reason(s, MTHP_ANON), "pid 421");
        /* a step down: back to every tick */
        assert_true(sim_step_sampled(s, &w));
}

static void test_density_probe_fails_reverts(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 500, 1, 0);
        w.dens = &v;
        w.never_kb = 1024; /* the kernel never tries 1M or 2M here */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 8);
        sim_run(s, &w, s->cfg.verify_ticks);
        /* 512K is the largest size the kernel used: back to it, not to 4K */
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_contains(kind_reason(s, MTHP_ANON), "probe of anon 2M failed");
        assert_contains(kind_reason(s, MTHP_ANON), "back to 512K");
        /* barred: no retry of 1M or 2M for a while */
        sim_run(s, &w, 15);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_int_equal(changes(s, MTHP_ANON), 2);
}

/* ---- shmem as it really behaves: a raise that cannot reach a mapping ---- */

static const struct mthp_decision *size_decision(const struct sim *s, enum mthp_kind kind, unsigned kb) {
        int knob = s->caps.sizes[size_index(&s->caps, kb)].knob[kind];
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == knob)
                        return &s->dec[i];
        fail_msg("no decision for %uK", kb);
        return NULL;
}

/* A dense shmem faulter whose largest shared mapping is 2 GiB at addr. */
static void shm_proc(struct mthp_proc_density *p, int pid, uint64_t addr, unsigned align_kb, uint8_t reach) {
        dens_proc(p, pid, 1, 0);
        p->rss_kb[MTHP_ANON] = 0; /* a pure shmem faulter: demand is all shmem */
        p->rss_kb[MTHP_SHMEM] = 2000000;
        p->shm = (struct mthp_shm_mapping) { .addr = addr, .bytes = 2ULL << 30, .align_kb = align_kb, .reach = reach };
}

/* Issue 12, item 2: a postgres-like process holds 2 GB of shared buffers
 * and 16 MiB of heap and faults only its heap. Split by memory held, 99% of
 * its faults read as shmem demand and raise shmem; its sampled fault
 * addresses say they are anon, and only anon is raised. */
static void test_fault_samples_split_demand(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 800, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 2000000;
        v.proc[0].fault_samples[MTHP_ANON] = 40;
        w.dens = &v;
        assert_true(sim_climb(s, &w, MTHP_ANON, 8) <= 2);   /* 2M at once: dense */
        /* the reason says the split came from the samples */
        assert_contains(kind_reason(s, MTHP_ANON), "pid 800 (proc800, 50000 faults/s, 100% of them anon by fault address)");
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* too few samples (a process sampled once, 4 faults seen; they add
         * up until there are 8): by memory held again, as before sampling
         * existed */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 4;
        v.proc[0].rss_kb[MTHP_ANON] = 0;   /* by memory held, all shmem */
        w = shmem_hot;
        w.dens = &v;
        sim_run(s, &w, 1);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_SHMEM) > 0);
}

/* Sampling starts when a process holding shared memory is first seen: until
 * its samples are in, its faults are no kind's demand (by memory held they
 * would raise shmem at once). */
static void test_fault_samples_pending_waits(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 802, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 2000000;
        w.dens = &v;
        w.demand_unmodelled = true;   /* the model splits by memory */
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        assert_contains(kind_decisions(s, MTHP_SHMEM)->reason, "demand 0 pages/s");
        assert_contains(kind_decisions(s, MTHP_ANON)->reason, "demand 0 pages/s");
        w.demand_unmodelled = false;
        v.proc[0].fault_samples[MTHP_ANON] = 30;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_ANON) > 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* holding shared memory and, at the instant its status was read,
         * no anon (a heap unmapped between two passes of a churn loop):
         * memory held would call every fault shmem; it waits as well */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].rss_kb[MTHP_ANON] = 0;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        assert_contains(kind_decisions(s, MTHP_SHMEM)->reason, "demand 0 pages/s");
        /* samples that never come: its faults stay no kind's demand
         * (test_fault_samples_never_enough) */
        sim_run(s, &w, 8);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        w.demand_unmodelled = false;
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        /* a process holding no shared memory is split by memory as before */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].rss_kb[MTHP_SHMEM] = 0;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_ANON) > 0);
}

/* Samples that never reach 8 (its faults fell 150-fold once anon went to
 * 2M, before they were in; or a small share of a busy host's faults): its
 * faults hold a raise back but never cause one. Split by memory held after
 * 3 ticks of waiting, as mthpd did, the fault-kinds workload (1 GiB of
 * shmem held, only its heap faulting) read as 456,337 pages/s of shmem
 * demand and every shmem size was raised for it (realkernel fault-kinds,
 * CI: 1 run in 12 here). A process holding no shared memory beside it
 * still raises anon. */
static void test_fault_samples_never_enough(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        /* anon kept at 4K, so its 4K faults stay demand and only their split
         * is judged */
        s->cfg.max_kb[MTHP_ANON] = 8;
        dens_proc(&v.proc[0], 806, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 3;     /* a few a tick: 6 at most, decayed */
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 12);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        assert_contains(kind_reason(s, MTHP_SHMEM), "demand 0 pages/s");
        /* beside it, a process holding no shared memory raises anon with
         * its own faults, split by memory */
        sim_init(s);
        wide(s);
        v.n_procs = 2;
        dens_proc(&v.proc[1], 807, 1, 0);
        sim_run(s, &w, 6);
        assert_true(level(s, MTHP_ANON) > 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* without sampling (no perf) the split is by memory held, as before */
        sim_init(s);
        wide(s);
        s->cfg.max_kb[MTHP_ANON] = 8;
        v.fault_sampling = false;
        v.n_procs = 1;
        sim_run(s, &w, 4);
        assert_true(changes(s, MTHP_SHMEM) > 0);
}

/* A few samples a tick (one of many faulting processes, or a busy host):
 * halved each tick, 3 a tick never reach 8 (6 at most), and a PostgreSQL
 * backend faulting only its shared buffers would never count, its faults
 * still weighing against shmem's share (review of f5236ee). Until they
 * have split its faults they add up: 8 in all, and shmem is raised. */
static void test_fault_samples_add_up(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        dens_proc(&v.proc[0], 808, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_SHMEM] = 3;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);   /* 3, 6, then 8 (9 kept at 8): known at the third */
        int j = -1;
        for (int i = 0; i < MTHP_ENGINE_PROCS; i++)
                if (s->st.proc[i].pid == 808)
                        j = i;
        assert_true(j >= 0 && s->st.proc[j].fs_known);
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_SHMEM) > 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        /* while it waited, explain named it */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_SHMEM] = 0;
        sim_run(s, &w, 2);
        assert_contains(kind_reason(s, MTHP_SHMEM),
                        "pid 808 (proc808) left out: fault kind not known yet (0 of 8 samples)");
}

/* A process whose faults move from its heap to its shared memory, with 2
 * samples a tick: halved outright they fall below 8 two ticks after the
 * move and the split froze at 80% anon, for good; kept at 8 or more they
 * follow the move, and shmem is raised (review of 8bca85c). */
static void test_fault_samples_split_follows(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        s->cfg.max_kb[MTHP_ANON] = 8;   /* anon is not judged */
        dens_proc(&v.proc[0], 809, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 16;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 1);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].fault_samples[MTHP_SHMEM] = 2;
        sim_run(s, &w, 12);
        assert_true(level(s, MTHP_SHMEM) > 0);
}

/* explain's left-out line: whole entries, the most faulting first, then
 * "and N more" (six processes waiting for their fault samples; three were
 * cut mid-word in its 240 bytes before). */
static void test_left_out_line(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 6 };
        struct workload w = shmem_hot;
        wide(s);
        for (int i = 0; i < 6; i++) {
                dens_proc(&v.proc[i], 901 + i, 1, 0);
                v.proc[i].fault_rate = 10000 + 1000 * i;
                v.proc[i].rss_kb[MTHP_SHMEM] = 1 << 20;
        }
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 2);
        const char *r = kind_reason(s, MTHP_SHMEM);
        const char *a = strstr(r, "pid 906 (proc906) left out: fault kind not known yet (0 of 8 samples); "
                                  "pid 905 (proc905) left out");
        if (!a)
                fail_msg("not most faulting first: %s", r);
        assert_contains(r, "pid 904 (proc904) left out: fault kind not known yet (0 of 8 samples); and 3 more");
        assert_null(strstr(r, "proc903"));
}

/* Once its samples have split a process's faults, that split stands while
 * too few come in: after anon went to 2M its fault rate fell 150-fold and
 * its samples with it (realkernel fault-kinds, a heap churned beside 1 GiB
 * of shmem), and once it had waited 3 ticks its faults were split by
 * memory held, all shmem's: every shmem size was raised (CI, once). */
static void test_fault_samples_last_split_stands(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        /* anon kept at 4K (no anon size allowed), so its 4K faults stay
         * demand and only their split is judged */
        s->cfg.max_kb[MTHP_ANON] = 8;
        dens_proc(&v.proc[0], 805, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 40;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        v.proc[0].fault_samples[MTHP_ANON] = 0;   /* none come in any more */
        sim_run(s, &w, 8);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        assert_contains(kind_reason(s, MTHP_SHMEM), "demand 0 pages/s");
}

/* A process waiting for its samples has no say on demand, but its density
 * still counts (by memory held): a sparse one holds back a raise that a
 * dense neighbour's demand asks for, from its first tick. */
static void test_fault_samples_pending_density_counts(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 803, 1, 0);          /* dense, anon only: the demand */
        dens_proc(&v.proc[1], 804, 0.1, 0);        /* sparse, holds 2 MiB of shmem too */
        v.proc[1].rss_kb[MTHP_SHMEM] = 2048;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        int j = -1;
        for (int i = 0; i < MTHP_ENGINE_PROCS; i++)
                if (s->st.proc[i].pid == 804)
                        j = i;
        assert_true(j >= 0 && s->st.proc[j].fs_pending);
        if (level(s, MTHP_ANON) == 8)
                fail_msg("raised anon to 2M over a sparse process waiting for its fault samples");
}

/* Samples in files, text or nh mappings are no size's faults: a process
 * whose faults are all there asks for nothing, whatever it holds. */
static void test_fault_samples_other_ask_nothing(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = { .pages = { [MTHP_ANON] = 0 } };
        wide(s);
        dens_proc(&v.proc[0], 801, 1, 0);
        v.proc[0].fault_samples_other = 50;
        w.dens = &v;
        w.optout_pages[MTHP_ANON] = 100000;   /* 4K faults the kernel counts, of no kind */
        sim_run(s, &w, 4);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* PostgreSQL under a late raise: its segment was mapped while shmem mTHP
 * was off, at an address aligned for 8K only. The kernel gives it no
 * larger folio; the reason must say so, not "in use". */
static void test_shmem_misaligned_segment_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 700, 0x7f0000002000ULL, 8, MTHP_SHM_PER_SIZE);
        w.dens = &v;
        w.never_kb = 16; /* what the kernel does with it: nothing above 8K */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        const char *r = size_decision(s, MTHP_SHMEM, 64)->reason;
        if (strstr(r, "64K in use"))
                fail_msg("claims a size the mapping cannot get is in use: %s", r);
        assert_contains(r, "64K always, but pid 700 (proc700)'s 2048 MiB segment at 0x7f0000002000 is not "
                           "64K-aligned (its address allows 8K)");
        assert_contains(r, "restart it");
        /* caught between two mappings, its 4K control page is its largest:
         * the segment is still what it maps */
        struct mthp_shm_mapping seg = v.proc[0].shm;
        v.proc[0].shm = (struct mthp_shm_mapping) { .addr = 0x7f0000900000ULL, .bytes = 4096, .align_kb = 4,
                                                    .reach = MTHP_SHM_PER_SIZE };
        sim_step(s, &w);
        assert_contains(size_decision(s, MTHP_SHMEM, 64)->reason, "segment at 0x7f0000002000 is not 64K-aligned");
        v.proc[0].shm = seg;
        /* the probe fails (verify_ticks after the raise) and its reason
         * names the cause */
        sim_run(s, &w, s->cfg.verify_ticks - 1);
        assert_contains(kind_reason(s, MTHP_SHMEM), "probe of shmem 2M failed");
        assert_contains(kind_reason(s, MTHP_SHMEM), "is not 2M-aligned");
}

/* The page cache of an aligned mapping filled before the raise: 4K folios
 * stay (page_fault3 on a tmpfs file unlinked before mmap). Read through
 * kpageflags: what recordings made before the PMD probe covered 2M-aligned
 * mappings with PFNs carry, and kernels before 6.7. */
static void test_shmem_prefilled_cache_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 701, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        const char *r = size_decision(s, MTHP_SHMEM, 2048)->reason;
        /* the probes of the last ticks add up, the older ones at half weight */
        assert_contains(r, "2M always, but pid 701 (proc701)'s 2048 MiB segment at 0x7f0000200000 holds 4K folios "
                           "(0 of 24 sampled pages in large folios)");
        assert_contains(r, "MADV_COLLAPSE");
        /* the same with its pages in large folios: in use */
        v.proc[0].shm.large = 16;
        sim_run(s, &w, 1);
        assert_contains(size_decision(s, MTHP_SHMEM, 2048)->reason, "2M in use");
}

/* A shmem process whose faults allocate nothing is not made sparse by its
 * zeros: PostgreSQL's walwriter maps the 16 MiB of WAL buffers the server
 * zeroed at start (4,090 faults in a second, half its subpages zero, 4K
 * folios a sampler without PFNs, the unit's, cannot tell from untouched
 * subpages) while nothing of shmem is being allocated: a larger size
 * cannot cost it memory, and it stepped shmem down from 2M for the host
 * (5 of 5 pgbench -S runs under the unit's capabilities). Control: the same
 * process while its faults allocate the kind's folios steps it down. */
/* Shmem raised to 2M by a dense process (pid 900), then only pid 901
 * faults: 16 MiB, half its subpages zero. */
static void walwriter_setup(struct sim *s, struct workload *w, struct mthp_density_view *dense,
                            struct mthp_density_view *wal) {
        *w = shmem_hot;
        wide(s);
        shm_proc(&dense->proc[0], 900, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        w->dens = dense;
        assert_true(sim_climb(s, w, MTHP_SHMEM, 8) <= 2);
        shm_proc(&wal->proc[0], 901, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        wal->proc[0].fault_rate = 4000;
        wal->proc[0].rss_kb[MTHP_SHMEM] = 16384;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                wal->proc[0].zero[MTHP_SHMEM][i] = 0.5;
        w->dens = wal;
        w->pages[MTHP_SHMEM] = 4000;
        w->demand_unmodelled = true;
}

static void step_down_within(struct sim *s, struct workload *w, unsigned ticks, const char *who) {
        for (unsigned i = 0; i < ticks && level(s, MTHP_SHMEM) == 8; i++)
                sim_step(s, w);
        assert_true(level(s, MTHP_SHMEM) < 8);
        assert_contains(kind_reason(s, MTHP_SHMEM), who);
        assert_contains(kind_reason(s, MTHP_SHMEM), "MaxBloat 20%");
}

static void test_shmem_sparse_mapping_cache_keeps(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, wal = dense;
        struct workload w;
        walwriter_setup(s, &w, &dense, &wal);
        /* its 4,000 pages/s fault in no mTHP folio: the page cache is there */
        w.never_kb = 16;
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        /* the same faults allocating 2M folios: it would cost memory */
        w.never_kb = 0;
        step_down_within(s, &w, 3, "pid 901");
}

/* The host's allocations must be next to none, not only small beside the
 * objector's faults: one refaulting 100,000 pages/s while 5,000 pages/s of
 * shmem are allocated in 2M folios (under a tenth of its faults) may be
 * growing a sparse segment beside what it refaults. */
static void test_shmem_sparse_refaulter_allocating_steps_down(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, wal = dense;
        struct workload w;
        walwriter_setup(s, &w, &dense, &wal);
        wal.proc[0].fault_rate = 100000;
        w.pages[MTHP_SHMEM] = 5000;
        step_down_within(s, &w, 6, "pid 901");
}

/* The shmem repair (daemon/collapse.c) reaches the engine through the
 * snapshot, as a sampled process's shm_repaired_kb: "being repaired" while
 * the probe still sees 4K folios, "repaired" once it sees large ones; a
 * repaired mapping counts as the use of 2M for probe-then-verify (the
 * kernel allocates nothing at 2M on faults there). The engine's own state
 * is what it made of the snapshots: the same recording replays the same. */
static uint64_t repaired_kb_of(const struct sim *s, int pid) {
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (s->st.proc[j].pid == pid)
                        return s->st.proc[j].shm_repaired_kb;
        fail_msg("pid %d is not remembered", pid);
        return 0;
}

static void test_shmem_repair_comes_through_snapshot(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 703, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        w.dens = &v;
        w.never_kb = 16; /* no fault allocates a large folio there */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        v.proc[0].shm_repaired_kb = 16 * 1024;
        sim_step(s, &w);
        assert_int_equal(repaired_kb_of(s, 703), 16 * 1024);
        assert_contains(size_decision(s, MTHP_SHMEM, 2048)->reason,
                        "sampled pages in large folios): its page cache was filled before the raise; being repaired "
                        "by MADV_COLLAPSE: 16 MiB so far");
        v.proc[0].shm.large = 12;
        v.proc[0].shm_repaired_kb = 40 * 1024;
        sim_run(s, &w, s->cfg.verify_ticks + 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8); /* the probe held: the repair is the use */
        assert_contains(size_decision(s, MTHP_SHMEM, 2048)->reason,
                        "2M in use; pid 703 (proc703)'s 2048 MiB segment at 0x7f0000200000 was held at 4K folios "
                        "(page cache filled before the raise): repaired by MADV_COLLAPSE: 40 MiB");
        /* another mapping: the count is the daemon's for that one */
        v.proc[0].shm.addr = 0x7f0040000000ULL;
        v.proc[0].shm_repaired_kb = 0;
        sim_step(s, &w);
        assert_int_equal(repaired_kb_of(s, 703), 0);
}

/* The PMD probe (a 2M-aligned mapping, PFNs or not, since the kpageflags
 * probe took 512K folios for large ones) tells only PMD-mapped pages from
 * the rest: explain says the segment is not mapped by 2M folios, never that
 * it holds 4K folios, and says nothing of it for the sizes below 2M. */
static void test_shmem_pmd_probe_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 704, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        v.proc[0].shm.probe = MTHP_SHM_PROBE_PMD;
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        const char *r = size_decision(s, MTHP_SHMEM, 2048)->reason;
        assert_contains(r, "2M always, but pid 704 (proc704)'s 2048 MiB segment at 0x7f0000200000 is not mapped by 2M "
                           "folios (24 of 24 sampled pages not PMD-mapped): its page cache was filled before the raise");
        assert_null(strstr(r, "4K folios"));
        assert_null(strstr(size_decision(s, MTHP_SHMEM, 64)->reason, "PMD-mapped"));
        assert_null(strstr(size_decision(s, MTHP_SHMEM, 1024)->reason, "PMD-mapped"));
        v.proc[0].shm.large = 12;
        v.proc[0].shm_repaired_kb = 40 * 1024;
        sim_run(s, &w, 1);
        assert_contains(size_decision(s, MTHP_SHMEM, 2048)->reason,
                        "2M in use; pid 704 (proc704)'s 2048 MiB segment at 0x7f0000200000 was not mapped by 2M "
                        "folios (page cache filled before the raise): repaired by MADV_COLLAPSE: 40 MiB (12 of 28 "
                        "sampled pages now mapped by 2M folios)");
}

/* A linked /dev/shm file and a SysV segment: the per-size knobs never
 * reach them. */
static void test_shmem_tmpfs_file_and_sysv_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 702, 0x7f0000200000ULL, 2048, MTHP_SHM_TMPFS_FILE);
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        assert_contains(size_decision(s, MTHP_SHMEM, 64)->reason, "is a linked file: the per-size knobs never reach it");
        v.proc[0].shm.reach = MTHP_SHM_SYSV;
        sim_run(s, &w, 1);
        assert_contains(size_decision(s, MTHP_SHMEM, 64)->reason,
                        "SysV segment at 0x7f0000200000 takes large folios only from the global shmem_enabled");
}

static void test_density_unmeasured_capped(void **state) {
        struct sim *s = *state;
        wide(s);
        /* no density sample: climb blind, one size at a time, up to 64K */
        sim_run(s, &anon_hot, 60);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_contains(kind_reason(s, MTHP_ANON), "holding anon at 64K");
}

static void test_defrag_defer_for_large_fallbacks(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        s->cfg.max_fallback = 90; /* keep 2M while it fails a third of the time */
        dens_proc(&v.proc[0], 600, 1, 0);
        w.dens = &v;
        w.fail = 0.3;
        w.fail_min_kb = 2048;
        sim_run(s, &w, 3 + s->cfg.confirm_ticks + 1);
        assert_int_equal(level(s, MTHP_ANON), 8);
        const struct mthp_decision *d = &s->dec[s->n_dec - 1];
        assert_string_equal(d->value, "defer");
        assert_contains(d->reason, "30% of anon faults at 2M fall back");
        /* fallbacks stop: back to the administrator's value after lower_ticks */
        w.fail = 0;
        sim_run(s, &w, s->cfg.lower_ticks + 1);
        assert_string_equal(s->dec[s->n_dec - 1].value, "");
}

static void test_cgroup_headroom_steps_down(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 700, 1, 0);
        snprintf(v.proc[0].cgroup, sizeof(v.proc[0].cgroup), "/mthpd-test-limited");
        v.proc[0].cg_limit_kb = 512 * 1024;
        v.proc[0].cg_usage_kb = 300 * 1024;
        w.dens = &v;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* the cgroup fills up: step down before it hits the limit */
        v.proc[0].cg_usage_kb = 470 * 1024; /* 92% */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 7);
        assert_contains(kind_reason(s, MTHP_ANON), "cgroup /mthpd-test-limited of pid 700 at 92% of its 512 MiB limit");
        /* and on, two ticks a step, while it stays there */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 6);
}

static void test_compaction_stall_steps_down(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 800, 1, 0);
        v.proc[0].compact_ms = NAN;
        w.dens = &v;
        sim_run(s, &w, 3 + s->cfg.dwell_ticks);
        assert_int_equal(level(s, MTHP_ANON), 8);
        v.proc[0].compact_ms = 120;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 7);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 800 stalls 120 ms/s in direct compaction");
}

static void test_density_unmeasured_process_waits(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 900, 1, 0);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                        v.proc[0].coverage[k][i] = v.proc[0].zero[k][i] = NAN; /* listed, not sampled yet */
        w.dens = &v;
        /* a faulting process the sampler has not read yet may be sparse:
         * no blind climb while it is there */
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 0);
}

static void test_density_memory_outweighs_odd_sample(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, odd;
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&dense.proc[0], 1000, 1, 0);
        set_blocks(&dense.proc[0], 64);
        /* caught between two mappings: only a few sparse heap blocks */
        odd = dense;
        dens_proc(&odd.proc[0], 1000, 0.25, 0);
        set_blocks(&odd.proc[0], 2);
        w.dens = &dense;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
        for (int i = 0; i < 30; i++) {
                w.dens = i % 2 ? &odd : &dense;
                sim_step(s, &w);
        }
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(changes(s, MTHP_ANON), 1);
}

static void test_density_small_share_no_veto(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1100, 1, 0);
        dens_proc(&v.proc[1], 1101, 0.5, 0);    /* sparse, but a shell next to the workload */
        v.proc[1].fault_rate = 300;              /* 0.6% of the faults */
        /* a shell's mappings are small: no block above 64K, where it uses
         * 0.125 of each, so a raise would cost it 8 pages a fault at most
         * (counts_ahead: 2,400 pages/s, 4.8% of the kind's) */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                for (unsigned i = 4; i < MTHP_SIZES_MAX; i++)
                        v.proc[1].coverage[k][i] = v.proc[1].zero[k][i] = NAN;
        w.dens = &v;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* the same process with a real share holds the size back: the dense
         * one now faults 2M folios (2000/s = 1M pages/s), the sparse one 200k
         * 4K pages/s, 16% of the anon pages faulted in */
        v.proc[0].fault_rate = 2000;
        v.proc[1].fault_rate = 200000;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 1101");
}

/* A raise needs the faults of those it gives folios to: one dense
 * process at 15,000 pages/s while 100,000 come from processes no sample
 * judged (a shell loop's children) raises nothing, and the hold says why;
 * a second one at 15,000 makes 30,000 >= RaiseFaultRate (25,000), and anon
 * goes to 2M. */
static void test_density_raise_needs_its_faults(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1300, 1, 0);
        dens_proc(&v.proc[1], 1301, 1, 0);
        v.proc[0].fault_rate = v.proc[1].fault_rate = 15000;
        w.dens = &v;
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "no higher: the processes a raise would give folios to fault "
                                                   "15000 pages/s (the most: pid 1300 (proc1300, 15000 faults/s)), "
                                                   "a raise needs 25000");
        v.n_procs = 2;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

/* Two processes, pid dense everywhere and pid + 1 at 0.874 of each 1M
 * and 2M block (as a pgbench backend read in the first tick of a run):
 * the raise stops at 512K. */
static struct mthp_proc_density *held_at_512k(struct sim *s, struct mthp_density_view *v, struct workload *w, int pid) {
        *v = (struct mthp_density_view) { .valid = true, .n_procs = 2 };
        wide(s);
        dens_proc(&v->proc[0], pid, 1, 0);
        dens_proc(&v->proc[1], pid + 1, 1, 0);
        for (unsigned i = 0; i < MTHP_SIZES_MAX && i < s->caps.n_sizes; i++)
                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                        if (s->caps.sizes[i].kb >= 1024)
                                v->proc[1].coverage[k][i] = 0.874;
        w->dens = v;
        sim_run(s, w, 2);
        assert_int_equal(level(s, MTHP_ANON), 6);
        return &v->proc[0];
}

/* A process that has exited bars no raise. Its last sample (0.874 of each
 * 1M block, as a pgbench backend read in the first tick of a run) would
 * hold the kind at 512K for PROC_RECENT_TICKS more ticks while the others
 * read dense at 2M. Once the daemon says it is gone, the raise comes at
 * that tick. */
static void test_gone_process_bars_no_raise(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v, left = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        left.proc[0] = *held_at_512k(s, &v, &w, 1250);
        assert_contains(kind_reason(s, MTHP_ANON), "raise to 512K");
        /* 1251 no longer sampled, not said to be gone: its sample holds */
        w.dens = &left;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_contains(kind_reason(s, MTHP_ANON), "no higher: pid 1251");
        /* gone: the raise comes now */
        left.n_gone = 1;
        left.gone[0] = 1251;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 8);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                assert_int_not_equal(s->st.proc[j].pid, 1251);
        /* a gone pid sampled in the same tick (a new process there) is kept */
        struct mthp_density_view again = v;
        again.n_gone = 1;
        again.gone[0] = 1251;
        w.dens = &again;
        sim_run(s, &w, 1);
        bool kept = false;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                kept = kept || s->st.proc[j].pid == 1251;
        assert_true(kept);
}

/* A process that stopped faulting bars no raise either. The same 0.874 at
 * 1M holds anon at 512K while its remembered rate is its last sample's;
 * the /proc scan's rate this tick (rates[]) replaces it: 0 faults/s, it no
 * longer counts, the raise comes; 40,000 faults/s, it still holds. */
static void test_quiet_process_bars_no_raise(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v, left = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        left.proc[0] = *held_at_512k(s, &v, &w, 1260);
        left.n_rates = 1;
        left.rates[0] = (struct mthp_proc_rate) { .pid = 1261, .fault_rate = 40000 };
        w.dens = &left;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_contains(kind_reason(s, MTHP_ANON), "no higher: pid 1261 (proc1261, 40000 faults/s");
        left.rates[0].fault_rate = 0;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* remembered still, with its rate now */
        bool kept = false;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (s->st.proc[j].pid == 1261) {
                        kept = true;
                        assert_true(s->st.proc[j].fault_rate == 0);
                }
        assert_true(kept);
}

static void test_density_first_sight_waits(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 }, two = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        /* a new process faulting densely is evidence enough to raise */
        dens_proc(&v.proc[0], 1200, 1, 0);
        v.proc[0].new_proc = true;
        w.dens = &v;
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* a new sparse one (its rate a lifetime average) takes nothing away ... */
        two.proc[0] = v.proc[0];
        two.proc[0].new_proc = false;
        two.proc[0].fault_rate = 2000;          /* 2M folios now: 1M pages/s */
        dens_proc(&two.proc[1], 1201, 0.25, 0);
        two.proc[1].fault_rate = 200000;
        two.proc[1].new_proc = true;
        w.dens = &two;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* ... until a second sample measures its rate */
        two.proc[1].new_proc = false;
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 1201");
}

static void test_density_phase_change_is_quick(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, sparse;
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&dense.proc[0], 1300, 1, 0);
        set_blocks(&dense.proc[0], 64);
        sparse = dense;
        dens_proc(&sparse.proc[0], 1300, 0.25, 0);
        set_blocks(&sparse.proc[0], 128);
        w.dens = &sparse;
        sim_run(s, &w, 12); /* a long sparse phase: lots of memory */
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* dense again, with as many blocks: the memory starts over at once */
        w.dens = &dense;
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 8);
}


/* ---- policy files: arbitration between cgroups (mthpd.policy(5)) ---- */

static struct mthp_policy test_policies[4];
static struct mthp_policy_set test_policy_set;

static void policy_add(struct sim *s, const char *text) {
        char err[1024];
        struct mthp_policy *p = &test_policies[test_policy_set.n];
        char name[32];
        snprintf(name, sizeof(name), "p%u", test_policy_set.n);
        if (mthp_policy_load_string(name, text, p, err, sizeof(err)) < 0)
                fail_msg("policy: %s", err);
        test_policy_set.p = test_policies;
        test_policy_set.n++;
        s->cfg.policies = &test_policy_set;
}

static void cg_view(struct mthp_cgroup_view *c, const char *path, double rate) {
        memset(c, 0, sizeof(*c));
        snprintf(c->path, sizeof(c->path), "%s", path);
        c->fault_rate = rate;
        c->anon_kb = 500000;
}

/* a dense process in /dense and a sparse one in /sparse, both faulting hard */
static void two_cgroups(struct sim *s, struct mthp_density_view *v, struct mthp_cgroup_view *cg, struct workload *w) {
        wide(s);
        test_policy_set.n = 0;
        v->valid = true;
        v->n_procs = 2;
        dens_proc(&v->proc[0], 500, 1, 0);
        dens_proc(&v->proc[1], 501, 0.25, 0); /* one page in 64K */
        snprintf(v->proc[0].cgroup, sizeof(v->proc[0].cgroup), "/dense");
        snprintf(v->proc[1].cgroup, sizeof(v->proc[1].cgroup), "/sparse/job");
        cg_view(&cg[0], "/dense", 50000);
        cg_view(&cg[1], "/sparse", 50000);
        *w = anon_hot;
        w->dens = v;
        w->cgroups = cg;
        w->n_cgroups = 2;
}

static const char *knob_of(const struct sim *s, unsigned kb, enum mthp_kind kind) {
        return s->knob[s->caps.sizes[size_index(&s->caps, kb)].knob[kind]];
}

static void test_policy_high_always_outranks_never(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nPriority=80\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=20\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(changes(s, MTHP_ANON), 1);
        assert_contains(kind_reason(s, MTHP_ANON), "outranked: cgroup /sparse (50000 faults/s, policy p1: Anon=never, priority 20)");
        assert_contains(kind_reason(s, MTHP_ANON), "wanted by cgroup /dense (50000 faults/s, policy p0: Anon=always, priority 80)");
}

static void test_policy_high_never_forces_madvise(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nSizes=64K-2M\nPriority=20\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=80\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* the outranked wish becomes madvise for every size it accepts */
        assert_string_equal(knob_of(s, 16, MTHP_ANON), "madvise");
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "madvise");
        assert_contains(kind_reason(s, MTHP_ANON),
                        "held back by cgroup /sparse (50000 faults/s, policy p1: Anon=never, priority 80) accepts no "
                        "anon folios of 16K as always");
        assert_contains(kind_reason(s, MTHP_ANON), "outranked: cgroup /dense");
        /* shmem: nobody has a say there */
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_string_equal(knob_of(s, 64, MTHP_SHMEM), "never");
}

static void test_policy_tie_goes_to_smaller(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* no madvise: not outranked, a tie */
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), s->orig[s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]]);
}

static void test_policy_idle_never_has_no_say(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;          /* only the dense process faults ... */
        cg[1].fault_rate = 20;  /* ... /sparse is idle */
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=100\n");
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* it starts faulting: the next tick it holds the sizes back */
        cg[1].fault_rate = 40000;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 0);
        /* its rate is smoothed: (20 + 40000) / 2 */
        assert_contains(kind_reason(s, MTHP_ANON), "cgroup /sparse (20010 faults/s, policy p0: Anon=never, priority 100)");
}

static void test_policy_auto_own_maxbloat_and_sizes(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        /* the sparse process uses 0.25 of 16K: x4 RSS. Its policy allows x4
         * (MaxBloat=300%) up to 16K only (Sizes=16K); the dense one may go to 64K */
        v.proc[1].fault_rate = 200000; /* still >= MinProcessShare once /dense gets 64K folios */
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nMaxBloat=300%\nSizes=16K\n");
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nSizes=16K-64K\nPriority=60\n");
        sim_run(s, &w, 10);
        /* 32K: /sparse (priority 50) objects (Sizes), /dense (60) accepts: outranked;
         * 128K: /dense objects too */
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 500");
        assert_contains(kind_reason(s, MTHP_ANON), "accepts no anon folios of 128K as always");
        assert_contains(kind_reason(s, MTHP_ANON), "outranked: pid 501 (proc501, 200000 faults/s, cgroup /sparse/job, policy p0");
}

static void test_policy_madvise_cgroup(void **state) {
        struct sim *s = *state;
        struct mthp_cgroup_view cg;
        struct workload w = idle;
        wide(s);
        test_policy_set.n = 0;
        cg_view(&cg, "/jvm", 0); /* idle, but present: its madvise stands */
        w.cgroups = &cg;
        w.n_cgroups = 1;
        policy_add(s, "[Match]\nCgroup=/jvm\n[Policy]\nAnon=madvise\nShmem=madvise\nSizes=2M\n");
        sim_run(s, &w, 5);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "madvise");
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        const char *orig = s->orig[s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]];
        assert_string_not_equal(orig, "madvise");
        assert_string_equal(knob_of(s, 1024, MTHP_ANON), s->orig[s->caps.sizes[size_index(&s->caps, 1024)].knob[MTHP_ANON]]);
        /* gone: the original value comes back */
        w.n_cgroups = 0;
        sim_step(s, &w);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), orig);
}

static void test_policy_cgroup_pressure(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;
        cg[1].fault_rate = 0;
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nMaxPressure=5%\n");
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 8);
        cg[0].psi_present = true;
        cg[0].psi_some_avg10 = 7.5;
        sim_run(s, &w, 2);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_contains(kind_reason(s, MTHP_ANON), "cgroup /dense memory.pressure some 7.5% >= 5% of policy p0");
}

static void test_policy_cgroup_headroom(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        v.n_procs = 1;
        cg[1].fault_rate = 0;
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\n");
        cg[0].limit_kb = 1000000;
        cg[0].usage_kb = 500000;
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 8);
        cg[0].usage_kb = 950000; /* within CgroupHeadroom=10% of the limit */
        sim_run(s, &w, 2);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_contains(kind_reason(s, MTHP_ANON), "cgroup /dense at 95% of its 976 MiB limit");
}

/* ---- opt-outs: processes that choose for themselves (issue 14) ---- */

/* A sparse process with THP disabled for it (PR_SET_THP_DISABLE: Redis's
 * default) beside a dense one: it gets no large folio whatever the knobs
 * say, so it cannot bloat and must not hold the host back. */
static void test_optout_prctl_sparse_does_not_hold_back(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 400, 1, 0);
        dens_proc(&v.proc[1], 401, 0.25, 0);
        snprintf(v.proc[1].comm, sizeof(v.proc[1].comm), "redis-server");
        v.proc[1].thp_disabled = true;
        w.optout_pages[MTHP_ANON] = v.proc[1].fault_rate;
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 401 (redis-server) left out: THP disabled for it (prctl)");
        /* the other way round it still holds the host back */
        sim_init(s);
        wide(s);
        v.proc[1].thp_disabled = false;
        w.optout_pages[MTHP_ANON] = 0;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 401 (redis-server");
}

/* A limited cgroup whose only process opted out of THP cannot bloat: it
 * does not hold the raise back as "assumed sparse" either. */
static void test_optout_in_limited_cgroup(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 400, 1, 0);
        dens_proc(&v.proc[1], 401, 0.25, 0);
        snprintf(v.proc[1].comm, sizeof(v.proc[1].comm), "redis-server");
        snprintf(v.proc[1].cgroup, sizeof(v.proc[1].cgroup), "/lim");
        v.proc[1].thp_disabled = true;
        w.optout_pages[MTHP_ANON] = v.proc[1].fault_rate;
        struct mthp_limited_cgroup c = { .path = "/lim", .usage_kb = 64 * 1024, .limit_kb = 200 * 1024,
                                         .populated = true };
        w.limited = &c;
        w.n_limited = 1;
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* the same process not opted out: the small cgroup holds 2M back */
        sim_init(s);
        wide(s);
        v.proc[1].thp_disabled = false;
        w.optout_pages[MTHP_ANON] = 0;
        sim_run(s, &w, 30);
        assert_true(level(s, MTHP_ANON) < 8);
}

/* A process whose anon memory is mostly MADV_NOHUGEPAGE (nh) faults there,
 * where it gets no folio either: left out, named. */
static void test_optout_nohugepage_does_not_hold_back(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 410, 1, 0);
        dens_proc(&v.proc[1], 411, 0.25, 0);
        v.proc[1].nohuge_kb[MTHP_ANON] = v.proc[1].rss_kb[MTHP_ANON] * 3 / 4; /* stacks, libc beside it */
        w.optout_pages[MTHP_ANON] = v.proc[1].fault_rate;
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 411 (proc411) left out: its anon memory is mostly MADV_NOHUGEPAGE");
}

/* Faults of a process that opted out are no demand: when it alone faults,
 * nothing is raised, and the reason says who was left out. */
static void test_optout_faults_are_no_demand(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = { .optout_pages = { [MTHP_ANON] = 100000 } };
        wide(s);
        dens_proc(&v.proc[0], 420, 1, 0);
        snprintf(v.proc[0].comm, sizeof(v.proc[0].comm), "redis-server");
        v.proc[0].fault_rate = 100000;
        v.proc[0].thp_disabled = true;
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "demand 0 pages/s");
        assert_contains(kind_reason(s, MTHP_ANON), "pid 420 (redis-server) left out: THP disabled for it (prctl)");
}

/* Folios of a size at madvise go to MADV_HUGEPAGE mappings whatever mthpd
 * does (a JVM with its heap madvised, at the boot default): those faults
 * are no demand for always. */
static void test_optout_madvised_folios_are_no_demand(void **state) {
        struct sim *s = *state;
        struct workload w = { .madvised_pages = { [MTHP_ANON] = 100000 } };
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "demand 0 pages/s");
        /* beside plain memory faulting as fast, that one still raises */
        w.pages[MTHP_ANON] = 100000;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 3);
}

/* Under "madvise" values (the boot default: 2M inherit, global madvise)
 * the MADV_HUGEPAGE (hg) mappings have 2M folios already; a raise of 2M to
 * always changes only the others. A JVM-like process: a dense hg heap (950
 * of its 1000 2M blocks, full) and a sparse plain region (0.10 of each
 * block): 0.955 over all, but always at 2M would bloat its plain memory
 * ten times. */
static void test_optout_madvise_judged_without_hg(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        unsigned z = (unsigned) size_index(&s->caps, 2048);
        wide(s);
        dens_proc(&v.proc[0], 430, 1, 0);
        snprintf(v.proc[0].comm, sizeof(v.proc[0].comm), "java");
        set_blocks(&v.proc[0], 1000);
        v.proc[0].coverage[MTHP_ANON][z] = 0.955;
        v.proc[0].hg_coverage[MTHP_ANON][z] = 1.0;
        v.proc[0].hg_blocks[MTHP_ANON][z] = 950;
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 7); /* up to 1M */
        assert_contains(kind_reason(s, MTHP_ANON),
                        "held back by pid 430 (java, 50000 faults/s) uses 0.10 of each 2M block outside its "
                        "MADV_HUGEPAGE mappings");
        /* the hg heap goes away, the sparse plain memory stays: still held */
        v.proc[0].coverage[MTHP_ANON][z] = 0.10;
        v.proc[0].hg_coverage[MTHP_ANON][z] = NAN;
        v.proc[0].hg_blocks[MTHP_ANON][z] = 0;
        unsigned before = changes(s, MTHP_ANON);
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 7);
        assert_int_equal(changes(s, MTHP_ANON), before); /* no raise to 2M and back */
        assert_contains(kind_reason(s, MTHP_ANON), "uses 0.10 of each 2M block (predicted");
        v.proc[0].coverage[MTHP_ANON][z] = 0.955;
        v.proc[0].hg_coverage[MTHP_ANON][z] = 1.0;
        v.proc[0].hg_blocks[MTHP_ANON][z] = 950;
        /* with 2M "never" (no madvise) the hg heap would get 2M folios from
         * the raise too: the whole process judges, 0.955 is dense enough */
        sim_init(s);
        wide(s);
        int k2m = s->caps.sizes[z].knob[MTHP_ANON];
        snprintf(s->orig[k2m], MTHP_VALUE_MAX, "never");
        snprintf(s->knob[k2m], MTHP_VALUE_MAX, "never");
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

#define T(f) cmocka_unit_test_setup_teardown(f, sim_setup, sim_teardown)

/* ---- memory-limited cgroups (issue 16): the invariant and the guard ---- */

static struct mthp_limited_cgroup lim_600 = { .path = "/lim", .usage_kb = 2048, .limit_kb = 600 * 1024,
                                              .populated = true };

/* A dense process faulting hard; a populated 600 MiB cgroup nobody sampled. */
static void limited_setup(struct sim *s, struct mthp_density_view *v, struct workload *w, const char *dense_cg) {
        wide(s);
        memset(v, 0, sizeof(*v));
        v->valid = true;
        v->n_procs = 1;
        dens_proc(&v->proc[0], 700, 1, 0);
        snprintf(v->proc[0].cgroup, sizeof(v->proc[0].cgroup), "%s", dense_cg);
        *w = anon_hot;
        w->dens = v;
        w->limited = &lim_600;
        w->n_limited = 1;
}

static void test_limited_unknown_blocks_2m(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        sim_run(s, &w, 20);
        /* x512 of 6 MiB/tick (1% of 600 MiB) is far beyond 75% of its
         * headroom; x64 at 256K is 384 MiB, within; x128 at 512K is not */
        assert_int_equal(level(s, MTHP_ANON), 5);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_contains(kind_reason(s, MTHP_ANON), "limited cgroup /lim (usage 2 MiB, limit 600 MiB, headroom 598 MiB; "
                                                   "no sampled process: assumed sparse: x128.0 at 512K) cannot afford 512K");
        /* an unlimited host (or one whose limited cgroups are all empty) gets 2M as before */
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

static void test_limited_measured_dense_does_not_block(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/lim"); /* the dense process runs in the limited cgroup */
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "always");
}

static void test_limited_new_cgroup_steps_down_at_once(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        w.limited = NULL;
        w.n_limited = 0;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* a limited cgroup appears and fills: no dwell, no confirmation */
        struct mthp_limited_cgroup c = lim_600;
        c.usage_kb = 100 * 1024;
        w.limited = &c;
        w.n_limited = 1;
        sim_step(s, &w);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_contains(kind_reason(s, MTHP_ANON), "limited cgroup /lim (usage 100 MiB");
        assert_contains(kind_reason(s, MTHP_ANON), "step anon down from 2M to");
}

static void test_limited_policy_priority_cannot_override(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct mthp_cgroup_view cg[2];
        struct workload w;
        two_cgroups(s, &v, cg, &w);
        policy_add(s, "[Match]\nCgroup=/dense\n[Policy]\nAnon=always\nPriority=80\n");
        policy_add(s, "[Match]\nCgroup=/sparse\n[Policy]\nAnon=never\nPriority=20\n");
        /* the outranked cgroup has a limit: its memory may be traded, its process not */
        struct mthp_limited_cgroup c = { .path = "/sparse", .usage_kb = 64 * 1024, .limit_kb = 600 * 1024,
                                         .populated = true };
        w.limited = &c;
        w.n_limited = 1;
        sim_run(s, &w, 10);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_contains(kind_reason(s, MTHP_ANON), "limited cgroup /sparse (usage 64 MiB, limit 600 MiB");
        assert_contains(kind_reason(s, MTHP_ANON), "cannot afford");
}

/* An empty limited cgroup: a program may start in it and fault as fast as
 * the kernel charges; the guard stops it only past its threshold and after
 * its wake-up. A tight limit cannot take that burst's bloat (the oom-matrix
 * 'after' cells: 100 MiB cgroups, a sparse program OOM-killed under 2M). */
static void test_limited_small_empty_cgroup_blocks(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup c = { .path = "/small", .usage_kb = 0, .limit_kb = 100 * 1024 };
        w.limited = &c;
        sim_run(s, &w, 20);
        /* 25 MiB to the threshold + 32 MiB past it: x4 at 16K leaves 43 MiB of bloat > 33 */
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "limited cgroup /small (empty, usage 0 MiB, limit 100 MiB");
        assert_contains(kind_reason(s, MTHP_ANON), "a burst to the guard's threshold (25 MiB) and 32 MiB past it");
        /* 300 MiB: 75 + 32 MiB of burst, 100 MiB may be bloat: up to 32K (x8: 94 MiB) */
        c.limit_kb = 300 * 1024;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_contains(kind_reason(s, MTHP_ANON), "cannot afford 64K");
        /* 600 MiB: every size */
        c.limit_kb = 600 * 1024;
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

/* ---- the start grace (issue 12): a service's sizes before its first fault ---- */

/* An idle host; then /db appears, managed by a Shmem=always policy, with
 * no fault yet: PostgreSQL maps its shared buffers at start, and a segment
 * mapped while the size is off is never aligned for it. */
static void grace_setup(struct sim *s, struct workload *w, struct mthp_cgroup_view *cg) {
        wide(s);
        test_policy_set.n = 0;
        policy_add(s, "[Match]\nCgroup=/db\n[Policy]\nShmem=always\nSizes=64K-2M\n");
        static const struct mthp_density_view none = { .valid = true }; /* sampled: nobody faults */
        memset(w, 0, sizeof(*w));
        w->dens = &none;
        sim_run(s, w, 3);
        cg_view(cg, "/db", 0);
        cg->anon_kb = 0;
        cg->new_cgroup = true;
        cg->appeared_usec = 1000000 * (s->tick + 1); /* the next snapshot's t_usec */
        w->cgroups = cg;
        w->n_cgroups = 1;
}

static void test_grace_new_always_cgroup_raises_before_faults(void **state) {
        struct sim *s = *state;
        struct workload w;
        struct mthp_cgroup_view cg;
        grace_setup(s, &w, &cg);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        sim_step(s, &w); /* the tick that first sees it */
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_string_equal(knob_of(s, 64, MTHP_SHMEM), "always");
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "always");
        assert_int_equal(level(s, MTHP_ANON), 0); /* it wants shmem only */
        assert_contains(kind_reason(s, MTHP_SHMEM), "cgroup /db appeared 0 s ago, policy p0 wants shmem 2M always "
                                                    "(Shmem=always, priority 50): set before its first faults");
        /* it never faults: it keeps the sizes for StartGrace (30 s) ... */
        cg.new_cgroup = false;
        while (s->snap.t_usec + 1000000 < cg.appeared_usec + s->cfg.start_grace_usec)
                sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_int_equal(changes(s, MTHP_SHMEM), 1);
        assert_contains(kind_reason(s, MTHP_SHMEM), "wanted by cgroup /db (appeared 29 s ago, 0 faults/s, policy p0");
        assert_contains(kind_reason(s, MTHP_SHMEM), "in its start grace");
        /* ... then it has no say: no demand for 10 ticks steps down at once */
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 7);
        assert_contains(kind_reason(s, MTHP_SHMEM), "step down");
        sim_run(s, &w, 100); /* a step each LowerTicks */
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* a cgroup present (populated) when mthpd started: its start was not seen */
        cg.appeared_usec = 0;
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* StartGrace=0 turns it off */
        s->cfg.start_grace_usec = 0;
        cg.appeared_usec = 1000000 * (s->tick + 1);
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* The grace is a say like any other: a limited cgroup that cannot afford a
 * size still stops it, the new one itself included. */
static void test_grace_limited_cgroup_still_blocks(void **state) {
        struct sim *s = *state;
        struct workload w;
        struct mthp_cgroup_view cg;
        grace_setup(s, &w, &cg);
        w.limited = &lim_600; /* populated, nobody sampled: affords 256K */
        w.n_limited = 1;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 5);
        assert_string_equal(knob_of(s, 512, MTHP_SHMEM), "never");
        assert_contains(kind_reason(s, MTHP_SHMEM), "cgroup /db appeared 0 s ago");
        assert_contains(kind_reason(s, MTHP_SHMEM), "raise to 256K; stops there: limited cgroup /lim");
        assert_contains(kind_reason(s, MTHP_SHMEM), "cannot afford 512K");
        /* the new cgroup is itself limited, 100 MiB and empty: no size at all */
        struct mthp_limited_cgroup small = { .path = "/db", .usage_kb = 0, .limit_kb = 100 * 1024 };
        w.limited = &small;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_contains(kind_reason(s, MTHP_SHMEM), "limited cgroup /db (empty, usage 0 MiB, limit 100 MiB");
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* a higher-priority never that faults outranks the grace, too */
        struct mthp_cgroup_view two[2];
        two[0] = cg;
        cg_view(&two[1], "/batch", 50000);
        two[1].shmem_kb = 500000;
        policy_add(s, "[Match]\nCgroup=/batch\n[Policy]\nShmem=never\nPriority=80\n");
        w.limited = NULL;
        w.n_limited = 0;
        w.cgroups = two;
        w.n_cgroups = 2;
        two[0].appeared_usec = 1000000 * (s->tick + 1);
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* The burst is what the guard measured, not a constant: a trip that got
 * far past its threshold makes the same empty cgroup unaffordable. */
static void test_guard_overshoot_learned(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup c = lim_600;
        c.populated = false;
        c.usage_kb = 0;
        w.limited = &c;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 300 * 1024, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 0, .threshold_kb = 150 * 1024, .what = "usage threshold" };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        s->st.steady_ticks = 10;   /* the density back-off was on */
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 8);
        assert_int_equal(next.guard_overshoot_kb, 150 * 1024);
        /* a step down, if the guard's: fresh samples from the next tick */
        assert_int_equal(next.steady_ticks, 0);
        for (int i = 0; i < 8; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        sim_run(s, &w, 40); /* past the backoff: the program left, the cgroup is empty again */
        assert_true(level(s, MTHP_ANON) < 8);
        assert_contains(kind_reason(s, MTHP_ANON), "and 150 MiB past it before the step-down");
}

static void test_guard_steps_down_and_remembers(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);

        /* between two ticks the cgroup crosses its threshold */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 160 * 1024, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 2048, .threshold_kb = 151 * 1024, .what = "usage threshold",
                                     .latency_us = 40 };
        struct mthp_engine_state next, prev = s->st;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n = mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX);
        assert_memory_equal(&prev, &s->st, sizeof(prev)); /* pure */
        assert_int_equal(n, 8);                           /* every anon size, nothing of shmem */
        assert_int_equal(next.kind[MTHP_ANON].level, 0);
        assert_int_equal(dec[0].knob, s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_ANON]); /* largest first */
        for (int i = 0; i < n; i++) {
                assert_string_equal(dec[i].value, "");
                assert_contains(dec[i].reason, "guard: cgroup /lim crossed its usage threshold (151 MiB");
                assert_contains(dec[i].reason, "limit 600 MiB), now 160 MiB");
                assert_contains(dec[i].reason, "step anon down from 2M to 4K at once");
        }
        /* nothing left to step down: a second trip at once writes nothing new */
        struct mthp_engine_state again;
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &next, &again, dec, MTHP_KNOBS_MAX), 0);
        assert_true(again.limited[0].trip_until > next.limited[0].trip_until); /* the backoff doubled */

        /* the ticks after it: the cgroup counts as sparse, 2M stays down */
        for (int i = 0; i < n; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        struct mthp_limited_cgroup now = { .path = "/lim", .usage_kb = 200 * 1024, .limit_kb = 600 * 1024,
                                           .populated = true };
        w.limited = &now;
        sim_run(s, &w, 20);
        assert_true(level(s, MTHP_ANON) < 8);
        assert_contains(kind_reason(s, MTHP_ANON), "tripped the guard at tick 9: assumed sparse");
}

static void test_guard_limit_hit_holds_4k_for_the_backoff(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        limited_setup(s, &v, &w, "/work");
        s->cfg.dwell_ticks = 0; /* nothing but the trip may hold the raise back */
        struct mthp_limited_cgroup c = lim_600;
        c.populated = false;
        w.limited = &c;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* memory.events max moved: it reached its limit, whatever it grew */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 2048, .limit_kb = 600 * 1024,
                                     .armed_usage_kb = 2048, .threshold_kb = 151 * 1024,
                                     .what = "memory.events max", .hit_limit = true };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 8);
        for (int i = 0; i < 8; i++)
                memcpy(s->knob[dec[i].knob], s->orig[dec[i].knob], MTHP_VALUE_MAX);
        s->st = next;
        c.populated = true;
        sim_run(s, &w, 29); /* the backoff: 30 ticks */
        assert_int_equal(level(s, MTHP_ANON), 0);
        sim_run(s, &w, 5);  /* after it, what the cgroup affords */
        assert_int_equal(level(s, MTHP_ANON), 5);
}

static void test_guard_unaffected_sizes(void **state) {
        struct sim *s = *state;
        /* nothing raised: a trip has nothing to step down */
        struct mthp_guard_trip t = { .path = "/lim", .usage_kb = 160 * 1024, .limit_kb = 600 * 1024 };
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        assert_int_equal(mthp_engine_guard(&s->cfg, &s->caps, &t, &s->st, &next, dec, MTHP_KNOBS_MAX), 0);
        assert_string_equal(next.limited[0].path, "/lim");
}

/* ---- the safety net under 2M: the THP shrinker's knobs (issue 16) ---- */

static const char *const no_values[] = { NULL };

static void add_shrinker_knobs(struct sim *s) {
        int i = add_knob(&s->caps, MTHP_KNOB_NUMBER, 0, "khugepaged/max_ptes_none",
                         MTHP_THP_DIR "/khugepaged/max_ptes_none", no_values);
        snprintf(s->orig[i], MTHP_VALUE_MAX, "511");
        snprintf(s->knob[i], MTHP_VALUE_MAX, "511");
        i = add_knob(&s->caps, MTHP_KNOB_NUMBER, 0, "global/shrink_underused", MTHP_THP_DIR "/shrink_underused",
                     no_values);
        snprintf(s->orig[i], MTHP_VALUE_MAX, "0");
        snprintf(s->knob[i], MTHP_VALUE_MAX, "0");
}

/* ---- ShmemAlign=: shared anonymous memory mapped while idle is aligned ---- */

/* Idle, the top shmem size goes from off (inherit of a global never) to
 * advise, so a segment mapped now is 2M-aligned; a dense shmem faulter
 * raises it to always; once idle again it goes back to advise. */
static void test_shmem_align_idle_advises(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        s->cfg.shmem_align = true;
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        assert_string_equal(knob_of(s, 1024, MTHP_SHMEM), "never"); /* the top size aligns for all */
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_contains(size_decision(s, MTHP_SHMEM, 2048)->reason,
                        "2M advise: shared anonymous memory mapped now is 2M-aligned, so a raise reaches it (only "
                        "memory a program madvises gets 2M folios)");
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* kept while it is ours (the knob reads advise now) */
        sim_run(s, &idle, 5);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        /* a raise takes it to always like every size */
        shm_proc(&v.proc[0], 702, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        w.dens = &v;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "always");
        /* it stops (no faults at all: the engine splits 4K faults by the
         * memory of the processes it remembers, which the model does not):
         * down, then advise again */
        static const struct workload still = { 0 };
        for (unsigned t = 0; t < s->cfg.lower_ticks * 8 + 10; t++) {
                sim_step(s, &still);
                /* always -> advise in one write, never by way of the original */
                assert_string_not_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
        }
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        /* off: the original value */
        s->cfg.shmem_align = false;
        sim_step(s, &still);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
}

/* A value the administrator chose is theirs: within_size, or inherit of a
 * global advise, is left as it is. */
static void test_shmem_align_not_over_a_chosen_value(void **state) {
        struct sim *s = *state;
        wide(s);
        s->cfg.shmem_align = true;
        int k2m = s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_SHMEM];
        snprintf(s->orig[k2m], MTHP_VALUE_MAX, "within_size");
        snprintf(s->knob[k2m], MTHP_VALUE_MAX, "within_size");
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "within_size");
        assert_string_equal(size_decision(s, MTHP_SHMEM, 2048)->value, "");
        snprintf(s->orig[k2m], MTHP_VALUE_MAX, "inherit");
        snprintf(s->knob[k2m], MTHP_VALUE_MAX, "inherit");
        int g = mthp_caps_find_knob(&s->caps, "global/shmem_enabled");
        assert_true(g >= 0);
        snprintf(s->orig[g], MTHP_VALUE_MAX, "advise");
        snprintf(s->knob[g], MTHP_VALUE_MAX, "advise");
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
}

/* Not while a memory-limited cgroup caps the kind's sizes: advise would
 * give 2M to what a program there madvises. */
static void test_shmem_align_not_with_limited_cgroup(void **state) {
        struct sim *s = *state;
        struct workload w = idle;
        wide(s);
        s->cfg.shmem_align = true;
        w.limited = &lim_600;
        w.n_limited = 1;
        sim_run(s, &w, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
        /* it empties: advise */
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
}

static const struct mthp_decision *decision_of(const struct sim *s, const char *id) {
        int k = mthp_caps_find_knob(&s->caps, id);
        assert_true(k >= 0);
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == k)
                        return &s->dec[i];
        fail_msg("no decision for %s", id);
        return NULL;
}

static void test_net_under_2m(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        add_shrinker_knobs(s);
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        sim_run(s, &w, 1);
        /* below 2M: the administrator's values */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "");
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "");
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 2M always, a fully dense process: the MaxBloat 20% boundary, 86 of 512 */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "86");
        assert_contains(decision_of(s, "khugepaged/max_ptes_none")->reason, "more than 86 of 512 subpages zero");
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "1");
        assert_string_equal(s->knob[mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none")], "86");

        /* a process that holds 2M with 10% zero subpages: its folios stay whole */
        dens_proc(&v.proc[0], 100, 1, 0.10);
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 52 + 32 kept whole stay under the boundary */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "86");
}

/* The net counts subpages of the host's base page (arm64 16K: 128 per 2M
 * folio), not 4K ones: max_ptes_none is in base pages. */
static void test_net_base_page(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        add_shrinker_knobs(s);
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        sim_run(s, &w, 4);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "86");
        /* the same tick on a 16K-page host (the sim's figures are 4K pages:
         * the engine is called directly): the MaxBloat 20% boundary, 22 of 128 */
        s->caps.page_kb = 16;
        struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n = mthp_engine_decide(&s->cfg, &s->caps, &s->snap, &s->st, &next, dec, MTHP_KNOBS_MAX);
        int mk = mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none");
        const struct mthp_decision *d = NULL;
        for (int i = 0; i < n; i++)
                if (dec[i].knob == mk)
                        d = &dec[i];
        assert_non_null(d);
        assert_string_equal(d->value, "22");
        assert_contains(d->reason, "more than 22 of 128 subpages zero");
}

static void test_net_follows_measured_zero_share(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        add_shrinker_knobs(s);
        s->cfg.max_bloat = 100; /* a process using half of each block may hold 2M */
        dens_proc(&v.proc[0], 100, 1, 0.20);
        w.dens = &v;
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 20% zero: 103 zero subpages + 32 stay under the MaxBloat 100% boundary, 256 */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "256");
        dens_proc(&v.proc[0], 100, 1, 0.48);
        sim_run(s, &w, 20); /* remembered usage is a decayed average: let it settle */
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "278"); /* 246 + 32 */
        assert_contains(decision_of(s, "khugepaged/max_ptes_none")->reason, "pid 100 (proc100) uses 0.52");
        /* back below 2M: the 2M folios faulted meanwhile stay, so the net
         * stays (issue 16: taken down with the size, it let a limited
         * cgroup's sparse program be OOM-killed) ... */
        sim_run(s, &idle, 40);
        assert_true(level(s, MTHP_ANON) < 8);
        const char *kept = decision_of(s, "khugepaged/max_ptes_none")->value;
        assert_true(kept[0] && atoi(kept) < 511);
        assert_contains(decision_of(s, "khugepaged/max_ptes_none")->reason, "folios faulted then stay until split");
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "1");
        /* ... for 600 ticks after 2M was last held; then the original value */
        sim_run(s, &idle, 600);
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "");
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "");
        assert_string_equal(s->knob[mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none")], "511");
}

/* arm64 with 16K base pages: PMD 32M, sizes 32K..32M. The base page is the
 * unit, not 4K: level 0 is named 16K, a folio counts size/16K pages of
 * demand, and max_ptes_none counts the 2048 subpages of a 32M folio. */
static void test_base_page_16k(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        unsigned ladder[MTHP_SIZES_MAX];
        caps_init_base(&s->caps, 16, 32768);
        sim_knobs_init(s);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->cfg.max_kb[k] = 32768;
        add_shrinker_knobs(s);
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        sim_run(s, &w, 1);
        assert_contains(kind_reason(s, MTHP_ANON), "holding anon at 16K");
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), ladder_of(s, MTHP_ANON, ladder));
        assert_int_equal(s->caps.sizes[ladder[level(s, MTHP_ANON) - 1]].kb, 32768);
        /* the MaxBloat 20% boundary: ceil(2048 x (1 - 1/1.2)) = 342 */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "342");
        assert_contains(decision_of(s, "khugepaged/max_ptes_none")->reason, "more than 342 of 2048 subpages zero");
        assert_contains(decision_of(s, "global/shrink_underused")->reason, "underused 32M folios");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_ladder_default),
                T(test_ladder_ranges),
                T(test_ladder_skips_sizes_without_always),
                T(test_first_sample_holds),
                T(test_first_sample_fresh),
                T(test_raise_after_confirm),
                T(test_wants_density),
                T(test_raise_threshold),
                T(test_raise_streak_resets),
                T(test_dwell),
                T(test_climb_to_max),
                T(test_climb_wide_ladder),
                T(test_decisions_every_tick),
                T(test_output_bounded),
                T(test_ladder_shrinks),
                T(test_pressure_psi),
                T(test_pressure_blips_ignored),
                T(test_pressure_memavailable),
                T(test_fragmentation),
                T(test_fragmentation_needs_volume),
                T(test_fragmentation_blocks_raise),
                T(test_lower),
                T(test_no_flap_oscillation),
                T(test_no_flap_steady),
                T(test_no_flap_folio_pages),
                T(test_purity),
                T(test_net_under_2m),
                T(test_net_follows_measured_zero_share),
                T(test_base_page_16k),
                T(test_net_base_page),
                T(test_limited_unknown_blocks_2m),
                T(test_limited_measured_dense_does_not_block),
                T(test_limited_new_cgroup_steps_down_at_once),
                T(test_limited_policy_priority_cannot_override),
                T(test_limited_small_empty_cgroup_blocks),
                T(test_grace_new_always_cgroup_raises_before_faults),
                T(test_grace_limited_cgroup_still_blocks),
                T(test_guard_overshoot_learned),
                T(test_guard_steps_down_and_remembers),
                T(test_guard_limit_hit_holds_4k_for_the_backoff),
                T(test_guard_unaffected_sizes),
                T(test_density_dense_jumps),
                T(test_density_sparse_holds),
                T(test_density_pid_exec_reuses_slot),
                T(test_density_mixed_sparse_wins),
                T(test_density_bloat_steps_down_fast),
                T(test_density_backoff_steady),
                T(test_density_backoff_wakes),
                T(test_density_backoff_sparse_arrives),
                T(test_density_probe_fails_reverts),
                T(test_density_unmeasured_capped),
                T(test_fault_samples_split_demand),
                T(test_fault_samples_other_ask_nothing),
                T(test_fault_samples_pending_waits),
                T(test_fault_samples_never_enough),
                T(test_fault_samples_add_up),
                T(test_fault_samples_split_follows),
                T(test_left_out_line),
                T(test_fault_samples_pending_density_counts),
                T(test_shmem_misaligned_segment_explained),
                T(test_shmem_prefilled_cache_explained),
                T(test_shmem_sparse_mapping_cache_keeps),
                T(test_shmem_sparse_refaulter_allocating_steps_down),
                T(test_shmem_tmpfs_file_and_sysv_explained),
                T(test_shmem_repair_comes_through_snapshot),
                T(test_shmem_pmd_probe_explained),
                T(test_fault_samples_last_split_stands),
                T(test_shmem_align_idle_advises),
                T(test_shmem_align_not_over_a_chosen_value),
                T(test_shmem_align_not_with_limited_cgroup),
                T(test_defrag_defer_for_large_fallbacks),
                T(test_cgroup_headroom_steps_down),
                T(test_compaction_stall_steps_down),
                T(test_density_unmeasured_process_waits),
                T(test_density_memory_outweighs_odd_sample),
                T(test_density_small_share_no_veto),
                T(test_density_raise_needs_its_faults),
                T(test_density_first_sight_waits),
                T(test_gone_process_bars_no_raise),
                T(test_quiet_process_bars_no_raise),
                T(test_density_phase_change_is_quick),
                T(test_policy_high_always_outranks_never),
                T(test_policy_high_never_forces_madvise),
                T(test_policy_tie_goes_to_smaller),
                T(test_policy_idle_never_has_no_say),
                T(test_policy_auto_own_maxbloat_and_sizes),
                T(test_policy_madvise_cgroup),
                T(test_policy_cgroup_pressure),
                T(test_policy_cgroup_headroom),
                T(test_optout_prctl_sparse_does_not_hold_back),
                T(test_optout_in_limited_cgroup),
                T(test_optout_nohugepage_does_not_hold_back),
                T(test_optout_faults_are_no_demand),
                T(test_optout_madvise_judged_without_hg),
                T(test_optout_madvised_folios_are_no_demand),
                T(known_fragmentation_flap),
                T(known_pressure_flap),
                T(known_fallback_ratio_diluted),
                T(known_anon_faults_raise_shmem),
                T(known_ladder_shrink_orphans_knob),
        };

        return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
