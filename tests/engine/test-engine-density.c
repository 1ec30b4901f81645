/* SPDX-License-Identifier: MIT */
/* The engine on what the density sampler saw (engine-sim.h): dense
 * processes raise at once, sparse ones hold a size back or step it down
 * (MaxBloat), the density back-off, probes that fail, processes not
 * measured yet, gone or quiet; pressure, compaction stalls and defrag
 * under a raised size; and the processes that opted out of THP. */
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

/* ---- density: what the sampler saw decides how far to go ---- */

/* How many blocks of every size a sample saw: its weight in the memory. */
static void set_blocks(struct mthp_proc_density *p, double n) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                        p->blocks[k][i] = n;
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_RAISE_DENSE, "2M 100 proc100");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "200 proc200 0.25 16K");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, NULL);
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "301 0.50 64K");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_SPARSE, "MaxBloat 20");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_SIZE_IN_USE, NULL);
}

/* A busy host where nothing could gain: the host faults at the raise rate
 * (a compile loop's and short scripts' background) but the only faulting
 * process reads sparse, so nothing is raised. The samples that found no
 * gain back off as a raised level's do: every MTHP_ENGINE_DENSITY_EVERY
 * ticks once the decision is steady, never a raise in between, and every
 * tick again when the host's rate jumps. */
static void test_density_backoff_busy_unraised(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 430, 0.25, 0);   /* a quarter of each 16K block touched: sparse at every size */
        w.dens = &v;
        unsigned sampled = 0;
        for (unsigned i = 0; i < 60; i++)
                sampled += sim_step_sampled(s, &w);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        if (sampled > MTHP_ENGINE_STEADY_TICKS + 60 / MTHP_ENGINE_DENSITY_EVERY + 2)
                fail_msg("density sampled on %u of 60 ticks of a busy host where nothing could gain", sampled);
        assert_true(s->snap.tick < s->st.density_tick + MTHP_ENGINE_DENSITY_EVERY);
        struct mthp_snapshot x = s->snap;
        x.tick = s->st.density_tick + 1;
        assert_false(mthp_engine_wants_density(&s->cfg, &x, &s->st));
        x.fault_pages_rate = 3 * s->st.density_rate + 100000;   /* a new process faults */
        assert_true(mthp_engine_wants_density(&s->cfg, &x, &s->st));
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
        assert_tokens(kind_reason(s, MTHP_ANON), "421");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PROBE, "anon 2M 512K");
        /* barred: no retry of 1M or 2M for a while */
        sim_run(s, &w, 15);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_int_equal(changes(s, MTHP_ANON), 2);
}

static void test_density_unmeasured_capped(void **state) {
        struct sim *s = *state;
        wide(s);
        /* no density sample: climb blind, one size at a time, up to 64K */
        sim_run(s, &anon_hot, 60);
        assert_int_equal(level(s, MTHP_ANON), 3);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD, "anon 64K");
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
        assert_rule(d, MTHP_RULE_DEFRAG_DEFER, "30 anon 2M");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_PRESSURE, "/mthpd-test-limited 700 92 512");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_STEP_DOWN_STALL, "800 120");
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
        assert_tokens(kind_reason(s, MTHP_ANON), "1101");
}

/* Bytes at stake, not a ratio, give a process a say: beside a dense
 * workload that holds its 2M folios and faults little, a compiler (4 MB,
 * 265 faults/s, 20% of the anon pages, 0.66 of each 16K block) puts 2 MiB
 * at stake, under MinBloatBytes= (16 MiB here), and steps nothing down;
 * without a host budget (MaxHostBloat=infinity) five such ones at 0.5 of
 * each block put 20 MB at stake together and do (with one, their bytes
 * count against it: test-engine-budget.c). */
static void test_density_small_bytes_no_veto(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        s->cfg.max_host_bloat_set = true;
        s->cfg.max_host_bloat_kb = UINT64_MAX;
        dens_proc(&v.proc[0], 1150, 1, 0);
        w.dens = &v;
        sim_climb(s, &w, MTHP_ANON, 8);
        v.proc[0].fault_rate = 2; /* holds its folios: 1,024 pages/s */
        dens_proc(&v.proc[1], 1151, 0.66, 0);
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                v.proc[1].coverage[MTHP_ANON][i] = 0.66; /* its few MB in one cluster */
        snprintf(v.proc[1].comm, sizeof(v.proc[1].comm), "cc1");
        v.proc[1].fault_rate = 265;
        v.proc[1].rss_kb[MTHP_ANON] = 4000;
        v.n_procs = 2;
        sim_run(s, &w, 10);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_int_equal(s->downs[MTHP_ANON], 0);
        for (int i = 1; i <= 5; i++) {
                dens_proc(&v.proc[i], 1160 + i, 0.5, 0);
                for (unsigned r = 0; r < MTHP_SIZES_MAX; r++)
                        v.proc[i].coverage[MTHP_ANON][r] = 0.5;
                v.proc[i].fault_rate = 265;
                v.proc[i].rss_kb[MTHP_ANON] = 4000;
        }
        v.n_procs = 6;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "0.50 16K 6 MinBloatBytes 16 MiB 22");
}

/* The raise's reason quotes the densest use of the most faulting process
 * at the largest size it has blocks of: one whose mappings have no 2M
 * block (a compiler beside a program with 2M blocks) printed "nan of each
 * 2M block". */
