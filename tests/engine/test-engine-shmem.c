/* SPDX-License-Identifier: MIT */
/* Shmem in the engine (engine-sim.h): the demand split between anon and
 * shmem by sampled fault addresses, the reasons of a raise
 * that cannot reach a mapping (alignment, page cache, tmpfs files, SysV,
 * the MADV_COLLAPSE repair), sparse shmem mappings, and ShmemAlign=. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mthp/config.h"
#include "mthp/engine.h"

#include "engine-sim.h"

/* ---- shmem as it really behaves: a raise that cannot reach a mapping ---- */

static const struct mthp_decision *size_decision(const struct sim *s, enum mthp_kind kind, unsigned kb) {
        int knob = s->caps.sizes[size_index(&s->caps, kb)].knob[kind];
        for (int i = 0; i < s->n_dec; i++)
                if (s->dec[i].knob == knob)
                        return &s->dec[i];
        fail_msg("no decision for %uK", kb);
        return NULL;
}

/* A dense shmem faulter whose largest shared mapping is 2 GiB at addr. */
static void shm_proc(struct mthp_proc_density *p, int pid, uint64_t addr, unsigned align_kb, uint8_t reach) {
        dens_proc(p, pid, 1, 0);
        p->rss_kb[MTHP_ANON] = 0; /* a pure shmem faulter: demand is all shmem */
        p->rss_kb[MTHP_SHMEM] = 2000000;
        p->shm = (struct mthp_shm_mapping) { .addr = addr, .bytes = 2ULL << 30, .align_kb = align_kb, .reach = reach };
}

/* Issue 12, item 2: a postgres-like process holds 2 GB of shared buffers
 * and 16 MiB of heap and faults only its heap. Split by memory held, 99% of
 * its faults read as shmem demand and raise shmem; its sampled fault
 * addresses say they are anon, and only anon is raised. */
static void test_fault_samples_split_demand(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 800, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 2000000;
        v.proc[0].fault_samples[MTHP_ANON] = 40;
        w.dens = &v;
        assert_true(sim_climb(s, &w, MTHP_ANON, 8) <= 2);   /* 2M at once: dense */
        /* the reason says the split came from the samples */
        assert_tokens(kind_reason(s, MTHP_ANON), "800 proc800 50000 100 anon");
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* too few samples (a process sampled once, 4 faults seen; they add
         * up until there are 8): by memory held again, as before sampling
         * existed */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 4;
        v.proc[0].rss_kb[MTHP_ANON] = 0;   /* by memory held, all shmem */
        w = shmem_hot;
        w.dens = &v;
        sim_run(s, &w, 1);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_SHMEM) > 0);
}

/* Sampling starts when a process holding shared memory is first seen: until
 * its samples are in, its faults are no kind's demand (by memory held they
 * would raise shmem at once). */
static void test_fault_samples_pending_waits(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 802, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 2000000;
        w.dens = &v;
        w.demand_unmodelled = true;   /* the model splits by memory */
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD, "0");
        assert_rule(kind_decisions(s, MTHP_ANON), MTHP_RULE_HOLD, "0");
        w.demand_unmodelled = false;
        v.proc[0].fault_samples[MTHP_ANON] = 30;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_ANON) > 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* holding shared memory and, at the instant its status was read,
         * no anon (a heap unmapped between two passes of a churn loop):
         * memory held would call every fault shmem; it waits as well */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].rss_kb[MTHP_ANON] = 0;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD, "0");
        /* samples that never come: its faults stay no kind's demand
         * (test_fault_samples_never_enough) */
        sim_run(s, &w, 8);
        assert_int_equal(changes(s, MTHP_SHMEM) + changes(s, MTHP_ANON), 0);
        w.demand_unmodelled = false;
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        /* a process holding no shared memory is split by memory as before */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].rss_kb[MTHP_SHMEM] = 0;
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_ANON) > 0);
}

/* Samples that never reach 8 (its faults fell 150-fold once anon went to
 * 2M, before they were in; or a small share of a busy host's faults): its
 * faults hold a raise back but never cause one. Split by memory held after
 * 3 ticks of waiting, as mthpd did, the fault-kinds workload (1 GiB of
 * shmem held, only its heap faulting) read as 456,337 pages/s of shmem
 * demand and every shmem size was raised for it (realkernel fault-kinds,
 * CI: 1 run in 12 here). A process holding no shared memory beside it
 * still raises anon. */
