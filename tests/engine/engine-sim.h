/* SPDX-License-Identifier: MIT */
#pragma once
/* The closed-loop simulation the engine tests decide in (engine-sim.c):
 * mthp_engine_decide() on synthetic snapshots, and a small kernel model
 * that turns the engine's own decisions into the next tick's counters
 * (which size a fault gets, how often it falls back, how many pgfault
 * events that takes), with the checks every tick must pass. Shared by
 * test-engine.c, test-engine-density.c, test-engine-shmem.c,
 * test-engine-cgroups.c and test-engine-net.c. */
#include <stdbool.h>
#include <stdint.h>

#include "mthp/engine.h"

#include "engine-caps.h"

/* ---- the workload and the kernel's answer to the current knobs ---- */

struct workload {
        double pages[_MTHP_KIND_MAX]; /* 4K pages/s the workload faults in, per kind */
        double fail;                  /* fraction of mTHP allocations failing at each size >= fail_min_kb */
        unsigned fail_min_kb;
        bool psi_absent;
        double psi_some;              /* PSI memory some avg10, percent */
        double avail_pct;             /* MemAvailable; 0 means a healthy 50% */
        bool no_meminfo;              /* MemTotal unknown */
        /* memory the workload's own folios cost: MemAvailable while its
         * largest folio is >= this size (0: no such effect) */
        unsigned bloat_kb;
        double bloat_avail_pct;
        unsigned never_kb;            /* the kernel never tries sizes >= this (e.g. small VMAs) */
        bool demand_unmodelled;       /* the engine's demand is not the model's: reasons not checked for it */
        const struct mthp_density_view *dens; /* what the density sampler sees, or NULL */
        const struct mthp_cgroup_view *cgroups; /* managed cgroups, or NULL */
        unsigned n_cgroups;
        const struct mthp_limited_cgroup *limited; /* every memory-limited cgroup, or NULL: not scanned */
        unsigned n_limited;
        /* 4K pages/s faulted by processes that opted out (THP disabled, nh
         * mappings): 4K faults whatever the knobs, and no demand */
        double optout_pages[_MTHP_KIND_MAX];
        /* 4K pages/s faulted as PMD folios by MADV_HUGEPAGE mappings while
         * the PMD size is at madvise (the boot default): no demand either */
        double madvised_pages[_MTHP_KIND_MAX];
        /* what the give-back freed since the last tick (snapshot given_back_kb) */
        uint64_t given_back_kb;
        int given_back_pid;
};

/* What the reason of a kind should quote this tick. */
struct expect {
        double demand;        /* 4K pages/s the engine should see */
        double fallback_pct;  /* of the kind's mTHP attempts */
        bool fallback_counted;
};

struct sim {
        struct mthp_engine_config cfg;
        struct mthp_caps caps;
        struct mthp_engine_state st;
        uint64_t tick;
        char orig[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        char knob[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        struct mthp_snapshot snap;
        struct expect expect[_MTHP_KIND_MAX];
        struct mthp_decision dec[MTHP_KNOBS_MAX];
        int n_dec;
        unsigned ups[_MTHP_KIND_MAX], downs[_MTHP_KIND_MAX];
        uint64_t last_change[_MTHP_KIND_MAX]; /* tick of the last level change */
};

/* A fresh simulation: the engine's defaults on the 16K-64K ladder, a 6.18
 * x86-64 host (caps_init) at its boot knobs, nothing decided yet. */
void sim_init(struct sim *s);
/* The boot state: global enabled and defrag madvise, shmem_enabled never,
 * the PMD size inherit, every other size never. */
void sim_knobs_init(struct sim *s);
/* The group fixtures: a struct sim in *state (T() below). */
int sim_setup(void **state);
int sim_teardown(void **state);
/* The index of the kb size in c->sizes; fails the test if there is none. */
int size_index(const struct mthp_caps *c, unsigned kb);
/* The kernel's answer to the knobs: this tick's snapshot of the workload. */
void kernel_model(struct sim *s, const struct workload *w, struct mthp_snapshot *snap);
unsigned ladder_of(const struct sim *s, enum mthp_kind kind, unsigned ladder[MTHP_SIZES_MAX]);
/* The decisions of one kind: anon's come first, in ladder order. */
const struct mthp_decision *kind_decisions(const struct sim *s, enum mthp_kind kind);
const char *kind_reason(const struct sim *s, enum mthp_kind kind);
__attribute__((noinline)) void assert_contains(const char *haystack, const char *needle);
/* One tick: the kernel model, the decision and its checks, the knobs written. */
void sim_step(struct sim *s, const struct workload *w);
void sim_run(struct sim *s, const struct workload *w, unsigned ticks);
unsigned level(const struct sim *s, enum mthp_kind kind);
unsigned changes(const struct sim *s, enum mthp_kind kind);
/* Run a steady workload until a kind reaches lvl; returns the tick it got there. */
uint64_t sim_climb(struct sim *s, const struct workload *w, enum mthp_kind kind, unsigned lvl);

extern const struct workload anon_hot;
extern const struct workload shmem_hot;
extern const struct workload idle;

/* A sampled process faulting anon hard: coverage cov_16k at 16K, halving
 * with each size doubling above it, and zero of each size's subpages zero. */
void dens_proc(struct mthp_proc_density *p, int pid, double cov_16k, double zero);
/* The shipped ladder: every size up to 2M. */
void wide(struct sim *s);
/* The value the kernel holds in the kb size's knob of kind. */
const char *knob_of(const struct sim *s, unsigned kb, enum mthp_kind kind);
/* A populated 600 MiB memory-limited cgroup, /lim, nobody sampled. */
extern struct mthp_limited_cgroup lim_600;

#define T(f) cmocka_unit_test_setup_teardown(f, sim_setup, sim_teardown)
