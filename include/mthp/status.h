/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include "mthp/engine.h"

/* /run/mthpd/status: the daemon's latest decisions and reasons, rewritten
 * each tick (atomically, on tmpfs), so mthpctl can explain without a bus. */
#define MTHP_STATUS_FILE "status"

struct mthp_status_knob {
        char id[32];
        char decision[MTHP_VALUE_MAX];  /* "" = original; with pins and failed writes applied */
        char reason[MTHP_REASON_MAX];
        /* the rest of mthpd's knob view (daemon/daemon.h), "" / false when
         * the file is from an mthpd that did not write them */
        char set_by[16];                /* original | mthpd | other | pinned */
        bool pinned;
        /* the engine's rules behind the decision (mthp_rule_name), or
         * "pinned" for an administrator's pin; "": none, or unknown (an
         * mthpd that did not say) */
        char rule[32], size_rule[32];
};

/* What mthpd can and cannot watch. The managed cgroups' descriptors
 * (mthp/cgmon.h): each keeps its own (held), or its files are opened, read
 * and closed each tick (reopened), or, when even that would eat into the
 * reserve kept below the soft RLIMIT_NOFILE, it is not read at all
 * (unmonitored). And the guard's last scan of the memory-limited cgroups
 * (mthp/limits.h): the ones the engine weighs, the others, and the
 * directories whose paths are too long to name (unseen: their limits are
 * not known). */
struct mthp_status_coverage {
        bool cgroups_known;             /* a cgroup monitor runs */
        unsigned managed;               /* managed cgroups: held + reopened + unmonitored */
        unsigned reopened, unmonitored;
        unsigned fds;                   /* descriptors the managed cgroups hold */
        unsigned long long fd_limit;    /* the soft RLIMIT_NOFILE */
        unsigned fd_reserve;            /* kept free below it */
        bool guard_known;               /* the guard scanned at least once */
        unsigned scanned;               /* cgroups the last scan visited */
        unsigned limited;               /* memory-limited ones it found */
        unsigned weighed;               /* of them, the ones the engine weighs (the least headroom) */
        unsigned unseen;                /* directories no path can name, with their subtrees */
        unsigned long long scan_usec;   /* what the last scan cost (wall) */
};

/* The fault cost the engine decides with (ns, 0: unknown) and the raise
 * and lower rates it gives, 4K pages/s (mthp_engine_fault_rates); by_time:
 * RaiseFaultTime= at that cost set them, else RaiseFaultRate= and
 * LowerFaultRate= did. */
struct mthp_status_rates {
        double fault_cost_ns, raise, lower;
        bool by_time;
};

struct mthp_status {
        int pid;
        bool observing;
        unsigned long long tick, updated_realtime_usec;
        double fault_pages_rate;
        unsigned long long tick_usec;   /* what the previous tick cost mthpd (wall) */
        char not_writable[512];         /* why mthpd cannot write the knobs; "": it can */
        bool rates_known;               /* false: the file is from an mthpd that did not write both rates */
        struct mthp_status_rates rates;
        bool lower_known;               /* the reader's own: lower_fault_rate was read */
        struct mthp_status_coverage coverage; /* all false/0: from an mthpd that did not say */
        unsigned n;
        struct mthp_status_knob k[MTHP_KNOBS_MAX];
};

/* k: one row per knob the last tick decided, as the reader gets them
 * back; not_writable: why mthpd cannot write the knobs ("" or NULL: it can);
 * rates, coverage: NULL writes none. */
int mthp_status_file_write(const char *state_dir, const struct mthp_snapshot *snap, const struct mthp_status_knob *k,
                           unsigned n, bool observing, const char *not_writable, uint64_t tick_usec,
                           const struct mthp_status_rates *rates, const struct mthp_status_coverage *coverage);
void mthp_status_file_remove(const char *state_dir);
/* -ENOENT when no daemon wrote one (or it is stale: its pid is gone). */
int mthp_status_file_read(const char *state_dir, struct mthp_status *st);
