/* SPDX-License-Identifier: MIT */
/* The engine's ticks on recorded traces of real workloads (the trace set
 * and how it is replayed: test-traces.c, replay.c): when the daemon wakes
 * (mthp_tick_next), the early tick a tick that awaits its processes'
 * fault samples asks for, climbs (a raise short of the top), the awaited
 * samples (mthp_engine_awaits_samples, mthp_engine_awaited_pids) and the
 * fault-burst alarm (mthp_tick_alarm_period, mthp_tick_burst,
 * mthp_engine_burst_unexplained). */
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
#include "mthp/record.h"
#include "mthp/util.h"

#include "replay.h"

#ifndef MTHP_TRACE_DIR
#error "MTHP_TRACE_DIR: the directory of the recorded traces"
#endif

/* How soon a workload that starts faulting is raised (faster first
 * reaction). pgbench -S under the unit (trace pgbench-select-unit): the
 * server starts faulting between ticks 2 and 3; at tick 3 the backend is
 * first seen, holds shared memory, and its faults are no kind's demand
 * until its sampled fault addresses split them (fault sampling is switched
 * on at that tick), so shmem went to 2M at tick 4, a whole Interval later,
 * and pgbench ran its first ~2 s at 4K. Tick 3 awaits the samples, and
 * mthpd ticks again a quarter Interval after it (mthp_tick_next), then at
 * tick 4's time as before. No other tick of any trace awaits samples
 * without a raise coming at most a tick later, and none of them asks for
 * an early tick in steady state: at most one in MTHP_TICK_EARLY_SPACING
 * ticks, each at a tick that started to await samples. */
static void test_pgbench_unit_early_tick(void **state) {
        (void) state;
        struct replay *rp = replay_trace("pgbench-select-unit");
        uint64_t interval = rp->cfg.interval_usec;
        unsigned i3 = 0;
        while (i3 < rp->n && rp->t[i3].tick != 3)
                i3++;
        assert_true(i3 + 1 < rp->n);
        assert_true(rp->t[i3].awaits);
        assert_int_equal(rp->t[i3].level[MTHP_SHMEM], 0);
        assert_int_equal(rp->t[i3].next_usec, rp->t[i3].t_usec + interval / 4);
        /* the raise the samples bring (tick 4's, replayed as the early tick) */
        assert_int_equal(rp->t[i3 + 1].level[MTHP_SHMEM], rp->n_ladder[MTHP_SHMEM]);
        assert_false(rp->t[i3 + 1].awaits);
        /* the recorded tick 4 stands in for the early tick: the one after
         * it is due at tick 3's time + Interval, the grid kept */
        assert_int_equal(rp->t[i3 + 1].next_usec, rp->t[i3].t_usec + interval);
        for (unsigned i = 0; i < rp->n; i++)
                if (i != i3 && i != i3 + 1) {
                        assert_false(rp->t[i].awaits);
                        assert_int_equal(rp->t[i].next_usec, rp->t[i].t_usec + interval);
                }
}

/* A climb (mthp_engine_climbing). pgbench-tpcb-unit: shmem went to 512K
 * at tick 4 (a backend's density held it there) and to 2M at tick 7,
 * while the backends filled the buffer pool. Tick 4 climbs; the one that
 * reaches the top, and the ticks that raise nothing, do not. (Tick 4
 * stands in for the early tick tick 3's await asked for, so its next tick
 * is tick 3's grid: the schedule itself is test_tick_next's.) A raise the
 * kernel refused (mthp_engine_note_applied) does not climb. */