static void test_fault_samples_never_enough(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        /* anon kept at 4K, so its 4K faults stay demand and only their split
         * is judged */
        s->cfg.max_kb[MTHP_ANON] = 8;
        dens_proc(&v.proc[0], 806, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 3;     /* a few a tick: 6 at most, decayed */
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 12);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD, "0");
        /* beside it, a process holding no shared memory raises anon with
         * its own faults, split by memory */
        sim_init(s);
        wide(s);
        v.n_procs = 2;
        dens_proc(&v.proc[1], 807, 1, 0);
        sim_run(s, &w, 6);
        assert_true(level(s, MTHP_ANON) > 0);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        /* without sampling (no perf) the split is by memory held, as before */
        sim_init(s);
        wide(s);
        s->cfg.max_kb[MTHP_ANON] = 8;
        v.fault_sampling = false;
        v.n_procs = 1;
        sim_run(s, &w, 4);
        assert_true(changes(s, MTHP_SHMEM) > 0);
}

/* A few samples a tick (one of many faulting processes, or a busy host):
 * halved each tick, 3 a tick never reach 8 (6 at most), and a PostgreSQL
 * backend faulting only its shared buffers would never count, its faults
 * still weighing against shmem's share (review of f5236ee). Until they
 * have split its faults they add up: 8 in all, and shmem is raised. */
static void test_fault_samples_add_up(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        dens_proc(&v.proc[0], 808, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_SHMEM] = 3;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);   /* 3, 6, then 8 (9 kept at 8): known at the third */
        int j = -1;
        for (int i = 0; i < MTHP_ENGINE_PROCS; i++)
                if (s->st.proc[i].pid == 808)
                        j = i;
        assert_true(j >= 0 && s->st.proc[j].fs_known);
        sim_run(s, &w, 3);
        assert_true(level(s, MTHP_SHMEM) > 0);
        assert_int_equal(changes(s, MTHP_ANON), 0);
        /* while it waited, explain named it */
        sim_init(s);
        wide(s);
        v.proc[0].fault_samples[MTHP_SHMEM] = 0;
        sim_run(s, &w, 2);
        assert_tokens(kind_reason(s, MTHP_SHMEM), "808 proc808 0 8");
}

/* A process whose faults move from its heap to its shared memory, with 2
 * samples a tick: halved outright they fall below 8 two ticks after the
 * move and the split froze at 80% anon, for good; kept at 8 or more they
 * follow the move, and shmem is raised (review of 8bca85c). */
static void test_fault_samples_split_follows(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        s->cfg.max_kb[MTHP_ANON] = 8;   /* anon is not judged */
        dens_proc(&v.proc[0], 809, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 16;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 1);
        v.proc[0].fault_samples[MTHP_ANON] = 0;
        v.proc[0].fault_samples[MTHP_SHMEM] = 2;
        sim_run(s, &w, 12);
        assert_true(level(s, MTHP_SHMEM) > 0);
}

/* explain's left-out line: whole entries, the most faulting first, then
 * "and N more" (six processes waiting for their fault samples; three were
 * cut mid-word in its 240 bytes before). */
static void test_left_out_line(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 6 };
        struct workload w = shmem_hot;
        wide(s);
        for (int i = 0; i < 6; i++) {
                dens_proc(&v.proc[i], 901 + i, 1, 0);
                v.proc[i].fault_rate = 10000 + 1000 * i;
                v.proc[i].rss_kb[MTHP_SHMEM] = 1 << 20;
        }
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 2);
        const char *r = kind_reason(s, MTHP_SHMEM);
        const char *a = strstr(r, "pid 906 (proc906) left out: fault kind not known yet (0 of 8 samples); "
                                  "pid 905 (proc905) left out");
        if (!a)
                fail_msg("not most faulting first: %s", r);
        assert_tokens(r, "904 proc904 0 8 3");
        assert_null(strstr(r, "proc903"));
}

/* Once its samples have split a process's faults, that split stands while
 * too few come in: after anon went to 2M its fault rate fell 150-fold and
 * its samples with it (realkernel fault-kinds, a heap churned beside 1 GiB
 * of shmem), and once it had waited 3 ticks its faults were split by
 * memory held, all shmem's: every shmem size was raised (CI, once). */
