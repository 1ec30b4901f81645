/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>
#include "mthp/host.h"
#include "mthp/types.h"
#include "mthp/sample.h"

/* Adds to each sampled process what it costs: taskstats stall time
 * (compaction, thrashing, reclaim) and how close its memory cgroup is to
 * its limit. Keeps the previous taskstats sample per pid for rates. */
struct mthp_procinfo;

int mthp_procinfo_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_procinfo **ret);
void mthp_procinfo_free(struct mthp_procinfo *p);
/* Fills compact_ms/thrash_ms/reclaim_ms and cgroup fields of v's processes.
 * Never fails: what cannot be read stays unknown (NAN / 0). */
void mthp_procinfo_enrich(struct mthp_procinfo *p, struct mthp_density_view *v);

/* Pure helpers, exposed for tests. */
int mthp_procinfo_parse_cgroup(const char *proc_pid_cgroup, enum mthp_cg_layout layout, char *memcg, size_t size);
