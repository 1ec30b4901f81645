/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/procfs.h"
#include "mthp/util.h"

#include "proc-scan.h"

#define PF_KTHREAD 0x00200000u

void mthp_proc_scan_init(struct mthp_proc_scan *s, const struct mthp_host *h) {
        s->host = h;
        s->clk_tck = sysconf(_SC_CLK_TCK);
        s->last_pid = -1;
}

void mthp_proc_scan_free(struct mthp_proc_scan *s) {
        free(s->tab);
        free(s->spare);
        free(s->pids);
        free(s->order);
}

/* Who is worth sampling: faults/s times resident pages. Fault events alone
 * would rank a compiler's 300 4K faults/s above a workload faulting 2M
 * folios 60 times a second (30k pages/s): the one whose size decisions
 * matter. */
double mthp_proc_entry_rank(const struct mthp_proc_entry *e) {
        return e->rate * (double) (e->rss_pages ? e->rss_pages : 1);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

static size_t sort_unique(pid_t *p, size_t n) {
        if (n > 1) /* p is NULL while no process was ever seen */
                qsort(p, n, sizeof(pid_t), cmp_pid);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
                if (u == 0 || p[u - 1] != p[i])
                        p[u++] = p[i];
        return u;
}

/* Every PID in /proc into s->pids, sorted. */
static int list_proc(struct mthp_proc_scan *s, size_t *ret) {
        size_t n;
        _cleanup_close_ int fd = mthp_host_open_file(s->host, "/proc", O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return fd;
        int r = mthp_proc_list_pids(fd, &s->pids, &s->cap_pids, &n);
        if (r < 0)
                return r;
        *ret = sort_unique(s->pids, n);
        return 0;
}

/* Merge the n sorted s->pids into the table. whole: they are every process
 * (a listing): entries not among them are dropped. Otherwise they are IDs
 * handed out since the last tick: added, and an entry already under one of
 * them is stale (its process ended, the ID was given again) and read anew. */
static int merge(struct mthp_proc_scan *s, size_t n, bool whole) {
        if (!whole && n && (s->n_tab == 0 || s->pids[0] > s->tab[s->n_tab - 1].pid)) {
                /* IDs above every known one (no wrap): append, no copy */
                int r = mthp_grow((void **) &s->tab, &s->cap_tab, s->n_tab + n, sizeof(struct mthp_proc_entry));
                if (r < 0)
                        return r;
                for (size_t j = 0; j < n; j++)
                        s->tab[s->n_tab++] = (struct mthp_proc_entry) { .pid = s->pids[j] };
                return 0;
        }
        size_t cap = whole ? n : s->n_tab + n;
        int r = mthp_grow((void **) &s->spare, &s->cap_spare, cap ? cap : 1, sizeof(struct mthp_proc_entry));
        if (r < 0)
                return r;
        struct mthp_proc_entry *out = s->spare;
        size_t i = 0, j = 0, u = 0;
        while (i < s->n_tab || j < n) {
                if (j == n || (i < s->n_tab && s->tab[i].pid < s->pids[j])) {
                        if (!whole)
                                out[u++] = s->tab[i];
                        i++;
                } else if (i == s->n_tab || s->pids[j] < s->tab[i].pid) {
                        out[u++] = (struct mthp_proc_entry) { .pid = s->pids[j] };
                        j++;
                } else {
                        out[u] = s->tab[i];
                        if (!whole)
                                out[u].seen = false;
                        u++, i++, j++;
                }
        }
        struct mthp_proc_entry *tmp = s->tab;
        size_t tcap = s->cap_tab;
        s->tab = s->spare;
        s->cap_tab = s->cap_spare;
        s->spare = tmp;
        s->cap_spare = tcap;
        s->n_tab = u;
        return 0;
}

long mthp_proc_last_pid(const struct mthp_host *h) {
        char buf[128];
        ssize_t k = mthp_host_read(h, "/proc/loadavg", buf, sizeof(buf));
        if (k <= 0)
                return -1;
        const char *p = strrchr(buf, ' ');
        if (!p)
                return -1;
        char *end;
        errno = 0;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || errno || (*end && *end != '\n') || v < 0 || v > INT32_MAX)
                return -1;
        return v;
}

/* Bring the table up to date with /proc: new processes in, gone ones out. */
static int discover(struct mthp_proc_scan *s, uint64_t t_usec, bool *full) {
        /* read before listing: what starts meanwhile is in the next range */
        long last = s->last_pid_given ? s->given_last_pid : mthp_proc_last_pid(s->host);
        long range = last - s->last_pid;
        s->last_pid_given = false;
        size_t n = 0;
        int r;

        /* a stat read per new ID against ~0.8 us per listed process */
        *full = !s->listed_once || last < 0 || s->last_pid < 0 || range < 0 ||
                (range > 32 && (size_t) range > s->n_tab / 4) || t_usec - s->listed_usec >= MTHP_PROC_SCAN_RELIST_USEC;
        if (*full) {
                uint64_t c0 = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID), w0 = mthp_now_nsec(CLOCK_MONOTONIC);
                r = list_proc(s, &n);
                s->list_cpu_ns = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - c0;
                s->list_wall_ns = mthp_now_nsec(CLOCK_MONOTONIC) - w0;
                if (r < 0)
                        return r;
                s->listed_once = true;
                s->listed_usec = t_usec;
        } else if (range > 0) {
                r = mthp_grow((void **) &s->pids, &s->cap_pids, (size_t) range, sizeof(pid_t));
                if (r < 0)
                        return r;
                for (long p = s->last_pid + 1; p <= last; p++)
                        s->pids[n++] = (pid_t) p;
        }
        s->last_pid = last;
        return n || *full ? merge(s, n, *full) : 0;
}