static void test_fault_samples_last_split_stands(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 1 };
        struct workload w = anon_hot;
        wide(s);
        /* anon kept at 4K (no anon size allowed), so its 4K faults stay
         * demand and only their split is judged */
        s->cfg.max_kb[MTHP_ANON] = 8;
        dens_proc(&v.proc[0], 805, 1, 0);
        v.proc[0].rss_kb[MTHP_ANON] = 16384;
        v.proc[0].rss_kb[MTHP_SHMEM] = 1 << 20;
        v.proc[0].fault_samples[MTHP_ANON] = 40;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        v.proc[0].fault_samples[MTHP_ANON] = 0;   /* none come in any more */
        sim_run(s, &w, 8);
        assert_int_equal(changes(s, MTHP_SHMEM), 0);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_HOLD, "0");
}

/* A process waiting for its samples has no say on demand, but its density
 * still counts (by memory held): a sparse one holds back a raise that a
 * dense neighbour's demand asks for, from its first tick. */
static void test_fault_samples_pending_density_counts(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .fault_sampling = true, .n_procs = 2 };
        struct workload w = anon_hot;
        wide(s);
        dens_proc(&v.proc[0], 803, 1, 0);          /* dense, anon only: the demand */
        dens_proc(&v.proc[1], 804, 0.1, 0);        /* sparse, holds 2 MiB of shmem too */
        v.proc[1].rss_kb[MTHP_SHMEM] = 2048;
        w.dens = &v;
        w.demand_unmodelled = true;
        sim_run(s, &w, 3);
        int j = -1;
        for (int i = 0; i < MTHP_ENGINE_PROCS; i++)
                if (s->st.proc[i].pid == 804)
                        j = i;
        assert_true(j >= 0 && s->st.proc[j].fs_pending);
        if (level(s, MTHP_ANON) == 8)
                fail_msg("raised anon to 2M over a sparse process waiting for its fault samples");
}

/* Samples in files, text or nh mappings are no size's faults: a process
 * whose faults are all there asks for nothing, whatever it holds. */
static void test_fault_samples_other_ask_nothing(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = { .pages = { [MTHP_ANON] = 0 } };
        wide(s);
        dens_proc(&v.proc[0], 801, 1, 0);
        v.proc[0].fault_samples_other = 50;
        w.dens = &v;
        w.optout_pages[MTHP_ANON] = 100000;   /* 4K faults the kernel counts, of no kind */
        sim_run(s, &w, 4);
        assert_int_equal(level(s, MTHP_ANON), 0);
        assert_int_equal(level(s, MTHP_SHMEM), 0);
}

/* PostgreSQL under a late raise: its segment was mapped while shmem mTHP
 * was off, at an address aligned for 8K only. The kernel gives it no
 * larger folio; the reason must say so, not "in use". */
static void test_shmem_misaligned_segment_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 700, 0x7f0000002000ULL, 8, MTHP_SHM_PER_SIZE);
        w.dens = &v;
        w.never_kb = 16; /* what the kernel does with it: nothing above 8K */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        const char *r = size_decision(s, MTHP_SHMEM, 64)->reason;
        /* not "in use": the mapping cannot get the size */
        assert_rule(size_decision(s, MTHP_SHMEM, 64), MTHP_RULE_SIZE_SHM_UNALIGNED, NULL);
        assert_tokens(r, "64K 700 proc700 2048 0x7f0000002000 8K");
        /* caught between two mappings, its 4K control page is its largest:
         * the segment is still what it maps */
        struct mthp_shm_mapping seg = v.proc[0].shm;
        v.proc[0].shm = (struct mthp_shm_mapping) { .addr = 0x7f0000900000ULL, .bytes = 4096, .align_kb = 4,
                                                    .reach = MTHP_SHM_PER_SIZE };
        sim_step(s, &w);
        assert_rule(size_decision(s, MTHP_SHMEM, 64), MTHP_RULE_SIZE_SHM_UNALIGNED, "0x7f0000002000");
        v.proc[0].shm = seg;
        /* the probe fails (verify_ticks after the raise) and its reason
         * names the cause */
        sim_run(s, &w, s->cfg.verify_ticks - 1);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_STEP_DOWN_PROBE, "shmem 2M 2M-aligned");
}

