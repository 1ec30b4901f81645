/* SPDX-License-Identifier: MIT */
/* collapse-run: run the MADV_COLLAPSE collapser (lib/collapse.c) on one
 * process for a few passes and print what each pass did. For the real-kernel
 * test and by hand:
 *   collapse-run [--passes N] [--coverage F] [--max-kb KB] [--max-usec US]
 *                [--interval-ms MS] PID
 * Every pass is a tick of its own (the budget is per tick); passes are
 * --interval-ms apart (default 0) and min_interval is that interval, so the
 * second pass may collapse what the first saw. Exit 0, or 1 on an error. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mthp/collapse.h"

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: collapse-run [--passes N] [--coverage F] [--max-kb KB] [--max-usec US]\n"
                   "                    [--interval-ms MS] PID\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "passes", required_argument, NULL, 'n' },   { "coverage", required_argument, NULL, 'c' },
                { "max-kb", required_argument, NULL, 'k' },   { "max-usec", required_argument, NULL, 'u' },
                { "interval-ms", required_argument, NULL, 'i' }, { "help", no_argument, NULL, 'h' },
                {},
        };
        struct mthp_collapse_budget b;
        unsigned passes = 2, interval_ms = 0;
        int o;

        mthp_collapse_budget_default(&b);
        while ((o = getopt_long(argc, argv, "n:c:k:u:i:h", opts, NULL)) != -1) {
                switch (o) {
                case 'n': passes = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'c': b.min_coverage = strtod(optarg, NULL); break;
                case 'k': b.max_kb_per_tick = strtoull(optarg, NULL, 10); break;
                case 'u': b.max_usec = strtoull(optarg, NULL, 10); break;
                case 'i': interval_ms = (unsigned) strtoul(optarg, NULL, 10); break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind + 1 != argc || passes == 0 || passes > 100000 || interval_ms > 600000) {
                usage(stderr);
                return 2;
        }
        pid_t pid = (pid_t) strtol(argv[optind], NULL, 10);
        b.min_interval_usec = (uint64_t) interval_ms * 1000;

        struct mthp_host *h;
        struct mthp_collapser *c;
        int r = mthp_host_open("/", &h);
        if (r < 0) {
                fprintf(stderr, "collapse-run: opening host root /: %s\n", strerror(-r));
                return 1;
        }
        r = mthp_collapser_new(h, &b, &c);
        if (r < 0) {
                fprintf(stderr, "collapse-run: mthp_collapser_new: %s\n", strerror(-r));
                return 1;
        }
        int rc = 0;
        for (unsigned i = 0; i < passes; i++) {
                struct mthp_collapse_result res;
                if (i && interval_ms)
                        usleep(interval_ms * 1000u);
                uint64_t t = mono_usec();
                mthp_collapser_begin_tick(c, t);
                r = mthp_collapser_run(c, pid, t, &res);
                printf("pass=%u rc=%d candidates=%u eligible=%u huge=%u attempted=%u collapsed=%u failed=%u "
                       "kb_collapsed=%llu last_error=%d usec=%llu deferred=%d cut=%d thp_disabled=%d\n",
                       i + 1, r, res.candidates, res.eligible, res.huge, res.attempted, res.collapsed, res.failed,
                       (unsigned long long) res.kb_collapsed, res.last_error, (unsigned long long) res.usec,
                       res.deferred, res.cut, res.thp_disabled);
                fflush(stdout);
                if (r < 0) {
                        fprintf(stderr, "collapse-run: pid %d: %s\n", (int) pid, strerror(-r));
                        rc = 1;
                        break;
                }
        }
        struct mthp_collapse_result tot;
        mthp_collapser_totals(c, &tot);
        printf("total attempted=%u collapsed=%u failed=%u kb_collapsed=%llu usec=%llu\n", tot.attempted,
               tot.collapsed, tot.failed, (unsigned long long) tot.kb_collapsed, (unsigned long long) tot.usec);
        mthp_collapser_free(c);
        mthp_host_free(h);
        return rc;
}