static void test_climb_early_tick(void **state) {
        (void) state;
        /* the backend holding 512K puts a few MiB at stake: below
         * MinBloatBytes= it has no say of its own, and the climb is the
         * mechanism under test */
        replay_every_say = true;
        struct replay *rp = replay_trace("pgbench-tpcb-unit");
        replay_every_say = false;
        uint64_t interval = rp->cfg.interval_usec;
        int first = -1;
        for (unsigned i = 0; i < rp->n && first < 0; i++)
                if (rp->t[i].level[MTHP_SHMEM] > 0)
                        first = (int) i;
        int top = first_top(rp, MTHP_SHMEM);
        assert_true(first > 0 && top > first);
        assert_true(rp->t[first].climb);
        assert_true(rp->t[first - 1].awaits);
        assert_int_equal(rp->t[first].next_usec, rp->t[first - 1].t_usec + interval);
        assert_false(rp->t[top].climb);
        for (int i = 0; i < first; i++)
                assert_false(rp->t[i].climb);
        for (unsigned i = (unsigned) top; i < rp->n; i++)
                if (rp->t[i].level[MTHP_SHMEM] <= rp->t[i - 1].level[MTHP_SHMEM] &&
                    rp->t[i].level[MTHP_ANON] <= rp->t[i - 1].level[MTHP_ANON])
                        assert_false(rp->t[i].climb);
}

/* Every trace: an early tick only where a tick starts to await samples,
 * at most one in MTHP_TICK_EARLY_SPACING ticks, or where a tick raised a
 * kind short of its top (a climb: each one a raise). */
static void test_early_ticks_bounded(void **state) {
        (void) state;
        static const char *traces[] = { "dense-anon", "dense-shmem", "limited-sparse", "mixed-anon",
                                        "pgbench-select-30s", "pgbench-select-unit", "pgbench-select", "pgbench-select-burst",
                                        "pgbench-tpcb-unit", "sparse-anon", "stress-vm", "zero-anon" };
        for (size_t t = 0; t < sizeof(traces) / sizeof(traces[0]); t++) {
                struct replay *rp = replay_trace(traces[t]);
                uint64_t interval = rp->cfg.interval_usec;
                unsigned early = 0, climbs = 0, last = 0, last_early = 0;
                for (unsigned i = 0; i < rp->n; i++) {
                        bool stand_in = (early || climbs) && i == last + 1;
                        if (rp->t[i].next_usec == rp->t[i].t_usec + interval)
                                continue;
                        /* the recorded tick after an early one stands in for
                         * it (at the recorded time, its schedule is off the
                         * grid); one that climbs again asks for the next */
                        if (stand_in) {
                                if (rp->t[i].climb)
                                        last = i;
                                continue;
                        }
                        assert_int_equal(rp->t[i].next_usec, rp->t[i].t_usec + interval / 4);
                        if (rp->t[i].climb) {
                                bool raised = false;
                                for (int k = 0; k < _MTHP_KIND_MAX; k++)
                                        raised = raised || (i > 0 && rp->t[i].level[k] > rp->t[i - 1].level[k] &&
                                                            rp->t[i].level[k] < rp->n_ladder[k]);
                                assert_true(raised);
                                climbs++;
                                last = i;
                                continue;
                        }
                        assert_true(rp->t[i].awaits);
                        assert_true(i == 0 || !rp->t[i - 1].awaits);
                        assert_true(early == 0 || i >= last_early + MTHP_TICK_EARLY_SPACING);
                        early++;
                        last = last_early = i;
                }
                char at_ticks[128] = "";
                unsigned all_climbs = 0;
                for (unsigned i = 0; i < rp->n; i++)
                        if (rp->t[i].climb) {
                                size_t len = strlen(at_ticks);
                                snprintf(at_ticks + len, sizeof(at_ticks) - len, " %llu",
                                         (unsigned long long) rp->t[i].tick);
                                all_climbs++;
                        }
                print_message("%s: %u tick(s), %u early, %u climbing (at ticks%s)\n", traces[t], rp->n, early,
                              all_climbs, at_ticks);
                /* a climb is a raise short of the top: a workload's start
                 * has a few, each a step up the ladder */
                if (all_climbs > 3)
                        fail_msg("%s: %u climbing ticks in %u", traces[t], all_climbs, rp->n);
                /* what the spacing cannot say: a workload's start asks for
                 * one, its steady run none (the pgbench servers: their
                 * start; the generators' processes hold no shared memory
                 * or show up with their samples in); pgbench-select-burst
                 * also at 18 s, where a postgres process that had not
                 * faulted (the checkpointer, 12.8k faults/s) began to */
                unsigned allowed = strcmp(traces[t], "pgbench-select-burst") == 0 ? 2u
                                   : strncmp(traces[t], "pgbench-", 8) == 0 ? 1u : 0u;
                if (early > allowed)
                        fail_msg("%s: %u early ticks in %u", traces[t], early, rp->n);
        }
}