/* The page cache of an aligned mapping filled before the raise: 4K folios
 * stay (page_fault3 on a tmpfs file unlinked before mmap). Read through
 * kpageflags: what recordings made before the PMD probe covered 2M-aligned
 * mappings with PFNs carry, and kernels before 6.7. */
static void test_shmem_prefilled_cache_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 701, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        const char *r = size_decision(s, MTHP_SHMEM, 2048)->reason;
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_SHM_FILLED, NULL);
        /* the probes of the last ticks add up, the older ones at half weight */
        assert_tokens(r, "2M 701 proc701 2048 0x7f0000200000 0 24 MADV_COLLAPSE");
        /* the same with its pages in large folios: in use */
        v.proc[0].shm.large = 16;
        sim_run(s, &w, 1);
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_IN_USE, "2M");
}

/* A shmem process whose faults allocate nothing is not made sparse by its
 * zeros: PostgreSQL's walwriter maps the 16 MiB of WAL buffers the server
 * zeroed at start (4,090 faults in a second, half its subpages zero, 4K
 * folios a sampler without PFNs, the unit's, cannot tell from untouched
 * subpages) while nothing of shmem is being allocated: a larger size
 * cannot cost it memory, and it stepped shmem down from 2M for the host
 * (5 of 5 pgbench -S runs under the unit's capabilities). Control: the same
 * process while its faults allocate the kind's folios steps it down. */
/* Shmem raised to 2M by a dense process (pid 900), then only pid 901
 * faults: 16 MiB, half its subpages zero. */
static void walwriter_setup(struct sim *s, struct workload *w, struct mthp_density_view *dense,
                            struct mthp_density_view *wal) {
        *w = shmem_hot;
        wide(s);
        shm_proc(&dense->proc[0], 900, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        w->dens = dense;
        assert_true(sim_climb(s, w, MTHP_SHMEM, 8) <= 2);
        shm_proc(&wal->proc[0], 901, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        wal->proc[0].fault_rate = 4000;
        wal->proc[0].rss_kb[MTHP_SHMEM] = 16384;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                wal->proc[0].zero[MTHP_SHMEM][i] = 0.5;
        w->dens = wal;
        w->pages[MTHP_SHMEM] = 4000;
        w->demand_unmodelled = true;
}

static void step_down_within(struct sim *s, struct workload *w, unsigned ticks, const char *pid) {
        for (unsigned i = 0; i < ticks && level(s, MTHP_SHMEM) == 8; i++)
                sim_step(s, w);
        assert_true(level(s, MTHP_SHMEM) < 8);
        assert_tokens(kind_reason(s, MTHP_SHMEM), pid);
        assert_rule(kind_decisions(s, MTHP_SHMEM), MTHP_RULE_STEP_DOWN_SPARSE, "MaxBloat 20");
}

static void test_shmem_sparse_mapping_cache_keeps(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, wal = dense;
        struct workload w;
        walwriter_setup(s, &w, &dense, &wal);
        /* its 4,000 pages/s fault in no mTHP folio: the page cache is there */
        w.never_kb = 16;
        sim_run(s, &w, 6);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        /* the same faults allocating 2M folios: it would cost memory */
        w.never_kb = 0;
        step_down_within(s, &w, 3, "901");
}

/* The host's allocations must be next to none, not only small beside the
 * objector's faults: one refaulting 100,000 pages/s while 5,000 pages/s of
 * shmem are allocated in 2M folios (under a tenth of its faults) may be
 * growing a sparse segment beside what it refaults. */
static void test_shmem_sparse_refaulter_allocating_steps_down(void **state) {
        struct sim *s = *state;
        struct mthp_density_view dense = { .valid = true, .n_procs = 1 }, wal = dense;
        struct workload w;
        walwriter_setup(s, &w, &dense, &wal);
        wal.proc[0].fault_rate = 100000;
        w.pages[MTHP_SHMEM] = 5000;
        step_down_within(s, &w, 6, "901");
}

/* The shmem repair (daemon/collapse-tick.c) reaches the engine through the
 * snapshot, as a sampled process's shm_repaired_kb: "being repaired" while
 * the probe still sees 4K folios, "repaired" once it sees large ones; a
 * repaired mapping counts as the use of 2M for probe-then-verify (the
 * kernel allocates nothing at 2M on faults there). The engine's own state
 * is what it made of the snapshots: the same recording replays the same. */
static uint64_t repaired_kb_of(const struct sim *s, int pid) {
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (s->st.proc[j].pid == pid)
                        return s->st.proc[j].shm_repaired_kb;
        fail_msg("pid %d is not remembered", pid);
        return 0;
}

static void test_shmem_repair_comes_through_snapshot(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 703, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        w.dens = &v;
        w.never_kb = 16; /* no fault allocates a large folio there */
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        v.proc[0].shm_repaired_kb = 16 * 1024;
        sim_step(s, &w);
        assert_int_equal(repaired_kb_of(s, 703), 16 * 1024);
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_SHM_REPAIRING, "MADV_COLLAPSE 16");
        v.proc[0].shm.large = 12;
        v.proc[0].shm_repaired_kb = 40 * 1024;
        sim_run(s, &w, s->cfg.verify_ticks + 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8); /* the probe held: the repair is the use */
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_REPAIRED, "2M 703 proc703 2048 0x7f0000200000 MADV_COLLAPSE 40");
        /* another mapping: the count is the daemon's for that one */
        v.proc[0].shm.addr = 0x7f0040000000ULL;
        v.proc[0].shm_repaired_kb = 0;
        sim_step(s, &w);
        assert_int_equal(repaired_kb_of(s, 703), 0);
}

