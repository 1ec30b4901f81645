/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/probe.h"
#include "mthp/sample.h"
#include "mthp/procfs.h"

static const char *const vmstat_names[_MTHP_VM_MAX] = {
        [MTHP_VM_PGFAULT] = "pgfault",
        [MTHP_VM_PGMAJFAULT] = "pgmajfault",
        [MTHP_VM_THP_FAULT_ALLOC] = "thp_fault_alloc",
        [MTHP_VM_THP_FAULT_FALLBACK] = "thp_fault_fallback",
        [MTHP_VM_THP_SPLIT_PAGE] = "thp_split_page",
        [MTHP_VM_COMPACT_STALL] = "compact_stall",
        [MTHP_VM_COMPACT_FAIL] = "compact_fail",
        [MTHP_VM_COMPACT_SUCCESS] = "compact_success",
        [MTHP_VM_PSWPOUT] = "pswpout",
};

const char *mthp_vmstat_name(enum mthp_vmstat_field f) {
        return vmstat_names[f];
}

struct mthp_sampler {
        const struct mthp_host *host;
        const struct mthp_caps *caps;
        int vmstat_fd, meminfo_fd, psi_fd;
        int knob_fd[MTHP_KNOBS_MAX];
        int stat_fd[MTHP_SIZES_MAX][MTHP_STATS_MAX];
        bool have_prev;
        struct mthp_snapshot prev;
        /* The per-size counters the engine does not use are read every
         * COLD_TICKS ticks: each stats file is a pread, and reading all of
         * them (~170 on a 6.18 host) was most of an idle tick. cold_t_usec
         * and cold hold the last full read, for their rates. */
        bool have_cold;
        uint64_t cold_t_usec;
        struct mthp_size_stats cold[MTHP_SIZES_MAX];
        /* idle: the engine needs no per-size rate this tick (nothing raised,
         * demand below a raise), so its counters are read with the cold ones,
         * every COLD_TICKS ticks: ~50 sysfs reads, a third of an idle tick.
         * hot_fresh: the last tick read them, so its values pair with
         * prev's time; else a rate pairs with the last cold read. */
        bool idle, hot_fresh;
};

#define COLD_TICKS 10

/* The counters that decisions are made of (engine, derived rates). */
static int reopen(struct mthp_sampler *s, int *fd, const char *path) {
        if (*fd >= 0)
                return *fd;
        *fd = mthp_host_open_file(s->host, path, O_RDONLY);
        return *fd;
}

/* pread a persistent fd; if the file went away (knob dir recreated, a
 * hot-unplugged size) drop the fd so the next tick reopens it. */
/* whole: the file comes in one piece (mthp_read_fd_whole), one pread */
static int read_hot(struct mthp_sampler *s, int *fd, const char *path, char *buf, size_t size, bool whole) {
        int r = reopen(s, fd, path);
        if (r < 0)
                return r;
        r = whole ? mthp_read_fd_whole(*fd, buf, size) : mthp_read_fd(*fd, buf, size);
        if (r < 0) {
                close(*fd);
                *fd = -1;
        }
        return r;
}

void mthp_sampler_set_idle(struct mthp_sampler *s, bool idle) {
        s->idle = idle;
}

int mthp_sampler_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_sampler **ret) {
        struct mthp_sampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->host = h;
        s->caps = caps;
        s->vmstat_fd = s->meminfo_fd = s->psi_fd = -1;
        for (unsigned i = 0; i < MTHP_KNOBS_MAX; i++)
                s->knob_fd[i] = -1;
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                for (unsigned j = 0; j < MTHP_STATS_MAX; j++)
                        s->stat_fd[i][j] = -1;
        *ret = s;
        return 0;
}

static void closefd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

void mthp_sampler_free(struct mthp_sampler *s) {
        if (!s)
                return;
        closefd(&s->vmstat_fd);
        closefd(&s->meminfo_fd);
        closefd(&s->psi_fd);
        for (unsigned i = 0; i < MTHP_KNOBS_MAX; i++)
                closefd(&s->knob_fd[i]);
        for (unsigned i = 0; i < MTHP_SIZES_MAX; i++)
                for (unsigned j = 0; j < MTHP_STATS_MAX; j++)
                        closefd(&s->stat_fd[i][j]);
        free(s);
}

void mthp_counter_update(struct mthp_counter *c, const struct mthp_counter *prev, uint64_t value, double dt) {
        c->value = value;
        c->present = true;
        c->reset = false;
        c->rate = 0;
        if (!prev || !prev->present || dt <= 0)
                return;
        if (value < prev->value) {
                c->reset = true;
                return;
        }
        c->rate = (double) (value - prev->value) / dt;
}