static void test_density_raise_reason_no_nan(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 1170, 1, 0);
        dens_proc(&v.proc[1], 1171, 1, 0);
        v.proc[0].fault_rate = 100000; /* the most faulting: no block above 64K */
        for (unsigned i = 4; i < MTHP_SIZES_MAX; i++)
                v.proc[0].coverage[MTHP_ANON][i] = v.proc[0].zero[MTHP_ANON][i] = NAN;
        w.dens = &v;
        sim_climb(s, &w, MTHP_ANON, 8);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_RAISE_DENSE, "1170 1.00 64K");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_NO_HIGHER, "15000 1300 proc1300 25000");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_RAISE_DENSE, "512K");
        /* 1251 no longer sampled, not said to be gone: its sample holds */
        w.dens = &left;
        sim_run(s, &w, 1);
        assert_int_equal(level(s, MTHP_ANON), 6);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_NO_HIGHER, "1251");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_NO_HIGHER, "1261 proc1261 40000");
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
        assert_tokens(kind_reason(s, MTHP_ANON), "1201");
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

/* ---- opt-outs: processes that choose for themselves ---- */

/* A dense process (400) and a sparse one (401) named comm, THP disabled
 * for the sparse one or not, 30 ticks of anon_hot on the shipped ladder
 * from a fresh start. */
static void dense_and_sparse(struct sim *s, struct mthp_density_view *v, struct workload *w, const char *comm,
                             bool thp_off) {
        sim_init(s);
        wide(s);
        *v = (struct mthp_density_view) { .valid = true, .n_procs = 2 };
        *w = anon_hot;
        dens_proc(&v->proc[0], 400, 1, 0);
        dens_proc(&v->proc[1], 401, 0.25, 0);
        snprintf(v->proc[1].comm, sizeof(v->proc[1].comm), "%s", comm);
        v->proc[1].thp_disabled = thp_off;
        w->optout_pages[MTHP_ANON] = thp_off ? v->proc[1].fault_rate : 0;
        w->dens = v;
        sim_run(s, w, 30);
}

/* A sparse process with THP disabled for it (PR_SET_THP_DISABLE: Redis's
 * default) beside a dense one: it gets no large folio whatever the knobs
 * say, so it cannot bloat and must not hold the host back. */
static void test_optout_prctl_sparse_does_not_hold_back(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        dense_and_sparse(s, &v, &w, "redis-server", true);
        assert_int_equal(level(s, MTHP_ANON), 8);
        assert_tokens(kind_reason(s, MTHP_ANON), "401 redis-server prctl");
        /* the other way round it still holds the host back */
        dense_and_sparse(s, &v, &w, "redis-server", false);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "401 redis-server");
}

/* A process names itself: a comm with the parentheses, quotes or commas
 * a reason uses around it is quoted, its quotes and backslashes escaped,
 * so no comm can end the name early or pass for another; a plain comm
 * stays as it is, but for a backslash, which is doubled. */
static void test_comm_quoted_in_reasons(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v;
        struct workload w;
        dense_and_sparse(s, &v, &w, "\") (\"", false);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_contains(kind_reason(s, MTHP_ANON), "held back by pid 401 (\"\\\") (\\\"\", ");
        /* left out for THP disabled: the same quoting */
        dense_and_sparse(s, &v, &w, "\") (\"", true);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 401 (\"\\\") (\\\"\") left out");
        /* a backslash is doubled (no quotes needed): "a\\x41" cannot pass
         * for an escaped "aA" */
        dense_and_sparse(s, &v, &w, "a\\x41", true);
        assert_contains(kind_reason(s, MTHP_ANON), "pid 401 (a\\\\x41) left out");
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
        assert_tokens(kind_reason(s, MTHP_ANON), "411 proc411 MADV_NOHUGEPAGE");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD, "0");
        assert_tokens(kind_reason(s, MTHP_ANON), "420 redis-server prctl");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD, "0");
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
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "430 java 50000 0.10 2M MADV_HUGEPAGE");
        /* the hg heap goes away, the sparse plain memory stays: still held */
        v.proc[0].coverage[MTHP_ANON][z] = 0.10;
        v.proc[0].hg_coverage[MTHP_ANON][z] = NAN;
        v.proc[0].hg_blocks[MTHP_ANON][z] = 0;
        unsigned before = changes(s, MTHP_ANON);
        sim_run(s, &w, 30);
        assert_int_equal(level(s, MTHP_ANON), 7);
        assert_int_equal(changes(s, MTHP_ANON), before); /* no raise to 2M and back */
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD_SPARSE, "0.10 2M");
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

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_density_dense_jumps),
                T(test_density_sparse_holds),
                T(test_density_pid_exec_reuses_slot),
                T(test_density_mixed_sparse_wins),
                T(test_density_bloat_steps_down_fast),
                T(test_density_backoff_steady),
                T(test_density_backoff_wakes),
                T(test_density_backoff_busy_unraised),
                T(test_density_backoff_sparse_arrives),
                T(test_density_probe_fails_reverts),
                T(test_density_unmeasured_capped),
                T(test_defrag_defer_for_large_fallbacks),
                T(test_cgroup_headroom_steps_down),
                T(test_compaction_stall_steps_down),
                T(test_density_unmeasured_process_waits),
                T(test_density_memory_outweighs_odd_sample),
                T(test_density_small_share_no_veto),
                T(test_density_small_bytes_no_veto),
                T(test_density_raise_reason_no_nan),
                T(test_density_raise_needs_its_faults),
                T(test_density_first_sight_waits),
                T(test_gone_process_bars_no_raise),
                T(test_quiet_process_bars_no_raise),
                T(test_density_phase_change_is_quick),
                T(test_optout_prctl_sparse_does_not_hold_back),
                T(test_comm_quoted_in_reasons),
                T(test_optout_in_limited_cgroup),
                T(test_optout_nohugepage_does_not_hold_back),
                T(test_optout_faults_are_no_demand),
                T(test_optout_madvise_judged_without_hg),
                T(test_optout_madvised_folios_are_no_demand),
        };

        return cmocka_run_group_tests_name("engine-density", tests, NULL, NULL);
}
