/* SPDX-License-Identifier: MIT */
/* bench-cgroups: the cgroup monitor (lib/cgmon.c) at the scale of a big
 * server, on real cgroups this program creates and removes.
 *
 *   ninja -C build bench-cgroups      (or: build/tests/bench/bench-cgroups)
 *
 * Needs root and a memory cgroup hierarchy; not run by 'meson test'.
 * Creates mthpd-test-scale/mthpd-test-scale-NNNNN in the memory hierarchy
 * (and, on a hybrid host, the same directories in the unified tree, where
 * memory.pressure lives, as systemd does), with mkdir(2): libcgroup's
 * cgroup_create_cgroup writes every controller file of each new cgroup and
 * would make setting up 10,000 of them the slowest part of the run. Every
 * directory it made is removed on every exit path (atexit and SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT handlers; stale ones from a killed run are removed first).
 *
 * Measures:
 *  (a) 1,000 cgroups, all managed: monitor tick vs the raw pread floor of
 *      exactly the same files through fds the bench opened itself;
 *  (b) 10,000 cgroups, 100 managed: tick time, walk time (our dirfd walk and
 *      libcgroup's cgroup_walk_tree_* for comparison);
 *  (c) a fresh process holding only the monitor over the 10,000: VmRSS,
 *      VmHWM and the monitor's heap;
 *  (d) that process ticking at a 1 s interval for --seconds: CPU time / wall,
 *      start-up excluded (reported apart), walks amortised.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mthp/cgmon.h"
#include "mthp/host.h"
#include "mthp/log.h"
#include "mthp/probe.h"

#define PARENT "mthpd-test-scale"
#define MAX_CG 100000

static char mem_root[512], psi_root[512];       /* "" when none */
static bool v2;
static volatile sig_atomic_t n_created;         /* children 0..n_created-1 exist */
static volatile sig_atomic_t parent_created;

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static uint64_t cpu_usec(void) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ULL +
               (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* async-signal-safe: snprintf is not, so build names by hand */
static void child_name(char *buf, const char *root, unsigned i) {
        char *p = stpcpy(stpcpy(buf, root), "/" PARENT "/" PARENT "-");
        for (int d = 4; d >= 0; d--) {
                p[d] = (char) ('0' + i % 10);
                i /= 10;
        }
        p[5] = 0;
}

static void cleanup(void) {
        char p[600];
        const char *roots[2] = { mem_root, psi_root };
        for (int r = 0; r < 2; r++) {
                if (!roots[r][0] || (r == 1 && v2))
                        continue;
                for (long i = (long) n_created - 1; i >= 0; i--) {
                        child_name(p, roots[r], (unsigned) i);
                        rmdir(p);
                }
                if (parent_created) {
                        stpcpy(stpcpy(p, roots[r]), "/" PARENT);
                        rmdir(p);
                }
        }
        n_created = 0;
        parent_created = 0;
}

static void on_signal(int sig) {
        cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* Remove what a killed earlier run left (only our names). */
static void remove_stale(void) {
        char p[600];
        const char *roots[2] = { mem_root, psi_root };
        for (int r = 0; r < 2; r++) {
                if (!roots[r][0] || (r == 1 && v2))
                        continue;
                snprintf(p, sizeof(p), "%s/" PARENT, roots[r]);
                if (access(p, F_OK) < 0)
                        continue;
                fprintf(stderr, "bench-cgroups: removing %s left by an earlier run\n", p);
                for (unsigned i = 0; i < MAX_CG; i++) {
                        child_name(p, roots[r], i);
                        if (rmdir(p) < 0 && errno == ENOENT && i > 0) {
                                /* names are dense from 0: stop after a gap of 100 */
                                unsigned j;
                                for (j = 1; j < 100; j++) {
                                        child_name(p, roots[r], i + j);
                                        if (access(p, F_OK) == 0)
                                                break;
                                }
                                if (j == 100)
                                        break;
                        }
                }
                snprintf(p, sizeof(p), "%s/" PARENT, roots[r]);
                if (rmdir(p) < 0)
                        fprintf(stderr, "bench-cgroups: cannot remove %s: %s\n", p, strerror(errno));
        }
}

static int create_upto(unsigned n) {
        char p[600];
        if (!parent_created) {
                for (int r = 0; r < 2; r++) {
                        const char *root = r ? psi_root : mem_root;
                        if (!root[0] || (r == 1 && v2))
                                continue;
                        snprintf(p, sizeof(p), "%s/" PARENT, root);
                        if (mkdir(p, 0755) < 0) {
                                fprintf(stderr, "bench-cgroups: cannot create %s: %s\n", p, strerror(errno));
                                return -errno;
                        }
                        parent_created = 1;
                        if (v2 && r == 0) {
                                snprintf(p, sizeof(p), "%s/" PARENT "/cgroup.subtree_control", root);
                                int fd = open(p, O_WRONLY | O_CLOEXEC);
                                if (fd < 0 || write(fd, "+memory", 7) != 7)
                                        fprintf(stderr, "bench-cgroups: cannot enable memory in %s\n", p);
                                if (fd >= 0)
                                        close(fd);
                        }
                }
        }
        uint64_t t0 = now_usec();
        unsigned from = (unsigned) n_created;
        while ((unsigned) n_created < n) {
                unsigned i = (unsigned) n_created;
                child_name(p, mem_root, i);
                if (mkdir(p, 0755) < 0) {
                        fprintf(stderr, "bench-cgroups: cannot create %s: %s\n", p, strerror(errno));
                        return -errno;
                }
                if (psi_root[0] && !v2) {
                        child_name(p, psi_root, i);
                        if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                                int e = errno;
                                child_name(p, mem_root, i);
                                rmdir(p);
                                fprintf(stderr, "bench-cgroups: cannot create %s: %s\n", p, strerror(e));
                                return -e;
                        }
                }
                n_created = (sig_atomic_t) (i + 1);
        }
        fprintf(stderr, "bench-cgroups: created %u cgroups (now %u) in %.2f s\n", n - from, n,
                (double) (now_usec() - t0) / 1e6);
        return 0;
}

/* ---- what is managed ---- */

static unsigned every = 1;      /* manage child i when i % every == 0 */

static bool match_scale(const char *path, void *user) {
        (void) user;
        static const char pre[] = "/" PARENT "/" PARENT "-";
        if (strncmp(path, pre, sizeof(pre) - 1) != 0)
                return false;
        const char *d = path + sizeof(pre) - 1;
        unsigned i = 0;
        for (int k = 0; k < 5; k++) {
                if (d[k] < '0' || d[k] > '9')
                        return false;
                i = i * 10 + (unsigned) (d[k] - '0');
        }
        return d[5] == 0 && i % every == 0;
}

/* ---- the floor: the same files through our own fds ---- */

struct floor {
        int *fd;
        unsigned n;
};

static int floor_open(struct floor *fl, unsigned n_cg) {
        static const char *const v1_files[] = { "memory.stat", "memory.usage_in_bytes", "memory.limit_in_bytes" };
        static const char *const v2_files[] = { "memory.stat", "memory.current", "memory.max", "memory.high",
                                                "memory.pressure" };
        fl->fd = calloc((size_t) n_cg * 5, sizeof(int));
        fl->n = 0;
        if (!fl->fd)
                return -ENOMEM;
        for (unsigned i = 0; i < n_cg; i++) {
                if (i % every)
                        continue;
                char d[600], p[700];
                child_name(d, mem_root, i);
                unsigned nf = v2 ? 5 : 3;
                for (unsigned k = 0; k < nf; k++) {
                        snprintf(p, sizeof(p), "%s/%s", d, v2 ? v2_files[k] : v1_files[k]);
                        int fd = open(p, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0)
                                fl->fd[fl->n++] = fd;
                }
                if (!v2 && psi_root[0]) {
                        child_name(d, psi_root, i);
                        snprintf(p, sizeof(p), "%s/memory.pressure", d);
                        int fd = open(p, O_RDONLY | O_CLOEXEC);
                        if (fd >= 0)
                                fl->fd[fl->n++] = fd;
                }
        }
        return 0;
}

static void floor_close(struct floor *fl) {
        for (unsigned i = 0; i < fl->n; i++)
                close(fl->fd[i]);
        free(fl->fd);
}

static char floor_buf[8192];

static void floor_round(const struct floor *fl) {
        for (unsigned i = 0; i < fl->n; i++)
                (void) !pread(fl->fd[i], floor_buf, sizeof(floor_buf) - 1, 0);
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n) {
        qsort(v, n, sizeof(*v), cmp_u64);
        return n ? v[n / 2] : 0;
}

/* ---- the daemon-like child: (c) and (d) ---- */

static long status_kb(const char *key) {
        char line[256];
        long v = -1;
        FILE *f = fopen("/proc/self/status", "re");
        if (!f)
                return -1;
        size_t kl = strlen(key);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':')
                        v = strtol(line + kl + 1, NULL, 10);
        fclose(f);
        return v;
}