struct vm_ctx {
        uint64_t v[_MTHP_VM_MAX];
        bool seen[_MTHP_VM_MAX];
};

static void vm_cb(void *user, const char *key, unsigned long long value) {
        struct vm_ctx *c = user;
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                if (strcmp(key, vmstat_names[i]) == 0) {
                        c->v[i] = value;
                        c->seen[i] = true;
                        return;
                }
}

static void mem_cb(void *user, const char *key, unsigned long long value) {
        struct mthp_meminfo *m = user;
        if (strcmp(key, "MemTotal") == 0)
                m->total_kb = value;
        else if (strcmp(key, "MemAvailable") == 0)
                m->available_kb = value;
        else if (strcmp(key, "AnonPages") == 0)
                m->anon_kb = value;
        else if (strcmp(key, "Shmem") == 0)
                m->shmem_kb = value;
        else if (strcmp(key, "AnonHugePages") == 0)
                m->anon_huge_kb = value;
        else if (strcmp(key, "ShmemHugePages") == 0)
                m->shmem_huge_kb = value;
}

void mthp_parse_vmstat(const char *text, uint64_t v[_MTHP_VM_MAX], bool seen[_MTHP_VM_MAX]) {
        struct vm_ctx c = { 0 };
        mthp_parse_kv(text, vm_cb, &c);
        memcpy(v, c.v, sizeof(c.v));
        memcpy(seen, c.seen, sizeof(c.seen));
}

void mthp_parse_meminfo(const char *text, struct mthp_meminfo *m) {
        mthp_parse_kv(text, mem_cb, m);
}

int mthp_parse_psi(const char *text, struct mthp_psi *psi) {
        bool some = false, full = false;
        const char *p = text;

        while (*p) {
                double a10, a60, a300;
                unsigned long long total;
                char kind[8];
                /* avg10 is a percentage: a line with a negative, NAN or
                 * larger one is not the kernel's and is skipped */
                if (sscanf(p, "%7s avg10=%lf avg60=%lf avg300=%lf total=%llu", kind, &a10, &a60, &a300, &total) == 5 &&
                    a10 >= 0 && a10 <= 100) {
                        if (strcmp(kind, "some") == 0) {
                                psi->some_avg10 = a10;
                                psi->some_total.value = total;
                                some = true;
                        } else if (strcmp(kind, "full") == 0) {
                                psi->full_avg10 = a10;
                                psi->full_total.value = total;
                                full = true;
                        }
                }
                p = strchrnul(p, '\n');
                if (*p)
                        p++;
        }
        psi->present = some;
        (void) full; /* "full" is absent on old kernels; some alone is enough */
        return some ? 0 : -EBADMSG;
}

int mthp_stat_index(const struct mthp_size *sz, const char *name) {
        for (unsigned i = 0; i < sz->n_stats; i++)
                if (strcmp(sz->stats[i], name) == 0)
                        return (int) i;
        return -ENOENT;
}

double mthp_stat_rate(const struct mthp_caps *caps, const struct mthp_snapshot *snap, unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 ? 0 : snap->size[i].stat[j].rate;
}

void mthp_snapshot_derive(const struct mthp_caps *caps, struct mthp_snapshot *snap) {
        /* pgfault counts fault events; a fault that maps an N-page folio is one
         * event but brings in N pages. Add the N-1 extra pages per mTHP (and
         * PMD) allocation so that demand stays level when folios grow. */
        double pages = snap->vm[MTHP_VM_PGFAULT].rate;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                snap->kind_pages_rate[k] = snap->kind_alloc_rate[k] = snap->kind_fallback_rate[k] = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                double npages = (double) caps->sizes[i].kb / mthp_caps_page_kb(caps);
                double anon = mthp_stat_rate(caps, snap, i, "anon_fault_alloc");
                double shmem = mthp_stat_rate(caps, snap, i, "shmem_alloc");
                snap->kind_pages_rate[MTHP_ANON] += anon * npages;
                snap->kind_pages_rate[MTHP_SHMEM] += shmem * npages;
                snap->kind_alloc_rate[MTHP_ANON] += anon;
                snap->kind_alloc_rate[MTHP_SHMEM] += shmem;
                snap->kind_fallback_rate[MTHP_ANON] += mthp_stat_rate(caps, snap, i, "anon_fault_fallback");
                snap->kind_fallback_rate[MTHP_SHMEM] += mthp_stat_rate(caps, snap, i, "shmem_fallback");
                /* since 6.18 a shmem fault maps the whole folio too (one
                 * pgfault for N pages); tmpfs write(2) allocations are counted
                 * here as well, which only overstates demand for tmpfs I/O */
                pages += anon * (npages - 1) + shmem * (npages - 1);
        }
        snap->fault_pages_rate = pages;
}

