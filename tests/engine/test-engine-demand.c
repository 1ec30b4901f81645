/* SPDX-License-Identifier: MIT */
/* Demand that stopped (engine-sim.h): a kind steps down in one go to the
 * level still in use, the largest size still allocated at
 * MinProcessFaultRate pages/s, or to the boot values if none is; not a
 * size every LowerTicks. While the top size is still allocated, one size
 * at a time as before (test-engine.c test_lower). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"

#include "engine-caps.h"
#include "engine-sim.h"

/* Ticks whose decisions changed a size knob of kind; the kind's
 * decision on the last of them in why. */
static char why[MTHP_REASON_MAX];
static enum mthp_rule why_rule;
static unsigned writing_ticks(struct sim *s, const struct workload *w, enum mthp_kind kind, unsigned ticks,
                              unsigned *writes) {
        unsigned n = 0;
        for (unsigned t = 0; t < ticks; t++) {
                char before[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
                memcpy(before, s->knob, sizeof(before));
                sim_step(s, w);
                unsigned changed = 0;
                for (unsigned i = 0; i < s->caps.n_knobs; i++) {
                        enum mthp_knob_type ty = s->caps.knobs[i].type;
                        bool mine = kind == MTHP_ANON ? ty == MTHP_KNOB_SIZE_ANON : ty == MTHP_KNOB_SIZE_SHMEM;
                        if (mine && strcmp(before[i], s->knob[i]) != 0)
                                changed++;
                }
                *writes += changed;
                n += changed > 0;
                if (changed) {
                        snprintf(why, sizeof(why), "%s", kind_reason(s, kind));
                        why_rule = kind_decisions(s, kind)->rule;
                }
        }
        return n;
}

/* 16K..2M raised, then nothing faults: one tick of writes, to 4K, after
 * LowerTicks. Before: 8 ticks of writes, a size every LowerTicks (80 ticks). */
static void stops(struct sim *s, enum mthp_kind kind) {
        static const struct workload still = { 0 };
        wide(s);
        s->cfg.unmeasured_max_kb = 2048;   /* no density sample needed to climb */
        sim_climb(s, kind == MTHP_ANON ? &anon_hot : &shmem_hot, kind, 8);
        unsigned ups = changes(s, kind), writes = 0;
        uint64_t top = s->tick;
        unsigned ticks = writing_ticks(s, &still, kind, s->cfg.lower_ticks * 8 + 20, &writes);
        assert_int_equal(level(s, kind), 0);
        assert_int_equal(changes(s, kind), ups + 1);
        assert_int_equal(ticks, 1);
        assert_int_equal(writes, 8);   /* each raised size once */
        assert_true(s->last_change[kind] <= top + s->cfg.lower_ticks + s->cfg.dwell_ticks);
        assert_int_equal(why_rule, MTHP_RULE_STEP_DOWN_DEMAND);
        assert_contains(why, "to 4K, no size allocated");
}

static void test_shmem_stops(void **state) {
        stops(*state, MTHP_SHMEM);
}

/* Anon alike: a dense program exits; a sparse one started after it would
 * otherwise get the sizes left raised for up to 80 ticks. */
static void test_anon_stops(void **state) {
        stops(*state, MTHP_ANON);
}

/* The demand falls to a trickle that only 64K folios serve (the kernel
 * never tries the larger sizes for it: small mappings): down to 64K in
 * one step, the sizes above it idle. */
static void test_shmem_trickle_keeps_size_in_use(void **state) {
        struct sim *s = *state;
        static const struct workload trickle = { .pages = { [MTHP_SHMEM] = 600 }, .never_kb = 128 };
        wide(s);
        s->cfg.unmeasured_max_kb = 2048;
        sim_climb(s, &shmem_hot, MTHP_SHMEM, 8);
        unsigned ups = changes(s, MTHP_SHMEM), writes = 0;
        unsigned ticks = writing_ticks(s, &trickle, MTHP_SHMEM, s->cfg.lower_ticks + s->cfg.dwell_ticks + 2, &writes);
        assert_int_equal(ticks, 1);
        assert_int_equal(changes(s, MTHP_SHMEM), ups + 1);
        assert_int_equal(level(s, MTHP_SHMEM), 3);   /* 16K, 32K, 64K */
        assert_string_equal(knob_of(s, 64, MTHP_SHMEM), "always");
        assert_string_equal(knob_of(s, 128, MTHP_SHMEM), "never");
        assert_int_equal(why_rule, MTHP_RULE_STEP_DOWN_DEMAND);
        assert_contains(why, "to 64K, the largest size still allocated (600 pages/s >= 100)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_shmem_stops),
                T(test_anon_stops),
                T(test_shmem_trickle_keeps_size_in_use),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
