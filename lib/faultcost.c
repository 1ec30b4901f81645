/* SPDX-License-Identifier: MIT */
/* The CPU time of one 4K page fault on this host (mthpd.conf(5)
 * FaultCost=auto): what RaiseFaultTime= turns into a fault rate. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mthp/faultcost.h"

static double thread_ns(void) {
        struct timespec t;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) < 0)
                return -1;
        return (double) t.tv_sec * 1e9 + (double) t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

int mthp_fault_cost_measure(double *ns) {
        long page = sysconf(_SC_PAGESIZE);
        if (page <= 0)
                return -EINVAL;
        size_t n = MTHP_FAULT_COST_PAGES * (size_t) page;
        double per[MTHP_FAULT_COST_ROUNDS];
        for (unsigned r = 0; r < MTHP_FAULT_COST_ROUNDS; r++) {
                char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        return -errno;
                /* base pages only, whatever the knobs say: the cost a
                 * larger folio saves is that of these */
                if (madvise(p, n, MADV_NOHUGEPAGE) < 0) {
                        int e = -errno;
                        munmap(p, n);
                        return e;
                }
                double t0 = thread_ns();
                for (size_t off = 0; off < n; off += (size_t) page)
                        ((volatile char *) p)[off] = 1;
                double t1 = thread_ns();
                munmap(p, n);
                if (t0 < 0 || t1 < 0)
                        return -EINVAL;
                per[r] = (t1 - t0) / MTHP_FAULT_COST_PAGES;
        }
        /* the median: one round may take a timer interrupt or a
         * preemption's accounting, another a warm page allocator */
        qsort(per, MTHP_FAULT_COST_ROUNDS, sizeof(per[0]), cmp_double);
        *ns = per[MTHP_FAULT_COST_ROUNDS / 2];
        return *ns > 0 ? 0 : -EINVAL;
}