int mthp_sampler_take(struct mthp_sampler *s, uint64_t t_usec, struct mthp_snapshot *snap) {
        const struct mthp_caps *caps = s->caps;
        const struct mthp_snapshot *prev = s->have_prev ? &s->prev : NULL;
        char buf[16384];
        int r;

        memset(snap, 0, sizeof(*snap));
        snap->t_usec = t_usec;
        snap->tick = prev ? prev->tick + 1 : 0;
        snap->dt = prev && t_usec > prev->t_usec ? (double) (t_usec - prev->t_usec) / 1e6 : 0;

        r = read_hot(s, &s->vmstat_fd, "/proc/vmstat", buf, sizeof(buf), false);
        if (r < 0)
                return r;
        uint64_t vm[_MTHP_VM_MAX];
        bool seen[_MTHP_VM_MAX];
        mthp_parse_vmstat(buf, vm, seen);
        for (int i = 0; i < _MTHP_VM_MAX; i++)
                if (seen[i])
                        mthp_counter_update(&snap->vm[i], prev ? &prev->vm[i] : NULL, vm[i], snap->dt);

        r = read_hot(s, &s->meminfo_fd, "/proc/meminfo", buf, sizeof(buf), true);
        if (r < 0)
                return r;
        mthp_parse_meminfo(buf, &snap->mem);

        /* PSI can be absent (CONFIG_PSI=n, psi=0 on the command line): mark it
         * absent and carry on. */
        if (caps->psi && read_hot(s, &s->psi_fd, "/proc/pressure/memory", buf, sizeof(buf), true) > 0 &&
            mthp_parse_psi(buf, &snap->psi) == 0) {
                uint64_t some = snap->psi.some_total.value, full = snap->psi.full_total.value;
                mthp_counter_update(&snap->psi.some_total, prev ? &prev->psi.some_total : NULL, some, snap->dt);
                mthp_counter_update(&snap->psi.full_total, prev ? &prev->psi.full_total : NULL, full, snap->dt);
        } else
                snap->psi.present = false;

        bool cold = !prev || snap->tick % COLD_TICKS == 0;
        double cold_dt = s->have_cold && t_usec > s->cold_t_usec ? (double) (t_usec - s->cold_t_usec) / 1e6 : 0;
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size *sz = &caps->sizes[i];
                for (unsigned j = 0; j < sz->n_stats; j++) {
                        char path[MTHP_PATH_MAX + MTHP_STAT_NAME_MAX];
                        char v[64];
                        bool hot = mthp_stat_is_hot(sz->stats[j]) && !s->idle;
                        if (!hot && !cold) {
                                snap->size[i].stat[j] = prev->size[i].stat[j]; /* as last read */
                                snap->size[i].stat[j].reset = false;
                                continue;
                        }
                        path[0] = 0;   /* formatted only to reopen: 1% of mthpd's CPU a tick, under pgbench */
                        if (s->stat_fd[i][j] < 0)
                                snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/stats/%s", sz->kb,
                                         sz->stats[j]);
                        if (read_hot(s, &s->stat_fd[i][j], path, v, sizeof(v), true) <= 0)
                                continue;   /* stays !present: no rate this tick */
                        if (hot && s->hot_fresh)
                                mthp_counter_update(&snap->size[i].stat[j], prev ? &prev->size[i].stat[j] : NULL,
                                                    strtoull(v, NULL, 10), snap->dt);
                        else
                                mthp_counter_update(&snap->size[i].stat[j], s->have_cold ? &s->cold[i].stat[j] : NULL,
                                                    strtoull(v, NULL, 10), cold_dt);
                }
                if (cold)
                        s->cold[i] = snap->size[i];
        }
        if (cold) {
                s->cold_t_usec = t_usec;
                s->have_cold = true;
        }
        s->hot_fresh = !s->idle;

        for (unsigned i = 0; i < caps->n_knobs; i++) {
                if (read_hot(s, &s->knob_fd[i], caps->knobs[i].path, buf, 256, true) <= 0 ||
                    mthp_knob_value(&caps->knobs[i], buf, snap->knob[i]) < 0)
                        snap->knob[i][0] = 0;
        }

        mthp_snapshot_derive(caps, snap);
        s->prev = *snap;
        s->have_prev = true;
        return 0;
}
