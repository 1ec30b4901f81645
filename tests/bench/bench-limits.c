/* SPDX-License-Identifier: MIT */
/* The limited-cgroup scan (lib/limits.c, mthp_limits_scan) on a
 * kubelet-like fake host: how many of the limited cgroups it sees, whether
 * the one nearest its limit reaches the snapshot, and what a scan costs.
 *
 * The tree (cgroup v2, on a fake host under /dev/shm): pods of both kubelet
 * cgroup drivers, half each,
 *   systemd   /kubepods.slice/kubepods-burstable.slice/
 *             kubepods-burstable-pod<uid with _>.slice/cri-containerd-<64 hex>.scope
 *   cgroupfs  /kubepods/burstable/pod<uid>/<64 hex>
 * two containers a pod, the second with a child cgroup whose path is 250
 * characters long; pod and containers limited (memory.max), usage 20-80% of
 * the limit; the rest of --cgroups are unlimited services and user scopes
 * nearer the root (/system.slice, /user.slice). The last pod's child at
 * the 250-character path is the tight one: 100 MiB, 90 MiB used (the least
 * headroom in bytes of all: the others keep 20% of 128 MiB or more).
 *
 * It uses only mthp_limits_scan and its per-directory callback, so it
 * builds against the scan of any version:
 *   build/tests/bench/bench-limits [--cgroups 10000] [--pods 1000] [--runs 5]
 * No root needed; nothing outside the fake tree is touched. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakehost.h"
#include "mthp/host.h"
#include "mthp/limits.h"
#include "mthp/probe.h"
#include "mthp/util.h"

#define MIB (1024ULL * 1024ULL)

static char root[PATH_MAX];
static unsigned n_made, n_limited, longest;
static char **limited_dirs; /* host paths of the limited ones, for coverage */
static unsigned *seen;

static void die(const char *what, int r) {
        fprintf(stderr, "bench-limits: %s: %s\n", what, strerror(r < 0 ? -r : r));
        if (root[0])
                (void) fakehost_remove(root);
        exit(1);
}

static void put(const char *memdir, const char *file, uint64_t v) {
        char p[PATH_MAX + 64], t[32];
        snprintf(p, sizeof(p), "%s/%s", memdir, file);
        snprintf(t, sizeof(t), "%llu\n", (unsigned long long) v);
        int r = fakehost_write_file(root, p, t);
        if (r < 0)
                die(p, r);
}

/* name relative to the hierarchy root, without the leading '/' */
static void make(const char *name, uint64_t limit, uint64_t usage) {
        char memdir[PATH_MAX];
        int r = fakehost_add_cgroup(root, name, memdir, sizeof(memdir));
        if (r < 0)
                die(name, r);
        n_made++;
        if (strlen(name) + 1 > longest)
                longest = (unsigned) strlen(name) + 1;
        if (!limit)
                return;
        put(memdir, "memory.max", limit);
        put(memdir, "memory.current", usage);
        limited_dirs = realloc(limited_dirs, (n_limited + 1) * sizeof(*limited_dirs));
        if (!limited_dirs || !(limited_dirs[n_limited] = strdup(memdir)))
                die("memory", ENOMEM);
        n_limited++;
}

static unsigned rnd(void) {
        static unsigned long long s = 88172645463325252ULL;
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (unsigned) (s >> 16);
}

static void hex(char *out, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                out[i] = "0123456789abcdef"[rnd() % 16];
        out[n] = 0;
}

static void uid(char *out, char sep) {
        char h[33];
        hex(h, 32);
        sprintf(out, "%.8s%c%.4s%c%.4s%c%.4s%c%.12s", h, sep, h + 8, sep, h + 12, sep, h + 16, sep, h + 20);
}

/* a child of parent whose path is exactly 250 characters (leading '/'
 * included) */
static void child_250(const char *parent, char *out, size_t size) {
        size_t have = strlen(parent) + 2; /* '/' before parent and between */
        char name[252];
        size_t n = have < 250 ? 250 - have : 1;
        for (size_t i = 0; i < n && i < sizeof(name) - 1; i++)
                name[i] = i < 5 ? "task-"[i] : "0123456789abcdef"[rnd() % 16];
        name[n < sizeof(name) ? n : sizeof(name) - 1] = 0;
        snprintf(out, size, "%s/%s", parent, name);
}

