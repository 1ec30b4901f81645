/* SPDX-License-Identifier: MIT */
/* RaiseFaultTime= and FaultCost= (lib/engine.c, engine_fault_rates): where
 * the host's 4K fault cost is known (mthp_snapshot.fault_cost_ns) the raise
 * rate is the lower of RaiseFaultRate and the rate at which faults take
 * RaiseFaultTime of one core, and LowerFaultRate scales with it.
 *
 * A small host of its own (engine-sim.c's closed-loop model is larger than
 * these tests need): anon faults only, each served by the largest anon size
 * at "always" (no fallback), so the engine's demand is the workload's. At the
 * defaults (RaiseFaultRate 25000, LowerFaultRate 2500, RaiseFaultTime 2.5%)
 * and 11 us a fault, faults take 2.5% of a core at 2273 pages/s and the
 * lower rate is 227. And what a process faults in pages
 * (mthp_engine_proc_pages_rate), the rate the shmem repair starts on. */
#include <math.h>
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

#include "engine-caps.h"

#define MEM_TOTAL_KB 16000000ULL

#define SLOW_NS 11000.0 /* this project's VM: 11.4 us */
#define FAST_NS 200.0   /* faster than the ~1 us at which the two rates agree */

struct host {
        struct engine_host e;   /* config, caps, state, snapshot, knobs, decisions */
        double fault_cost_ns; /* what the daemon puts in each snapshot */
};

/* the shipped defaults on the blind 16K-64K ladder, at the boot state */
static void host_init(struct host *h, double fault_cost_ns) {
        struct mthp_config c;
        memset(h, 0, sizeof(*h));
        mthp_config_defaults(&c);
        h->e.cfg = c.engine;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                h->e.cfg.max_kb[k] = 64;
        h->e.cfg.shmem_align = false;
        caps_init(&h->e.caps);
        caps_boot_knobs(&h->e.caps, h->e.orig, h->e.knob);
        h->fault_cost_ns = fault_cost_ns;
}

static int host_setup(void **state) {
        struct host *h = malloc(sizeof(*h));
        assert_non_null(h);
        host_init(h, 0);
        *state = h;
        return 0;
}

static int host_teardown(void **state) {
        free(*state);
        return 0;
}

/* This tick's counters: anon faults of `pages` 4K pages/s, each served by
 * the largest anon size at "always" or a 4K page. */
static void host_snapshot(struct host *h, double pages) {
        struct mthp_snapshot *s = &h->e.snap;
        memset(s, 0, sizeof(*s));
        s->tick = h->e.tick;
        s->t_usec = 1000000 * (h->e.tick + 1);
        s->dt = h->e.tick ? 1.0 : 0.0; /* the sampler's first snapshot has no rates */
        s->fault_cost_ns = h->fault_cost_ns;
        snap_anon_faults(&h->e.caps, h->e.knob, s, pages, MEM_TOTAL_KB);
        s->mem.anon_kb = 4000000;
        memcpy(s->knob, h->e.knob, sizeof(s->knob));
        mthp_snapshot_derive(&h->e.caps, s);
}

static void host_step(struct host *h, double pages) {
        host_snapshot(h, pages);
        engine_host_decide(&h->e);
}

static void host_run(struct host *h, double pages, unsigned ticks) {
        for (unsigned i = 0; i < ticks; i++)
                host_step(h, pages);
}

static unsigned anon_level(const struct host *h) {
        return h->e.st.kind[MTHP_ANON].level;
}

/* the reason of this tick's decision for the first anon rung, 16K */
static const char *anon_reason(const struct host *h) {
        return anon16_reason(&h->e);
}

static const struct mthp_decision *anon_decision(const struct host *h) {
        return anon16_decision(&h->e);
}

static __attribute__((noinline)) void assert_not_contains(const char *haystack, const char *needle) {
        assert_non_null(haystack);
        if (strstr(haystack, needle))
                fail_msg("\"%s\" contains \"%s\"", haystack, needle);
}

/* (a) 11 us a fault: 5,000 pages/s, a fifth of RaiseFaultRate, take 5.5%
 * of a core: confirmed for ConfirmTicks, a raise that says why. */
static void test_slow_faults_raise(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS);
        host_step(h, 5000); /* first sample */
        host_step(h, 5000);
        assert_int_equal(anon_level(h), 0);
        assert_int_equal(h->e.st.kind[MTHP_ANON].raise_streak, 1);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "2273 RaiseFaultTime 2.5 11.00 2 1");
        host_step(h, 5000);
        assert_int_equal(anon_level(h), 1);
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_DEMAND, "5000 2273 RaiseFaultTime 2.5 11.00 2");

        /* just below the scaled rate: no streak */
        host_init(h, SLOW_NS);
        host_run(h, 2200, 30);
        assert_int_equal(anon_level(h), 0);
        assert_int_equal(h->e.st.kind[MTHP_ANON].raise_streak, 0);
}