static int run_child(unsigned n_cg, unsigned n_managed, unsigned seconds, unsigned rescan_s) {
        struct mthp_host *h;
        struct mthp_caps caps;
        struct mthp_cgmon *m;
        mthp_log_init("bench-cgroups", false);
        every = n_managed ? n_cg / n_managed : 1;
        if (mthp_host_open("/", &h) < 0 || mthp_probe(h, &caps) < 0)
                return 1;
        struct mallinfo2 mi0 = mallinfo2();
        if (mthp_cgmon_new(h, &caps, &m) < 0)
                return 1;
        mthp_cgmon_set_match(m, match_scale, NULL);
        mthp_cgmon_set_rescan(m, (uint64_t) rescan_s * 1000000ULL);
        struct mthp_cgroup_view views[32];
        unsigned n;
        /* start-up: the first walk and opening the files */
        uint64_t t = now_usec(), cs = cpu_usec();
        mthp_cgmon_tick(m, t, views, 32, &n);
        uint64_t first_cpu = cpu_usec() - cs;
        struct mthp_cgmon_stats st;
        mthp_cgmon_get_stats(m, &st);
        uint64_t walks0 = st.walks, walk_cpu = 0, max_tick = 0, walks_in = 0;
        /* a walk as the daemon's rescan would do it when the count moved */
        cs = cpu_usec();
        mthp_cgmon_walk(m, t);
        uint64_t one_walk_cpu = cpu_usec() - cs;
        mthp_cgmon_get_stats(m, &st);
        walks0 = st.walks;
        unsigned ticks = 0;
        uint64_t c0 = cpu_usec(), w0 = now_usec();
        for (unsigned s = 1; s <= seconds; s++) {
                t += 1000000;
                uint64_t now = now_usec();
                if (t > now)
                        usleep((useconds_t) (t - now));
                uint64_t cb = cpu_usec();
                mthp_cgmon_tick(m, t, views, 32, &n);
                mthp_cgmon_get_stats(m, &st);
                if (st.walks != walks0) {
                        walk_cpu += cpu_usec() - cb;   /* the tick that walked */
                        walks_in += st.walks - walks0;
                        walks0 = st.walks;
                }
                if (st.tick_usec > max_tick)
                        max_tick = st.tick_usec;
                ticks++;
        }
        uint64_t cpu = cpu_usec() - c0, wall = now_usec() - w0;
        struct mallinfo2 mi1 = mallinfo2();
        printf("managed=%u cgroups=%u ticks=%u walks=%llu checks=%llu cpu_us=%llu wall_us=%llu walk_cpu_us=%llu "
               "first_tick_cpu_us=%llu one_walk_cpu_us=%llu "
               "last_tick_us=%llu max_tick_us=%llu rss_kb=%ld hwm_kb=%ld heap_kb=%zu\n",
               st.n_managed, st.n_cgroups, ticks, (unsigned long long) walks_in, (unsigned long long) st.checks,
               (unsigned long long) cpu, (unsigned long long) wall, (unsigned long long) walk_cpu,
               (unsigned long long) first_cpu, (unsigned long long) one_walk_cpu, (unsigned long long) st.tick_usec,
               (unsigned long long) max_tick, status_kb("VmRSS"), status_kb("VmHWM"),
               (mi1.uordblks - mi0.uordblks) / 1024);
        fflush(stdout);
        mthp_cgmon_free(m);
        mthp_host_free(h);
        return 0;
}

