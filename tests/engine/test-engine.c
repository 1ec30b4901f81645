/* SPDX-License-Identifier: MIT */
/* Unit tests for the pure engine, mthp_engine_decide(), on synthetic
 * snapshots. A small kernel model turns the engine's own decisions into the
 * next tick's counters (which size a fault gets, how often it falls back,
 * how many pgfault events that takes), so hysteresis is tested in closed
 * loop, the way the daemon runs it.
 *
 * These: the ladder, the first sample, raise and confirmation, dwell,
 * climbing, pressure, fragmentation, lowering, flapping, purity and the
 * known issues. The simulation is engine-sim.c; the density, shmem, cgroup
 * and shrinker-net tests are test-engine-{density,shmem,cgroups,net}.c.
 *
 * The known_* tests were known issues; each passes since its fix and
 * stays as a regression test beside the others. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"
#include "mthp/sample.h"

#include "engine-sim.h"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

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
                        assert_int_equal(s->dec[i].rule, s->dec[i].size_rule == MTHP_RULE_SIZE_OUTSIDE
                                                                 ? MTHP_RULE_SIZE_OUTSIDE
                                                                 : MTHP_RULE_FIRST_SAMPLE);

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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD, "1");
        assert_int_equal(s->st.kind[MTHP_ANON].raise_streak, 1);
        sim_step(s, &hot);
        assert_int_equal(level(s, MTHP_ANON), 1);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_RAISE_DEMAND, "30000 25000 2");
        assert_string_equal(kind_decisions(s, MTHP_ANON)[0].value, "always");

        sim_init(s);
        s->cfg.confirm_ticks = 4;
        sim_run(s, &hot, 4);
        assert_int_equal(level(s, MTHP_ANON), 0);
        sim_step(s, &hot);
        assert_int_equal(level(s, MTHP_ANON), 1);
        assert_int_equal(s->last_change[MTHP_ANON], 4);
}

/* The administrator's THP off (cfg.thp_off, found by mthpd at start): the
 * kind stays at 4K whatever its demand, the reason names who said off, and
 * only OverrideThpOff=yes lets it climb. A size the command line set to
 * never (thp_off_kb) is off the ladder. */
static void test_admin_thp_off(void **state) {
        struct sim *s = *state;
        static const struct workload hot = { .pages = { [MTHP_ANON] = 30000, [MTHP_SHMEM] = 30000 } };
        snprintf(s->cfg.thp_off[MTHP_ANON], sizeof(s->cfg.thp_off[MTHP_ANON]), "%s",
                 "the kernel command line: transparent_hugepage=never");
        s->cfg.shmem_align = true;
        snprintf(s->cfg.thp_off[MTHP_SHMEM], sizeof(s->cfg.thp_off[MTHP_SHMEM]), "%s",
                 "the kernel command line: transparent_hugepage_shmem=never");
        sim_run(s, &hot, 20);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_ADMIN, "transparent_hugepage=never 4K OverrideThpOff=yes");
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD_ADMIN, "transparent_hugepage_shmem=never");
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].size_rule != MTHP_RULE_NONE)
                        assert_string_equal(s->dec[i].value, ""); /* no always, and no advise for alignment */
        assert_false(mthp_engine_awaits_samples(&s->cfg, &s->caps, &s->snap, &s->st, NULL));

        /* OverrideThpOff=yes: the configuration says raise anyway */
        s->cfg.override_thp_off = true;
        sim_run(s, &hot, 20);
        assert_true(level(s, MTHP_ANON) > 0);
        /* and taken away again (a reload): back to 4K, a size a tick */
        s->cfg.override_thp_off = false;
        sim_run(s, &hot, 4);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_ADMIN, "4K");

        /* thp_anon=16K-32K:never: those sizes are the administrator's */
        static const unsigned rest[] = { 64 };
        sim_init(s);
        s->cfg.thp_off_kb[MTHP_ANON] = 1u << 4 | 1u << 5;
        assert_ladder(s, MTHP_ANON, rest, 1);
        s->cfg.override_thp_off = true;
        static const unsigned all[] = { 16, 32, 64 };
        assert_ladder(s, MTHP_ANON, all, 3);
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
                        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_DWELL, NULL);
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
        assert_rule(&d[0], MTHP_RULE_HOLD, "anon 64K");
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
        assert_rule(&d[0], MTHP_RULE_SIZE_IN_USE, "16K");
        assert_rule(&d[3], MTHP_RULE_SIZE_OFF, "128K");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PRESSURE, "2 PSI 20.0 10");
        /* sustained pressure keeps stepping down, dwell or not (today one
         * step a tick; any pace within a few ticks is fine) */
        sim_run(s, &pressed, 2 * s->cfg.dwell_ticks - 1);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_true(s->last_change[MTHP_ANON] < t + 2 * s->cfg.dwell_ticks);
        /* high demand under pressure never raises */
        sim_run(s, &pressed, 100);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(s->ups[MTHP_ANON], 3);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_PRESSURE, "PSI 20.0");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PRESSURE, "MemAvailable 5.0 10");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_FALLBACK, "80 anon 64K 50");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_BARRED, NULL);
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_DEMAND, "anon 1000 2500 10");
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
                assert_tokens(kind_reason(s, kind), "30000");
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

/* Every rule has its own kebab-case name; out of range reads "?". */
static void test_rule_names(void **state) {
        (void) state;
        for (int r = 0; r < _MTHP_RULE_MAX; r++) {
                const char *n = mthp_rule_name((enum mthp_rule) r);
                assert_true(n[0] && strcmp(n, "?") != 0);
                assert_int_equal(strspn(n, "abcdefghijklmnopqrstuvwxyz-"), strlen(n));
                for (int o = 0; o < r; o++)
                        if (strcmp(n, mthp_rule_name((enum mthp_rule) o)) == 0)
                                fail_msg("rules %d and %d are both %s", o, r, n);
        }
        assert_string_equal(mthp_rule_name(MTHP_RULE_NONE), "none");
        assert_string_equal(mthp_rule_name(_MTHP_RULE_MAX), "?");
        assert_string_equal(mthp_rule_name((enum mthp_rule) -1), "?");
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
                T(test_rule_names),
                T(test_admin_thp_off),
                T(known_fragmentation_flap),
                T(known_pressure_flap),
                T(known_fallback_ratio_diluted),
                T(known_anon_faults_raise_shmem),
                T(known_ladder_shrink_orphans_knob),
        };

        return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
