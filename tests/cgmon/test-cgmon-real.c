/* SPDX-License-Identifier: MIT */
/* The cgroup monitor on the real kernel (run by tests/realkernel/cgmon.sh,
 * suite realkernel): two memory cgroups made with libcgroup,
 * mthpd-test-cgmon-PID-busy (a dense fault loop inside) and -idle; on a
 * hybrid host also their twins in the unified tree, where memory.pressure
 * is. Checks the monitor sees the busy one's faults and usage first and the
 * idle one at rest, that both walkers agree, that removing the busy cgroup
 * mid-run drops it without an error and that recreating it starts over.
 * Everything made here is removed on every exit path (atexit, signals).
 *
 * Usage: test-cgmon-real WORKLOAD     exit 0 pass, 1 fail, 77 skip */
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mthp/cgmon.h"
#include "mthp/log.h"
#include "real-test.h"

static char prefix[64], name_busy[96], name_idle[96];
static char mem_busy[600], mem_idle[600], uni_busy[600], uni_idle[600];
static volatile pid_t workload_pid;

static void stop_workload(void) {
        rt_stop(&workload_pid);
}

/* async-signal-safe: kill, waitpid, rmdir */
static void cleanup(void) {
        stop_workload();
        const char *const dirs[] = { mem_busy, mem_idle, uni_busy, uni_idle };
        rt_rmdirs(dirs, 4);
}