/* The PMD probe (a 2M-aligned mapping, PFNs or not, since the kpageflags
 * probe took 512K folios for large ones) tells only PMD-mapped pages from
 * the rest: explain says the segment is not mapped by 2M folios, never that
 * it holds 4K folios, and says nothing of it for the sizes below 2M. */
static void test_shmem_pmd_probe_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 704, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        v.proc[0].shm.sampled = 16;
        v.proc[0].shm.probe = MTHP_SHM_PROBE_PMD;
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        const char *r = size_decision(s, MTHP_SHMEM, 2048)->reason;
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_SHM_FILLED, NULL);
        assert_tokens(r, "2M 704 proc704 2048 0x7f0000200000 24");
        assert_null(strstr(r, "4K folios"));
        assert_null(strstr(size_decision(s, MTHP_SHMEM, 64)->reason, "PMD-mapped"));
        assert_null(strstr(size_decision(s, MTHP_SHMEM, 1024)->reason, "PMD-mapped"));
        v.proc[0].shm.large = 12;
        v.proc[0].shm_repaired_kb = 40 * 1024;
        sim_run(s, &w, 1);
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_REPAIRED, "2M 704 proc704 2048 0x7f0000200000 MADV_COLLAPSE 40 12 28");
}

/* A linked /dev/shm file and a SysV segment: the per-size knobs never
 * reach them. */
static void test_shmem_tmpfs_file_and_sysv_explained(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        shm_proc(&v.proc[0], 702, 0x7f0000200000ULL, 2048, MTHP_SHM_TMPFS_FILE);
        w.dens = &v;
        w.never_kb = 16;
        sim_run(s, &w, 2);
        assert_rule(size_decision(s, MTHP_SHMEM, 64), MTHP_RULE_SIZE_SHM_FILE, "702 0x7f0000200000");
        v.proc[0].shm.reach = MTHP_SHM_SYSV;
        sim_run(s, &w, 1);
        assert_rule(size_decision(s, MTHP_SHMEM, 64), MTHP_RULE_SIZE_SHM_SYSV, "SysV 0x7f0000200000 shmem_enabled");
}

/* ---- ShmemAlign=: shared anonymous memory mapped while idle is aligned ---- */

/* Idle, the top shmem size goes from off (inherit of a global never) to
 * advise, so a segment mapped now is 2M-aligned; a dense shmem faulter
 * raises it to always; once idle again it goes back to advise. */
