/* SPDX-License-Identifier: MIT */
/* Persistent evidence (engine-sim.h): a raise needs the faults of
 * processes seen alive for 5 s or with MinBloatBytes at stake (16 MiB on
 * the simulated 16 GB host), not those of compiler jobs and scripts; and
 * a process under MinBloatBytes does not move max_ptes_none. */
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

#include "engine-caps.h"
#include "engine-sim.h"

/* A compiler job as the build box showed it (cc1: 3,000-4,400 faults/s,
 * 10-25 MiB of anon, dense, gone a tick or two later): pid, seen for the
 * first time. */
static void cc1(struct mthp_proc_density *p, int pid, double rate, uint64_t rss_kb) {
        dens_proc(p, pid, 1, 0);
        snprintf(p->comm, sizeof(p->comm), "cc1");
        p->fault_rate = rate;
        p->rss_kb[MTHP_ANON] = rss_kb;
        p->new_proc = true;
}

/* A stream of compiler jobs, one new each tick (the last one gone), while
 * the host faults 100,000 pages/s: no size moves, and the hold names the
 * job, young and small. On main anon climbed to 64K. */
static void test_compile_stream_no_raise(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        w.dens = &v;
        for (int t = 0; t < 30; t++) {
                cc1(&v.proc[0], 1000 + t, 4000, 15 * 1024);
                v.n_gone = t > 0;
                v.gone[0] = 1000 + t - 1;
                sim_run(s, &w, 1);
                assert_int_equal(level(s, MTHP_ANON), 0);
        }
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_NO_HIGHER,
                    "short-lived, no say in a raise (seen < 5 s, < MinBloatBytes 16.0 MiB at stake): 1, 4000 "
                    "(cc1, 4000 faults/s, seen 0.0 s, 15.6 MiB))");
        assert_int_equal(changes(s, MTHP_ANON), 0);
}

/* The sampler saw a process once, then the demand comes from processes
 * gone before any sample: the blind step-up is held, and says so. */
static void test_blind_step_up_held(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        w.dens = &v;
        cc1(&v.proc[0], 1000, 4000, 15 * 1024);
        sim_run(s, &w, 1);
        v.n_procs = 0;
        v.n_gone = 1;
        v.gone[0] = 1000;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SHORT_LIVED,
                    "no step up: the processes seen 5 s or more or with MinBloatBytes 16.0 MiB at stake fault 0 of "
                    "the 100000 pages/s (a raise needs 25000); gone before a sample saw them or too young for one (under 2 s)");
        assert_int_equal(changes(s, MTHP_ANON), 0);
}

/* Without any process ever seen (a fake host, a hidepid /proc) the blind
 * climb stands: the sampler cannot judge the demand. */
static void test_blind_without_processes_climbs(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 0 };
        struct workload w = anon_hot;
        wide(s);
        w.dens = &v;
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 3); /* UnmeasuredMaxSize 64K */
}

/* Ten small processes that stay (3,000 faults/s and 8 MiB each: 12 MB at
 * stake, under the floor) fault 30,000 pages/s together: no raise while
 * mthpd has seen them for less than 5 s, a raise once it has. */
static void test_small_persistent_raise_after_5s(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 8 };
        struct workload w = anon_hot;
        wide(s);
        w.dens = &v;
        for (unsigned i = 0; i < v.n_procs; i++) {
                dens_proc(&v.proc[i], 2000 + (int) i, 1, 0);
                v.proc[i].fault_rate = 3750;
                v.proc[i].rss_kb[MTHP_ANON] = 8 * 1024;
        }
        /* tick 0 has no rates; the first sample is at t_usec 1 s */
        sim_run(s, &w, 5);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "short-lived, no say in a raise");
        sim_run(s, &w, 1); /* seen 5 s */
        assert_true(level(s, MTHP_ANON) > 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_RAISE_DENSE, NULL);
}

/* A dense program with bytes at stake is raised at its first sample, as
 * before: persistence costs it nothing. */
static void test_dense_at_stake_raised_at_once(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        sim_run(s, &w, 2); /* tick 0: no rates; tick 1: the first with them */
        assert_int_equal(level(s, MTHP_ANON), 8);
}

