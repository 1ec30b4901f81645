/* SPDX-License-Identifier: MIT */
/* Mixed hosts (engine.c sparse_set_aside, the minimum dwell): a size raised
 * for a dense worker is not stepped down within DwellTicks for a quiet
 * process (the give-back pages its bloat out), nor at all for one whose
 * zeros are memory it holds at 4K too. Measured before (tests/bench/
 * mixed-host: pgbench, a JVM with -XX:+AlwaysPreTouch, memcached, a dense
 * churner, a sparse program and a compile loop at once): 27-54 knob
 * writes in 40 s, the JVM's pre-touched zero heap stepping every anon size
 * down and the churner's density raising them again.
 *
 * A small host of its own: anon faults only, each served by the largest
 * anon size at "always"; a dense worker (pid 4242, 128 MiB, every block
 * present and written) makes the demand, and a second process the test
 * shapes beside it. The boundaries: the quiet sparse process steps anon
 * down once the dwell is over; one that faults steps it down at once; a
 * quiet one that read dense at 4K and holds more than MaxBloat beyond it
 * steps it down. */
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
#define PAGES 100000.0          /* the dense worker's fault demand, 4K pages/s */
#define WORKER_KB (128 * 1024)
#define WORKER 4242
#define OTHER 77

struct other {
        bool on;                /* sampled this tick */
        const char *comm;
        double fault_rate;
        uint64_t rss_kb;
        double coverage;        /* of each block, with the size off: present */
        double zero;            /* of its subpages, with the size on: zero */
        double zero_data;       /* of its zeros, the share beside data (NAN unknown) */
        double pages;           /* what it faults in, 4K pages/s, on top of the worker's */
        int pid;                /* 0: OTHER */
};

struct host {
        struct engine_host e;
        struct other o;
        unsigned changes;       /* anon level changes since host_init */
};

static void host_init(struct host *h) {
        struct mthp_config c;
        memset(h, 0, sizeof(*h));
        mthp_config_defaults(&c);
        h->e.cfg = c.engine;
        caps_init(&h->e.caps);
        caps_boot_knobs(&h->e.caps, h->e.orig, h->e.knob);
        h->o.zero_data = NAN;
}

static int host_setup(void **state) {
        struct host *h = malloc(sizeof(*h));
        assert_non_null(h);
        host_init(h);
        *state = h;
        return 0;
}

static int host_teardown(void **state) {
        free(*state);
        return 0;
}

static void proc(struct mthp_proc_density *p, int pid, const char *comm, double fault_rate, uint64_t rss_kb,
                 double coverage, double zero, double zero_data) {
        memset(p, 0, sizeof(*p));
        p->pid = pid;
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        p->fault_rate = fault_rate;
        p->rss_kb[MTHP_ANON] = rss_kb;
        p->compact_ms = p->thrash_ms = p->reclaim_ms = NAN;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++) {
                p->coverage[MTHP_ANON][i] = coverage;
                p->zero[MTHP_ANON][i] = zero;
                p->zero_data[MTHP_ANON][i] = zero_data;
                p->blocks[MTHP_ANON][i] = (double) rss_kb / (16u << (i < 1 ? 0 : i - 1));
                p->coverage[MTHP_SHMEM][i] = p->zero[MTHP_SHMEM][i] = p->zero_data[MTHP_SHMEM][i] = NAN;
        }
}

/* One tick: the worker's faults, each a folio of the largest anon size at
 * always; its sample (dense), and the other process's if on. */
static void host_step(struct host *h) {
        struct mthp_snapshot *s = &h->e.snap;
        unsigned before = h->e.st.kind[MTHP_ANON].level;
        memset(s, 0, sizeof(*s));
        s->tick = h->e.tick;
        s->t_usec = 1000000 * (h->e.tick + 1);
        s->dt = h->e.tick ? 1.0 : 0.0;
        double faults = snap_anon_faults(&h->e.caps, h->e.knob, s, PAGES + (h->o.on ? h->o.pages : 0),
                                         MEM_TOTAL_KB);
        s->mem.anon_kb = WORKER_KB + (h->o.on ? h->o.rss_kb : 0);
        s->density.valid = true;
        s->density.n_procs = 1;
        proc(&s->density.proc[0], WORKER, "mthp-workload", faults, WORKER_KB, 1, 0, NAN);
        if (h->o.on) {
                s->density.n_procs = 2;
                proc(&s->density.proc[1], h->o.pid ? h->o.pid : OTHER, h->o.comm, h->o.fault_rate, h->o.rss_kb, h->o.coverage, h->o.zero,
                     h->o.zero_data);
        }
        memcpy(s->knob, h->e.knob, sizeof(s->knob));
        mthp_snapshot_derive(&h->e.caps, s);
        engine_host_decide(&h->e);
        if (h->e.st.kind[MTHP_ANON].level != before)
                h->changes++;
}

static unsigned anon_level(const struct host *h) {
        return h->e.st.kind[MTHP_ANON].level;
}

