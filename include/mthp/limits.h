/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include "mthp/host.h"
#include "mthp/types.h"
#include "mthp/sample.h"

/* Every memory-limited cgroup on the host, for the engine's invariant and
 * the guard (engine.h, struct mthp_engine_limited). Not only the cgroups a
 * policy file manages: a raise applies to every process, so every limited
 * cgroup can be hurt by it.
 *
 * The scan walks the memory hierarchy (v1 memory mount on v1 and hybrid
 * hosts, the unified tree on v2) breadth-first, every directory at any
 * depth and path length (a path longer than PATH_MAX, which no call can
 * name, is counted as unseen), and reads one limit file per cgroup (two on
 * v2: memory.max, memory.high), usage and populated state only for limited
 * ones (on v1, where populated means "it or a descendant has a process",
 * cgroup.procs only of cgroups under a limited one: reading it builds the
 * cgroup's whole PID list, 3 ms for 5,000 processes). Each file is one
 * pread. On the real host's cgroupfs a directory is listed only when its
 * link count says it has subdirectories (2 plus their number): a leaf, most
 * cgroups, costs an fstatat instead of six calls (~22 us a cgroup a scan
 * beside 200 empty v1 cgroups, docs/engine.md).
 *
 * The snapshot carries the MTHP_SNAP_LIMITED limited cgroups with the least
 * headroom in bytes (what a size's bloat costs is bytes: a 100 MiB cgroup
 * with 50 MiB left is nearer harm than a 10 GiB one 95% full). A path that
 * does not fit MTHP_CGROUP_PATH_MAX is carried under an alias (its head,
 * "…", its tail and a hash of it) that mthp_limits_read, mthp_limits_arm_v1
 * and mthp_limits_resolve map back; the engine, finding no sampled process
 * in it, weighs it as sparse. */

/* Called for every directory the scan visits (host path), e.g. to watch it
 * for new children; may be NULL. */
typedef void (*mthp_limits_dir_fn)(const char *host_path, void *user);

/* Fills snap->limited (least headroom first, populated ones before empty
 * ones), n_limited and limited_valid. -ENOENT: no memory hierarchy. */
int mthp_limits_scan(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap,
                     mthp_limits_dir_fn fn, void *user);

/* What a scan saw. */
struct mthp_limits_stats {
        unsigned dirs;                  /* cgroups visited */
        unsigned limited;               /* limited cgroups found */
        unsigned carried;               /* of them in the snapshot (at most MTHP_SNAP_LIMITED) */
        unsigned aliased;               /* carried under an alias: path too long for the snapshot */
        unsigned unseen;                /* directories no path can name (beyond PATH_MAX), with their subtrees */
        uint64_t least_uncarried_kb;    /* the least headroom among the ones not carried */
        uint64_t usec;                  /* what the scan cost (wall) */
};
/* mthp_limits_scan, and what it saw (stats may be NULL). */
int mthp_limits_scan_ex(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap,
                        mthp_limits_dir_fn fn, void *user, struct mthp_limits_stats *stats);
/* The cgroup path an alias of the last scans stands for; any other path as
 * it is. */
const char *mthp_limits_resolve(const char *path);

/* One cgroup's limit (lowest of max/high on v2) and usage, in kB; limit 0:
 * none. path is relative to the hierarchy root. */
int mthp_limits_read(const struct mthp_host *h, const struct mthp_caps *caps, const char *path, uint64_t *usage_kb,
                     uint64_t *limit_kb);

/* The memory hierarchy's mount (host path) and whether it is v1. */
const char *mthp_limits_base(const struct mthp_caps *caps, bool *v1);

/* v1: arm a usage threshold (cgroup.event_control, eventfd). Returns the
 * eventfd (readable once usage crosses threshold_bytes in either direction;
 * closing it disarms) or a negative errno. */
int mthp_limits_arm_v1(const struct mthp_host *h, const struct mthp_caps *caps, const char *path,
                       uint64_t threshold_bytes);

/* v2 memory.events: the high and max counters. */
int mthp_parse_memory_events(const char *text, uint64_t *high, uint64_t *max);
