/* SPDX-License-Identifier: MIT */
/* A raise is a trial (lib/engine-pay.c): after ENGINE_PAY_TICKS at the new
 * level the engine asks whether the size paid. One that fell back on most
 * of its faults, or that cost the process that drove the raise more
 * system CPU per MB faulted in, goes back to the level before the trial
 * and is barred (doubling on a repeat); one that paid is kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"

#include "engine-caps.h"
#include "engine-sim.h"

/* A dense program (pid 100, 500 MB of anon, every size read dense) that
 * faults 200 MB/s: 4K faults at 4K, 16x fewer at 64K; its system CPU
 * sys_4k at 4K, and sys_64k at 64K for the same MB. */
struct prog {
        struct mthp_density_view v;
        double sys_4k, sys_64k;
        double user_64k;                /* its user CPU at 64K (NAN: as at 4K) */
};

static void prog_init(struct prog *p) {
        memset(p, 0, sizeof(*p));
        p->v.valid = true;
        p->v.n_procs = 1;
        dens_proc(&p->v.proc[0], 100, 1, 0);
        snprintf(p->v.proc[0].comm, sizeof(p->v.proc[0].comm), "kv");
        p->v.proc[0].cpu_known = true;
        p->v.proc[0].utime_rate = 0.5;
        p->sys_4k = 0.1; /* its faults' 0.077 cores at 1.5 us a 4K fault, and a little more */
        p->sys_64k = 0.1 / 16;
        p->user_64k = NAN;
}

/* Its sample this tick, at the sizes the kernel holds. */
static void prog_tick(struct sim *s, struct prog *p) {
        struct mthp_proc_density *d = &p->v.proc[0];
        double mb_s = 200, pages = mb_s * 256;
        bool on = strcmp(knob_of(s, 64, MTHP_ANON), "always") == 0;
        d->fault_rate = on ? pages / 16 : pages;
        d->stime_rate = on ? p->sys_64k : p->sys_4k;
        if (!isnan(p->user_64k))
                d->utime_rate = on ? p->user_64k : 0.5;
}

static void run(struct sim *s, struct prog *p, const struct workload *w, unsigned ticks) {
        for (unsigned t = 0; t < ticks; t++) {
                prog_tick(s, p);
                sim_run(s, w, 1);
        }
}

/* Ticks until the anon level changes (at most max); the level then. */
static unsigned until_change(struct sim *s, struct prog *p, const struct workload *w, unsigned max) {
        unsigned from = level(s, MTHP_ANON), t = 0;
        while (t < max && level(s, MTHP_ANON) == from) {
                run(s, p, w, 1);
                t++;
        }
        return t;
}

/* 64K falls back on 80 % of its faults: back to 4K, where the trial
 * started, three ticks after the raise (before the dwell lets the
 * fragmentation rule act), 64K barred, and the reasons say why 64K was
 * not taken. On main: the fallback rule stepped down one size after the
 * dwell, and said "memory too fragmented". */
static void test_fallback_steps_back(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        struct workload w = anon_hot;
        w.dens = &p.v;
        w.fail = 0.8;
        w.fail_min_kb = 64;
        run(s, &p, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 3); /* raised to 64K at once: dense */
        unsigned t = until_change(s, &p, &w, 10);
        assert_int_equal(t, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_BACK_FALLBACK,
                    "anon 64K not taken: fell back on 80% of its faults in a 3-tick trial; back to 4K, the level "
                    "before the trial; 64K barred for 20 ticks");
        /* while barred, the holds say why 64K is not taken */
        run(s, &p, &w, 1);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_UNPAID, "anon 64K not taken: fell back on 80%");
        /* after the dwell: up to 32K, which pays, and no higher */
        run(s, &p, &w, 15);
        assert_int_equal(level(s, MTHP_ANON), 2);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_UNPAID, "64K not taken");
}