/* The worker alone, dense: anon goes to 2M. */
static void raise_to_2m(struct host *h) {
        for (unsigned i = 0; i < 10 && anon_level(h) < 8; i++)
                host_step(h);
        assert_int_equal(anon_level(h), 8);
}

/* A sparse program (1 byte per 64K: its zeros beside its data) seen the
 * tick after the raise, quiet (it touched its memory and idles; 50
 * faults/s): no step-down within DwellTicks (the give-back pages its
 * bloat out), hold-dwell naming it; once the dwell is over, stepped down. */
static void test_quiet_sparse_waits_dwell(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        uint64_t raised = h->e.st.kind[MTHP_ANON].last_change_tick;
        h->o = (struct other) { .on = true, .comm = "sparse", .fault_rate = 50, .rss_kb = 1024 * 1024,
                                .coverage = 1.0 / 16, .zero = 15.0 / 16, .zero_data = 0.94 };
        host_step(h);   /* first sight: a lifetime average takes no size away */
        host_step(h);
        if (anon_level(h) != 8)
                fail_msg("stepped down 2 ticks after the raise for a quiet process: %s", anon16_reason(&h->e));
        assert_rule(anon16_decision(&h->e), MTHP_RULE_HOLD_DWELL, "77 sparse 50 DwellTicks 5");
        while (h->e.tick < raised + h->e.cfg.dwell_ticks) {
                host_step(h);
                assert_int_equal(anon_level(h), 8);
        }
        host_step(h);
        if (anon_level(h) == 8)
                fail_msg("still 2M after the dwell: %s", anon16_reason(&h->e));
        assert_rule(anon16_decision(&h->e), MTHP_RULE_STEP_DOWN_SPARSE, "77 sparse");
}

/* The boundary: the same program faulting (its bloat grows now, and the
 * give-back takes only quiet processes): stepped down at once. */
static void test_faulting_sparse_steps_down_at_once(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        h->o = (struct other) { .on = true, .comm = "sparse", .fault_rate = 5000, .rss_kb = 1024 * 1024,
                                .coverage = 1.0 / 16, .zero = 15.0 / 16, .zero_data = 0.94 };
        unsigned i;
        for (i = 0; i < 2 && anon_level(h) == 8; i++)
                host_step(h);
        if (anon_level(h) == 8)
                fail_msg("a faulting sparse process did not step anon down: %s", anon16_reason(&h->e));
        assert_true(anon16_decision(&h->e)->rule == MTHP_RULE_STEP_DOWN_SPARSE ||
                    anon16_decision(&h->e)->rule == MTHP_RULE_STEP_DOWN_CHURN);
        assert_tokens(anon16_reason(&h->e), "77 sparse");
}

/* A JVM with -XX:+AlwaysPreTouch: its heap, pre-touched before the raise,
 * read dense at 4K (every page present); quiet since, at the same RSS, its
 * content reads 0.46 of each block (the heap: objects beside zeroed
 * space). Its zeros are memory it holds at 4K too: anon stays at 2M for as
 * long as it stays so (no write), the reason says why. */
static void test_pretouched_zeros_are_no_bloat(void **state) {
        struct host *h = *state;
        h->o = (struct other) { .on = true, .comm = "java", .fault_rate = 30000, .rss_kb = 560 * 1024,
                                .coverage = 1, .zero = 0, .zero_data = NAN };
        raise_to_2m(h);
        unsigned changes = h->changes;
        /* quiet after its start, the heap read by content */
        h->o.fault_rate = 39;
        h->o.zero = 0.54;
        h->o.zero_data = 0.6;
        for (unsigned i = 0; i < 30; i++) {
                host_step(h);
                if (anon_level(h) != 8)
                        fail_msg("tick %u: stepped down for a pre-touched heap: %s", i, anon16_reason(&h->e));
        }
        assert_int_equal(h->changes, changes);
        assert_rule(anon16_decision(&h->e), MTHP_RULE_HOLD, "77 java 0.46 4K");
}

/* The boundary: the same JVM grown past MaxBloat beyond what it held when
 * it read dense (the memory beyond may be bloat): stepped down (after the
 * dwell: it is quiet). */
static void test_grown_past_maxbloat_steps_down(void **state) {
        struct host *h = *state;
        h->o = (struct other) { .on = true, .comm = "java", .fault_rate = 30000, .rss_kb = 400 * 1024,
                                .coverage = 1, .zero = 0, .zero_data = NAN };
        raise_to_2m(h);
        h->o.fault_rate = 39;
        h->o.zero = 0.54;
        h->o.zero_data = 0.6;
        h->o.rss_kb = 600 * 1024;
        unsigned i;
        for (i = 0; i < 10 && anon_level(h) == 8; i++)
                host_step(h);
        if (anon_level(h) == 8)
                fail_msg("grown 1.5x past its dense RSS, still 2M: %s", anon16_reason(&h->e));
        assert_rule(anon16_decision(&h->e), MTHP_RULE_STEP_DOWN_SPARSE, "77 java");
}

