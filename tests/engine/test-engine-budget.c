/* SPDX-License-Identifier: MIT */
/* The host's bloat budget (MaxHostBloat=, engine-budget.c): a raise is
 * weighed by the bloat the host would hold in all, summed over the
 * processes that would get the size, against 2.5% of MemTotal by
 * default (391 MiB on the simulated host's 16 GB). Small sparse
 * processes cost their bytes against it, not a veto; a big one that
 * takes the host over it holds the host at the largest size that fits.
 * Before the budget, processes each under MinBloatBytes= objected
 * together once their sum reached it (a compile loop beside a dense
 * workload stepped the host from 2M to 4K). */
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

#include "engine-sim.h"

/* A process using u of each block of every anon size from 16K (caps
 * index 1) up to index `to`, v above it. */
static void uses(struct mthp_proc_density *p, int pid, const char *comm, double fault_rate, uint64_t rss_kb,
                 double u, unsigned to, double v) {
        dens_proc(p, pid, 1, 0);
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        p->fault_rate = fault_rate;
        p->rss_kb[MTHP_ANON] = rss_kb;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                p->coverage[MTHP_ANON][i] = i <= to ? u : v;
}

/* A dense workload at 2M that faults little (it holds its folios), and
 * three compiler jobs beside it, 8 MB each at 0.5 of each block: 7.8 MiB
 * of bloat each, under MinBloatBytes (16 MiB), 23 MiB together. Before
 * the budget they stepped the host down to 4K together; now their 23
 * MiB count against the host's 391 MiB, and 2M stays. */
static void test_budget_small_sparse_costs_bytes(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1300, 1, 0);
        w.dens = &v;
        sim_climb(s, &w, MTHP_ANON, 8);
        v.proc[0].fault_rate = 2; /* holds its 2M folios: 1,024 pages/s */
        for (int i = 1; i <= 3; i++)
                uses(&v.proc[i], 1300 + i, "cc1", 265, 8000, 0.5, MTHP_SIZES_MAX, 0.5);
        v.n_procs = 4;
        unsigned downs = s->downs[MTHP_ANON];
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(s->downs[MTHP_ANON], downs);
        /* the figure is kept for the bus and the metrics: 23 MiB at 16K */
        double kb = s->st.host_bloat_kb[MTHP_ANON][1];
        assert_true(kb > 20 * 1024 && kb < 26 * 1024);
        assert_true(fabs(s->st.host_budget_kb - 16000000 * 0.025) < 1);
}

/* A big process beside the dense one: 8 GB, 0.97 of each block up to
 * 512K and 0.93 above (within MaxBloat 20% at every size, so its own
 * density would take 2M): 242 MiB of bloat at 512K, 588 MiB at 1M and 2M.
 * The host goes to 512K, the largest size whose bloat fits 391 MiB, and
 * says so with the figures. */
static void test_budget_big_process_holds_largest_fit(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1400, 1, 0);
        uses(&v.proc[1], 1401, "java", 50000, 8000000, 0.97, 6, 0.93);
        w.dens = &v;
        sim_run(s, &w, 12);
        assert_int_equal(level(s, MTHP_ANON), 6);
        const struct mthp_decision *d = kind_decisions(s, MTHP_ANON);
        assert_rule(d, MTHP_RULE_HOLD_BUDGET, "1M 604 MaxHostBloat 391 588 1401 java 16");
        assert_contains(d->reason, "host bloat at 1M 604 MiB of MaxHostBloat 391 MiB (predicted 588 MiB");
}

/* The same process appearing once 2M is on: the host steps down to 512K
 * at once, the figures in the reason; at 512K it holds (no allowance in
 * a hold: stepping down would give back nothing of a process not started). */
static void test_budget_big_process_steps_down(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1500, 1, 0);
        w.dens = &v;
        sim_climb(s, &w, MTHP_ANON, 8);
        uses(&v.proc[1], 1501, "java", 50000, 8000000, 0.97, 6, 0.93);
        v.n_procs = 2;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 6);
        const struct mthp_decision *d = kind_decisions(s, MTHP_ANON);
        assert_rule(d, MTHP_RULE_STEP_DOWN_BUDGET, "1M 588 MaxHostBloat 391 1501 java 2M 512K");
        unsigned downs = s->downs[MTHP_ANON];
        sim_run(s, &w, 20);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_int_equal(s->downs[MTHP_ANON], downs);
}

/* MaxHostBloat=infinity: no host budget, the small ones object together
 * as before it; a set size binds like the percent. */
static void test_budget_infinity_and_size(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        s->cfg.max_host_bloat_set = true;
        s->cfg.max_host_bloat_kb = UINT64_MAX;
        dens_proc(&v.proc[0], 1600, 1, 0);
        uses(&v.proc[1], 1601, "java", 50000, 8000000, 0.97, 6, 0.93);
        w.dens = &v;
        sim_run(s, &w, 12);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 300M: 242 MiB at 512K plus 16 MiB for a process started later fits, 1M does not */
        s->cfg.max_host_bloat_kb = 300 * 1024;
        sim_step(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_BUDGET, "MaxHostBloat 300");
}

/* Bloat the observer measured after the fact (a quiet process grown
 * under a raise, not given back: 300 MiB) uses the budget up for a raise,
 * and the largest such process sets the allowance for one started later;
 * but it steps nothing down: a smaller size would not give it back (the
 * give-back does, GiveBack=). */
static void grown(struct sim *s, double mib) {
        s->st.grown_kb = s->st.grown_max_kb = mib * 1024;
        s->st.grown_pid = 1777;
        snprintf(s->st.grown_comm, sizeof(s->st.grown_comm), "sparse");
        s->st.grown_usec = 1000000 * (s->tick + 1);
}

static void test_budget_grown_bars_raise_not_hold(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1700, 1, 0);
        w.dens = &v;
        grown(s, 300);
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_BUDGET,
                    "16K 600 MaxHostBloat 391 300 1777 sparse");
        /* raised before it grew: the level holds */
        s->st.grown_kb = s->st.grown_max_kb = 0;
        s->st.grown_usec = 0;
        sim_climb(s, &w, MTHP_ANON, 8);
        grown(s, 300);
        unsigned downs = s->downs[MTHP_ANON];
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(s->downs[MTHP_ANON], downs);
        /* the bus's figure includes it */
        assert_true(s->st.host_bloat_kb[MTHP_ANON][8] >= 300 * 1024);
}

/* What the give-back freed comes off the bloat remembered: 300 MiB grown
 * and given back, the raise goes ahead at the next tick, not 15 s later
 * (realkernel sparse-after-raise: a dense program left at 4K to the end
 * in 1 run of 3). */
static void test_budget_given_back_frees(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1700, 1, 0);
        w.dens = &v;
        grown(s, 300);
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        w.given_back_kb = 300 * 1024;
        w.given_back_pid = 1777;
        sim_run(s, &w, 1);
        w.given_back_kb = 0;
        sim_run(s, &w, 1);
        assert_true(level(s, MTHP_ANON) > 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_budget_small_sparse_costs_bytes),
                T(test_budget_big_process_holds_largest_fit),
                T(test_budget_big_process_steps_down),
                T(test_budget_infinity_and_size),
                T(test_budget_grown_bars_raise_not_hold),
                T(test_budget_given_back_frees),
        };
        return cmocka_run_group_tests_name("engine-budget", tests, NULL, NULL);
}
