/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include "mthp/host.h"
#include "mthp/types.h"

/* A counter and its rate per second since the previous snapshot. A counter
 * that went backwards (reset, wrap, knob dir recreated) has rate 0 and
 * reset = true for that tick. */
struct mthp_counter {
        uint64_t value;
        double rate;
        bool reset;
        bool present;
};

enum mthp_vmstat_field {
        MTHP_VM_PGFAULT,
        MTHP_VM_PGMAJFAULT,
        MTHP_VM_THP_FAULT_ALLOC,
        MTHP_VM_THP_FAULT_FALLBACK,
        MTHP_VM_THP_SPLIT_PAGE,
        MTHP_VM_COMPACT_STALL,
        MTHP_VM_COMPACT_FAIL,
        MTHP_VM_COMPACT_SUCCESS,
        MTHP_VM_PSWPOUT,
        _MTHP_VM_MAX,
};
const char *mthp_vmstat_name(enum mthp_vmstat_field f);

struct mthp_meminfo {
        uint64_t total_kb, available_kb, anon_kb, shmem_kb, anon_huge_kb, shmem_huge_kb;
};

struct mthp_psi {
        bool present;
        double some_avg10, full_avg10;      /* percent */
        struct mthp_counter some_total, full_total; /* usec stalled; rate = us/s */
};

struct mthp_size_stats {
        struct mthp_counter stat[MTHP_STATS_MAX]; /* indexed like caps.sizes[i].stats */
};

/* What the density sampler saw of one of the processes that fault most,
 * reduced to what the engine needs (and what a recording keeps). */