/* The JVM pre-touching its heap as anon goes to 2M (the mixed host's run:
 * 124 MiB read dense at 4K, 340 MiB a tick later with 2M on, its content
 * zeros): its grown RSS steps anon down, blamed on it as a churner, and
 * with the sizes off it reads dense at the RSS it grew to, so the raise
 * back skips the dwell. That proved its growth resident at 4K: later, still
 * faulting (its collector), its heap read by content as objects beside
 * zeroed space sample after sample, it steps nothing down again. Two
 * changes, not a flap. */
static void test_proved_resident_no_flap(void **state) {
        struct host *h = *state;
        h->o = (struct other) { .on = true, .comm = "java", .fault_rate = 30000, .rss_kb = 124 * 1024,
                                .coverage = 1, .zero = 0, .zero_data = NAN };
        raise_to_2m(h);
        unsigned changes = h->changes;
        h->o.fault_rate = 20000;
        h->o.pages = 55000;     /* 216 MiB a second */
        h->o.rss_kb = 340 * 1024;
        h->o.zero = 0.63;
        unsigned i;
        for (i = 0; i < 3 && anon_level(h) == 8; i++)
                host_step(h);
        if (anon_level(h) == 8)
                fail_msg("not stepped down for the grown RSS: %s", anon16_reason(&h->e));
        h->o.rss_kb = 428 * 1024;
        for (i = 0; i < 3 && anon_level(h) < 8; i++)
                host_step(h);
        if (anon_level(h) != 8)
                fail_msg("not raised back: %s", anon16_reason(&h->e));
        assert_rule(anon16_decision(&h->e), MTHP_RULE_RAISE_CHURN_BACK, "77 java");
        h->o.fault_rate = 5000;
        h->o.rss_kb = 540 * 1024;
        h->o.zero = 0.6;
        h->o.zero_data = 0.6;
        for (i = 0; i < 30; i++) {
                host_step(h);
                if (anon_level(h) != 8)
                        fail_msg("tick %u after the raise back: %s", i, anon16_reason(&h->e));
        }
        assert_int_equal(h->changes, changes + 2);
        assert_rule(anon16_decision(&h->e), MTHP_RULE_HOLD, "77 java raise back");
}

/* The flap of the mixed host's second run: a JVM that faults (its
 * collector, 7,000-21,000 faults/s) reads 0.16-0.34 of each 16K block by
 * content whenever anon is at 2M and is not sampled at 4K; the dense worker
 * raises anon again once the dwell is over, and the JVM steps it down 2-7
 * ticks later: 58 knob writes in 30 s. A density step-down within
 * ENGINE_FLAP_TICKS of the last one bars the sizes above for 4 DwellTicks,
 * doubling while it repeats: at most 6 level changes in 60 ticks, not one
 * every few ticks. The boundary: a second step-down blamed on another
 * process is news, not a flap: raised again after the dwell. */
static void test_density_flap_barred(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        unsigned changes = h->changes;
        for (unsigned i = 0; i < 60; i++) {
                h->o = (struct other) { .on = anon_level(h) == 8, .comm = "java", .fault_rate = 14000,
                                        .rss_kb = 600 * 1024, .coverage = 1, .zero = 0.7, .zero_data = 0.6 };
                host_step(h);
        }
        if (h->changes - changes > 6)
                fail_msg("%u level changes in 60 ticks: %s", h->changes - changes, anon16_reason(&h->e));
}

static void test_other_process_is_no_flap(void **state) {
        struct host *h = *state;
        raise_to_2m(h);
        for (int pid = 77; pid <= 78; pid++) {
                unsigned i;
                for (i = 0; i < 10 && anon_level(h) == 8; i++) {
                        h->o = (struct other) { .on = true, .comm = "java", .fault_rate = 14000,
                                                .rss_kb = 600 * 1024, .coverage = 1, .zero = 0.7, .zero_data = 0.6,
                                                .pid = pid };
                        host_step(h);
                }
                assert_int_equal(anon_level(h), 0);
                assert_rule(anon16_decision(&h->e), MTHP_RULE_STEP_DOWN_SPARSE, NULL);
                if (strstr(anon16_reason(&h->e), "flap"))
                        fail_msg("pid %d: %s", pid, anon16_reason(&h->e));
                h->o.on = false;
                for (i = 0; i < 10 && anon_level(h) == 0; i++)
                        host_step(h);
                if (anon_level(h) != 8)
                        fail_msg("pid %d: not raised again within 10 ticks: %s", pid, anon16_reason(&h->e));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_quiet_sparse_waits_dwell, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_faulting_sparse_steps_down_at_once, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_pretouched_zeros_are_no_bloat, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_grown_past_maxbloat_steps_down, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_proved_resident_no_flap, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_density_flap_barred, host_setup, host_teardown),
                cmocka_unit_test_setup_teardown(test_other_process_is_no_flap, host_setup, host_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