static void test_shmem_align_idle_advises(void **state) {
        struct sim *s = *state;
        struct mthp_density_view v = { .valid = true, .n_procs = 1 };
        struct workload w = shmem_hot;
        wide(s);
        s->cfg.shmem_align = true;
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        assert_string_equal(knob_of(s, 1024, MTHP_SHMEM), "never"); /* the top size aligns for all */
        assert_string_equal(knob_of(s, 2048, MTHP_ANON), "inherit");
        assert_rule(size_decision(s, MTHP_SHMEM, 2048), MTHP_RULE_SIZE_ALIGN, "2M");
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        /* kept while it is ours (the knob reads advise now) */
        sim_run(s, &idle, 5);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        /* a raise takes it to always like every size */
        shm_proc(&v.proc[0], 702, 0x7f0000200000ULL, 2048, MTHP_SHM_PER_SIZE);
        w.dens = &v;
        sim_run(s, &w, 3);
        assert_int_equal(level(s, MTHP_SHMEM), 8);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "always");
        /* it stops (no faults at all: the engine splits 4K faults by the
         * memory of the processes it remembers, which the model does not):
         * down, then advise again */
        static const struct workload still = { 0 };
        for (unsigned t = 0; t < s->cfg.lower_ticks * 8 + 10; t++) {
                sim_step(s, &still);
                /* always -> advise in one write, never by way of the original */
                assert_string_not_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
        }
        assert_int_equal(level(s, MTHP_SHMEM), 0);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
        /* off: the original value */
        s->cfg.shmem_align = false;
        sim_step(s, &still);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
}

/* A value the administrator chose is theirs: within_size, or inherit of a
 * global advise, is left as it is. */
static void test_shmem_align_not_over_a_chosen_value(void **state) {
        struct sim *s = *state;
        wide(s);
        s->cfg.shmem_align = true;
        int k2m = s->caps.sizes[size_index(&s->caps, 2048)].knob[MTHP_SHMEM];
        snprintf(s->orig[k2m], MTHP_VALUE_MAX, "within_size");
        snprintf(s->knob[k2m], MTHP_VALUE_MAX, "within_size");
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "within_size");
        assert_string_equal(size_decision(s, MTHP_SHMEM, 2048)->value, "");
        snprintf(s->orig[k2m], MTHP_VALUE_MAX, "inherit");
        snprintf(s->knob[k2m], MTHP_VALUE_MAX, "inherit");
        int g = mthp_caps_find_knob(&s->caps, "global/shmem_enabled");
        assert_true(g >= 0);
        snprintf(s->orig[g], MTHP_VALUE_MAX, "advise");
        snprintf(s->knob[g], MTHP_VALUE_MAX, "advise");
        sim_run(s, &idle, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
}

/* Not while a memory-limited cgroup caps the kind's sizes: advise would
 * give 2M to what a program there madvises. */
static void test_shmem_align_not_with_limited_cgroup(void **state) {
        struct sim *s = *state;
        struct workload w = idle;
        wide(s);
        s->cfg.shmem_align = true;
        w.limited = &lim_600;
        w.n_limited = 1;
        sim_run(s, &w, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "inherit");
        /* it empties: advise */
        struct mthp_limited_cgroup empty = lim_600;
        empty.populated = false;
        w.limited = &empty;
        sim_run(s, &w, 3);
        assert_string_equal(knob_of(s, 2048, MTHP_SHMEM), "advise");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_fault_samples_split_demand),
                T(test_fault_samples_other_ask_nothing),
                T(test_fault_samples_pending_waits),
                T(test_fault_samples_never_enough),
                T(test_fault_samples_add_up),
                T(test_fault_samples_split_follows),
                T(test_left_out_line),
                T(test_fault_samples_pending_density_counts),
                T(test_shmem_misaligned_segment_explained),
                T(test_shmem_prefilled_cache_explained),
                T(test_shmem_sparse_mapping_cache_keeps),
                T(test_shmem_sparse_refaulter_allocating_steps_down),
                T(test_shmem_tmpfs_file_and_sysv_explained),
                T(test_shmem_repair_comes_through_snapshot),
                T(test_shmem_pmd_probe_explained),
                T(test_fault_samples_last_split_stands),
                T(test_shmem_align_idle_advises),
                T(test_shmem_align_not_over_a_chosen_value),
                T(test_shmem_align_not_with_limited_cgroup),
        };

        return cmocka_run_group_tests_name("engine-shmem", tests, NULL, NULL);
}