/* (b) The same demand with the cost unknown (FaultCost=off, another
 * --root, an old recording): RaiseFaultRate alone, as before. */
static void test_unknown_cost_holds(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS); /* what 0 changes: this raises */
        host_run(h, 5000, 3);
        assert_int_equal(anon_level(h), 1);

        host_init(h, 0);
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        assert_int_equal(h->e.st.kind[MTHP_ANON].raise_streak, 0);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "5000 25000 2 2500 10");
        assert_not_contains(anon_reason(h), "RaiseFaultTime");
}

/* (c) A fast host, or one where the two rates agree: RaiseFaultRate is
 * the lower and decides; the reasons do not mention RaiseFaultTime. */
static void test_fast_host_keeps_raise_rate(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS); /* what a fast fault changes: this raises */
        host_run(h, 5000, 3);
        assert_int_equal(anon_level(h), 1);

        host_init(h, FAST_NS);
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "25000 2");
        assert_not_contains(anon_reason(h), "RaiseFaultTime");
        host_run(h, 25000, 2);
        assert_int_equal(anon_level(h), 1);
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_DEMAND, "25000 2");
        assert_not_contains(anon_reason(h), "RaiseFaultTime");

        /* 1 us: 2.5% of a core is exactly RaiseFaultRate */
        host_init(h, 1000);
        host_run(h, 24999, 30);
        assert_int_equal(anon_level(h), 0);
        assert_not_contains(anon_reason(h), "RaiseFaultTime");
}

/* (d) RaiseFaultTime=0 turns it off; another share moves the rate. */
/* A cost that is not a number of ns (a hand-made recording's inf or nan)
 * is unknown: it must not make the raise rate 0 */
static void test_cost_not_finite(void **state) {
        struct host *h = *state;
        host_init(h, INFINITY);
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        assert_not_contains(anon_reason(h), "RaiseFaultTime");
        host_init(h, NAN);
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        /* finite but beyond FaultCost='s 1s: unknown too, not a rate of ~0 */
        host_init(h, 1e30);
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        assert_not_contains(anon_reason(h), "RaiseFaultTime");
}

static void test_raise_fault_time_setting(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS);
        h->e.cfg.raise_fault_time = 0;
        host_run(h, 5000, 30);
        assert_int_equal(anon_level(h), 0);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "25000 2");
        assert_not_contains(anon_reason(h), "RaiseFaultTime");

        /* 5% of a core at 11 us: 4545 pages/s */
        host_init(h, SLOW_NS);
        h->e.cfg.raise_fault_time = 5;
        host_run(h, 4500, 30);
        assert_int_equal(anon_level(h), 0);
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "4545 RaiseFaultTime 5 11.00");
        host_run(h, 4600, 2);
        assert_int_equal(anon_level(h), 1);
        assert_rule(anon_decision(h), MTHP_RULE_RAISE_DEMAND, "4600 4545 RaiseFaultTime 5");
}

/* (e) LowerFaultRate scales with the raise rate (2500/25000 of it): at
 * 11 us, 1,000 pages/s is no idle, 200 is. */
static void test_lower_rate_scales(void **state) {
        struct host *h = *state;
        host_init(h, 0); /* unscaled: 1000 < 2500 counts towards a step down */
        host_run(h, 1000, 5);
        assert_int_equal(h->e.st.kind[MTHP_ANON].lower_streak, 4);

        host_init(h, SLOW_NS);
        host_run(h, 5000, 3);
        assert_int_equal(anon_level(h), 1);
        host_run(h, 1000, 40);
        assert_int_equal(anon_level(h), 1);
        assert_int_equal(h->e.st.kind[MTHP_ANON].lower_streak, 0);
        /* the hold names RaiseFaultTime once, at the raise rate */
        assert_rule(anon_decision(h), MTHP_RULE_HOLD, "227 10 0");
        host_run(h, 200, h->e.cfg.lower_ticks - 1);
        assert_int_equal(anon_level(h), 1);
        host_step(h, 200);
        assert_int_equal(anon_level(h), 0);
        assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_DEMAND, "200 227 RaiseFaultTime 2.5 11.00 10");
}

/* A RaiseFaultRate set out of reach (1e12) with RaiseFaultTime on: the
 * raise rate is RaiseFaultTime's 2273 pages/s, and the lower rate a tenth
 * of it (227), not 2500 x 2273 / 1e12 = 6e-6, at which a raised size would
 * never step down. */