static const char *const no_values[] = { NULL };

static const char *net_value_of(const struct sim *s) {
        int k = mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none");
        assert_true(k >= 0);
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == k)
                        return s->dec[i].value;
        fail_msg("no decision for khugepaged/max_ptes_none");
        return NULL;
}

/* 2M held for a dense program; then a process appears beside it that
 * holds 2M at 0.8335 of each block (86 zero subpages of 512: the first
 * value the net moves up for): rss_kb its anon. */
static void net_beside(struct sim *s, uint64_t rss_kb) {
        static struct mthp_density_view v;
        struct workload w = anon_hot;
        wide(s);
        int i = add_knob(&s->caps, MTHP_KNOB_NUMBER, 0, "khugepaged/max_ptes_none",
                         MTHP_THP_DIR "/khugepaged/max_ptes_none", no_values);
        snprintf(s->orig[i], MTHP_VALUE_MAX, "511");
        snprintf(s->knob[i], MTHP_VALUE_MAX, "511");
        memset(&v, 0, sizeof(v));
        v.valid = true;
        v.n_procs = 1;
        dens_proc(&v.proc[0], 100, 1, 0);
        w.dens = &v;
        sim_run(s, &w, 4);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_string_equal(net_value_of(s), "86");
        cc1(&v.proc[1], 101, 300, rss_kb);
        for (unsigned z = 0; z < MTHP_SIZES_MAX; z++)
                v.proc[1].zero[MTHP_ANON][z] = 0.1665;
        v.n_procs = 2;
        sim_run(s, &w, 1);
        v.proc[1].new_proc = false;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 8);
}

/* A cc1 of 12 MiB does not move max_ptes_none from the MaxBloat boundary
 * (on main: to 118, its 86 zero subpages + 32 kept whole; the build box's
 * cc1 did, 86 -> 118). */
static void test_net_not_for_small(void **state) {
        struct sim *s = *state;
        net_beside(s, 12 * 1024);
        assert_string_equal(net_value_of(s), "86");
}

/* One of 100 MiB does. */
static void test_net_for_large(void **state) {
        struct sim *s = *state;
        net_beside(s, 100 * 1024);
        assert_string_equal(net_value_of(s), "118");
}

/* Eight small processes seen for 6 s (persistent by age), then a compile
 * stream: 8 new cc1 jobs sampled in each of 3 ticks, none gone yet. The
 * 16 remembered slots go to the jobs, not the services: each service is
 * still remembered from its first sample. On main the second tick of jobs
 * evicted every service (the oldest seen), and each started its 5 s over. */
static void test_persistent_kept_through_compile_stream(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 8 };
        struct workload w = anon_hot;
        wide(s);
        w.dens = &v;
        for (unsigned i = 0; i < 8; i++) {
                dens_proc(&v.proc[i], 2000 + (int) i, 1, 0);
                v.proc[i].fault_rate = 3750;
                v.proc[i].rss_kb[MTHP_ANON] = 8 * 1024;
        }
        sim_run(s, &w, 7);
        uint64_t first = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (s->st.proc[j].pid == 2000)
                        first = s->st.proc[j].first_usec;
        assert_true(first > 0);
        for (int t = 0; t < 3; t++) {
                for (unsigned i = 0; i < 8; i++)
                        cc1(&v.proc[i], 3000 + t * 8 + (int) i, 4000, 15 * 1024);
                sim_run(s, &w, 1);
        }
        for (int pid = 2000; pid < 2008; pid++) {
                bool found = false;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                        if (s->st.proc[j].pid == pid) {
                                found = true;
                                assert_int_equal(s->st.proc[j].first_usec, first);
                        }
                if (!found)
                        fail_msg("service pid %d evicted by the compile stream", pid);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_compile_stream_no_raise),
                T(test_blind_step_up_held),
                T(test_blind_without_processes_climbs),
                T(test_small_persistent_raise_after_5s),
                T(test_dense_at_stake_raised_at_once),
                T(test_net_not_for_small),
                T(test_net_for_large),
                T(test_persistent_kept_through_compile_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