/* The state and snapshot of trace `name` at recorded tick `tick`, the
 * decision taken (every recorded sample, default config); apart from
 * replay_trace*(), which it leaves alone. */
static struct {
        struct mthp_config cfg;
        struct mthp_caps caps;
        struct mthp_snapshot snap;
        struct mthp_engine_state st;
} at;

static void replay_to_tick(const char *name, uint64_t tick) {
        _cleanup_(mthp_record_close_readp) struct mthp_record_reader *r = NULL;
        static struct mthp_engine_state next;
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        char path[512], err[512];
        int e;
        memset(&at.st, 0, sizeof(at.st));
        mthp_config_defaults(&at.cfg);
        if (replay_every_say) {
                at.cfg.engine.min_bloat_auto = false;
                at.cfg.engine.min_bloat_kb = 0;
        }
        snprintf(path, sizeof(path), "%s/%s.rec", MTHP_TRACE_DIR, name);
        if (mthp_record_open_read(path, &at.caps, &r, err, sizeof(err)) < 0)
                fail_msg("%s", err);
        while ((e = mthp_record_read(r, &at.snap, err, sizeof(err))) > 0) {
                (void) mthp_engine_decide(&at.cfg.engine, &at.caps, &at.snap, &at.st, &next, dec, MTHP_KNOBS_MAX);
                at.st = next;
                if (at.snap.tick == tick)
                        return;
        }
        fail_msg("%s: no tick %llu (%s)", name, (unsigned long long) tick, e < 0 ? err : "end of trace");
}

/* A climb needs the raise to stand: tick 4 of pgbench-tpcb-unit raised
 * shmem to 512K, a backend's density holding it there; with the write of
 * its top size refused (mthp_engine_note_applied puts the level back) no
 * early tick is asked for (each tick would raise and be refused again,
 * four ticks an Interval). Nor with the sizes above 512K barred, nor
 * when the raise was not a density's (a blind step, a start grace). */
