/* SPDX-License-Identifier: MIT */
#pragma once

/* The observer: all that mthpd reads of the host for one tick, in one
 * snapshot (struct mthp_snapshot), the engine's input and what --record
 * writes. It owns the samplers: the host's counters (sample.h), the fault
 * cost (faultcost.h, FaultCost=auto, measured once), the managed cgroups
 * (cgmon.h), the faulting processes' density (density.h) with their
 * cgroups and stalls (procinfo.h), and their faults' addresses (faults.h,
 * FaultSampling=, real host only), and, while an anon size is raised,
 * every process's growth since the raise (bloat.h: the grown, quiet ones
 * the fault-driven sampler does not see). What a tick samples beyond the
 * counters and cgroups is planned from the engine's configuration and
 * state (mthp_observe_plan, pure). It reads through the host root and
 * writes nothing; a sampler that fails is logged once, until it works
 * again, and the snapshot goes on without it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mthp/bloat.h"
#include "mthp/config.h"
#include "mthp/density.h"
#include "mthp/engine.h"
#include "mthp/host.h"
#include "mthp/policy.h"
#include "mthp/sample.h"
#include "mthp/types.h"
#include "mthp/util.h"

struct mthp_observer;

/* The samplers for host h (caps: its probe) under cfg, kept as a pointer
 * (mthp_observer_configure). Only the counters' sampler and the process
 * information are required; without a density sampler or a memory cgroup
 * hierarchy the snapshots lack those (logged). */
int mthp_observer_new(const struct mthp_host *h, const struct mthp_caps *caps, const struct mthp_config *cfg,
                      struct mthp_observer **ret);
/* NULL is fine. */
void mthp_observer_free(struct mthp_observer *o);
MTHP_DEFINE_FREEP(struct mthp_observer, mthp_observer_free, mthp_observer_freep)

/* The configuration to observe with: read at every take, so it must stay
 * valid until the next call or the free (its policy set too). Call it
 * again when it changed (a reload): the cgroup monitor then walks again,
 * for the cgroups its policy files name. */
void mthp_observer_configure(struct mthp_observer *o, const struct mthp_config *cfg);

/* Whether the managed cgroups are sampled at all (a memory cgroup
 * hierarchy was found). */
bool mthp_observer_has_cgroups(const struct mthp_observer *o);
/* The cgroup monitor's figures (mthp/cgmon.h) and the soft RLIMIT_NOFILE
 * its descriptor budget is under; false (st untouched) without one. */
struct mthp_cgmon_stats;
bool mthp_observer_cgroup_stats(const struct mthp_observer *o, struct mthp_cgmon_stats *st,
                                unsigned long long *fd_limit);

/* The cgroups the observer samples: those a policy file names (their
 * children count with them, through the hierarchical memory.stat). */
bool mthp_observe_cgroup_managed(const struct mthp_policy_set *set, const char *path);

/* What a tick observes of the processes, after the counters and cgroups
 * are in: the engine's density back-off reads this tick's fault rate and
 * its cgroups' start grace, so that a workload that starts to fault is
 * sampled in the very tick its faults first show. */
#define MTHP_OBSERVE_EARLY 1u    /* an early tick (mthp_tick_next): for the fault samples */
#define MTHP_OBSERVE_AWAITS 2u   /* the last tick awaited fault samples (mthp_engine_awaits_samples) */
struct mthp_observe_plan {
        bool density;                   /* sample the faulting processes (else the scan's idle tick) */
        double hot_rate;                /* a first-sight process is hot from this lifetime rate */
        /* shmem's PMD size is on: a 2M shmem folio reads as mapped by
         * its PMD (an anon one is often mapped by PTEs: not for anon) */
        bool shmem_pmd_on;
        int first[MTHP_DENSITY_FIRST_MAX]; /* sampled before any other: those awaiting fault samples */
        size_t n_first;
        /* mthp_density_set_young(): a process younger than young_usec
         * (MTHP_OBSERVE_YOUNG_USEC) waits while its stake is under
         * young_stake_kb (MinBloatBytes=; 0: none waits) */
        uint64_t young_usec, young_stake_kb;
};
/* How old a process with less than MinBloatBytes at stake must be before it
 * is sampled. Its faults count toward a raise only once the engine has seen
 * it for 5 s (ENGINE_PERSIST_USEC), so a sample before then decides nothing
 * unless it lives on; in the recorded build box each cc1 lived 0.2-3 s, and
 * the shell and Python processes less. Waiting 2 s leaves most of them
 * unsampled and delays the evidence of a small process that lives on by 2 s
 * at most; a big one is sampled at once. */
#define MTHP_OBSERVE_YOUNG_USEC 2000000ULL
/* Pure: the plan for snap (counters and cgroups taken) under the engine's
 * cfg and the state st its last decision left; flags: MTHP_OBSERVE_*. */
void mthp_observe_plan(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *st, unsigned flags,
                       struct mthp_observe_plan *plan);

/* One tick's snapshot at t_usec (CLOCK_MONOTONIC): counters, fault cost,
 * cgroups, then what mthp_observe_plan says, with the processes st
 * remembers that were not sampled (exited, or their rates now). 0, or a
 * negative errno when the counters cannot be read (then nothing else is
 * sampled and snap is not to be used). */
int mthp_observer_take(struct mthp_observer *o, uint64_t t_usec, const struct mthp_engine_state *st, unsigned flags,
                       struct mthp_snapshot *snap);

/* Pure: may the next take read the per-size alloc/fallback counters only
 * with the cold ones (mthp_sampler_set_idle)? After the engine decided
 * (st) on snap: when nothing is raised and demand is below a raise, and
 * no size below the PMD may allocate at all (every such knob "never", as
 * at boot): then a stale per-size rate hides no demand, since PMD folios
 * are counted fresh in /proc/vmstat. */
bool mthp_observe_sizes_idle(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct mthp_engine_state *st);
void mthp_observer_set_idle(struct mthp_observer *o, bool idle);

/* An early tick is due, share of an Interval from now: the fault
 * sampler's period for the host's fault rate in snap (at least the awaited
 * processes' own, awaited_rate: one that started just before this tick is
 * not in the host's rate yet) scaled by share, so that the early tick gets
 * about the samples a whole Interval would bring. */
void mthp_observer_expect_faults(struct mthp_observer *o, const struct mthp_snapshot *snap, double awaited_rate,
                                 double share);

/* The last take's processes that grew under the raise and are quiet now
 * (bloat.h), largest growth first, in *c (valid until the next take); the
 * scan's cost in stats (may be NULL). Their number. */
unsigned mthp_observer_grown(const struct mthp_observer *o, const struct mthp_bloat_candidate **c,
                             struct mthp_bloat_stats *stats);
/* Offer pid again on the next take (its give-back stopped at the budget). */
void mthp_observer_grown_again(struct mthp_observer *o, int pid);
/* The give-back freed kb of pid's memory this tick: the next snapshot
 * says so (given_back_kb), for the host's bloat budget. */
void mthp_observer_given_back(struct mthp_observer *o, int pid, uint64_t kb);
