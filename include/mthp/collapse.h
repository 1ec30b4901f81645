/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "mthp/host.h"

/* MADV_COLLAPSE for the processes of Collapse=yes cgroups: their dense,
 * long-lived anon regions become PMD-mapped THPs, from outside, with
 * process_madvise(pidfd, ..., MADV_COLLAPSE) (Linux 6.1+, CAP_SYS_NICE and
 * ptrace access to the target).
 *
 * A candidate is a PMD-aligned block of a private anon mapping that is at
 * least min_coverage present and not yet PMD-mapped (PAGEMAP_SCAN), and was
 * a candidate on the previous pass over the same process too (long-lived:
 * memory that is freed again soon is not worth a copy). Work per tick is
 * bounded in kB collapsed and in time; per process a pass runs at most every
 * min_interval_usec. */

struct mthp_collapse_budget {
        uint64_t max_kb_per_tick;     /* default 64 MiB */
        double min_coverage;          /* default 0.9 */
        uint64_t min_interval_usec;   /* per process, default 10 s */
        uint64_t max_usec;            /* per tick, default 20 ms */
};
void mthp_collapse_budget_default(struct mthp_collapse_budget *b);

struct mthp_collapse_result {
        unsigned candidates;          /* dense blocks not PMD-mapped seen this pass */
        unsigned attempted, collapsed, failed;
        uint64_t kb_collapsed;
        int last_error;               /* negative errno of the last failure, 0 none */
        uint64_t usec;
};

struct mthp_collapser;

int mthp_collapser_new(const struct mthp_host *h, const struct mthp_collapse_budget *b, struct mthp_collapser **ret);
void mthp_collapser_free(struct mthp_collapser *c);
/* Start a tick at t_usec: resets the per-tick budget. */
void mthp_collapser_begin_tick(struct mthp_collapser *c, uint64_t t_usec);
/* One pass over pid within what is left of the tick's budget. -ESRCH if it
 * exited, -EPERM/-EACCES if not allowed, -EOPNOTSUPP if the kernel lacks
 * process_madvise or MADV_COLLAPSE; 0 otherwise (res filled). Only on the
 * real root ("/"): under a fake root returns -EOPNOTSUPP. */
int mthp_collapser_run(struct mthp_collapser *c, pid_t pid, uint64_t t_usec, struct mthp_collapse_result *res);
/* Totals since start. */
void mthp_collapser_totals(const struct mthp_collapser *c, struct mthp_collapse_result *tot);