static void build(unsigned cgroups, unsigned pods) {
        make("kubepods.slice", 0, 0);
        make("kubepods.slice/kubepods-burstable.slice", 0, 0);
        make("kubepods", 0, 0);
        make("kubepods/burstable", 0, 0);
        for (unsigned p = 0; p < pods; p++) {
                bool systemd = p % 2 == 0, last = p == pods - 1;
                char u[40], pod[1024], c[1200], deep[1600], h[65];
                uid(u, systemd ? '_' : '-');
                if (systemd)
                        snprintf(pod, sizeof(pod), "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice", u);
                else
                        snprintf(pod, sizeof(pod), "kubepods/burstable/pod%s", u);
                uint64_t plimit = (uint64_t) (256 + rnd() % 4096) * MIB;
                make(pod, plimit, plimit * (20 + rnd() % 60) / 100);
                for (unsigned k = 0; k < 2; k++) {
                        hex(h, 64);
                        if (systemd)
                                snprintf(c, sizeof(c), "%s/cri-containerd-%s.scope", pod, h);
                        else
                                snprintf(c, sizeof(c), "%s/%s", pod, h);
                        uint64_t l = (uint64_t) (128 + rnd() % 2048) * MIB;
                        make(c, l, l * (20 + rnd() % 60) / 100);
                }
                child_250(c, deep, sizeof(deep));
                if (last)
                        make(deep, 100 * MIB, 90 * MIB); /* the tight one */
                else
                        make(deep, 0, 0);
        }
        for (unsigned i = 0; n_made < cgroups; i++) {
                char n[PATH_MAX];
                if (i % 4 == 3) {
                        snprintf(n, sizeof(n), "user.slice/user-%u.slice", 1000 + i / 400);
                        if (i % 400 == 3) {
                                make("user.slice", 0, 0);
                                make(n, 0, 0);
                        }
                        snprintf(n + strlen(n), sizeof(n) - strlen(n), "/app-%u.scope", i);
                } else {
                        if (i == 0)
                                make("system.slice", 0, 0);
                        snprintf(n, sizeof(n), "system.slice/svc-%05u.service", i);
                }
                if (n_made < cgroups)
                        make(n, 0, 0);
        }
}

static void on_dir(const char *host_path, void *user) {
        (void) user;
        for (unsigned i = 0; i < n_limited; i++)
                if (!seen[i] && strcmp(limited_dirs[i], host_path) == 0) {
                        seen[i] = 1;
                        return;
                }
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        unsigned cgroups = 10000, pods = 1000, runs = 5;
        static const struct option opts[] = { { "cgroups", required_argument, NULL, 'c' },
                                              { "pods", required_argument, NULL, 'p' },
                                              { "runs", required_argument, NULL, 'r' },
                                              { "help", no_argument, NULL, 'h' }, {} };
        int o;
        while ((o = getopt_long(argc, argv, "c:p:r:h", opts, NULL)) >= 0) {
                switch (o) {
                case 'c': cgroups = (unsigned) atoi(optarg); break;
                case 'p': pods = (unsigned) atoi(optarg); break;
                case 'r': runs = (unsigned) atoi(optarg); break;
                default:
                        printf("usage: bench-limits [--cgroups N] [--pods N] [--runs N]\n");
                        return o == 'h' ? 0 : 2;
                }
        }
        if (!pods || !runs || runs > 100)
                return 2;
        struct fakehost_opts fo = { .cg_layout = FAKEHOST_CG_V2 };
        int r = fakehost_create_temp(&fo, root, sizeof(root));
        if (r < 0)
                die("fake host", r);
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        build(cgroups, pods);
        printf("tree: %u cgroups (%u pods, both kubelet drivers), %u limited, longest path %u characters; built in "
               "%.1f s\n",
               n_made, pods, n_limited, longest, (double) (mthp_now_usec(CLOCK_MONOTONIC) - t0) / 1e6);
        struct mthp_host *h = NULL;
        struct mthp_caps caps;
        if ((r = mthp_host_open(root, &h)) < 0 || (r = mthp_probe(h, &caps)) < 0)
                die("probe", r);
        seen = calloc(n_limited, sizeof(*seen));
        struct mthp_snapshot *snap = calloc(1, sizeof(*snap));
        uint64_t t[100], c[100];
        if (!seen || !snap)
                die("memory", ENOMEM);
        for (unsigned i = 0; i < runs; i++) {
                uint64_t a = mthp_now_usec(CLOCK_MONOTONIC), ca = mthp_now_usec(CLOCK_PROCESS_CPUTIME_ID);
                r = mthp_limits_scan(h, &caps, snap, i == 0 ? on_dir : NULL, NULL);
                t[i] = mthp_now_usec(CLOCK_MONOTONIC) - a;
                c[i] = mthp_now_usec(CLOCK_PROCESS_CPUTIME_ID) - ca;
                if (r < 0)
                        die("scan", r);
        }
        unsigned n_seen = 0;
        for (unsigned i = 0; i < n_limited; i++)
                n_seen += seen[i];
        bool tight = false;
        for (unsigned i = 0; i < snap->n_limited; i++)
                tight = tight || (snap->limited[i].limit_kb == 100 * 1024 && snap->limited[i].usage_kb == 90 * 1024);
        qsort(t, runs, sizeof(t[0]), cmp_u64);
        qsort(c, runs, sizeof(c[0]), cmp_u64);
        printf("coverage: %u of %u limited cgroups seen (%.1f%%); %u in the snapshot; the tight one (100 MiB, 90 MiB "
               "used, 250-character path) %s\n",
               n_seen, n_limited, 100.0 * n_seen / n_limited, snap->n_limited, tight ? "carried" : "NOT carried");
        printf("scan: %.1f ms wall median of %u (min %.1f, max %.1f), %.1f ms CPU median (the first run: the "
               "callback's coverage count too)\n",
               (double) t[(runs - 1) / 2] / 1000, runs, (double) t[0] / 1000, (double) t[runs - 1] / 1000,
               (double) c[(runs - 1) / 2] / 1000);
        mthp_host_free(h);
        free(snap);
        free(seen);
        for (unsigned i = 0; i < n_limited; i++)
                free(limited_dirs[i]);
        free(limited_dirs);
        r = fakehost_remove(root);
        return r < 0 ? 1 : 0;
}
