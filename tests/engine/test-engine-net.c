/* SPDX-License-Identifier: MIT */
/* The safety net under 2M (engine-sim.h): the THP shrinker's knobs
 * (khugepaged/max_ptes_none, shrink_underused), and a host
 * whose base page is 16K. */
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

/* ---- the safety net under 2M: the THP shrinker's knobs ---- */

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
        assert_rule(decision_of(s, "khugepaged/max_ptes_none"), MTHP_RULE_NET_HELD, "86 512");
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
        s->st.net_until = 0; /* the net raised on this host, not held from the 4K one */
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
        assert_rule(d, MTHP_RULE_NET_HELD, "22 128");
}

static void test_net_follows_measured_zero_share(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        add_shrinker_knobs(s);
        s->cfg.max_bloat = 100; /* a process using half of each block may hold 2M */
        /* ... and its 420 MiB of bloat the host too (MaxHostBloat=infinity) */
        s->cfg.max_host_bloat_set = true;
        s->cfg.max_host_bloat_kb = UINT64_MAX;
        dens_proc(&v.proc[0], 100, 1, 0.20);
        w.dens = &v;
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 20% zero: 103 zero subpages + 32 stay under the MaxBloat 100% boundary, 256 */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "256");
        dens_proc(&v.proc[0], 100, 1, 0.48);
        sim_run(s, &w, 20); /* remembered usage is a decayed average: let it settle */
        assert_int_equal(level(s, MTHP_ANON), 8);
        /* 246 + 32 now, but its 246 zero subpages stay under the 256 held
         * since the raise: its folios are not split, and the value stays */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "256");
        assert_rule(decision_of(s, "khugepaged/max_ptes_none"), MTHP_RULE_NET_HELD, "256 278");
        /* back below 2M: the 2M folios faulted meanwhile stay, so the net
         * stays (taken down with the size, it let a limited
         * cgroup's sparse program be OOM-killed) ... */
        sim_run(s, &idle, 40);
        assert_true(level(s, MTHP_ANON) < 8);
        const char *kept = decision_of(s, "khugepaged/max_ptes_none")->value;
        assert_true(kept[0] && atoi(kept) < 511);
        assert_rule(decision_of(s, "khugepaged/max_ptes_none"), MTHP_RULE_NET_LINGER, NULL);
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "1");
        /* ... for 600 ticks after 2M was last held; then the original value */
        sim_run(s, &idle, 600);
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "");
        assert_string_equal(decision_of(s, "global/shrink_underused")->value, "");
        assert_string_equal(s->knob[mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none")], "511");
}

/* max_ptes_none is written when 2M is raised and then held: a process's
 * zero subpages read differently from sample to sample (86, 114, 107,
 * 101, 113, 108 ... on a busy host, a write almost every tick) move it
 * only when its folios would be split at the held value. */
static void test_net_steady_while_held(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        static const double zeros[] = { 0.02, 0.16, 0.08, 0.14, 0.04, 0.12, 0.15, 0.01, 0.10, 0.16 };
        wide(s);
        add_shrinker_knobs(s);
        dens_proc(&v.proc[0], 100, 1, 0.06);
        w.dens = &v;
        int mk = mthp_caps_find_knob(&s->caps, "khugepaged/max_ptes_none");
        char last[MTHP_VALUE_MAX];
        unsigned writes = 0;
        snprintf(last, sizeof(last), "%s", s->knob[mk]);
        for (unsigned t = 0; t < 60; t++) {
                dens_proc(&v.proc[0], 100, 1, zeros[t % 10]);
                sim_step(s, &w);
                if (strcmp(last, s->knob[mk]) != 0) {
                        writes++;
                        snprintf(last, sizeof(last), "%s", s->knob[mk]);
                }
        }
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(writes, 1);
        assert_rule(decision_of(s, "khugepaged/max_ptes_none"), MTHP_RULE_NET_HELD, NULL);
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_FIRST_SAMPLE, "anon 16K");
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), ladder_of(s, MTHP_ANON, ladder));
        assert_int_equal(s->caps.sizes[ladder[level(s, MTHP_ANON) - 1]].kb, 32768);
        /* the MaxBloat 20% boundary: ceil(2048 x (1 - 1/1.2)) = 342 */
        assert_string_equal(decision_of(s, "khugepaged/max_ptes_none")->value, "342");
        assert_rule(decision_of(s, "khugepaged/max_ptes_none"), MTHP_RULE_NET_HELD, "342 2048");
        assert_rule(decision_of(s, "global/shrink_underused"), MTHP_RULE_NET_HELD, "32M");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_net_under_2m),
                T(test_net_follows_measured_zero_share),
                T(test_base_page_16k),
                T(test_net_base_page),
                T(test_net_steady_while_held),
        };

        return cmocka_run_group_tests_name("engine-net", tests, NULL, NULL);
}
