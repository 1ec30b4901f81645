/* SPDX-License-Identifier: MIT */
#pragma once
/* The replay of a recorded trace (tests/engine/traces/) through the engine
 * with the default configuration from a fresh state, the way mthpctl
 * simulate does (replay.c), and the helpers the trace tests share
 * (test-traces.c, test-trace-ticks.c). */
#include <stdbool.h>
#include <stdint.h>

#include "mthp/config.h"
#include "mthp/engine.h"

#define MAX_TICKS 256
#define SMALL_RSS_KB 1024  /* a process this small cannot cost the host much bloat */

struct tick_outcome {
        uint64_t tick;
        unsigned level[_MTHP_KIND_MAX];
        /* the reason of the kind's smallest ladder knob: it says why the
         * kind is where it is */
        char reason[_MTHP_KIND_MAX][MTHP_REASON_MAX];
        struct mthp_density_view density;
        bool limited_populated;   /* a populated limited cgroup of the test (limited-sparse) */
        bool awaits;              /* mthp_engine_awaits_samples() after the decision */
        uint64_t next_usec;       /* mthp_tick_next(): when the next tick is due after it */
        bool climb;               /* mthp_engine_climbing(): it raised a kind short of its top */
        uint64_t t_usec;
        bool sampled;             /* the replay gave the engine this tick's density */
};

struct replay {
        const char *name;
        struct mthp_config cfg;
        struct mthp_caps caps;
        unsigned n_ladder[_MTHP_KIND_MAX];
        unsigned top_kb[_MTHP_KIND_MAX];
        unsigned n;
        struct tick_outcome t[MAX_TICKS];
};

/* The group teardown: frees the replay in use (see replay.c). */
int free_replay(void **state);

/* Replay as the daemon samples: a tick's recorded density reaches the
 * engine only where mthp_engine_wants_density asks for it (the density
 * back-off); false: every recorded sample, as recorded. */
extern bool replay_backoff;
/* MinBloatBytes=0: every process's density has its say, however few bytes
 * it puts at stake (tests of a mechanism a small process's objection shows) */
extern bool replay_every_say;

/* raise_fault_time: RaiseFaultTime= for the replay; NAN: the default */
struct replay *replay_trace_time(const char *name, double raise_fault_time);
struct replay *replay_trace(const char *name);

const struct mthp_proc_density *find_proc(const struct tick_outcome *o, const char *comm);
/* Faulting hard enough for the engine to weigh its density. */
bool faulting(const struct replay *rp, const struct mthp_proc_density *p);
/* Faulting, and the sampler saw its memory of this kind this tick. */
bool measured(const struct replay *rp, const struct mthp_proc_density *p, enum mthp_kind kind);
/* Index of the first tick at which comm faults, or -1. */
int first_faulting(const struct replay *rp, const char *comm);
int last_faulting(const struct replay *rp, const char *comm);

void assert_reason_contains(const struct replay *rp, unsigned i, enum mthp_kind kind, const char *needle);
void assert_level(const struct replay *rp, unsigned i, enum mthp_kind kind, unsigned level);

/* The index of the first tick at which the kind is at the top of its
 * ladder, or -1. */
int first_top(const struct replay *rp, enum mthp_kind kind);
