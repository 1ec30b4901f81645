/* SPDX-License-Identifier: MIT */
/* The limited-cgroup scan (lib/limits.c) on the real kernel's memory
 * cgroups (run by tests/realkernel/limits-real.sh, suite realkernel). On
 * cgroupfs the scan lists only directories whose link count says they have
 * subdirectories, so it must still find a limited cgroup below an
 * unlimited one and one that is a leaf, and tell an empty one from one
 * whose unlimited child has a process. Made with libcgroup:
 * mthpd-test-walk-PID, its children a (no limit), a/b (600 MiB), c
 * (300 MiB) and c/d (no limit). Everything made here is removed on every
 * exit path but SIGKILL, after which the wrapper removes it; the child
 * process dies with the test (PR_SET_PDEATHSIG).
 *
 * Usage: test-limits-real     exit 0 pass, 1 fail, 77 skip */
#include <errno.h>
#include <libcgroup.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "mthp/limits.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "real-test.h"

#define MIB (1024ULL * 1024)

static char top[64], name_a[96], name_b[96], name_c[96], name_d[96];
static char dir_top[600], dir_a[600], dir_b[600], dir_c[600], dir_d[600];
static volatile pid_t child;

/* async-signal-safe: kill, waitpid, rmdir; children first */
static void cleanup(void) {
        rt_stop(&child);
        const char *const dirs[] = { dir_b, dir_a, dir_d, dir_c, dir_top };
        rt_rmdirs(dirs, 5);
}

