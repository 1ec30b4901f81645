/* SPDX-License-Identifier: MIT */
#pragma once

/* The rotating /proc scan behind the density sampler: which processes fault
 * hard. Each tick lists the PIDs (or the targets), reads up to max_scan
 * /proc/PID/stat files resuming after the last PID read (the others keep
 * their last rate), and rebuilds the table of entries in PID order. A
 * process's rate is its minor faults per second since the scan last read it,
 * or at first sight its lifetime average (minflt / age), so a short-lived
 * process that faults hard (a compiler) is seen at all. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mthp/density.h"
#include "mthp/host.h"
#include "mthp/procfs.h"

struct mthp_proc_entry {
        pid_t pid;                   /* 0: not scanned yet, -1: gone (scratch table only) */
        bool kthread, from_lifetime;
        /* the density sampler's memory of the process, kept while it lives:
         * ticks left to draw without trying to list, per kind */
        uint8_t unlisted[_MTHP_KIND_MAX];
        char comm[MTHP_PROC_COMM_MAX];
        uint64_t starttime, minflt, t_usec, rss_pages;
        double rate;
};

struct mthp_proc_scan {
        const struct mthp_host *host;
        long clk_tck;
        struct mthp_proc_entry *tab, *spare;     /* spare: next tick's table, being built */
        size_t n_tab, cap_tab, cap_spare;
        pid_t cursor;                       /* last PID whose stat was read */
        pid_t *pids;                        /* scratch: this tick's PIDs */
        size_t cap_pids;
};

void mthp_proc_scan_init(struct mthp_proc_scan *s, const struct mthp_host *h);
void mthp_proc_scan_free(struct mthp_proc_scan *s);
/* This tick's PIDs into s->pids, sorted and unique: the targets' if
 * n_targets, else /proc's. *ret gets their count. 0 or -errno. */
int mthp_proc_scan_list(struct mthp_proc_scan *s, const struct mthp_density_target *targets, size_t n_targets,
                        size_t *ret);
/* Read up to max_scan stat files of the n listed PIDs, resuming after the
 * last PID read, until stop(user) says the time is up; the others keep
 * their last rate. Rebuilds s->tab (s->n_tab entries) in PID order. */
int mthp_proc_scan_stat(struct mthp_proc_scan *s, uint64_t t_usec, size_t n, unsigned max_scan,
                        bool (*stop)(void *user), void *user, unsigned *scanned);