#define MTHP_DENSITY_PROCS 8
#define MTHP_DENSITY_GONE_MAX 16       /* MTHP_ENGINE_PROCS */
struct mthp_proc_density {
        int pid;
        char comm[16];
        double fault_rate;                 /* minor faults/s */
        bool new_proc;                     /* first sight: fault_rate is its lifetime average */
        uint64_t rss_kb[_MTHP_KIND_MAX];   /* RssAnon, RssShmem */
        /* Opt-outs (all 0: none, as in recordings made before them).
         * thp_disabled: "THP_enabled: 0" (PR_SET_THP_DISABLE), no large folio
         * at all. nohuge_kb: RSS in MADV_NOHUGEPAGE (nh) mappings, which are
         * in no measure below. */
        bool thp_disabled;
        uint64_t nohuge_kb[_MTHP_KIND_MAX];
        /* per caps size index: share of pages touched in blocks of that size
         * (pagemap, before large folios) and share of all-zero subpages in
         * fully populated blocks (after them); NAN = no sample */
        double coverage[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double zero[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* of zero, the share in windows where a read held data
         * (mthp_density_size zero_data_fraction); NAN (and absent, in
         * recordings made before it): unknown, and the churn rule holds
         * as before */
        double zero_data[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* how many blocks of each size the sample saw: its weight (NAN or 0:
         * unknown, counts as one) */
        double blocks[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* the same three over the MADV_HUGEPAGE (hg) mappings alone, a part
         * of the above; hg_blocks 0: none seen */
        double hg_coverage[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double hg_zero[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double hg_blocks[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* taskstats delay accounting, ms stalled per second (NAN: unknown,
         * e.g. kernel.task_delayacct=0) */
        double compact_ms;
        double thrash_ms;
        double reclaim_ms;
        /* its memory cgroup: usage and the limit it runs into first
         * (memory.max/high on v2, limit_in_bytes on v1); limit 0 = none */
        char cgroup[MTHP_CGROUP_PATH_MAX];
        uint64_t cg_usage_kb, cg_limit_kb;
        /* its largest shmem mapping: can a shmem raise reach it? (reach
         * MTHP_SHM_NONE: none seen, or a recording without this field) */
        struct mthp_shm_mapping shm;
        /* kB of that mapping the daemon has collapsed with MADV_COLLAPSE
         * (ShmemCollapse=, daemon/collapse-tick.c), filled in by the daemon
         * before the engine sees the snapshot and recorded with it (0: none,
         * or a recording without this field) */
        uint64_t shm_repaired_kb;
        /* Its sampled faults by the kind of mapping they fell in
         * (mthp_density_proc.fault_samples; FaultSampling=): what splits its
         * fault rate between the kinds when there are enough of them. All 0:
         * none (sampling off or unavailable, or an older recording); the
         * split is then by the memory it holds of each kind. */
        unsigned fault_samples[_MTHP_KIND_MAX];
        unsigned fault_samples_other;
        /* Its user and system CPU over the interval fault_rate was
         * measured on (/proc/PID/stat utime, stime), in cores: what a raise
         * costs it (lib/engine-pay.c). cpu_known false: not measured (a
         * first sight, or a recording without these fields). */
        bool cpu_known;
        double utime_rate, stime_rate;
};

/* A process holding at least this much shared memory: memory held cannot
 * split its faults between the kinds (a database backend holds gigabytes of
 * shared buffers and a few MiB of heap; a process churning its heap beside
 * a segment may hold no anon at the instant it is read), its sampled fault
 * addresses do (FaultSampling=). */
#define MTHP_FAULT_SHARED_KB 1024

struct mthp_density_view {
        bool valid;                        /* the sampler ran this tick */
        /* the daemon samples the faults of processes holding shared memory
         * (FaultSampling=, perf available): until their samples are in,
         * such a process's faults are no kind's demand */
        bool fault_sampling;
        unsigned n_procs;
        struct mthp_proc_density proc[MTHP_DENSITY_PROCS];
        double usec;                       /* what sampling cost */
        /* processes the engine remembers that had exited by this tick (the
         * daemon looks for /proc/PID of those not sampled): forgotten at
         * once, so that the last sample of a process that is gone (a
         * compiler job, a short-lived client) bars no raise: it would count
         * for 3 more ticks. 0: none, or a recording without this field */
        unsigned n_gone;
        int gone[MTHP_DENSITY_GONE_MAX];
        /* the others of them: their minor faults per second as the /proc
         * scan read them this tick. The engine takes it as the process's
         * rate, so that one that stopped faulting no longer weighs with
         * the rate of its last sample (a pgbench backend, quiet after the
         * run's first tick, held shmem at 512K for 3 ticks with the 23,333
         * faults/s and 0.874 of each 1M block of that sample). 0: none, or
         * a recording from before this field */
        unsigned n_rates;
        struct mthp_proc_rate {
                int pid;
                double fault_rate;
        } rates[MTHP_DENSITY_GONE_MAX];
};

/* One managed memory cgroup (matched by a policy file), from its own
 * memory.stat / usage / limit / memory.pressure. The kernel has no
 * per-cgroup mTHP counters: fault rate is memcg pgfault. */
#define MTHP_SNAP_CGROUPS 32
struct mthp_cgroup_view {
        char path[MTHP_CGROUP_PATH_MAX];   /* relative to the hierarchy root */
        double fault_rate;                 /* memory.stat pgfault per second */
        bool new_cgroup;                   /* first sight (or recreated): no rates yet */
        uint64_t anon_kb, shmem_kb;
        uint64_t usage_kb, limit_kb;       /* limit 0: none */
        double growth_kb_s;                /* usage delta per second */
        bool psi_present;
        double psi_some_avg10;             /* percent */
        /* When the monitor saw it appear (CLOCK_MONOTONIC usec, as t_usec):
         * found by a walk after the first one, or, if empty then, when its
         * usage first rose above 0 (a process moved in). 0: it was there,
         * populated, when the monitor first looked (mthpd's start, a
         * reload): its start was not seen. The engine's start grace
         * (mthpd.conf StartGrace=) counts from here. */
        uint64_t appeared_usec;
};

/* Every memory-limited cgroup on the host, policy-managed or not (the
 * guard's scan, lib/limits.c): what a raise could cost it. A limited cgroup
 * is one with its own limit (v1 memory.limit_in_bytes; v2 the lower of
 * memory.max and memory.high). */
#define MTHP_SNAP_LIMITED 32
struct mthp_limited_cgroup {
        char path[MTHP_CGROUP_PATH_MAX];   /* relative to the hierarchy root */
        uint64_t usage_kb, limit_kb;
        bool populated;                    /* it or a child has a process */
};

struct mthp_snapshot {
        uint64_t tick;
        uint64_t t_usec;           /* CLOCK_MONOTONIC */
        double dt;                 /* seconds since previous snapshot, 0 on the first */
        struct mthp_counter vm[_MTHP_VM_MAX];
        struct mthp_meminfo mem;
        struct mthp_psi psi;
        struct mthp_size_stats size[MTHP_SIZES_MAX];
        /* Current selection of every knob in caps order ("" if unreadable). */
        char knob[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        /* Derived: pages faulted in per second counted in 4K pages, so that a
         * 64K folio fault counts as 16 pages: demand does not drop when
         * folios grow, which would make a fault-rate policy flap. */
        double fault_pages_rate;
        /* The part explained by mTHP allocations of each kind (4K pages/s). */
        double kind_pages_rate[_MTHP_KIND_MAX];
        double kind_fallback_rate[_MTHP_KIND_MAX]; /* fallbacks per second */
        double kind_alloc_rate[_MTHP_KIND_MAX];    /* mTHP allocations per second */
        /* CPU time of one 4K page fault on this host, ns (FaultCost=): what
         * turns a fault rate into the share of a core RaiseFaultTime= reads.
         * Set by the daemon before the engine sees the snapshot (measured at
         * its start), recorded with it. 0: unknown (FaultCost=off, a host
         * root other than /, or a recording without this field). */
        double fault_cost_ns;
        struct mthp_density_view density;
        /* managed cgroups, highest fault rate first (at most MTHP_SNAP_CGROUPS) */
        unsigned n_cgroups;
        struct mthp_cgroup_view cgroup[MTHP_SNAP_CGROUPS];
        /* every memory-limited cgroup (at most MTHP_SNAP_LIMITED, the least
         * headroom first); n_limited 0 and limited_valid false: not scanned */
        bool limited_valid;
        unsigned n_limited;
        struct mthp_limited_cgroup limited[MTHP_SNAP_LIMITED];
        /* Bloat measured after the fact (bloat.h): the processes the
         * observer offered this tick as grown and quiet under a raise,
         * their anon growth beyond what their faults would have mapped at
         * 4K, summed (kB), the largest one's, and its pid and comm. 0:
         * none this tick (or not read: no anon size raised, an early tick,
         * a recording). Read by the host's bloat budget (engine-budget.c). */
        uint64_t grown_bloat_kb, grown_max_kb;
        int grown_pid;
        char grown_comm[16];
        /* What the give-back freed since the last tick (RSS before less
         * after, kB, summed), and the pid that gave the most: the budget
         * takes it off the bloat it remembers. */
        uint64_t given_back_kb;
        int given_back_pid;
};

/* Keeps persistent fds for the hot files; pread each tick. */
struct mthp_sampler;

int mthp_sampler_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_sampler **ret);
void mthp_sampler_free(struct mthp_sampler *s);
/* Take a snapshot at t_usec; rates are against the sampler's previous one. */
int mthp_sampler_take(struct mthp_sampler *s, uint64_t t_usec, struct mthp_snapshot *snap);
/* idle: the next takes may read the per-size counters the engine uses
 * (alloc, fallback) only every 10th tick with the others, their rates then
 * 10-tick averages: for ticks on which nothing is raised and demand is below
 * a raise (mthp_engine_wants_density() false). Default false. */
void mthp_sampler_set_idle(struct mthp_sampler *s, bool idle);

/* Pure helpers, exposed for tests and record/replay. */
void mthp_counter_update(struct mthp_counter *c, const struct mthp_counter *prev, uint64_t value, double dt);
/* /proc/vmstat: the counters of enum mthp_vmstat_field (seen[i]: it was there). */
void mthp_parse_vmstat(const char *text, uint64_t v[_MTHP_VM_MAX], bool seen[_MTHP_VM_MAX]);
/* /proc/meminfo: the fields of struct mthp_meminfo; the others stay as they are. */
void mthp_parse_meminfo(const char *text, struct mthp_meminfo *m);
int mthp_parse_psi(const char *text, struct mthp_psi *psi);
int mthp_stat_index(const struct mthp_size *sz, const char *name);
/* The rate of per-size stat name of caps size i in snap; 0 when this
 * kernel does not have that stat. The one helper for the sampler, the
 * engine and mthpctl. */
double mthp_stat_rate(const struct mthp_caps *caps, const struct mthp_snapshot *snap, unsigned i, const char *name);
void mthp_snapshot_derive(const struct mthp_caps *caps, struct mthp_snapshot *snap);