static void on_signal(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* the memory cgroup name (relative to the hierarchy) with libcgroup, its
 * limit (bytes, 0 none) in the file the layout has */
static int make_cgroup(const char *name, bool v1, uint64_t limit) {
        struct cgroup *cg = cgroup_new_cgroup(name);
        struct cgroup_controller *ctl = cg ? cgroup_add_controller(cg, "memory") : NULL;
        if (!ctl) {
                if (cg)
                        cgroup_free(&cg);
                printf("limits-real: libcgroup cannot describe %s\n", name);
                return -ENOMEM;
        }
        if (limit && cgroup_add_value_uint64(ctl, v1 ? "memory.limit_in_bytes" : "memory.max", limit) != 0) {
                cgroup_free(&cg);
                printf("limits-real: libcgroup cannot set the limit of %s\n", name);
                return -EIO;
        }
        int r = cgroup_create_cgroup(cg, 0);
        cgroup_free(&cg);
        if (r != 0) {
                printf("limits-real: libcgroup cannot create %s: %s\n", name, cgroup_strerror(r));
                return -EIO;
        }
        return 0;
}

/* the directories of ours the scan visited (it visits every one: no cap) */
#define VISITED_MAX 16
static char visited[VISITED_MAX][600];
static unsigned n_visited, n_dirs;

static void on_dir(const char *host_path, void *user) {
        (void) user;
        n_dirs++;
        if (n_visited < VISITED_MAX && strstr(host_path, "/mthpd-test-walk-"))
                snprintf(visited[n_visited++], sizeof(visited[0]), "%s", host_path);
}

static bool was_visited(const char *dir) {
        for (unsigned i = 0; i < n_visited; i++)
                if (strcmp(visited[i], dir) == 0)
                        return true;
        return false;
}

static const struct mthp_limited_cgroup *limited(const struct mthp_snapshot *snap, const char *name) {
        for (unsigned i = 0; i < snap->n_limited; i++)
                if (strcmp(snap->limited[i].path + 1, name) == 0)
                        return &snap->limited[i];
        return NULL;
}

static void scan(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap) {
        n_visited = n_dirs = 0;
        memset(snap, 0, sizeof(*snap));
        int r = mthp_limits_scan(h, caps, snap, on_dir, NULL);
        if (r < 0)
                rt_fail("mthp_limits_scan: %s", strerror(-r));
}

/* the scan visited every cgroup made here and found the limited ones with
 * their limits and populated states */
static void check(const struct mthp_snapshot *snap, bool c_populated) {
        const char *dirs[] = { dir_top, dir_a, dir_b, dir_c, dir_d };
        for (size_t i = 0; i < 5; i++)
                if (!was_visited(dirs[i]))
                        rt_fail("the scan did not visit %s (%u directories visited)", dirs[i], n_dirs);
        const struct { const char *name; uint64_t limit_kb; bool populated; } want[] = {
                { name_b, 600 * 1024, false },
                { name_c, 300 * 1024, c_populated },
        };
        for (size_t i = 0; i < 2; i++) {
                const struct mthp_limited_cgroup *c = limited(snap, want[i].name);
                if (!c && snap->n_limited >= MTHP_SNAP_LIMITED)
                        continue;   /* crowded out by the host's own: visited is what counts */
                if (!c)
                        rt_fail("limited cgroup /%s not found (%u limited)", want[i].name, snap->n_limited);
                else if (c->limit_kb != want[i].limit_kb || c->populated != want[i].populated)
                        rt_fail("/%s: limit %llu KiB, populated %d; expected %llu KiB, populated %d", want[i].name,
                             (unsigned long long) c->limit_kb, c->populated, (unsigned long long) want[i].limit_kb,
                             want[i].populated);
        }
        if (limited(snap, top) || limited(snap, name_a) || limited(snap, name_d))
                rt_fail("an unlimited cgroup was listed as limited");
}

int main(void) {
        struct mthp_host *h;
        struct mthp_caps caps;
        bool v1;
        const char *base = NULL;
        if (rt_start("limits-real", "LIMITS_VERBOSE", &h, &caps) != 0)
                return 77;
        if (!(base = mthp_limits_base(&caps, &v1))) {
                printf("limits-real: SKIP: no memory cgroup hierarchy\n");
                return 77;
        }
        int r = cgroup_init();
        if (r != 0) {
                printf("limits-real: SKIP: libcgroup: %s\n", cgroup_strerror(r));
                return 77;
        }
        snprintf(top, sizeof(top), "mthpd-test-walk-%d", (int) getpid());
        snprintf(name_a, sizeof(name_a), "%s/a", top);
        snprintf(name_b, sizeof(name_b), "%s/a/b", top);
        snprintf(name_c, sizeof(name_c), "%s/c", top);
        snprintf(name_d, sizeof(name_d), "%s/c/d", top);
        /* set before anything exists, so cleanup knows every path */
        snprintf(dir_top, sizeof(dir_top), "%s/%s", base, top);
        snprintf(dir_a, sizeof(dir_a), "%s/%s", base, name_a);
        snprintf(dir_b, sizeof(dir_b), "%s/%s", base, name_b);
        snprintf(dir_c, sizeof(dir_c), "%s/%s", base, name_c);
        snprintf(dir_d, sizeof(dir_d), "%s/%s", base, name_d);
        atexit(cleanup);
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                signal(sigs[i], on_signal);

        if (make_cgroup(top, v1, 0) < 0 || make_cgroup(name_a, v1, 0) < 0 ||
            make_cgroup(name_b, v1, 600 * MIB) < 0 || make_cgroup(name_c, v1, 300 * MIB) < 0 ||
            make_cgroup(name_d, v1, 0) < 0)
                return 1;
        printf("limits-real: %s layout, created %s with a, a/b (600 MiB), c (300 MiB) and c/d\n",
               v1 ? "v1" : "v2", dir_top);

        struct mthp_snapshot *snap = calloc(1, sizeof(*snap));
        if (!snap) {
                printf("limits-real: out of memory\n");
                return 1;
        }
        scan(h, &caps, snap);
        check(snap, false);

        /* a process in c/d: c is populated (v1: c/d's cgroup.procs, read as
         * it is under a limit; v2: c's cgroup.events) */
        int pfd[2];
        if (pipe(pfd) < 0) {
                printf("limits-real: pipe: %s\n", strerror(errno));
                return 1;
        }
        /* no signal between fork and child = pid: cleanup could not kill
         * the child yet, and the child would run the parent's cleanup */
        sigset_t block, old;
        sigemptyset(&block);
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                sigaddset(&block, sigs[i]);
        sigprocmask(SIG_BLOCK, &block, &old);
        pid_t parent = getpid(), pid = fork();
        if (pid < 0) {
                printf("limits-real: fork: %s\n", strerror(errno));
                return 1;
        }
        if (pid == 0) {
                for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                        signal(sigs[i], SIG_DFL);   /* the parent cleans up */
                sigprocmask(SIG_SETMASK, &old, NULL);
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                        _exit(125);
                struct cgroup *cg = cgroup_new_cgroup(name_d);
                if (!cg || !cgroup_add_controller(cg, "memory") || cgroup_attach_task(cg) != 0)
                        _exit(126);
                (void) !write(pfd[1], "x", 1);
                pause();
                _exit(0);
        }
        child = pid;
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[1]);
        char x;
        if (read(pfd[0], &x, 1) != 1) {   /* EOF: the child could not move */
                rt_fail("the child could not join %s", dir_d);
                return 1;
        }
        close(pfd[0]);
        scan(h, &caps, snap);
        check(snap, true);
        rt_stop(&child);
        free(snap);
        printf("limits-real: %s (%u directories visited)\n", rt_fails ? "FAILED" : "ok", n_dirs);
        mthp_host_free(h);
        return rt_fails ? 1 : 0;
}