static void on_signal(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* the memory cgroup with libcgroup; the unified twin with mkdir (libcgroup
 * 2.0 would attach it to a controller, and the twin needs none) */
static int make_cgroup(const char *name, const char *uni) {
        struct cgroup *cg = cgroup_new_cgroup(name);
        if (!cg || !cgroup_add_controller(cg, "memory"))
                return -ENOMEM;
        int r = cgroup_create_cgroup(cg, 0);
        cgroup_free(&cg);
        if (r != 0) {
                printf("cgmon-real: libcgroup cannot create %s: %s\n", name, cgroup_strerror(r));
                return -EIO;
        }
        if (uni[0] && mkdir(uni, 0755) < 0) {
                printf("cgmon-real: cannot create %s: %s\n", uni, strerror(errno));
                return -errno;
        }
        return 0;
}

static int delete_cgroup(const char *name, const char *uni) {
        struct cgroup *cg = cgroup_new_cgroup(name);
        if (!cg || !cgroup_add_controller(cg, "memory"))
                return -ENOMEM;
        int r = cgroup_delete_cgroup(cg, 0);
        cgroup_free(&cg);
        if (uni[0])
                rmdir(uni);
        return r == 0 ? 0 : -EIO;
}

static bool match(const char *path, void *user) {
        (void) user;
        return strncmp(path + 1, prefix, strlen(prefix)) == 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static struct mthp_cgroup_view views[8];
static unsigned nv;

static const struct mthp_cgroup_view *view(const char *name) {
        for (unsigned i = 0; i < nv; i++)
                if (strcmp(views[i].path + 1, name) == 0)
                        return &views[i];
        return NULL;
}

static void tick(struct mthp_cgmon *m) {
        int r = mthp_cgmon_tick(m, now_usec(), views, 8, &nv);
        if (r < 0)
                rt_fail("mthp_cgmon_tick: %s", strerror(-r));
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: test-cgmon-real WORKLOAD\n");
                return 2;
        }
        struct mthp_host *h;
        struct mthp_caps caps;
        if (rt_start("cgmon-real", "CGMON_VERBOSE", &h, &caps) != 0)
                return 77;
        if (caps.cg_layout == MTHP_CG_NONE) {
                printf("cgmon-real: SKIP: no memory cgroup hierarchy\n");
                return 77;
        }
        int r = cgroup_init();
        if (r != 0) {
                printf("cgmon-real: SKIP: libcgroup: %s\n", cgroup_strerror(r));
                return 77;
        }
        printf("cgmon-real: layout %s, memory at %s, unified at %s\n", mthp_cg_layout_name(caps.cg_layout),
               caps.cg_memory, caps.cg_unified[0] ? caps.cg_unified : "-");
        bool hybrid = caps.cg_layout == MTHP_CG_HYBRID;
        snprintf(prefix, sizeof(prefix), "mthpd-test-cgmon-%d-", (int) getpid());
        snprintf(name_busy, sizeof(name_busy), "%sbusy", prefix);
        snprintf(name_idle, sizeof(name_idle), "%sidle", prefix);
        /* set before anything exists, so cleanup knows every path */
        snprintf(mem_busy, sizeof(mem_busy), "%s/%s", caps.cg_memory, name_busy);
        snprintf(mem_idle, sizeof(mem_idle), "%s/%s", caps.cg_memory, name_idle);
        if (hybrid) {
                snprintf(uni_busy, sizeof(uni_busy), "%s/%s", caps.cg_unified, name_busy);
                snprintf(uni_idle, sizeof(uni_idle), "%s/%s", caps.cg_unified, name_idle);
        }
        atexit(cleanup);
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                signal(sigs[i], on_signal);

        if (make_cgroup(name_busy, uni_busy) < 0 || make_cgroup(name_idle, uni_idle) < 0)
                return 1;
        printf("cgmon-real: created %s and %s%s\n", mem_busy, mem_idle, hybrid ? " and their unified twins" : "");

        pid_t pid = fork();
        if (pid < 0)
                return 1;
        if (pid == 0) {
                struct cgroup *cg = cgroup_new_cgroup(name_busy);
                if (!cg || !cgroup_add_controller(cg, "memory") || cgroup_attach_task(cg) != 0)
                        _exit(126);
                if (hybrid) {   /* the unified twin too, for its PSI */
                        char p[700];
                        snprintf(p, sizeof(p), "%s/cgroup.procs", uni_busy);
                        int fd = open(p, O_WRONLY);
                        if (fd >= 0) {
                                (void) !write(fd, "0", 1);
                                close(fd);
                        }
                }
                execl(argv[1], "mthp-workload", "--kind", "anon", "--pattern", "dense", "--size", "64M",
                      "--seconds", "30", "--quiet", (char *) NULL);
                _exit(127);
        }
        workload_pid = pid;

        struct mthp_cgmon *m;
        r = mthp_cgmon_new(h, &caps, &m);
        if (r < 0) {
                rt_fail("mthp_cgmon_new: %s", strerror(-r));
                return 1;
        }
        mthp_cgmon_set_match(m, match, NULL);
        double best_rate = 0;
        uint64_t best_usage = 0;
        bool busy_first = false, idle_quiet = true, psi = false;
        for (int i = 0; i < 16; i++) {          /* 4 s at 250 ms */
                usleep(250000);
                tick(m);
                const struct mthp_cgroup_view *b = view(name_busy), *q = view(name_idle);
                if (!b || !q) {
                        rt_fail("tick %d: the monitor does not show both cgroups (%u views)", i, nv);
                        continue;
                }
                if (b->fault_rate > best_rate)
                        best_rate = b->fault_rate;
                if (b->usage_kb > best_usage)
                        best_usage = b->usage_kb;
                if (i > 0 && b->fault_rate > 0 && nv >= 2 && strcmp(views[0].path + 1, name_busy) == 0)
                        busy_first = true;
                if (q->fault_rate != 0 || q->usage_kb > 1024)
                        idle_quiet = false;
                psi |= b->psi_present;
                if (i % 4 == 3)
                        printf("cgmon-real: busy: %.0f faults/s, usage %llu kB, anon %llu kB, psi %s %.2f; idle: %.0f/s, %llu kB\n",
                               b->fault_rate, (unsigned long long) b->usage_kb, (unsigned long long) b->anon_kb,
                               b->psi_present ? "yes" : "no", b->psi_some_avg10, q->fault_rate,
                               (unsigned long long) q->usage_kb);
        }
        if (best_rate < 100)
                rt_fail("the busy cgroup's fault rate peaked at %.0f/s; a dense loop makes far more", best_rate);
        if (best_usage < 4096)
                rt_fail("the busy cgroup's usage peaked at %llu kB; the workload maps 64 MiB",
                     (unsigned long long) best_usage);
        if (!busy_first)
                rt_fail("the busy cgroup never came first by fault rate");
        if (!idle_quiet)
                rt_fail("the idle cgroup showed faults or usage");
        if (hybrid && !psi)
                rt_fail("no memory.pressure from the unified twin");

        /* the two walkers see the same */
        struct mthp_cgmon_stats a, b;
        mthp_cgmon_walk(m, now_usec());
        mthp_cgmon_get_stats(m, &a);
        if (mthp_cgmon_set_walker(m, MTHP_CGMON_WALK_LIBCGROUP) == 0) {
                mthp_cgmon_walk(m, now_usec());
                mthp_cgmon_get_stats(m, &b);
                printf("cgmon-real: dirfd walk: %u cgroups, %u managed, %llu us; libcgroup walk: %u, %u, %llu us\n",
                       a.n_cgroups, a.n_managed, (unsigned long long) a.walk_usec, b.n_cgroups, b.n_managed,
                       (unsigned long long) b.walk_usec);
                /* cgroups of other users may come and go between the two */
                if (a.n_managed != 2 || b.n_managed != 2)
                        rt_fail("the walkers manage %u (dirfd) and %u (libcgroup) cgroups, expected 2", a.n_managed,
                             b.n_managed);
                mthp_cgmon_set_walker(m, MTHP_CGMON_WALK_DIRFD);
        } else
                rt_fail("the libcgroup walker is refused on the real root");

        /* remove the busy cgroup mid-run */
        stop_workload();
        r = delete_cgroup(name_busy, uni_busy);
        if (r < 0)
                rt_fail("libcgroup cannot delete %s", name_busy);
        else
                printf("cgmon-real: removed %s mid-run\n", mem_busy);
        mthp_cgmon_get_stats(m, &a);
        tick(m);
        tick(m);
        mthp_cgmon_get_stats(m, &b);
        if (view(name_busy))
                rt_fail("the removed cgroup is still shown");
        if (!view(name_idle))
                rt_fail("the idle cgroup went with the removed one");
        if (b.n_managed != 1)
                rt_fail("%u cgroups managed after the removal, expected 1", b.n_managed);
        if (b.walks <= a.walks)
                rt_fail("the removal did not trigger a walk");

        /* recreated under the same name: starts over */
        if (make_cgroup(name_busy, uni_busy) < 0)
                rt_fail("cannot recreate %s", name_busy);
        mthp_cgmon_walk(m, now_usec());
        tick(m);
        const struct mthp_cgroup_view *v = view(name_busy);
        if (!v)
                rt_fail("the recreated cgroup is not shown");
        else if (!v->new_cgroup || v->fault_rate != 0)
                rt_fail("the recreated cgroup did not start over (new %d, rate %.0f)", v->new_cgroup, v->fault_rate);
        mthp_cgmon_free(m);
        mthp_host_free(h);
        cleanup();
        struct stat st;
        if (stat(mem_busy, &st) == 0 || stat(mem_idle, &st) == 0)
                rt_fail("a test cgroup is still there after cleanup");
        printf("cgmon-real: %s\n", rt_fails ? "FAILED" : "PASS");
        return rt_fails ? 1 : 0;
}
