/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mthp/host.h"

/* Per-process delay accounting through the kernel's TASKSTATS generic
 * netlink family (Documentation/accounting/taskstats.rst, delay-accounting.rst).
 *
 * Delay accounting must be on (kernel.task_delayacct=1, or boot with
 * "delayacct"), and it only covers tasks forked while it was on: the kernel
 * allocates a task's delay record at fork. CPU delay comes from scheduler
 * statistics and is reported even when delay accounting is off. */

enum mthp_delay_kind {
        MTHP_DELAY_CPU,       /* runnable, waiting for a CPU */
        MTHP_DELAY_BLKIO,     /* waiting for synchronous block I/O */
        MTHP_DELAY_SWAPIN,    /* waiting for swap-in */
        MTHP_DELAY_RECLAIM,   /* direct reclaim (taskstats "freepages") */
        MTHP_DELAY_THRASHING, /* waiting for a refaulting workingset page */
        MTHP_DELAY_COMPACT,   /* direct compaction */
        MTHP_DELAY_WPCOPY,    /* copying a page on a write-protect fault */
        MTHP_DELAY_IRQ,       /* time taken by IRQ/softirq while running */
        _MTHP_DELAY_KIND_MAX,
};

/* "cpu", "blkio", "swapin", "reclaim", "thrashing", "compact", "wpcopy",
 * "irq"; NULL when out of range. */
const char *mthp_delay_kind_to_string(enum mthp_delay_kind kind);

struct mthp_delay {
        uint64_t count;    /* delays recorded */
        uint64_t total_ns; /* their sum; the kernel resets it to 0 on overflow */
};

struct mthp_delays {
        uint32_t tgid;
        uint16_t version;      /* struct taskstats version the kernel sent */
        uint32_t present;      /* bit (1u << kind): the kernel's struct carries that kind */
        uint64_t cpu_run_ns;   /* CPU time run, ns (cpu_run_virtual_total: scheduler
                                * runtime; the "real" one is tick-based) */
        uint64_t sampled_ns;   /* CLOCK_MONOTONIC when the reply arrived */
        struct mthp_delay delay[_MTHP_DELAY_KIND_MAX];
};

#define MTHP_DELAY_PRESENT(d, kind) (((d)->present >> (kind)) & 1u)

/* Receive timeout for one query; the daemon loop never waits longer. */
#define MTHP_TASKSTATS_TIMEOUT_MS 200

struct mthp_taskstats;

/* One generic netlink socket, the resolved family and a kept-open fd on
 * /proc/sys/kernel/task_delayacct below the host root (host may be NULL:
 * then the reply alone decides whether accounting is on); host is only used
 * during this call. Returns 0; -ENOENT if the kernel has no TASKSTATS
 * family (CONFIG_TASKSTATS=n); -ETIMEDOUT; other negative errno.
 * Not thread-safe: one handle per thread. */
int mthp_taskstats_open_at(const struct mthp_host *host, struct mthp_taskstats **ret);
/* Same, against the real host "/". */
int mthp_taskstats_open(struct mthp_taskstats **ret);
void mthp_taskstats_close(struct mthp_taskstats *ts);

/* Delay totals of the whole thread group (live threads, plus exited ones
 * the kernel folded into the group). Returns
 *   0            *out filled;
 *   -ESRCH       no such process (gone);
 *   -EOPNOTSUPP  delay accounting is off; *out still holds the reply
 *                (CPU delay is real, the other kinds read zero);
 *   -EPERM       not allowed (the query needs CAP_NET_ADMIN);
 *   -ETIMEDOUT   no answer within MTHP_TASKSTATS_TIMEOUT_MS;
 *   -EINVAL      pid <= 0;  -EBADMSG  malformed reply. */
int mthp_taskstats_query_tgid(struct mthp_taskstats *ts, pid_t pid, struct mthp_delays *out);

/* Pure parsers, exposed for tests. parse_reply takes the attribute stream of
 * a TASKSTATS_CMD_NEW reply (after the genl header) and expects the nest
 * TASKSTATS_TYPE_AGGR_TGID { TGID == tgid, STATS }; parse_stats takes the
 * struct taskstats payload of any version and size. Both return 0 or
 * -EBADMSG and leave tgid/sampled_ns to the caller (parse_reply sets tgid). */
int mthp_taskstats_parse_reply(const void *attrs, size_t len, uint32_t tgid, struct mthp_delays *out);
int mthp_taskstats_parse_stats(const void *stats, size_t len, struct mthp_delays *out);

struct mthp_delay_rate {
        double events_per_sec;
        double ms_per_sec; /* milliseconds of delay per second of wall time */
};

struct mthp_delay_rates {
        uint32_t present; /* kinds present in both samples */
        double interval_sec;
        struct mthp_delay_rate rate[_MTHP_DELAY_KIND_MAX];
};

/* Rates between two samples of the same process, over their sampled_ns.
 * A kind whose count or total went backwards (an exited thread the kernel
 * did not fold in, or the total's overflow reset) gets rate 0.
 * Returns 0; -EINVAL if cur is not later than prev; -ESTALE if the tgids
 * differ. */
int mthp_delays_rates(const struct mthp_delays *prev, const struct mthp_delays *cur, struct mthp_delay_rates *out);