static void test_climb_needs_the_raise(void **state) {
        (void) state;
        replay_every_say = true; /* as test_climb_early_tick */
        replay_to_tick("pgbench-tpcb-unit", 4);
        replay_every_say = false;
        const struct mthp_engine_config *cfg = &at.cfg.engine;
        struct mthp_engine_kind *k = &at.st.kind[MTHP_SHMEM];
        assert_true(k->level > 0 && k->climb);
        assert_true(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
        struct mthp_engine_state saved = at.st;
        unsigned ladder[MTHP_SIZES_MAX];
        unsigned n = mthp_engine_ladder(cfg, &at.caps, MTHP_SHMEM, ladder);
        assert_true(k->level < n);
        bool failed[MTHP_KNOBS_MAX] = { false };
        failed[at.caps.sizes[ladder[k->level - 1]].knob[MTHP_SHMEM]] = true;
        mthp_engine_note_applied(cfg, &at.caps, &at.st, failed);
        assert_true(at.st.kind[MTHP_SHMEM].level < saved.kind[MTHP_SHMEM].level);
        assert_false(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        /* the next level barred after a failure: no room */
        k->ceiling = k->level + 1;
        k->ceiling_until = at.st.tick + 10;
        assert_false(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        k->climb = false;
        assert_false(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        /* a tick without density */
        at.snap.density.valid = false;
        assert_false(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
        at.snap.density.valid = true;
        assert_true(mthp_engine_climbing(cfg, &at.caps, &at.snap, &at.st));
}

/* An early tick only where the samples can bring a raise (review of the
 * early tick): a process awaiting its samples splits its faults between
 * anon and shmem, so one of them must be able to go higher at the next
 * tick. Under connection churn with shmem at 2M and anon at its top a new
 * backend asked for an early tick (and the daemon for 4x the perf sample
 * rate) every MTHP_TICK_EARLY_SPACING ticks for nothing. Tick 3 of
 * pgbench-select-unit awaits its backend's samples with both kinds at 4K;
 * the same tick with the kinds moved: */
static void test_awaits_needs_room(void **state) {
        (void) state;
        unsigned ladder[MTHP_SIZES_MAX], top[_MTHP_KIND_MAX];
        replay_to_tick("pgbench-select-unit", 3);
        const struct mthp_engine_config *cfg = &at.cfg.engine;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                top[k] = mthp_engine_ladder(cfg, &at.caps, k, ladder);
                assert_int_equal(at.st.kind[k].level, 0);
        }
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        struct mthp_engine_state saved = at.st;

        /* one kind at its top: the other may still be raised */
        at.st.kind[MTHP_SHMEM].level = top[MTHP_SHMEM];
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        at.st.kind[MTHP_SHMEM].level = 0;
        at.st.kind[MTHP_ANON].level = top[MTHP_ANON];
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        /* both at their tops: nothing to wait for */
        at.st.kind[MTHP_SHMEM].level = top[MTHP_SHMEM];
        assert_false(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));

        /* shmem at its top, anon's next level barred after a failure: none;
         * the bar lifts at the next tick: anon again */
        at.st.kind[MTHP_ANON].level = 2;
        at.st.kind[MTHP_ANON].ceiling = 3;
        at.st.kind[MTHP_ANON].ceiling_until = at.st.tick + 10;
        assert_false(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        at.st.kind[MTHP_ANON].ceiling_until = at.st.tick + 1;
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));

        /* both at 4K, a populated memory-limited cgroup 1 MiB from its
         * 1 GiB limit: it affords no size of either kind */
        at.st = saved;
        struct mthp_engine_limited *c = &at.st.limited[0];
        memset(c, 0, sizeof(*c));
        snprintf(c->path, sizeof(c->path), "/mthpd-test-full");
        c->present = c->populated = true;
        c->limit_kb = 1 << 20;
        c->usage_kb = c->limit_kb - 1024;
        assert_false(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));

        /* ladders cut to one size (AnonSizes=16K, ShmemSizes=16K), that
         * size always: at their tops */
        at.st = saved;
        at.cfg.engine.max_kb[MTHP_ANON] = at.cfg.engine.max_kb[MTHP_SHMEM] = 16;
        at.st.kind[MTHP_ANON].level = at.st.kind[MTHP_SHMEM].level = 1;
        assert_false(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        at.st.kind[MTHP_SHMEM].level = 0;
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
}

/* mthp_engine_awaited_pids: the processes whose faults wait for their
 * samples (at least the ones mthp_engine_awaits_samples counts), most
 * faulting first, at most max; none other. At pgbench-select-unit's tick 3 the
 * engine awaits the backends' samples; three more made-up processes are
 * ranked among them. */
static void test_awaited_pids(void **state) {
        (void) state;
        replay_to_tick("pgbench-select-unit", 3);
        const struct mthp_engine_config *cfg = &at.cfg.engine;
        int pids[MTHP_ENGINE_PROCS];
        double pending = 0, rate;
        size_t n = mthp_engine_awaited_pids(cfg, &at.st, pids, MTHP_ENGINE_PROCS);
        assert_true(n >= 1);
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, &rate));
        for (size_t i = 0; i < n; i++) {
                const struct mthp_engine_proc *p = NULL;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                        if (at.st.proc[j].pid == pids[i])
                                p = &at.st.proc[j];
                assert_non_null(p);
                assert_true(p->fs_pending);
                pending += p->fault_rate;
        }
        assert_true(pending >= rate - 1e-6);   /* at least the processes awaits_samples counts */

        /* three more: two awaiting, one whose samples are in */
        unsigned free_slot[3], k = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS && k < 3; j++)
                if (!at.st.proc[j].pid)
                        free_slot[k++] = j;
        assert_int_equal(k, 3);
        const double rates[3] = { 9e9, 8e9, 1e10 };
        for (k = 0; k < 3; k++) {
                struct mthp_engine_proc *p = &at.st.proc[free_slot[k]];
                memset(p, 0, sizeof(*p));
                p->pid = 900001 + (int) k;
                p->seen_tick = at.st.tick;
                p->fault_rate = rates[k];
                p->fs_pending = k != 2;
        }
        assert_int_equal(mthp_engine_awaited_pids(cfg, &at.st, pids, 2), 2);
        assert_int_equal(pids[0], 900001);
        assert_int_equal(pids[1], 900002);
        assert_int_equal(mthp_engine_awaited_pids(cfg, &at.st, pids, MTHP_ENGINE_PROCS), n + 2);
        assert_int_equal(pids[0], 900001);
        for (size_t i = 0; i < n + 2; i++)
                assert_int_not_equal(pids[i], 900003);
        /* seen too long ago: not awaited any more */
        at.st.proc[free_slot[0]].seen_tick = 0;
        at.st.tick += 100;
        assert_int_equal(mthp_engine_awaited_pids(cfg, &at.st, pids, MTHP_ENGINE_PROCS), 0);
}