/* ---- main ---- */

struct result {
        const char *what, *target;
        char value[128];
        int pass;       /* 1 pass, 0 miss, -1 no target */
};
static struct result res[16];
static unsigned n_res;

static void report(const char *what, const char *target, int pass, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static void report(const char *what, const char *target, int pass, const char *fmt, ...) {
        struct result *r = &res[n_res++];
        r->what = what;
        r->target = target;
        r->pass = pass;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->value, sizeof(r->value), fmt, ap);
        va_end(ap);
}

static void usage(FILE *f) {
        fputs("usage: bench-cgroups [--small N] [--large N] [--managed N] [--seconds S] [--rounds R]\n"
              "  --small N    cgroups for (a), all managed (default 1000)\n"
              "  --large N    cgroups for (b)-(d) (default 10000)\n"
              "  --managed N  managed among --large (default 100)\n"
              "  --seconds S  idle run at a 1 s interval for (d) (default 60: two full-read periods)\n"
              "  --rescan S   rescan interval of the monitor in (d) (default 30, the daemon's)\n"
              "  --rounds R   ticks measured in (a) and (b) (default 100 and 500)\n"
              "Needs root. Creates and removes " PARENT "/" PARENT "-NNNNN cgroups.\n",
              f);
}

static int run_child_proc(unsigned n_cg, unsigned managed, unsigned seconds, unsigned rescan, char *out, size_t size) {
        char a[4][16];
        snprintf(a[0], 16, "%u", n_cg);
        snprintf(a[1], 16, "%u", managed);
        snprintf(a[2], 16, "%u", seconds);
        snprintf(a[3], 16, "%u", rescan);
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                dup2(pfd[1], 1);
                execl("/proc/self/exe", "bench-cgroups", "--child", a[0], a[1], a[2], a[3], (char *) NULL);
                _exit(127);
        }
        close(pfd[1]);
        size_t len = 0;
        ssize_t k;
        while (len < size - 1 && (k = read(pfd[0], out + len, size - 1 - len)) > 0)
                len += (size_t) k;
        out[len] = 0;
        close(pfd[0]);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static unsigned long long field(const char *s, const char *key) {
        const char *p = strstr(s, key);
        return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

int main(int argc, char **argv) {
        unsigned small = 1000, large = 10000, managed = 100, seconds = 60, rescan = 30, rounds_a = 100,
                 rounds_b = 500;
        if (argc == 6 && strcmp(argv[1], "--child") == 0)
                return run_child((unsigned) atoi(argv[2]), (unsigned) atoi(argv[3]), (unsigned) atoi(argv[4]),
                                 (unsigned) atoi(argv[5]));
        static const struct option opts[] = {
                { "small", required_argument, NULL, 's' }, { "large", required_argument, NULL, 'l' },
                { "managed", required_argument, NULL, 'm' }, { "seconds", required_argument, NULL, 'S' },
                { "rescan", required_argument, NULL, 'R' }, { "rounds", required_argument, NULL, 'r' },
                { "build-dir", required_argument, NULL, 'b' }, { "help", no_argument, NULL, 'h' }, { 0 },
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case 's': small = (unsigned) atoi(optarg); break;
                case 'l': large = (unsigned) atoi(optarg); break;
                case 'm': managed = (unsigned) atoi(optarg); break;
                case 'S': seconds = (unsigned) atoi(optarg); break;
                case 'R': rescan = (unsigned) atoi(optarg); break;
                case 'r': rounds_a = rounds_b = (unsigned) atoi(optarg); break;
                case 'b': break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (!small || small > large || large > MAX_CG || !managed || managed > large || !rounds_a || seconds > 3600) {
                usage(stderr);
                return 2;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "bench-cgroups: needs root (creates cgroups)\n");
                return 77;
        }
        mthp_log_init("bench-cgroups", false);
        setvbuf(stdout, NULL, _IOLBF, 0);
        struct mthp_host *h;
        struct mthp_caps caps;
        if (mthp_host_open("/", &h) < 0 || mthp_probe(h, &caps) < 0 || caps.cg_layout == MTHP_CG_NONE) {
                fprintf(stderr, "bench-cgroups: no memory cgroup hierarchy\n");
                return 77;
        }
        v2 = caps.cg_layout == MTHP_CG_V2;
        snprintf(mem_root, sizeof(mem_root), "%s", caps.cg_memory);
        if (caps.cg_layout == MTHP_CG_HYBRID)
                snprintf(psi_root, sizeof(psi_root), "%s", caps.cg_unified);
        printf("bench-cgroups: layout %s, memory at %s, PSI from %s\n", mthp_cg_layout_name(caps.cg_layout), mem_root,
               psi_root[0] ? psi_root : v2 ? mem_root : "(none)");

        /* one real-kernel job at a time (tests/realkernel/lib.sh): the
         * figures mean little beside another one, and 10,000 cgroups would
         * disturb it. Bounded wait. */
        const char *lock = getenv("MTHP_REALKERNEL_LOCK") ? getenv("MTHP_REALKERNEL_LOCK") : "/tmp/mthpd-realkernel.lock";
        int lfd = open(lock, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int waited = 0;
        while (lfd >= 0 && flock(lfd, LOCK_EX | LOCK_NB) < 0 && waited < 300) {
                if (waited++ == 0)
                        fprintf(stderr, "bench-cgroups: waiting for %s (up to 5 min)\n", lock);
                sleep(1);
        }
        if (lfd < 0 || waited >= 300) {
                fprintf(stderr, "bench-cgroups: cannot take %s\n", lock);
                return 1;
        }
        remove_stale();
        atexit(cleanup);
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                signal(sigs[i], on_signal);

        int rc = 0;
        struct mthp_cgmon *m = NULL;
        struct mthp_cgroup_view views[32];
        unsigned n;
        struct mthp_cgmon_stats st;
        uint64_t *ta = calloc(rounds_a > rounds_b ? rounds_a : rounds_b, sizeof(uint64_t));
        uint64_t *tf = calloc(rounds_a > rounds_b ? rounds_a : rounds_b, sizeof(uint64_t));
        if (!ta || !tf)
                return 1;

        /* (a) */
        if (create_upto(small) < 0) {
                rc = 1;
                goto out;
        }
        every = 1;
        if (mthp_cgmon_new(h, &caps, &m) < 0) {
                rc = 1;
                goto out;
        }
        mthp_cgmon_set_match(m, match_scale, NULL);
        mthp_cgmon_set_rescan(m, 3600ULL * 1000000ULL);
        /* like for like: every file every tick, as the floor reads them */
        mthp_cgmon_set_full_interval(m, 0);
        uint64_t t = 1000000;
        mthp_cgmon_tick(m, t, views, 32, &n);
        mthp_cgmon_get_stats(m, &st);
        uint64_t first_walk = st.walk_usec;
        struct floor fl;
        floor_open(&fl, small);
        printf("(a) %u cgroups, %u managed; monitor reads %llu files a tick, the floor %u\n", small, st.n_managed,
               (unsigned long long) st.files_read, fl.n);
        /* warm up both, then alternate so drift hits both alike */
        for (int i = 0; i < 5; i++) {
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
                floor_round(&fl);
        }
        uint64_t tick_stat_sum = 0;
        for (unsigned r = 0; r < rounds_a; r++) {
                uint64_t t0 = now_usec();
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
                ta[r] = now_usec() - t0;
                mthp_cgmon_get_stats(m, &st);
                tick_stat_sum += st.tick_usec;
                t0 = now_usec();
                floor_round(&fl);
                tf[r] = now_usec() - t0;
        }
        uint64_t ma = median(ta, rounds_a), mf = median(tf, rounds_a);
        double ratio = mf ? (double) ma / (double) mf : 0;
        bool same_files = st.files_read == fl.n;
        floor_close(&fl);
        printf("    tick median %llu us (tick_usec mean %llu us), floor median %llu us, ratio %.3f, first walk %llu us\n",
               (unsigned long long) ma, (unsigned long long) (tick_stat_sum / rounds_a), (unsigned long long) mf,
               ratio, (unsigned long long) first_walk);
        report("(a) tick / pread floor, 1k managed", "<= 1.3", same_files ? ratio <= 1.3 : 0,
               "%.3f (%llu / %llu us, %u files%s)", ratio, (unsigned long long) ma, (unsigned long long) mf,
               (unsigned) st.files_read, same_files ? "" : ", FILE SETS DIFFER");
        /* the default: full reads only when usage moved or every 30 s */
        mthp_cgmon_set_full_interval(m, 30ULL * 1000000ULL);
        for (unsigned r = 0; r < rounds_a; r++) {
                uint64_t t0 = now_usec();
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
                ta[r] = now_usec() - t0;
        }
        uint64_t mad = median(ta, rounds_a);
        printf("    default (full reads on usage change or every 30 s): tick median %llu us\n", (unsigned long long) mad);
        report("(a) tick, 1k managed idle, default", "-", -1, "%llu us", (unsigned long long) mad);
        mthp_cgmon_free(m);
        m = NULL;

        /* (b) */
        if (create_upto(large) < 0) {
                rc = 1;
                goto out;
        }
        every = large / managed;
        mthp_cgmon_new(h, &caps, &m);
        mthp_cgmon_set_match(m, match_scale, NULL);
        mthp_cgmon_set_rescan(m, 3600ULL * 1000000ULL);
        mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
        mthp_cgmon_get_stats(m, &st);
        printf("(b) %u cgroups seen, %u managed, %llu files a tick\n", st.n_cgroups, st.n_managed,
               (unsigned long long) st.files_read);
        for (int i = 0; i < 5; i++)
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
        for (unsigned r = 0; r < rounds_b; r++) {
                uint64_t t0 = now_usec();
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
                ta[r] = now_usec() - t0;
        }
        uint64_t mb = median(ta, rounds_b);
        printf("    default tick median %llu us\n", (unsigned long long) mb);
        /* every file every tick, against the floor of the same files */
        mthp_cgmon_set_full_interval(m, 0);
        floor_open(&fl, large);
        for (unsigned r = 0; r < rounds_b; r++) {
                uint64_t t0 = now_usec();
                mthp_cgmon_tick(m, t += 1000000, views, 32, &n);
                ta[r] = now_usec() - t0;
                t0 = now_usec();
                floor_round(&fl);
                tf[r] = now_usec() - t0;
        }
        floor_close(&fl);
        uint64_t mbfull = median(ta, rounds_b), mbf = median(tf, rounds_b);
        mthp_cgmon_set_full_interval(m, 30ULL * 1000000ULL);
        printf("    all files every tick: median %llu us; floor of those %u files %llu us\n",
               (unsigned long long) mbfull, fl.n, (unsigned long long) mbf);
        report("(b) tick, 10k cgroups / 100 managed", "<= 2000 us", mb <= 2000, "%llu us (default)",
               (unsigned long long) mb);
        report("(b) ... reading all files each tick", "-", -1, "%llu us (their pread floor %llu us)",
               (unsigned long long) mbfull, (unsigned long long) mbf);
        /* walks: ours and libcgroup's, each a few times */
        uint64_t wd[5], wl[1], wcpu = 0;
        unsigned nw_l = 0;
        for (int i = 0; i < 5; i++) {
                uint64_t c0 = cpu_usec();
                mthp_cgmon_walk(m, t);
                wcpu += cpu_usec() - c0;
                mthp_cgmon_get_stats(m, &st);
                wd[i] = st.walk_usec;
        }
        uint64_t mwd = median(wd, 5);
        unsigned seen_dirfd = st.n_cgroups, managed_dirfd = st.n_managed, seen_lib = 0, managed_lib = 0;
        if (mthp_cgmon_set_walker(m, MTHP_CGMON_WALK_LIBCGROUP) == 0) {
                /* slow: once is enough to compare */
                for (int i = 0; i < 1; i++) {
                        mthp_cgmon_walk(m, t);
                        mthp_cgmon_get_stats(m, &st);
                        wl[nw_l++] = st.walk_usec;
                }
                seen_lib = st.n_cgroups;
                managed_lib = st.n_managed;
        }
        uint64_t mwl = median(wl, nw_l);
        printf("    walk (dirfd) median %llu us, cpu %llu us; sees %u cgroups, %u managed\n", (unsigned long long) mwd,
               (unsigned long long) (wcpu / 5), seen_dirfd, managed_dirfd);
        printf("    walk (libcgroup cgroup_walk_tree) %llu us; sees %u cgroups, %u managed\n",
               (unsigned long long) mwl, seen_lib, managed_lib);
        report("(b) walk, 10k cgroups (dirfd)", "-", -1, "%llu us (%u seen)", (unsigned long long) mwd, seen_dirfd);
        report("(b) walk, 10k cgroups (libcgroup)", "-", -1, "%llu us (%u seen)", (unsigned long long) mwl, seen_lib);
        if (seen_lib && (seen_lib != seen_dirfd || managed_lib != managed_dirfd)) {
                printf("    MISMATCH: the two walks disagree\n");
                rc = 1;
        }
        mthp_cgmon_free(m);
        m = NULL;

        /* (c) and (d): a fresh process */
        char out[1024];
        printf("(c,d) a process holding only the monitor, ticking every 1 s for %u s (rescan %u s)...\n", seconds,
               rescan);
        fflush(stdout);
        if (run_child_proc(large, managed, seconds, rescan, out, sizeof(out)) < 0) {
                fprintf(stderr, "bench-cgroups: the child failed: %s\n", out);
                rc = 1;
                goto out;
        }
        printf("    %s", out);
        unsigned long long rss = field(out, "rss_kb="), hwm = field(out, "hwm_kb="), heap = field(out, "heap_kb=");
        unsigned long long cpu = field(out, "cpu_us="), wall = field(out, "wall_us="),
                           walk_cpu = field(out, "walk_cpu_us="), walks = field(out, "walks=");
        report("(c) VmRSS of the process", "<= 8192 kB", hwm <= 8192, "%llu kB (peak %llu kB)", rss, hwm);
        report("(c) the monitor's heap", "-", -1, "%llu kB", heap);
        unsigned long long one_walk = field(out, "one_walk_cpu_us="), checks = field(out, "checks=");
        double pct = wall ? 100.0 * (double) cpu / (double) wall : 0;
        /* Ticks alone (usage reads, staggered full reads, count checks),
         * then with walks amortised: idle, the count does not move and a
         * walk comes only every 10 rescan intervals (the monitor's
         * backstop); with churn (the count moving every interval, as on a
         * shared machine where every command makes a cgroup) a walk every
         * interval. The measured figure has whatever walks really ran. */
        double ticks = wall ? 100.0 * ((double) cpu - (double) walk_cpu) / (double) wall : 0;
        double idle = ticks + 100.0 * (double) one_walk / (10 * rescan * 1e6);
        double churn = ticks + 100.0 * (double) one_walk / (rescan * 1e6);
        report("(d) CPU at 1 s, measured (walks as they came)", "-", -1, "%.4f %% (%llu us / %.1f s; %llu walks, %llu checks)",
               pct, cpu, (double) wall / 1e6, walks, checks);
        report("(d) idle CPU: ticks + backstop walk/10 rescans", "<= 0.1 %", idle <= 0.1,
               "%.4f %% (ticks %.4f %% + %llu us / %u s)", idle, ticks, one_walk, 10 * rescan);
        report("(d) churn: ticks + a walk every rescan", "-", -1, "%.4f %% (+ %llu us / %u s)", churn, one_walk,
               rescan);
        (void) walk_cpu;

out:
        if (m)
                mthp_cgmon_free(m);
        uint64_t t0 = now_usec();
        unsigned had = (unsigned) n_created;
        cleanup();
        fprintf(stderr, "bench-cgroups: removed %u cgroups in %.2f s\n", had, (double) (now_usec() - t0) / 1e6);
        printf("\n%-47s %-11s %-6s %s\n", "measure", "target", "result", "value");
        for (unsigned i = 0; i < n_res; i++)
                printf("%-47s %-11s %-6s %s\n", res[i].what, res[i].target,
                       res[i].pass < 0 ? "-" : res[i].pass ? "PASS" : "MISS", res[i].value);
        free(ta);
        free(tf);
        mthp_host_free(h);
        return rc;
}
