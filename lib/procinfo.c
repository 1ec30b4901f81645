/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mthp/procinfo.h"
#include "mthp/taskstats.h"
#include "mthp/util.h"

#define PREV_MAX (MTHP_DENSITY_PROCS * 4)

struct mthp_procinfo {
        const struct mthp_host *host;
        const struct mthp_caps *caps;
        struct mthp_taskstats *ts;       /* NULL: no taskstats here */
        struct mthp_delays prev[PREV_MAX];
        unsigned n_prev, next_slot;
};

int mthp_procinfo_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_procinfo **ret) {
        struct mthp_procinfo *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->host = h;
        p->caps = caps;
        /* taskstats answers about the real kernel only: not for a fake root */
        if (h->real && mthp_taskstats_open_at(h, &p->ts) < 0)
                p->ts = NULL;
        *ret = p;
        return 0;
}

void mthp_procinfo_free(struct mthp_procinfo *p) {
        if (!p)
                return;
        mthp_taskstats_close(p->ts);
        free(p);
}

int mthp_procinfo_parse_cgroup(const char *text, enum mthp_cg_layout layout, char *memcg, size_t size) {
        /* lines "ID:CONTROLLERS:PATH"; v2 is "0::PATH"; v1 memory names it */
        const char *p = text;
        while (*p) {
                const char *eol = strchrnul(p, '\n');
                const char *c1 = memchr(p, ':', (size_t) (eol - p));
                const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t) (eol - c1 - 1)) : NULL;
                if (c2) {
                        bool match = false;
                        if (layout == MTHP_CG_V2)
                                match = c2 == c1 + 1;
                        else {
                                for (const char *t = c1 + 1; t < c2;) {
                                        const char *e = memchr(t, ',', (size_t) (c2 - t));
                                        if (!e)
                                                e = c2;
                                        if (e - t == 6 && strncmp(t, "memory", 6) == 0)
                                                match = true;
                                        t = e + 1;
                                }
                        }
                        if (match) {
                                size_t len = (size_t) (eol - c2 - 1);
                                if (len >= size)
                                        return -ENAMETOOLONG;
                                memcpy(memcg, c2 + 1, len);
                                memcg[len] = 0;
                                return 0;
                        }
                }
                p = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

static uint64_t read_u64(const struct mthp_host *h, const char *path, bool *ok) {
        char buf[64];
        *ok = false;
        if (mthp_host_read(h, path, buf, sizeof(buf)) <= 0)
                return 0;
        if (strncmp(buf, "max", 3) == 0)
                return UINT64_MAX;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (end == buf || errno)
                return 0;
        *ok = true;
        return v;
}

/* The limit the cgroup runs into first, walking up the hierarchy: the
 * nearest ancestor's limit binds too. */
static void read_memcg(struct mthp_procinfo *p, struct mthp_proc_density *pd) {
        const struct mthp_caps *caps = p->caps;
        char path[MTHP_PATH_MAX + 512], text[2048], cg[256];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", pd->pid);
        if (!caps->cg_memory[0] || mthp_host_read(p->host, path, text, sizeof(text)) <= 0)
                return;
        bool v2 = caps->cg_layout == MTHP_CG_V2;
        if (mthp_procinfo_parse_cgroup(text, caps->cg_layout, cg, sizeof(cg)) < 0)
                return;
        mthp_strcpy(pd->cgroup, sizeof(pd->cgroup), cg);
        bool ok;
        snprintf(path, sizeof(path), "%s%s/%s", caps->cg_memory, strcmp(cg, "/") ? cg : "",
                 v2 ? "memory.current" : "memory.usage_in_bytes");
        uint64_t usage = read_u64(p->host, path, &ok);
        if (!ok)
                return;
        pd->cg_usage_kb = usage / 1024;
        uint64_t limit = UINT64_MAX;
        for (char *end = cg + strlen(cg);;) {
                static const char *const v2_files[] = { "memory.max", "memory.high" };
                static const char *const v1_files[] = { "memory.limit_in_bytes" };
                const char *const *files = v2 ? v2_files : v1_files;
                for (size_t i = 0; i < (v2 ? 2u : 1u); i++) {
                        snprintf(path, sizeof(path), "%s%s/%s", caps->cg_memory, cg, files[i]);
                        uint64_t l = read_u64(p->host, path, &ok);
                        if (ok && l < limit)
                                limit = l;
                }
                if (end == cg)
                        break;
                while (end > cg && *end != '/')
                        end--;
                *end = 0;
        }
        /* v1 reports "no limit" as a huge page-rounded number */
        if (limit != UINT64_MAX && limit < (1ULL << 60))
                pd->cg_limit_kb = limit / 1024;
}

static struct mthp_delays *find_prev(struct mthp_procinfo *p, int pid) {
        for (unsigned i = 0; i < p->n_prev; i++)
                if ((int) p->prev[i].tgid == pid)
                        return &p->prev[i];
        return NULL;
}

void mthp_procinfo_enrich(struct mthp_procinfo *p, struct mthp_density_view *v) {
        for (unsigned i = 0; i < v->n_procs; i++) {
                struct mthp_proc_density *pd = &v->proc[i];
                pd->compact_ms = pd->thrash_ms = pd->reclaim_ms = NAN;
                pd->cgroup[0] = 0;
                pd->cg_usage_kb = pd->cg_limit_kb = 0;
                read_memcg(p, pd);
                if (!p->ts)
                        continue;
                struct mthp_delays cur;
                int r = mthp_taskstats_query_tgid(p->ts, pd->pid, &cur);
                if (r < 0 && r != -EOPNOTSUPP)
                        continue;
                struct mthp_delays *prev = find_prev(p, pd->pid);
                struct mthp_delay_rates rates;
                if (r == 0 && prev && mthp_delays_rates(prev, &cur, &rates) == 0) {
                        if (rates.present & (1u << MTHP_DELAY_COMPACT))
                                pd->compact_ms = rates.rate[MTHP_DELAY_COMPACT].ms_per_sec;
                        if (rates.present & (1u << MTHP_DELAY_THRASHING))
                                pd->thrash_ms = rates.rate[MTHP_DELAY_THRASHING].ms_per_sec;
                        if (rates.present & (1u << MTHP_DELAY_RECLAIM))
                                pd->reclaim_ms = rates.rate[MTHP_DELAY_RECLAIM].ms_per_sec;
                }
                if (r == 0) {
                        if (!prev) {
                                prev = &p->prev[p->next_slot];
                                p->next_slot = (p->next_slot + 1) % PREV_MAX;
                                if (p->n_prev < PREV_MAX)
                                        p->n_prev++;
                        }
                        *prev = cur;
                }
        }
}