/* The schedule itself (mthp_tick_next), on made-up ticks: the early tick,
 * the grid kept after it, no two in a row, the spacing, the floor. */
static void test_tick_next(void **state) {
        (void) state;
        struct mthp_tick_plan p = { 0 };
        const uint64_t s = 1000000;
        assert_int_equal(mthp_tick_next(&p, 1, 10 * s, s, false, false, false), 11 * s);
        /* tick 2 starts to await: the next a quarter later, then tick 2's + 1 s */
        assert_int_equal(mthp_tick_next(&p, 2, 11 * s, s, true, false, false), 11 * s + s / 4);
        assert_int_equal(mthp_tick_next(&p, 3, 11 * s + s / 4, s, true, false, false), 12 * s);
        /* still awaiting: no early tick */
        assert_int_equal(mthp_tick_next(&p, 4, 12 * s, s, true, false, false), 13 * s);
        assert_int_equal(mthp_tick_next(&p, 5, 13 * s, s, false, false, false), 14 * s);
        /* awaiting again, within the spacing of tick 2: none */
        assert_int_equal(mthp_tick_next(&p, 6, 14 * s, s, true, false, false), 15 * s);
        assert_int_equal(mthp_tick_next(&p, 7, 15 * s, s, false, false, false), 16 * s);
        /* tick 2 + MTHP_TICK_EARLY_SPACING: one again */
        uint64_t tk = 2 + MTHP_TICK_EARLY_SPACING;
        assert_int_equal(mthp_tick_next(&p, tk, 16 * s, s, true, false, false), 16 * s + s / 4);
        /* an early tick that starts to await: not a second in a row */
        struct mthp_tick_plan q = { .early = true, .regular_usec = 21 * s };
        assert_int_equal(mthp_tick_next(&q, 20, 20 * s + s / 4, s, true, false, false), 21 * s);
        assert_false(q.early);
        /* a look (a burst tick that saw nobody to act on): a quarter
         * later; that tick may start to await and ask for its own early
         * tick, then the grid of the burst tick */
        struct mthp_tick_plan b = { 0 };
        assert_int_equal(mthp_tick_next(&b, 30, 30 * s, s, false, true, false), 30 * s + s / 4);
        assert_true(b.early && b.look);
        assert_int_equal(mthp_tick_next(&b, 31, 30 * s + s / 4, s, true, false, false), 30 * s + s / 2);
        assert_true(b.early && !b.look);
        assert_int_equal(mthp_tick_next(&b, 32, 30 * s + s / 2, s, true, false, false), 31 * s);
        assert_false(b.early);
        /* a look that awaits nothing either: the grid */
        struct mthp_tick_plan c = { 0 };
        assert_int_equal(mthp_tick_next(&c, 30, 30 * s, s, false, true, false), 30 * s + s / 4);
        assert_int_equal(mthp_tick_next(&c, 31, 30 * s + s / 4, s, false, false, false), 31 * s);
        /* a tick that starts to await and is a burst tick: the await's
         * early tick, counted by the spacing */
        struct mthp_tick_plan w = { 0 };
        assert_int_equal(mthp_tick_next(&w, 70, 70 * s, s, true, true, false), 70 * s + s / 4);
        assert_false(w.look);
        assert_int_equal(w.early_tick, 70);
        /* never a look right after an early tick, nor two looks in a row */
        struct mthp_tick_plan e = { .early = true, .regular_usec = 41 * s };
        assert_int_equal(mthp_tick_next(&e, 40, 40 * s + s / 4, s, false, true, false), 41 * s);
        struct mthp_tick_plan l = { 0 };
        assert_int_equal(mthp_tick_next(&l, 50, 50 * s, s, false, true, false), 50 * s + s / 4);
        assert_int_equal(mthp_tick_next(&l, 51, 50 * s + s / 4, s, false, true, false), 51 * s);
        /* the spacing of an earlier early tick does not hold a look back */
        struct mthp_tick_plan m = { 0 };
        assert_int_equal(mthp_tick_next(&m, 60, 60 * s, s, true, false, false), 60 * s + s / 4);
        assert_int_equal(mthp_tick_next(&m, 61, 60 * s + s / 4, s, false, false, false), 61 * s);
        assert_int_equal(mthp_tick_next(&m, 62, 61 * s, s, false, true, false), 61 * s + s / 4);
        /* but the look's own await does */
        assert_int_equal(mthp_tick_next(&m, 63, 61 * s + s / 4, s, true, false, false), 62 * s);
        /* a climb: a quarter later, after an early tick too, not counted
         * by the spacing; the grid kept ends it */
        struct mthp_tick_plan k = { 0 };
        assert_int_equal(mthp_tick_next(&k, 80, 80 * s, s, false, false, true), 80 * s + s / 4);
        assert_true(k.early && k.look);
        assert_int_equal(mthp_tick_next(&k, 81, 80 * s + s / 4, s, false, false, true), 80 * s + s / 2);
        assert_int_equal(mthp_tick_next(&k, 82, 80 * s + s / 2, s, false, false, true), 80 * s + 3 * s / 4);
        assert_int_equal(mthp_tick_next(&k, 83, 80 * s + 3 * s / 4, s, false, false, true), 81 * s);
        assert_false(k.early);
        assert_int_equal(k.early_tick, 0);
        /* a climb that starts to await: the climb's tick, and the await's
         * samples are on it (no second early tick after it) */
        struct mthp_tick_plan a = { 0 };
        assert_int_equal(mthp_tick_next(&a, 90, 90 * s, s, true, false, true), 90 * s + s / 4);
        assert_int_equal(mthp_tick_next(&a, 91, 90 * s + s / 4, s, true, false, false), 91 * s);
        /* the floor: 100 ms at a 200 ms interval, nothing at 100 ms */
        struct mthp_tick_plan r = { 0 };
        assert_int_equal(mthp_tick_next(&r, 1, s, 200000, true, false, false), s + MTHP_TICK_EARLY_MIN_USEC);
        struct mthp_tick_plan u = { 0 };
        assert_int_equal(mthp_tick_next(&u, 1, s, 100000, true, false, false), s + 100000);
        assert_false(u.early);
}

