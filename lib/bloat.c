/* SPDX-License-Identifier: MIT */
/* Bloat after the fact (mthp/bloat.h): the grown-and-quiet tracker and the
 * give-back of sparse 2M windows with MADV_PAGEOUT. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mthp/bloat.h"
#include "mthp/density.h"
#include "mthp/procfs.h"
#include "mthp/procinfo.h"
#include "mthp/util.h"

#include "pagemap-scan.h"
#include "proc-scan.h"
#include "process-madvise.h"

#define PAGE 4096u
#define WINDOW (2u << 20)
#define WINDOW_PAGES (WINDOW / PAGE)
#define PF_KTHREAD 0x00200000u
#define IOV_BATCH 512
#define MTHP_BLOAT_AGAIN_MAX (2 * MTHP_BLOAT_CANDIDATES)
#define YOUNG_MAX 64                     /* processes started under the raise, read every tick */
#define YOUNG_USEC (5 * 1000000ULL)      /* for their first 5 s */
#define NEW_MAX 1024                     /* more new PIDs than this a tick: list /proc instead */

struct entry {
        pid_t pid;                    /* -1: gone, dropped at the end of the tick */
        bool read;                    /* its stat was read under this raise (else listed only) */
        bool kthread;                 /* never a candidate: not read again */
        uint64_t starttime;
        uint64_t base_rss_pages, base_minflt;
        uint64_t base_anon_pages;     /* statm's resident - shared at the baseline */
        uint64_t minflt, t_usec;      /* at the last read */
        uint64_t offered_usec;        /* 0: never offered */
        uint64_t offered_rss_pages;
};

struct mthp_bloat {
        const struct mthp_host *host;
        long clk_tck;
        bool raised;
        bool active;                  /* read at the last tick: raised, or within MTHP_BLOAT_AFTER_USEC of it */
        bool episode;                 /* a raise was seen: the table holds its baselines */
        uint64_t lowered_usec;        /* when the last raise ended */
        uint64_t raise_ticks;         /* clock ticks since boot at the raise */
        uint64_t last_usec;           /* the last tick read */
        size_t next;                  /* the rotation: the entry to read next; n_tab: list /proc first */
        pid_t again[MTHP_BLOAT_AGAIN_MAX]; /* mthp_bloat_again: read at the next tick */
        unsigned n_again;
        long last_pid;                /* /proc/loadavg's at the last tick; -1 unknown */
        long given_last_pid;          /* mthp_bloat_set_last_pid, for this tick if given */
        bool last_pid_given;
        struct { pid_t pid; uint64_t until_usec; } young[YOUNG_MAX];
        unsigned n_young;
        struct entry *tab, *spare;
        size_t n_tab, cap_tab, cap_spare;
        pid_t *pids;
        size_t cap_pids;
        char buf[1024];
};

void mthp_bloat_set_last_pid(struct mthp_bloat *b, long last_pid) {
        b->given_last_pid = last_pid;
        b->last_pid_given = true;
}

int mthp_bloat_new(const struct mthp_host *h, struct mthp_bloat **ret) {
        struct mthp_bloat *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->host = h;
        b->last_pid = -1;
        b->clk_tck = sysconf(_SC_CLK_TCK);
        if (b->clk_tck <= 0)
                b->clk_tck = 100;
        *ret = b;
        return 0;
}

void mthp_bloat_free(struct mthp_bloat *b) {
        if (!b)
                return;
        free(b->tab);
        free(b->spare);
        free(b->pids);
        free(b);
}

static int cmp_pid(const void *a, const void *c) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) c;
        return x < y ? -1 : x > y;
}

