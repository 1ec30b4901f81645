/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include "mthp/host.h"
#include "mthp/types.h"
#include "mthp/sample.h"

/* Cgroup monitor: finds the memory cgroups (libcgroup on the real root; a
 * directory walk of the memory hierarchy under a fake root), keeps the ones
 * a predicate selects ("managed"), and each tick reads their memory.stat,
 * usage, limit and memory.pressure through persistent fds (pread).
 *
 * Layouts: v2 (everything from the unified tree), hybrid (memory files from
 * the v1 memory hierarchy, memory.pressure from the same path in the unified
 * tree when it exists there), v1 (no PSI). Paths are relative to the
 * hierarchy root ("/system.slice/x.service"), as /proc/PID/cgroup shows them.
 *
 * The tree is walked again every rescan interval, and at once when a managed
 * cgroup's file reads fail with ENODEV/ENOENT (removed). A cgroup that
 * vanished is dropped quietly; one recreated under the same path starts
 * over (its counters are new: no rate for one tick). */

/* Descriptors. A managed cgroup keeps up to 5 open (memory.stat, usage,
 * max, high, pressure). The monitor never takes a descriptor whose number
 * would leave fewer than MTHP_CGMON_FD_RESERVE free below the soft
 * RLIMIT_NOFILE (read at each walk): a knob write, the restore journal and
 * the restore at exit must always find one. A cgroup found beyond that budget
 * is still managed, its files opened, read and closed each tick
 * (n_transient), and gets its own descriptors at a later walk if the budget
 * has room again; when even that would eat into the reserve, the tick
 * skips it (n_unmonitored). Either is logged once when its number changes. */
#define MTHP_CGMON_FD_RESERVE 64

typedef bool (*mthp_cgmon_match_fn)(const char *path, void *user);

struct mthp_cgmon_stats {
        unsigned n_cgroups;        /* memory cgroups seen by the last walk */
        unsigned n_managed;
        uint64_t walks;            /* tree walks so far */
        uint64_t walk_usec;        /* what the last walk cost (wall) */
        uint64_t tick_usec;        /* what the last tick cost (wall, walk excluded) */
        uint64_t files_read;       /* preads in the last tick */
        uint64_t checks;           /* rescans that found the cgroup count unchanged: no walk */
        unsigned full_reads;       /* cgroups whose memory.stat the last tick read */
        /* the descriptor budget (MTHP_CGMON_FD_RESERVE) */
        unsigned fds;              /* descriptors the managed cgroups hold */
        unsigned n_transient;      /* managed cgroups without their own: files opened and closed each tick */
        unsigned n_unmonitored;    /* managed cgroups the last tick could not read at all for lack of one */
};

struct mthp_cgmon;

int mthp_cgmon_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_cgmon **ret);
void mthp_cgmon_free(struct mthp_cgmon *m);
/* Which cgroups are managed (NULL: none); forces a walk at the next tick. */
void mthp_cgmon_set_match(struct mthp_cgmon *m, mthp_cgmon_match_fn fn, void *user);
/* Every rescan interval (default 30 s) the monitor reads the memory
 * hierarchy's cgroup count (/proc/cgroups) and walks the tree only if it
 * changed since the last walk, or at the latest every 10 intervals (a cgroup
 * removed and another created in between leave the count alone). Without
 * /proc/cgroups it walks every interval. */
void mthp_cgmon_set_rescan(struct mthp_cgmon *m, uint64_t usec);
/* Watch for new cgroups (mthpd: while a policy with an explicit always
 * could use the start grace): read the cgroup count every tick instead of
 * every rescan interval, and walk as soon as it changed, as long as the last
 * walk cost at most 1% of the time since it (a 1 ms walk: every tick; the
 * ~100 ms walk of 10,000 cgroups: every 10 s at most). A cgroup a walk
 * finds after the first one gets appeared_usec (mthp/sample.h). */
void mthp_cgmon_set_watch_new(struct mthp_cgmon *m, bool on);
/* Full reads. Each tick reads every managed cgroup's usage (one small file);
 * memory.stat, the limits and memory.pressure (the expensive reads: the
 * kernel formats ~60 counters for memory.stat) only when the usage moved
 * since the last full read, or when that is older than usec (default 30 s;
 * the cgroups' deadlines are spread so they do not all fall on one tick).
 * Rates are over the time between two full reads, so a quiet cgroup's fault
 * rate is an average over up to usec. 0: a full read of every cgroup each
 * tick. */
void mthp_cgmon_set_full_interval(struct mthp_cgmon *m, uint64_t usec);
/* Sample the managed cgroups at t_usec. out gets the n_out with the highest
 * fault rate (ties: path order), sorted by fault rate; *n gets how many were
 * written. */
int mthp_cgmon_tick(struct mthp_cgmon *m, uint64_t t_usec, struct mthp_cgroup_view *out, unsigned n_out,
                    unsigned *n);
void mthp_cgmon_get_stats(const struct mthp_cgmon *m, struct mthp_cgmon_stats *st);
/* The soft RLIMIT_NOFILE the descriptor budget was last reckoned under. */
unsigned long long mthp_cgmon_fd_limit(const struct mthp_cgmon *m);

/* How the tree is walked. DIRFD (the default, real and fake roots): one
 * getdents per directory that has subdirectories and an fstatat per cgroup.
 * LIBCGROUP (real root only, else -EOPNOTSUPP): libcgroup's
 * cgroup_walk_tree_*, which visits every file of every cgroup; kept to
 * cross-check the fast walk and for the benchmark's comparison. */
enum mthp_cgmon_walker { MTHP_CGMON_WALK_DIRFD, MTHP_CGMON_WALK_LIBCGROUP };
int mthp_cgmon_set_walker(struct mthp_cgmon *m, enum mthp_cgmon_walker w);
/* Walk now (the next tick then does not); t_usec restarts the rescan period.
 * The cost lands in the stats' walk_usec. */
int mthp_cgmon_walk(struct mthp_cgmon *m, uint64_t t_usec);

/* Pure helpers, exposed for tests and fuzzing: memory.stat (v1 and v2 names). */
struct mthp_memstat {
        uint64_t pgfault, pgmajfault, anon_kb, shmem_kb, file_kb, anon_thp_kb;
};
int mthp_parse_memstat(const char *text, struct mthp_memstat *ms);