/* A burst tick that came before the processes that fault
 * (mthp_engine_burst_unexplained). pgbench-select-burst, a root mthpd's
 * recording of pgbench -S: the fault alarm brought tick 3 forward (0.1 s
 * after tick 2) while the host faulted ~14k pages/s, but the tick saw only
 * a postgres process at a lifetime rate of 931 faults/s (no raise, no
 * await); the backends forked just after it. The next tick came a whole
 * Interval later (tick 4, dt 1 s), saw the backends and awaited their
 * samples; the early tick it asked for (tick 5) raised shmem, ~1.35 s
 * into the run. A look again a quarter Interval after tick 3 (what
 * tick 3 now asks for) would have seen them then. Not at tick 4 (it
 * awaits: its early tick comes anyway), nor once shmem is at 2M and anon
 * has nothing that counts. */
static void test_burst_unexplained(void **state) {
        (void) state;
        replay_to_tick("pgbench-select-burst", 3);
        const struct mthp_engine_config *cfg = &at.cfg.engine;
        double raise, lower;
        mthp_engine_fault_rates(cfg, at.snap.fault_cost_ns, &raise, &lower);
        assert_true(at.snap.dt < 0.2);                    /* brought forward */
        assert_true(at.snap.fault_pages_rate >= raise);
        assert_false(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        assert_int_equal(at.st.kind[MTHP_SHMEM].level, 0);
        assert_true(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        /* both kinds at their tops: nothing a look could raise */
        struct mthp_engine_state saved = at.st;
        unsigned ladder[MTHP_SIZES_MAX];
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                at.st.kind[k].level = mthp_engine_ladder(cfg, &at.caps, k, ladder);
        assert_false(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        /* a quiet host: no look */
        double host = at.snap.fault_pages_rate;
        at.snap.fault_pages_rate = raise / 2;
        assert_false(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        at.snap.fault_pages_rate = host;
        /* the tick changed a level: it acted */
        at.st.kind[MTHP_ANON].last_change_tick = at.st.tick;
        assert_false(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        /* the processes it saw fault at the raise rate between them: it
         * judged them (the postgres process at 931 faults/s did not) */
        unsigned seen = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (at.st.proc[j].pid && at.st.proc[j].seen_tick == at.st.tick) {
                        assert_true(at.st.proc[j].fault_rate < raise);
                        at.st.proc[j].fault_rate = raise;
                        seen++;
                }
        assert_true(seen > 0);
        assert_false(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        at.st = saved;
        assert_true(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));

        replay_to_tick("pgbench-select-burst", 4);
        assert_true(at.snap.dt > 0.9);
        assert_true(mthp_engine_awaits_samples(cfg, &at.caps, &at.snap, &at.st, NULL));
        assert_false(mthp_engine_burst_unexplained(cfg, &at.caps, &at.snap, &at.st));
        replay_to_tick("pgbench-select-burst", 5);
        assert_true(at.st.kind[MTHP_SHMEM].level > 0);
}

/* The fault-burst wakeup's arm (mthp_tick_alarm_period) and its ring
 * (mthp_tick_burst), on pgbench -S's recorded ticks: armed while the host
 * is quiet, with the raise rate for a quarter Interval split between the
 * CPUs; off when the host already faults at the raise rate, while an early
 * tick is due, within the spacing of the last brought-forward tick, and
 * with both kinds at their tops. A ring brings the tick forward only when
 * the host's faults since the last tick are at the raise rate, at least
 * MTHP_TICK_EARLY_MIN_USEC after it. */
static void test_tick_alarm(void **state) {
        (void) state;
        const uint64_t s = 1000000;
        double raise, lower, rate;
        uint64_t at_usec;
        replay_to_tick("pgbench-select-unit", 1);
        const struct mthp_engine_config *cfg = &at.cfg.engine;
        struct mthp_tick_plan plan = { 0 };
        mthp_engine_fault_rates(cfg, at.snap.fault_cost_ns, &raise, &lower);
        printf("# tick 1: %.0f pages/s, a raise needs %.0f\n", at.snap.fault_pages_rate, raise);
        assert_true(at.snap.fault_pages_rate < raise);
        uint64_t p2 = mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2);
        assert_int_equal(p2, (uint64_t) ceil(raise / 4 / 2));
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, 4 * s, 2), (uint64_t) ceil(raise / 2));
        /* the floor of a quarter Interval: MTHP_TICK_EARLY_MIN_USEC */
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s / 10, 1),
                         mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, 4 * MTHP_TICK_EARLY_MIN_USEC, 1));
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 1 << 20), 16);
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 0), 0);
        /* an early tick due: off */
        plan.early = true;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        plan.early = false;
        /* within the spacing of the last brought-forward tick: off; after: on */
        plan.burst_tick = at.st.tick;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        plan.burst_tick = at.st.tick;
        at.st.tick += MTHP_TICK_EARLY_SPACING - 1;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        at.st.tick++;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), p2);
        at.st.tick -= MTHP_TICK_EARLY_SPACING;
        plan.burst_tick = 0;
        /* both kinds at their tops: off */
        unsigned ladder[MTHP_SIZES_MAX];
        struct mthp_engine_state saved = at.st;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                at.st.kind[k].level = mthp_engine_ladder(cfg, &at.caps, k, ladder);
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        at.st.kind[MTHP_ANON].level = 0;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), p2);
        at.st = saved;
        /* the host at the raise rate already: off */
        struct mthp_snapshot quiet = at.snap;
        at.snap.fault_pages_rate = raise;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        /* the first tick (no rates): off */
        at.snap = quiet;
        at.snap.dt = 0;
        assert_int_equal(mthp_tick_alarm_period(cfg, &at.caps, &at.snap, &at.st, &plan, s, 2), 0);
        at.snap = quiet;

        /* the ring: faults since the tick's snapshot over the time since */
        uint64_t t0 = at.snap.t_usec, v0 = at.snap.vm[MTHP_VM_PGFAULT].value;
        assert_true(at.snap.vm[MTHP_VM_PGFAULT].present);
        uint64_t half = (uint64_t) ceil(raise / 2);
        /* 0.5 s later, half a second's worth of the raise rate + 1: due now */
        assert_true(mthp_tick_burst(cfg, &at.snap, t0 + s / 2, v0 + half + 1, &rate, &at_usec));
        assert_true(rate >= raise);
        assert_int_equal(at_usec, t0 + s / 2);
        /* below it: not due */
        assert_false(mthp_tick_burst(cfg, &at.snap, t0 + s / 2, v0 + half / 2, &rate, &at_usec));
        assert_true(rate < raise);
        /* 10 ms after the tick, a second's worth of the rate: due at the
         * floor, not before */
        assert_true(mthp_tick_burst(cfg, &at.snap, t0 + s / 100, v0 + (uint64_t) ceil(raise), &rate, &at_usec));
        assert_int_equal(at_usec, t0 + MTHP_TICK_EARLY_MIN_USEC);
        /* 10 ms after it at twice the rate, but less than 100 ms's worth of
         * it (one exec's faults): not due */
        assert_false(mthp_tick_burst(cfg, &at.snap, t0 + s / 100, v0 + (uint64_t) ceil(raise / 50), &rate, &at_usec));
        assert_true(rate >= raise);
        /* no time since, a counter that went back, no pgfault: not due */
        assert_false(mthp_tick_burst(cfg, &at.snap, t0, v0 + 1000000, &rate, &at_usec));
        assert_false(mthp_tick_burst(cfg, &at.snap, t0 + s, v0 - 1, &rate, &at_usec));
        at.snap.vm[MTHP_VM_PGFAULT].present = false;
        assert_false(mthp_tick_burst(cfg, &at.snap, t0 + s, v0 + 1000000, &rate, &at_usec));
        at.snap = quiet;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pgbench_unit_early_tick),
                cmocka_unit_test(test_climb_early_tick),
                cmocka_unit_test(test_climb_needs_the_raise),
                cmocka_unit_test(test_early_ticks_bounded),
                cmocka_unit_test(test_awaits_needs_room),
                cmocka_unit_test(test_awaited_pids),
                cmocka_unit_test(test_tick_next),
                cmocka_unit_test(test_tick_alarm),
                cmocka_unit_test(test_burst_unexplained),
        };

        return cmocka_run_group_tests_name("engine trace ticks", tests, NULL, free_replay);
}
