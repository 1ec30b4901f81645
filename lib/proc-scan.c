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
}

void mthp_proc_scan_free(struct mthp_proc_scan *s) {
        free(s->tab);
        free(s->spare);
        free(s->pids);
}

static int cmp_pid(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;
        return x < y ? -1 : x > y;
}

static struct mthp_proc_entry *find_entry(struct mthp_proc_entry *tab, size_t n, pid_t pid) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (tab[mid].pid == pid)
                        return &tab[mid];
                if (tab[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int mthp_proc_scan_list(struct mthp_proc_scan *s, const struct mthp_density_target *targets, size_t n_targets,
                        size_t *ret) {
        size_t n = 0;
        int r;

        if (n_targets) {
                r = mthp_grow((void **) &s->pids, &s->cap_pids, n_targets, sizeof(pid_t));
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n_targets; i++)
                        s->pids[n++] = targets[i].pid;
        } else {
                int fd = mthp_host_open_file(s->host, "/proc", O_RDONLY | O_DIRECTORY);
                if (fd < 0)
                        return fd;
                DIR *d = fdopendir(fd);
                if (!d) {
                        r = -errno;
                        close(fd);
                        return r;
                }
                struct dirent *de;
                while ((de = readdir(d))) {
                        char *end;
                        long pid = strtol(de->d_name, &end, 10);
                        if (*end || end == de->d_name || pid <= 0 || pid > INT32_MAX)
                                continue;
                        r = mthp_grow((void **) &s->pids, &s->cap_pids, n + 1, sizeof(pid_t));
                        if (r < 0) {
                                closedir(d);
                                return r;
                        }
                        s->pids[n++] = (pid_t) pid;
                }
                closedir(d);
        }
        if (n > 1) /* s->pids is NULL while no process was ever seen */
                qsort(s->pids, n, sizeof(pid_t), cmp_pid);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
                if (u == 0 || s->pids[u - 1] != s->pids[i])
                        s->pids[u++] = s->pids[i];
        *ret = u;
        return 0;
}

static double read_uptime(const struct mthp_host *h) {
        char buf[128];
        if (mthp_host_read(h, "/proc/uptime", buf, sizeof(buf)) <= 0)
                return -1;
        return strtod(buf, NULL);
}

static void scan_one(struct mthp_proc_scan *s, pid_t pid, uint64_t t_usec, double uptime,
                     struct mthp_proc_entry *out) {
        char path[40], buf[1024];
        struct mthp_proc_stat st;

        out->pid = -1;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        if (mthp_host_read(s->host, path, buf, sizeof(buf)) <= 0 || mthp_proc_parse_stat(buf, &st) < 0 ||
            st.state == 'Z' || st.state == 'X')
                return;
        *out = (struct mthp_proc_entry) {
                .pid = pid,
                .kthread = st.flags & PF_KTHREAD,
                .starttime = st.starttime,
                .minflt = st.minflt,
                .rss_pages = st.rss_pages,
                .t_usec = t_usec,
        };
        memcpy(out->comm, st.comm, sizeof(out->comm));
        const struct mthp_proc_entry *old = find_entry(s->tab, s->n_tab, pid);
        if (old && old->starttime == st.starttime)
                memcpy(out->unlisted, old->unlisted, sizeof(out->unlisted));
        if (old && old->starttime == st.starttime && t_usec > old->t_usec && st.minflt >= old->minflt) {
                out->rate = (double) (st.minflt - old->minflt) * 1e6 / (double) (t_usec - old->t_usec);
        } else if (uptime > 0 && s->clk_tck > 0) {
                /* first sight: its lifetime average, so that a short-lived
                 * process that faults hard (a compiler) is seen at all */
                double age = uptime - (double) st.starttime / (double) s->clk_tck;
                out->rate = (double) st.minflt / (age > 1 ? age : 1);
                out->from_lifetime = true;
        }
}

int mthp_proc_scan_stat(struct mthp_proc_scan *s, uint64_t t_usec, size_t n, unsigned max_scan,
                        bool (*stop)(void *user), void *user, unsigned *scanned) {
        int r = mthp_grow((void **) &s->spare, &s->cap_spare, n ? n : 1, sizeof(struct mthp_proc_entry));
        if (r < 0)
                return r;
        struct mthp_proc_entry *nt = s->spare;
        memset(nt, 0, n * sizeof(*nt));
        double uptime = read_uptime(s->host);
        size_t i0 = 0;
        while (i0 < n && s->pids[i0] <= s->cursor)
                i0++;
        size_t k = n < max_scan ? n : max_scan;
        *scanned = 0;
        for (size_t j = 0; j < k; j++) {
                if (stop(user))
                        break;
                size_t idx = (i0 + j) % n;
                scan_one(s, s->pids[idx], t_usec, uptime, &nt[idx]);
                s->cursor = s->pids[idx];
                (*scanned)++;
        }
        size_t u = 0;
        for (size_t i = 0; i < n; i++) {
                if (nt[i].pid == 0) {
                        const struct mthp_proc_entry *old = find_entry(s->tab, s->n_tab, s->pids[i]);
                        if (old)
                                nt[i] = *old;
                }
                if (nt[i].pid > 0)
                        nt[u++] = nt[i];
        }
        struct mthp_proc_entry *tmp = s->tab;
        size_t cap = s->cap_tab;
        s->tab = s->spare;
        s->cap_tab = s->cap_spare;
        s->spare = tmp;
        s->cap_spare = cap;
        s->n_tab = u;
        return 0;
}