static const struct entry *find(const struct mthp_bloat *b, pid_t pid) {
        size_t lo = 0, hi = b->n_tab;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (b->tab[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < b->n_tab && b->tab[lo].pid == pid ? &b->tab[lo] : NULL;
}

void mthp_bloat_again(struct mthp_bloat *b, pid_t pid) {
        struct entry *e = (struct entry *) find(b, pid);
        if (!e)
                return;
        e->offered_usec = 0;
        /* read at the next tick, not at its turn in the rotation */
        for (unsigned i = 0; i < b->n_again; i++)
                if (b->again[i] == pid)
                        return;
        if (b->n_again < MTHP_BLOAT_AGAIN_MAX)
                b->again[b->n_again++] = pid;
}

/* /proc/PID/statm at path under dfd: resident and shared (file and
 * shmem) pages. */
static int read_statm(int dfd, const char *path, uint64_t *resident, uint64_t *shared) {
        char buf[256];
        int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return n < 0 ? -errno : -EBADMSG;
        buf[n] = 0;
        unsigned long long size, res, sh;
        if (sscanf(buf, "%llu %llu %llu", &size, &res, &sh) != 3)
                return -EBADMSG;
        *resident = res;
        *shared = sh;
        return 0;
}

/* A process's anonymous resident pages: statm's resident less shared,
 * RssAnon without status's cost. */
static int statm_anon(int dfd, pid_t pid, uint64_t *pages) {
        char path[32];
        uint64_t res, shared;
        snprintf(path, sizeof(path), "%d/statm", (int) pid);
        int r = read_statm(dfd, path, &res, &shared);
        if (r < 0)
                return r;
        *pages = res > shared ? res - shared : 0;
        return 0;
}

static int cmp_cand(const void *a, const void *c) {
        const struct mthp_bloat_candidate *x = a, *y = c;
        return x->grown_kb < y->grown_kb ? 1 : x->grown_kb > y->grown_kb ? -1 : 0;
}

/* Read e's stat file again, in place: e->pid -1 when it is gone, a
 * zombie or a thread; a kthread is marked and not read again. Whether it
 * is a candidate (then in *c): grown under the raise by more than the
 * floor and the ratio, quiet since its last read, not offered again too
 * soon. A first read under the raise takes its baseline (from nothing for
 * a process started after the raise) and is no candidate: its rate is
 * unknown until the next. */
/* Grown (pages) against what its faults since (pages) would have mapped at
 * 4K: by more than the floor, and by more than MTHP_BLOAT_RATIO times
 * that, or by MTHP_BLOAT_EXCESS_KB beyond it (a process that grew partly
 * under the raise and partly at 4K after a step-down: a sparse program
 * the guard stepped down for after 0.4 s held 730 MiB for a 4K need of
 * 528, 1.4 times its faults, and its limited cgroup's lost headroom kept
 * the host at 4K). */
static bool grown_enough(uint64_t grown, uint64_t faults) {
        uint64_t kb = grown * (PAGE / 1024), excess = grown > faults ? (grown - faults) * (PAGE / 1024) : 0;
        return kb > MTHP_BLOAT_FLOOR_KB && (grown > MTHP_BLOAT_RATIO * faults || excess >= MTHP_BLOAT_EXCESS_KB);
}

static bool check_proc(struct mthp_bloat *b, int dfd, struct entry *e, pid_t self, uint64_t t_usec,
                       double quiet_rate, struct mthp_bloat_candidate *c, struct mthp_bloat_stats *stats) {
        char path[32];
        pid_t pid = e->pid;
        if (b->host->real && pid == self) {
                e->kthread = true;    /* not read, never offered */
                return false;
        }
        snprintf(path, sizeof(path), "%d/stat", (int) pid);
        int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                e->pid = -1;
                return false;
        }
        ssize_t len = read(fd, b->buf, sizeof(b->buf) - 1);
        close(fd);
        stats->scanned++;
        struct mthp_proc_stat st;
        if (len > 0)
                b->buf[len] = 0;
        if (len <= 0 || mthp_proc_parse_stat(b->buf, &st) < 0 || st.thread || st.state == 'Z' || st.state == 'X') {
                e->pid = -1;
                return false;
        }
        if (st.flags & PF_KTHREAD) {
                e->kthread = true;
                return false;
        }
        bool fresh = !e->read || e->starttime != st.starttime;
        if (fresh) {
                /* first sight: started after the raise, it grew from nothing */
                bool after = st.starttime >= b->raise_ticks;
                uint64_t anon = 0;
                if (!after && statm_anon(dfd, pid, &anon) < 0)
                        anon = st.rss_pages;
                *e = (struct entry) { .pid = pid, .read = true, .starttime = st.starttime,
                                      .base_rss_pages = after ? 0 : st.rss_pages, .base_anon_pages = anon,
                                      .base_minflt = after ? 0 : st.minflt, .minflt = st.minflt,
                                      .t_usec = t_usec };
                return false;   /* its rate is unknown until the next read */
        }
        double rate = t_usec > e->t_usec && st.minflt >= e->minflt
                              ? (double) (st.minflt - e->minflt) * 1e6 / (double) (t_usec - e->t_usec)
                              : 0;
        e->minflt = st.minflt;
        e->t_usec = t_usec;
        uint64_t grown = st.rss_pages > e->base_rss_pages ? st.rss_pages - e->base_rss_pages : 0;
        uint64_t faults = st.minflt > e->base_minflt ? st.minflt - e->base_minflt : 0;
        if (!grown_enough(grown, faults) || !(rate < quiet_rate))
                return false;
        /* offered once, again after the recheck time or a further floor's growth */
        if (e->offered_usec && t_usec < e->offered_usec + MTHP_BLOAT_RECHECK_USEC &&
            st.rss_pages * (PAGE / 1024) < e->offered_rss_pages * (PAGE / 1024) + MTHP_BLOAT_FLOOR_KB)
                return false;
        /* RSS counts file pages too (a mapped file's fault-around
         * maps 16 pages a fault): the anon share must have grown */
        uint64_t anon;
        if (statm_anon(dfd, pid, &anon) < 0)
                return false;
        grown = anon > e->base_anon_pages ? anon - e->base_anon_pages : 0;
        if (!grown_enough(grown, faults))
                return false;
        *c = (struct mthp_bloat_candidate) { .pid = pid, .starttime = st.starttime,
                                             .rss_kb = st.rss_pages * (PAGE / 1024),
                                             .grown_kb = grown * (PAGE / 1024),
                                             .faults_kb = faults * (PAGE / 1024), .fault_rate = rate };
        mthp_strcpy(c->comm, sizeof(c->comm), st.comm);
        return true;
}

/* List /proc into the table: the entries of processes still listed are
 * kept (their baselines), gone ones dropped, new ones added unread. */
static int relist(struct mthp_bloat *b, int dfd) {
        size_t np = 0;
        int r = mthp_proc_list_pids(dfd, &b->pids, &b->cap_pids, &np);
        if (r < 0)
                return r;
        if (np > 1)
                qsort(b->pids, np, sizeof(pid_t), cmp_pid);
        r = mthp_grow((void **) &b->spare, &b->cap_spare, np ? np : 1, sizeof(struct entry));
        if (r < 0)
                return r;
        size_t u = 0, i = 0;
        for (size_t j = 0; j < np; j++) {
                if (j && b->pids[j] == b->pids[j - 1])
                        continue;
                while (i < b->n_tab && b->tab[i].pid < b->pids[j])
                        i++;
                if (i < b->n_tab && b->tab[i].pid == b->pids[j])
                        b->spare[u++] = b->tab[i++];
                else
                        b->spare[u++] = (struct entry) { .pid = b->pids[j] };
        }
        struct entry *tmp = b->tab;
        size_t cap = b->cap_tab;
        b->tab = b->spare;
        b->cap_tab = b->cap_spare;
        b->n_tab = u;
        b->spare = tmp;
        b->cap_spare = cap;
        return 0;
}

static void offer(struct mthp_bloat_candidate *out, unsigned max, unsigned *n, const struct mthp_bloat_candidate *c) {
        if (*n < max)
                out[(*n)++] = *c;
        else if (max && c->grown_kb > out[max - 1].grown_kb)
                out[max - 1] = *c;
        if (max)
                qsort(out, *n, sizeof(*out), cmp_cand);
}

bool mthp_bloat_tracking(const struct mthp_bloat *b) {
        return b && b->active;
}

int mthp_bloat_tick(struct mthp_bloat *b, bool raised, uint64_t t_usec, double quiet_rate,
                    struct mthp_bloat_candidate *out, unsigned max, unsigned *n, struct mthp_bloat_stats *stats) {
        *n = 0;
        memset(stats, 0, sizeof(*stats));
        bool given = b->last_pid_given;
        b->last_pid_given = false;   /* for this tick only */
        if (b->active && !b->raised && t_usec >= b->lowered_usec + MTHP_BLOAT_AFTER_USEC)
                b->active = false;   /* the reads after the last step-down are over */
        if (!raised) {
                if (b->raised)
                        b->lowered_usec = t_usec;
                b->raised = false;
                /* After a step-down the reads go on for a while: a process
                 * that grew under the raise and went quiet only after it
                 * (a sparse program still touching when the guard or its
                 * own density stepped the host down) holds its bloat for
                 * as long as it lives, and in a limited cgroup keeps the
                 * host at 4K; its baselines are still in the table. A
                 * process growing at 4K grows by what it faults: never a
                 * candidate. */
                if (!b->episode || !b->active) {
                        b->active = false;
                        return 0;
                }
        }
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        bool all = false;
        /* a raise that comes back soon after a step-down keeps the
         * baselines: a process grown under the first is still grown */
        if (!b->active && (!b->episode || t_usec >= b->lowered_usec + MTHP_BLOAT_FORGET_USEC)) {
                b->n_tab = 0;
                b->episode = true;
                b->raise_ticks = mthp_now_usec(CLOCK_BOOTTIME) * (uint64_t) b->clk_tck / 1000000;
                all = true;   /* the baselines at the raise, every one */
        }
        if (!b->active)
                b->next = b->n_tab;   /* back under a raise: a new listing */
        uint64_t dt = b->active && t_usec > b->last_usec ? t_usec - b->last_usec : MTHP_BLOAT_PASS_USEC;
        b->raised = raised;
        b->active = true;
        b->last_usec = t_usec;
        _cleanup_close_ int dfd = mthp_host_open_file(b->host, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return dfd;
        /* A pass: list /proc, then read its processes in PID order over
         * the ticks of MTHP_BLOAT_PASS_USEC (a stat file is ~5 us: each
         * tick reading every one was 1% of a core at 2,000 processes).
         * Growth comes from faults, so a process grown and gone quiet is
         * offered within a pass of the tick it went quiet; a quiet rate
         * is measured over the pass. */
        long last = given ? b->given_last_pid : mthp_proc_last_pid(b->host);
        if (all)
                b->last_pid = -1;   /* every process is read now */
        /* Between listings, the IDs handed out since the last tick (as the
         * fault-rate scan finds them): a process started under the raise
         * is read now and every tick of its first YOUNG_USEC, so that one
         * that grows and goes quiet at its start (a sparse program
         * touching its memory once) is offered within seconds, not a pass
         * or two later. */
        /* (after a step-down none are taken: a process started at 4K
         * grows by what it faults and is never a candidate) */
        long from = b->raised && b->last_pid >= 0 && last > b->last_pid ? b->last_pid + 1 : -1;
        if (from >= 0 && b->next < b->n_tab &&
            (last - from >= NEW_MAX || (b->n_tab && from <= b->tab[b->n_tab - 1].pid)))
                b->next = b->n_tab;   /* a fork storm, or IDs wrapped: list now */
        size_t n0;
        if (b->next >= b->n_tab) {
                int r = relist(b, dfd);
                if (r < 0)
                        return r;
                b->next = 0;
                n0 = b->n_tab;
                while (from >= 0 && n0 > 0 && b->tab[n0 - 1].pid >= from)
                        n0--;
        } else {
                n0 = b->n_tab;
                if (from >= 0) {
                        int r = mthp_grow((void **) &b->tab, &b->cap_tab, b->n_tab + (size_t) (last - from + 1),
                                          sizeof(struct entry));
                        if (r < 0)
                                return r;
                        for (long p = from; p <= last; p++)
                                b->tab[b->n_tab++] = (struct entry) { .pid = (pid_t) p };
                }
        }
        if (last >= 0)
                b->last_pid = last;
        /* the new ones: read (their baselines), kept young; those gone out
         * at once (the table stays sorted for find: only its tail moves) */
        size_t u0 = n0;
        for (size_t i = n0; i < b->n_tab; i++) {
                struct mthp_bloat_candidate c;
                struct entry *e = &b->tab[i];
                if (!e->read)
                        (void) check_proc(b, dfd, e, getpid(), t_usec, quiet_rate, &c, stats);
                if (b->raised && e->pid > 0 && !e->kthread && b->n_young < YOUNG_MAX)
                        b->young[b->n_young++] = (typeof(b->young[0])) { e->pid, t_usec + YOUNG_USEC };
                if (e->pid > 0)
                        b->tab[u0++] = *e;
        }
        b->n_tab = u0;
        size_t quota = all ? b->n_tab : (size_t) ((b->n_tab * dt + MTHP_BLOAT_PASS_USEC - 1) / MTHP_BLOAT_PASS_USEC);
        if (quota < MTHP_BLOAT_MIN_READS)
                quota = MTHP_BLOAT_MIN_READS;
        pid_t self = getpid();
        /* those asked again first (a give-back cut short by its budget) */
        struct entry *again[MTHP_BLOAT_AGAIN_MAX + YOUNG_MAX];
        unsigned n_again = 0;
        for (unsigned i = 0; i < b->n_again; i++)   /* all found before a read marks one gone (-1) */
                if ((again[n_again] = (struct entry *) find(b, b->again[i])))
                        n_again++;
        b->n_again = 0;
        /* and the young ones still young and there */
        unsigned ny = 0;
        for (unsigned i = 0; i < b->n_young; i++) {
                struct entry *e;
                if (t_usec >= b->young[i].until_usec || !(e = (struct entry *) find(b, b->young[i].pid)))
                        continue;   /* no longer young, or gone */
                b->young[ny++] = b->young[i];
                if (e->t_usec != t_usec && n_again < MTHP_BLOAT_AGAIN_MAX + YOUNG_MAX)
                        again[n_again++] = e;
        }
        b->n_young = ny;
        for (unsigned i = 0; i < n_again; i++) {
                struct mthp_bloat_candidate c;
                struct entry *e = again[i];
                if (e->pid < 0 || !e->read || e->kthread || e->t_usec == t_usec)
                        continue;   /* gone, or read this tick already (asked again and young) */
                if (check_proc(b, dfd, e, self, t_usec, quiet_rate, &c, stats))
                        offer(out, max, n, &c);
        }
        for (; b->next < b->n_tab && stats->scanned < quota; b->next++) {
                struct entry *e = &b->tab[b->next];
                struct mthp_bloat_candidate c;
                if (e->kthread || e->pid < 0 || (e->read && e->t_usec == t_usec))
                        continue;   /* read this tick already */
                if (check_proc(b, dfd, e, self, t_usec, quiet_rate, &c, stats))
                        offer(out, max, n, &c);
        }
        /* the gone ones out (the table stays sorted for find); next
         * follows the entry it pointed at */
        size_t u = 0, next = b->next;
        for (size_t i = 0; i < b->n_tab; i++) {
                if (i == b->next)
                        next = u;
                if (b->tab[i].pid > 0)
                        b->tab[u++] = b->tab[i];
        }
        b->next = b->next >= b->n_tab ? u : next;
        b->n_tab = u;
        /* the offered ones remember it */
        for (unsigned j = 0; j < *n; j++) {
                struct entry *e = (struct entry *) find(b, out[j].pid);
                if (e) {
                        e->offered_usec = t_usec ? t_usec : 1;
                        e->offered_rss_pages = out[j].rss_kb / (PAGE / 1024);
                }
        }
        stats->usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        return 0;
}

struct swap_ctx {
        uint64_t kb;
        bool found;
};

static void swap_cb(void *user, const char *key, unsigned long long value) {
        struct swap_ctx *c = user;
        if (strcmp(key, "SwapTotal") == 0) {
                c->kb = value;
                c->found = true;
        }
}

int mthp_bloat_swap_kb(const struct mthp_host *h, uint64_t *kb) {
        char buf[8192];
        int r = mthp_host_read(h, "/proc/meminfo", buf, sizeof(buf));
        if (r < 0)
                return r;
        struct swap_ctx c = { 0 };
        mthp_parse_kv(buf, swap_cb, &c);
        if (!c.found)
                return -EBADMSG;
        *kb = c.kb;
        return 0;
}

struct memstat_ctx {
        uint64_t anon_thp;
};

static void memstat_cb(void *user, const char *key, unsigned long long value) {
        struct memstat_ctx *c = user;
        if (strcmp(key, "anon_thp") == 0)
                c->anon_thp = value;
}

/* memory.current and memory.stat's anon_thp of the cgroup at dir, in kB
 * (0 where unreadable: they only report) */
static void memcg_figures(const struct mthp_host *h, const char *dir, uint64_t *current_kb, uint64_t *thp_kb) {
        char path[MTHP_PATH_MAX + 300], buf[8192];
        struct memstat_ctx c = { 0 };
        *current_kb = *thp_kb = 0;
        snprintf(path, sizeof(path), "%s/memory.current", dir);
        if (mthp_host_read(h, path, buf, sizeof(buf)) > 0)
                *current_kb = strtoull(buf, NULL, 10) / 1024;
        snprintf(path, sizeof(path), "%s/memory.stat", dir);
        if (mthp_host_read(h, path, buf, sizeof(buf)) > 0) {
                mthp_parse_kv(buf, memstat_cb, &c);
                *thp_kb = c.anon_thp / 1024;
        }
}

int mthp_bloat_memcg_reclaim(const struct mthp_host *h, const struct mthp_caps *caps, pid_t pid, uint64_t kb,
                             struct mthp_bloat_reclaim *res) {
        char path[MTHP_PATH_MAX + 300], dir[MTHP_PATH_MAX + 260], text[2048];
        memset(res, 0, sizeof(*res));
        if (caps->cg_layout != MTHP_CG_V2 || !caps->cg_memory[0])
                return -EOPNOTSUPP;
        if (pid <= 0 || kb == 0)
                return -EINVAL;
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        int r = mthp_host_read(h, path, text, sizeof(text));
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        if (mthp_procinfo_parse_cgroup(text, caps->cg_layout, res->cgroup, sizeof(res->cgroup)) < 0)
                return -EBADMSG;
        if (strcmp(res->cgroup, "/") == 0)
                return -EPERM;
        snprintf(dir, sizeof(dir), "%s%s", caps->cg_memory, res->cgroup);
        snprintf(path, sizeof(path), "%s/memory.reclaim", dir);
        if (!mthp_host_exists(h, path))
                return -EOPNOTSUPP;   /* before Linux 5.19, or no memory controller here */
        memcg_figures(h, dir, &res->current_before_kb, &res->anon_thp_before_kb);
        char value[64];
        snprintf(value, sizeof(value), "%llu swappiness=0", (unsigned long long) kb * 1024);
        res->asked_kb = kb;
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        r = mthp_host_write(h, path, value);
        res->usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        memcg_figures(h, dir, &res->current_after_kb, &res->anon_thp_after_kb);
        return r;
}

static int rss_kb(int dfd, uint64_t *kb) {
        uint64_t res, shared;
        int r = read_statm(dfd, "statm", &res, &shared);
        if (r == 0)
                *kb = res * (PAGE / 1024);
        return r;
}

/* The zero share of up to MTHP_BLOAT_READS of the present pages of the
 * window at addr (pm its pagemap entries); -1 when too few are present. */
static double window_zero(pid_t pid, uint64_t addr, const uint64_t *pm, unsigned n, void *buf) {
        unsigned present = 0;
        for (unsigned i = 0; i < n; i++)
                present += (pm[i] >> 63) & 1;
        if (present < MTHP_BLOAT_MIN_PRESENT)
                return -1;
        struct iovec local[MTHP_BLOAT_READS], remote[MTHP_BLOAT_READS];
        unsigned want = present < MTHP_BLOAT_READS ? present : MTHP_BLOAT_READS, k = 0, seen = 0;
        unsigned step = present / want;
        /* one present page at a varying place in each step: at a fixed
         * stride the reads would fall in step with a program's own
         * (1 byte every 64K read every 128K reads data only) */
        uint64_t x = addr | 1;
        unsigned pick = 0;
        for (unsigned i = 0; i < n && k < want; i++) {
                if (!((pm[i] >> 63) & 1))
                        continue;
                if (seen % step == 0) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        pick = seen + (unsigned) (x % step);
                }
                if (seen++ == pick) {
                        local[k] = (struct iovec) { (char *) buf + (size_t) k * PAGE, PAGE };
                        remote[k] = (struct iovec) { (void *) (uintptr_t) (addr + (uint64_t) i * PAGE), PAGE };
                        k++;
                }
        }
        ssize_t got = process_vm_readv(pid, local, k, remote, k, 0);
        if (got < (ssize_t) PAGE)
                return -1;
        unsigned read = (unsigned) (got / PAGE);
        return (double) mthp_density_count_zero_pages(buf, read) / read;
}

#define SCAN_VEC 128

/* pm[] for the window [a, e): bit 63 set for its present pages that are
 * not the shared zero page (a zero subpage that a give-back or the
 * shrinker already split off is mapped to it, and is no bloat).
 * PAGEMAP_SCAN tells the zero page apart; without it (*scan -1, before
 * Linux 6.7), pagemap entries, where a zero-page PTE reads as present. */
static int window_present(int pfd, uint64_t a, uint64_t e, uint64_t *pm, struct page_region *vec, int *scan) {
        unsigned np = (unsigned) ((e - a) / PAGE);
        if (*scan >= 0) {
                memset(pm, 0, np * sizeof(*pm));
                for (uint64_t at = a; at < e;) {
                        uint64_t walk_end = e;
                        int n = mthp_pagemap_scan(pfd, at, e, vec, SCAN_VEC, 0, PAGE_IS_PRESENT, PAGE_IS_PRESENT,
                                                  &walk_end);
                        if (n == -ENOTTY || n == -EINVAL) {
                                *scan = -1;
                                break;
                        }
                        if (n < 0)
                                return n;
                        *scan = 1;
                        for (int j = 0; j < n; j++)
                                for (uint64_t p = vec[j].start; p < vec[j].end && p < e; p += PAGE)
                                        pm[(p - a) / PAGE] = 1ULL << 63;
                        if (n < SCAN_VEC || walk_end <= at)
                                break;
                        at = walk_end;
                }
                if (*scan > 0)
                        return 0;
        }
        ssize_t got = pread(pfd, pm, np * sizeof(uint64_t), (off_t) (a / PAGE * sizeof(uint64_t)));
        if (got < 0)
                return -errno;
        if (got < (ssize_t) (np * sizeof(uint64_t)))
                return -ESRCH;
        return 0;
}

static int advise(int pidfd, struct iovec *iov, unsigned n) {
        if (!n)
                return 0;
        long r = syscall(SYS_process_madvise, pidfd, iov, n, MADV_PAGEOUT, 0u);
        return r < 0 ? -errno : 0;
}

int mthp_bloat_give_back(const struct mthp_host *h, const struct mthp_bloat_candidate *c, double min_zero,
                         uint64_t budget_kb, uint64_t max_usec, struct mthp_bloat_result *res) {
        memset(res, 0, sizeof(*res));
        if (!h->real)
                return -EOPNOTSUPP;   /* another host's processes are not ours to read or advise */
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d", (int) c->pid);
        _cleanup_close_ int dfd = mthp_host_open_file(h, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return dfd == -ENOENT ? -ESRCH : dfd;
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, c->pid, 0u);
        if (pidfd < 0)
                return -errno;
        uint64_t start = 0;
        /* after pidfd_open: the pidfd and the directory name the process we chose */
        int r = mthp_proc_read_starttime(h, c->pid, &start);
        if (r < 0)
                return r;
        if (start != c->starttime)
                return -ESRCH;
        _cleanup_close_ int mfd = openat(dfd, "maps", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int pfd = openat(dfd, "pagemap", O_RDONLY | O_CLOEXEC);
        if (mfd < 0 || pfd < 0)
                return -errno;
        char *text = NULL;
        size_t cap = 0, len = 0;
        r = mthp_proc_read_fd(mfd, &text, &cap, &len);
        if (r < 0) {
                free(text);
                return r;
        }
        (void) rss_kb(dfd, &res->rss_before_kb);
        void *buf = malloc((size_t) MTHP_BLOAT_READS * PAGE);
        uint64_t *pm = malloc(WINDOW_PAGES * sizeof(uint64_t));
        struct iovec iov[IOV_BATCH];
        struct page_region vec[SCAN_VEC];
        int scan = 0;
        unsigned n_iov = 0;
        uint64_t batch_kb = 0;
        if (!buf || !pm)
                r = -ENOMEM;
        for (char *line = text; r == 0 && line && *line;) {
                char *nl = strchr(line, '\n');
                size_t ll = nl ? (size_t) (nl - line) : strlen(line);
                struct mthp_mapping m;
                char *next = nl ? nl + 1 : NULL;
                if (mthp_proc_parse_maps_line(line, ll, &m) < 0 || mthp_proc_mapping_kind(&m) != MTHP_ANON ||
                    m.perms[1] != 'w') {
                        line = next;
                        continue;
                }
                for (uint64_t w = m.start & ~(uint64_t) (WINDOW - 1); w < m.end && r == 0; w += WINDOW) {
                        uint64_t a = w < m.start ? m.start : w, e = w + WINDOW > m.end ? m.end : w + WINDOW;
                        unsigned np = (unsigned) ((e - a) / PAGE);
                        if (res->advised_kb + (e - a) / 1024 > budget_kb ||
                            mthp_now_usec(CLOCK_MONOTONIC) - t0 >= max_usec) {
                                res->budget_hit = true;
                                break;
                        }
                        r = window_present(pfd, a, e, pm, vec, &scan);
                        if (r < 0)
                                break;
                        res->windows++;
                        double z = window_zero(c->pid, a, pm, np, buf);
                        if (!(z >= min_zero))
                                continue;
                        res->sparse++;
                        res->advised_kb += (e - a) / 1024;
                        batch_kb += (e - a) / 1024;
                        if (n_iov && (uint64_t) (uintptr_t) iov[n_iov - 1].iov_base + iov[n_iov - 1].iov_len == a)
                                iov[n_iov - 1].iov_len += e - a;
                        else
                                iov[n_iov++] = (struct iovec) { (void *) (uintptr_t) a, e - a };
                        if (n_iov == IOV_BATCH || batch_kb >= MTHP_BLOAT_ADVISE_KB) {
                                r = advise(pidfd, iov, n_iov);
                                n_iov = 0;
                                batch_kb = 0;
                        }
                }
                if (res->budget_hit)
                        break;
                line = next;
        }
        if (r == 0)
                r = advise(pidfd, iov, n_iov);
        free(text);
        free(buf);
        free(pm);
        (void) rss_kb(dfd, &res->rss_after_kb);
        res->usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        return r;
}