static double read_uptime(const struct mthp_host *h) {
        char buf[128];
        if (mthp_host_read(h, "/proc/uptime", buf, sizeof(buf)) <= 0)
                return -1;
        return strtod(buf, NULL);
}

/* Read e's stat file; e->pid becomes -1 if it is gone or a thread. A zombie
 * stays, marked, so that listing /proc again does not make it new. */
static void read_one(struct mthp_proc_scan *s, struct mthp_proc_entry *e, uint64_t t_usec, double uptime) {
        char path[40], buf[1024];
        struct mthp_proc_stat st;
        const struct mthp_proc_entry old = *e;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) e->pid);
        if (mthp_host_read(s->host, path, buf, sizeof(buf)) <= 0 || mthp_proc_parse_stat(buf, &st) < 0 ||
            st.thread) {
                e->pid = -1;
                return;
        }
        if (st.state == 'Z' || st.state == 'X') {
                *e = (struct mthp_proc_entry) { .pid = old.pid, .seen = true, .zombie = true };
                return;
        }
        bool same = old.seen && old.starttime == st.starttime;
        *e = (struct mthp_proc_entry) {
                .pid = old.pid,
                .seen = true,
                .kthread = st.flags & PF_KTHREAD,
                .starttime = st.starttime,
                .minflt = st.minflt,
                .rss_pages = st.rss_pages,
                .t_usec = t_usec,
                .utime = st.utime,
                .stime = st.stime,
        };
        memcpy(e->comm, st.comm, sizeof(e->comm));
        if (same)
                memcpy(e->unlisted, old.unlisted, sizeof(e->unlisted));
        if (same && t_usec > old.t_usec && st.minflt >= old.minflt) {
                e->rate = (double) (st.minflt - old.minflt) * 1e6 / (double) (t_usec - old.t_usec);
                /* its CPU over the same interval (engine-pay.c: what a
                 * size costs it); clock ticks of 1/clk_tck s */
                if (s->clk_tck > 0 && st.utime >= old.utime && st.stime >= old.stime) {
                        double sec = (double) (t_usec - old.t_usec) / 1e6;
                        e->utime_rate = (double) (st.utime - old.utime) / (double) s->clk_tck / sec;
                        e->stime_rate = (double) (st.stime - old.stime) / (double) s->clk_tck / sec;
                        e->cpu_known = true;
                }
        } else if (uptime > 0 && s->clk_tck > 0) {
                /* first sight: its lifetime average, so that a short-lived
                 * process that faults hard (a compiler) is seen at all */
                double age = uptime - (double) st.starttime / (double) s->clk_tck;
                e->rate = (double) st.minflt / (age > 1 ? age : 1);
                e->from_lifetime = true;
                e->young = age < MTHP_PROC_SCAN_YOUNG_SEC;
        }
}

static bool ranks_before(const struct mthp_proc_entry *tab, size_t a, size_t b) {
        double ka = mthp_proc_entry_rank(&tab[a]), kb = mthp_proc_entry_rank(&tab[b]);
        return ka != kb ? ka > kb : tab[a].pid < tab[b].pid;
}