/* The bar doubles on a second failure of the same size: no flap. */
static void test_bar_doubles(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        struct workload w = anon_hot;
        w.dens = &p.v;
        w.fail = 0.8;
        w.fail_min_kb = 64;
        run(s, &p, &w, 2);
        until_change(s, &p, &w, 10);
        assert_int_equal(s->st.kind[MTHP_ANON].backoff, 20);
        unsigned changes_before = changes(s, MTHP_ANON);
        /* 32K after the dwell, 64K again once the bar is over; it fails again */
        unsigned t = 0;
        while (t < 60 && s->st.kind[MTHP_ANON].backoff == 20) {
                run(s, &p, &w, 1);
                t++;
        }
        assert_int_equal(s->st.kind[MTHP_ANON].backoff, 40);
        assert_int_equal(level(s, MTHP_ANON), 2); /* back to 32K, where that trial started */
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_BACK_FALLBACK, "64K barred for 40 ticks");
        /* 32K up, 64K up, 64K back: three changes in all */
        assert_int_equal(changes(s, MTHP_ANON) - changes_before, 3);
        run(s, &p, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 2);
}

/* At 64K the program spends twice the system CPU per MB it faults in
 * (zeroing 64K folios on a host that compacts): back to 4K, and the
 * reason names it. On main 64K stayed. */
static void test_cpu_per_mb_steps_back(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        p.sys_64k = 0.2;
        struct workload w = anon_hot;
        w.dens = &p.v;
        run(s, &p, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 3);
        unsigned t = until_change(s, &p, &w, 10);
        assert_int_equal(t, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_BACK_CPU,
                    "anon 64K not taken: pid 100 (kv) spent 2.0x the system CPU per MB faulted at 64K as at 4K");
        run(s, &p, &w, 15);
        assert_true(level(s, MTHP_ANON) < 3);
}

/* A size that pays (less system CPU per MB) is kept; so is one whose CPU
 * moved within the margin. */
static void test_paid_is_kept(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        p.sys_64k = 0.125; /* 1.25x: within the 1.5x margin */
        struct workload w = anon_hot;
        w.dens = &p.v;
        run(s, &p, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 3);
        run(s, &p, &w, 3);
        assert_contains(kind_reason(s, MTHP_ANON), "64K kept after a 3-tick trial (fallback 0% of");
        assert_contains(kind_reason(s, MTHP_ANON), "pid 100 (kv): 1.25x the system CPU per MB faulted)");
        run(s, &p, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(changes(s, MTHP_ANON), 1);
        assert_int_equal(s->st.kind[MTHP_ANON].trial.to, 0);
}

/* The same work for more CPU: its faults and RSS steady, its CPU a second
 * 1.8x (past the 1.5x margin) while its system CPU per MB fell. */
static void test_cpu_per_second(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        struct workload w = anon_hot;
        w.dens = &p.v;
        run(s, &p, &w, 2);
        assert_int_equal(level(s, MTHP_ANON), 3);
        p.v.proc[0].utime_rate = 1.1; /* 1.106 cores against 0.5 + 0.1 before */
        unsigned t = until_change(s, &p, &w, 10);
        assert_int_equal(t, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_BACK_CPU,
                    "spent 1.8x the CPU a second at 64K as at 4K, its faults and RSS steady");
}

/* A server whose system CPU is mostly its I/O (memcached: its faults 1 %
 * of it): its CPU per MB faulted measures its I/O, not a size, and its
 * doubling here (0.5 to 1.0 cores, the CPU a second the same) is no
 * verdict. */
static void test_io_sys_not_judged(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        p.sys_4k = 0.5;   /* its faults: 0.077 cores, 15 % */
        p.sys_64k = 1.0;
        p.user_64k = 0.0;
        struct workload w = anon_hot;
        w.dens = &p.v;
        run(s, &p, &w, 40);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(changes(s, MTHP_ANON), 1);
}

/* Without CPU figures (a recording from before them) the trial judges
 * the allocations alone: a size that allocates is kept. */
static void test_no_cpu_kept(void **state) {
        struct sim *s = *state;
        struct prog p;
        prog_init(&p);
        p.v.proc[0].cpu_known = false;
        p.sys_64k = 0.4;
        struct workload w = anon_hot;
        w.dens = &p.v;
        run(s, &p, &w, 40);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_int_equal(changes(s, MTHP_ANON), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_fallback_steps_back),
                T(test_bar_doubles),
                T(test_cpu_per_mb_steps_back),
                T(test_paid_is_kept),
                T(test_cpu_per_second),
                T(test_io_sys_not_judged),
                T(test_no_cpu_kept),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