static void test_lower_rate_floor(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS);
        h->e.cfg.raise_fault_rate = 1e12;
        host_run(h, 5000, 3);
        assert_int_equal(anon_level(h), 1);
        host_run(h, 200, h->e.cfg.lower_ticks);
        assert_int_equal(anon_level(h), 0);
        assert_rule(anon_decision(h), MTHP_RULE_STEP_DOWN_DEMAND, "200 227 RaiseFaultTime");
}

/* The /proc scan starts at the scaled rate too: a raise it may back. */
static void test_wants_density_scaled(void **state) {
        struct host *h = *state;
        host_init(h, SLOW_NS);
        host_step(h, 5000); /* first sample: no rates */
        assert_false(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
        host_snapshot(h, 5000);
        assert_true(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
        host_snapshot(h, 2200);
        assert_false(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
        host_snapshot(h, 5000);
        h->e.snap.fault_cost_ns = 0; /* unknown */
        assert_false(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
        h->e.snap.fault_cost_ns = FAST_NS;
        assert_false(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
        h->e.snap.fault_cost_ns = SLOW_NS;
        h->e.cfg.raise_fault_time = 0; /* off */
        assert_false(mthp_engine_wants_density(&h->e.cfg, &h->e.snap, &h->e.st));
}

/* mthp_engine_proc_pages_rate: what a process faults in pages, the rate
 * the shmem repair starts on (daemon/collapse-tick.c). pgbench TPC-B's
 * backends, filling the buffer pool with 2M folios, fault ~50 times a
 * second: 25,600 pages a second, not an idle process. */
static void test_proc_pages_rate(void **state) {
        struct host *h = *state;
        struct mthp_engine_config *cfg = &h->e.cfg;
        struct mthp_engine_state *st = &h->e.st;
        unsigned ladder[MTHP_SIZES_MAX];
        cfg->max_kb[MTHP_SHMEM] = 2048;
        unsigned n = mthp_engine_ladder(cfg, &h->e.caps, MTHP_SHMEM, ladder);
        assert_true(n > 1);
        unsigned top = ladder[n - 1];
        assert_int_equal(h->e.caps.sizes[top].kb, 2048);
        struct mthp_engine_proc *m = &st->proc[3];
        m->pid = 42;
        m->fault_rate = 50;
        m->fs[MTHP_SHMEM] = 9; /* 9 of 10 sampled faults in its shmem */
        m->fs_other = 1;
        m->w[MTHP_SHMEM][top] = 10;
        m->u[MTHP_SHMEM][top] = 9.5; /* 0.95 of each 2M block: dense */
        /* the kind at 4K (level 0): a fault is a page */
        st->kind[MTHP_SHMEM].level = 0;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45, 1e-9);
        /* 2M on and used densely: a fault brings in 512 pages */
        st->kind[MTHP_SHMEM].level = n;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45 * 512, 1e-6);
        /* sparse at 2M (0.5, below MaxBloat's 0.83): a fault is a page */
        m->u[MTHP_SHMEM][top] = 5;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45, 1e-9);
        /* a level past the ladder (a reload shrank it): a page a fault */
        m->u[MTHP_SHMEM][top] = 9.5;
        st->kind[MTHP_SHMEM].level = n + 1;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45, 1e-9);
        /* its faults never sampled by address: split by memory held (here
         * all shmem), a page a fault, whatever its density */
        st->kind[MTHP_SHMEM].level = n;
        m->fs[MTHP_SHMEM] = m->fs_other = 0;
        m->rss_kb[MTHP_SHMEM] = 4096;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 50, 1e-9);
        /* a split remembered from an earlier sampling counts again */
        m->fs_known = true;
        m->fs_last[MTHP_SHMEM] = 9;
        m->fs_last_other = 1;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45 * 512, 1e-6);
        /* a lifetime average (first sight): a page a fault */
        m->new_proc = true;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 45, 1e-9);
        m->new_proc = false;
        /* THP disabled for it: no size reaches its memory */
        st->kind[MTHP_SHMEM].level = n;
        m->thp_off = true;
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 3, MTHP_SHMEM), 0, 1e-9);
        /* an empty slot, and one past the table */
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, 4, MTHP_SHMEM), 0, 1e-9);
        assert_float_equal(mthp_engine_proc_pages_rate(cfg, &h->e.caps, st, MTHP_ENGINE_PROCS, MTHP_SHMEM), 0, 1e-9);
}

#define T(f) cmocka_unit_test_setup_teardown(f, host_setup, host_teardown)

int main(void) {
        static const struct CMUnitTest tests[] = {
                T(test_slow_faults_raise),
                T(test_unknown_cost_holds),
                T(test_fast_host_keeps_raise_rate),
                T(test_cost_not_finite),
        T(test_lower_rate_floor),
        T(test_raise_fault_time_setting),
                T(test_lower_rate_scales),
                T(test_wants_density_scaled),
                T(test_proc_pages_rate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