size_t mthp_proc_scan_top(const struct mthp_proc_entry *tab, size_t *idx, size_t n, size_t k) {
        size_t m = 0;
        /* insertion into the first m slots, which never pass i: O(n) while
         * few entries beat the k-th */
        for (size_t i = 0; i < n && k; i++) {
                size_t x = idx[i], j;
                if (m == k && !ranks_before(tab, x, idx[m - 1]))
                        continue;
                j = m < k ? m++ : m - 1;
                for (; j > 0 && ranks_before(tab, x, idx[j - 1]); j--)
                        idx[j] = idx[j - 1];
                idx[j] = x;
        }
        return m;
}

struct reader {
        struct mthp_proc_scan *s;
        uint64_t t_usec;
        double uptime;
        unsigned max_scan;
        bool (*stop)(void *user);
        void *user;
        bool *done;                  /* per entry: read this tick */
        unsigned scanned;
};

static bool read_next(struct reader *rd, size_t i) {
        if (rd->scanned >= rd->max_scan || (rd->stop && rd->stop(rd->user)))
                return false;
        read_one(rd->s, &rd->s->tab[i], rd->t_usec, rd->uptime);
        rd->done[i] = true;
        rd->scanned++;
        return true;
}

int mthp_proc_scan_tick(struct mthp_proc_scan *s, const struct mthp_density_target *targets, size_t n_targets,
                        uint64_t t_usec, const struct mthp_density_budget *b, bool (*stop)(void *user), void *user,
                        struct mthp_proc_scan_stats *st) {
        int r;

        memset(st, 0, sizeof(*st));
        s->list_cpu_ns = s->list_wall_ns = 0;
        if (n_targets) {
                r = mthp_grow((void **) &s->pids, &s->cap_pids, n_targets, sizeof(pid_t));
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_targets; i++)
                        s->pids[i] = targets[i].pid;
                r = merge(s, sort_unique(s->pids, n_targets), true);
                s->listed_once = false; /* back to /proc: list it whole */
        } else
                r = discover(s, t_usec, &st->full_list);
        if (r < 0)
                return r;
        st->listed = (unsigned) s->n_tab;
        size_t n = s->n_tab;

        _cleanup_free_ bool *done = calloc(n ? n : 1, sizeof(bool));
        r = mthp_grow((void **) &s->order, &s->cap_order, n ? n : 1, sizeof(size_t));
        if (!done || r < 0)
                return -ENOMEM;
        struct reader rd = {
                .s = s, .t_usec = t_usec, .uptime = read_uptime(s->host), .max_scan = b->max_scan,
                .stop = stop, .user = user, .done = done,
        };

        /* the ones that faulted at their last read first, hottest first:
         * their rates are what the tick decides on */
        size_t nh = 0;
        for (size_t i = 0; i < n; i++) {
                const struct mthp_proc_entry *e = &s->tab[i];
                if (!done[i] && e->seen && !e->kthread && !e->zombie && e->rate > 0 &&
                    (!e->from_lifetime || e->rate >= b->min_hot_rate || e->young))
                        s->order[nh++] = i;
        }
        nh = mthp_proc_scan_top(s->tab, s->order, nh, b->max_hot);
        for (size_t j = 0; j < nh; j++)
                if (!read_next(&rd, s->order[j]))
                        goto out;
        /* then new processes, newest (highest PID) first: when a listing
         * brings thousands, the one that just started is read at once */
        for (size_t i = n; i-- > 0;)
                if (!s->tab[i].seen && !read_next(&rd, i))
                        goto out;
        /* then the quiet rest in rotation; targets are read every tick */
        unsigned quiet = n_targets ? b->max_scan : b->max_rescan, k = 0;
        size_t i0 = 0;
        while (i0 < n && s->tab[i0].pid <= s->cursor)
                i0++;
        for (size_t j = 0; j < n && k < quiet; j++) {
                size_t i = (i0 + j) % n;
                if (done[i] || s->tab[i].kthread || s->tab[i].zombie)
                        continue;   /* both leave at the next listing */
                pid_t pid = s->tab[i].pid;
                if (!read_next(&rd, i))
                        break;
                s->cursor = pid;
                k++;
        }
out:
        st->scanned = rd.scanned;
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
                if (s->tab[i].pid > 0)
                        s->tab[u++] = s->tab[i];
        s->n_tab = u;
        return 0;
}
