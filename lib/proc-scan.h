/* SPDX-License-Identifier: MIT */
#pragma once

/* The /proc scan behind the density sampler: which processes fault hard,
 * at a cost that follows fault activity, not the number of processes.
 *
 * The scan keeps a table of processes in PID order across ticks. Finding
 * new processes: /proc/loadavg's last field is the last PID the kernel
 * handed out (in our PID namespace), so the IDs given out since the last
 * tick are the range between the two values; they are read directly
 * (/proc/TID/stat of a thread says exit_signal -1 and is dropped). /proc is
 * listed whole only at the first tick, when that range is wider than
 * listing would cost (a fork storm; the counter wrapped), when loadavg
 * cannot be read (then every tick, as before), and every
 * MTHP_PROC_SCAN_RELIST_USEC to forget what it missed.
 *
 * Which stat files each tick reads, in this order, up to max_scan and the
 * time left: the max_hot that faulted since their last read, highest
 * faults x resident pages first; processes not read yet (new ones, highest
 * PID first); max_rescan of the quiet rest, in rotation (a process idle for
 * long that begins to fault is found within n / max_rescan ticks). After a
 * listing every old process has a first-sight rate (its lifetime average),
 * mostly tiny (a sleep: 80 faults over its age): such a rate makes a
 * process hot only from min_hot_rate (MinProcessFaultRate's default, below
 * which the engine ignores a process); a measured rate does at any value,
 * as a process faulting 2M folios 60 times a second matters. Measured on a 2-core VM
 * with 5,000 sleeping processes: listing /proc costs 4.0 ms, reading every
 * stat file 26 ms; this reads the workload and a few hundred files.
 *
 * A process's rate is its minor faults per second since the scan last read
 * it, or at first sight its lifetime average (minflt / age), so a
 * short-lived process that faults hard (a compiler) is seen at all. One
 * first seen younger than MTHP_PROC_SCAN_YOUNG_SEC counts as hot at any
 * lifetime rate: read at its start (83 faults: the loader's), a dense
 * program would wait for the rotation, which the time budget of a busy
 * host's tick may never reach. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mthp/density.h"
#include "mthp/host.h"
#include "mthp/procfs.h"

#define MTHP_PROC_SCAN_RELIST_USEC (60 * 1000000ULL)
#define MTHP_PROC_SCAN_YOUNG_SEC 2.0

struct mthp_proc_entry {
        pid_t pid;                   /* -1: gone, dropped at the end of the tick */
        bool kthread, from_lifetime;
        /* from_lifetime over less than MTHP_PROC_SCAN_YOUNG_SEC of life: a
         * program just started has only its loader's faults to show, so it
         * is read again at the next sampling tick whatever that rate */
        bool young;
        bool seen;                   /* its stat was read at least once */
        bool zombie;                 /* exited, not reaped: never a candidate */
        /* the density sampler's memory of the process, kept while it lives:
         * ticks left to draw without trying to list, per kind */
        uint8_t unlisted[_MTHP_KIND_MAX];
        char comm[MTHP_PROC_COMM_MAX];
        uint64_t starttime, minflt, t_usec, rss_pages;
        double rate;
        /* user and system CPU (clock ticks, /proc/PID/stat 14 and 15) and
         * their rates over the same interval as rate, in cores (CPU
         * seconds a second); cpu_known: measured since its last read
         * (false at first sight: no lifetime average, the CPU of a
         * program's start says nothing of a size) */
        uint64_t utime, stime;
        double utime_rate, stime_rate;
        bool cpu_known;
};

struct mthp_proc_scan_stats {
        unsigned listed;             /* processes in the table (or targets) */
        unsigned scanned;            /* stat files read this tick */
        bool full_list;              /* /proc was listed whole this tick */
};

struct mthp_proc_scan {
        const struct mthp_host *host;
        long clk_tck;
        struct mthp_proc_entry *tab, *spare;     /* spare: scratch for merging */
        size_t n_tab, cap_tab, cap_spare;
        pid_t cursor;                       /* the rotation: last quiet PID read */
        pid_t *pids;                        /* scratch: listed or new PIDs */
        size_t cap_pids;
        size_t *order;                      /* scratch: hot entries by rank */
        size_t cap_order;
        long last_pid;                      /* /proc/loadavg at the last tick, -1 unknown */
        /* /proc/loadavg's last PID as the observer read it for this tick
         * (mthp_density_set_last_pid), used instead of a read of its own */
        long given_last_pid;
        bool last_pid_given;
        uint64_t listed_usec;               /* last whole listing */
        bool listed_once;
        /* what this tick's whole listing cost (0 without one): a sampler
         * that budgets its tick leaves it out, so that the tick the gate
         * opens on, often the first listing, still reads and samples */
        uint64_t list_cpu_ns, list_wall_ns;
};

/* faults/s times resident pages: the order of the hot reads and of sampling */
double mthp_proc_entry_rank(const struct mthp_proc_entry *e);

/* Reorder idx[0..n) (indexes into tab) so that its first k, returned as
 * the count, are the highest ranked, highest first. */
size_t mthp_proc_scan_top(const struct mthp_proc_entry *tab, size_t *idx, size_t n, size_t k);

/* The last PID handed out in our PID namespace (/proc/loadavg's last
 * field), -1 if it cannot be read. */
long mthp_proc_last_pid(const struct mthp_host *h);

void mthp_proc_scan_init(struct mthp_proc_scan *s, const struct mthp_host *h);
void mthp_proc_scan_free(struct mthp_proc_scan *s);
/* One tick at t_usec: find new and gone processes (or take the targets, if
 * n_targets: all of them are read each tick, up to max_scan), then read
 * stat files as above until stop(user) says the time is up (stop NULL: no
 * time limit, max_scan alone bounds it). 0 or -errno. */
int mthp_proc_scan_tick(struct mthp_proc_scan *s, const struct mthp_density_target *targets, size_t n_targets,
                        uint64_t t_usec, const struct mthp_density_budget *b, bool (*stop)(void *user), void *user,
                        struct mthp_proc_scan_stats *st);
