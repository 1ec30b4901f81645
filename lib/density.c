/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "mthp/density.h"
#include "mthp/util.h"

#include "density-internal.h"
#include "pagecache.h"

/* ---- construction ---- */

void mthp_density_budget_default(struct mthp_density_budget *b) {
        *b = (struct mthp_density_budget) {
                .max_procs = 8,
                .max_scan = 1024,
                .max_hot = 64,
                .min_hot_rate = 100,   /* MinProcessFaultRate's default */
                .max_rescan = 128,
                .max_quiet = 1,
                .max_pages_per_tick = 131072,
                .max_pages_per_proc = 16384,
                .reads_per_window = 4,
                .max_usec = 5000,
                .seed = 0x6d746870,
        };
}

/* Does pagemap show us PFNs (CAP_SYS_ADMIN)? Asked of a page of our own,
 * once: a zero PFN of another process's page could be a real page 0. */
static bool own_pfn_visible(const struct mthp_host *h) {
        static volatile char page[PAGE] __attribute__((aligned(PAGE)));
        uint64_t e = 0;
        page[0] = 1;
        _cleanup_close_ int fd = mthp_host_open_file(h, "/proc/self/pagemap", O_RDONLY);
        if (fd < 0)
                return false;
        ssize_t n = pread(fd, &e, sizeof(e), (off_t) ((uintptr_t) page / PAGE * sizeof(e)));
        return n == (ssize_t) sizeof(e) && (e & PM_PRESENT) && (e & PM_PFN_MASK) != 0;
}

static int cmp_unsigned(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

int mthp_density_new(const struct mthp_host *h, const unsigned *sizes_kb, unsigned n_sizes,
                     const struct mthp_density_budget *budget, struct mthp_density_sampler **ret) {
        struct mthp_density_budget b;
        unsigned kb[MTHP_SIZES_MAX], n = 0;

        if (!h || !sizes_kb || n_sizes == 0 || n_sizes > MTHP_SIZES_MAX)
                return -EINVAL;
        if (sysconf(_SC_PAGESIZE) != PAGE)
                return -EOPNOTSUPP;
        memcpy(kb, sizes_kb, n_sizes * sizeof(*kb));
        qsort(kb, n_sizes, sizeof(*kb), cmp_unsigned);
        for (unsigned i = 0; i < n_sizes; i++) {
                if (kb[i] < 8 || kb[i] > MTHP_DENSITY_MAX_KB || (kb[i] & (kb[i] - 1)))
                        return -EINVAL;
                if (n == 0 || kb[n - 1] != kb[i])
                        kb[n++] = kb[i];
        }
        if (budget)
                b = *budget;
        else
                mthp_density_budget_default(&b);
        unsigned wpages = kb[n - 1] * 1024 / PAGE;
        if (b.max_procs == 0 || b.max_scan == 0 || b.max_usec == 0 || b.max_pages_per_proc < wpages ||
            b.max_pages_per_tick < wpages || b.reads_per_window > WIN_PAGES_MAX)
                return -EINVAL;

        struct mthp_density_sampler *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->host = h;
        s->b = b;
        s->n_sizes = n;
        for (unsigned i = 0; i < n; i++) {
                s->kb[i] = kb[i];
                s->bp[i] = kb[i] * 1024 / PAGE;
                s->lbp[i] = (unsigned) __builtin_ctz(s->bp[i]);
        }
        s->wpages = wpages;
        s->wbytes = (uint64_t) wpages * PAGE;
        s->rng = b.seed;
        s->probe_rng = b.seed ^ 0xd1b54a32d192ed03ULL;   /* not splitmix64's step: XOR of it could be a shift */
        mthp_proc_scan_init(&s->ps, h);
        s->self = getpid();
        s->cap_fowner = mthp_cap_fowner();
        /* folio sizes of shmem pages: root on the real host only */
        s->kpf_fd = h->real ? mthp_host_open_file(h, "/proc/kpageflags", O_RDONLY) : -1;
        if (s->kpf_fd < 0)
                s->kpf_fd = -1;
        s->pfn_hidden = s->kpf_fd >= 0 && !own_pfn_visible(h);
        s->procs = calloc(b.max_procs, sizeof(*s->procs));
        s->rbuf = aligned_alloc(PAGE, READ_BATCH * PAGE);
        s->vmf = calloc(VMF_CACHE, sizeof(*s->vmf));
        s->maps = calloc(MAPS_CACHE, sizeof(*s->maps));
        if (!s->procs || !s->rbuf || !s->vmf || !s->maps) {
                mthp_density_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

void mthp_density_free(struct mthp_density_sampler *s) {
        if (!s)
                return;
        mthp_proc_scan_free(&s->ps);
        if (s->kpf_fd >= 0)
                close(s->kpf_fd);
        free(s->targets);
        free(s->procs);
        free(s->text);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                free(s->reg[k]);
        free(s->recs);
        free(s->listed);
        free(s->rbuf);
        free(s->vmf);
        for (unsigned i = 0; s->maps && i < MAPS_CACHE; i++)
                free(s->maps[i].m);
        free(s->maps);
        free(s);
}

int mthp_density_set_targets(struct mthp_density_sampler *s, const struct mthp_density_target *t, size_t n) {
        struct mthp_density_target *copy = NULL;

        for (size_t i = 0; i < n; i++)
                if (t[i].pid <= 0 || (t[i].end && t[i].end <= t[i].start))
                        return -EINVAL;
        if (n) {
                copy = malloc(n * sizeof(*copy));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, t, n * sizeof(*copy));
        }
        free(s->targets);
        s->targets = copy;
        s->n_targets = n;
        return 0;
}

void mthp_density_set_fault_samples(struct mthp_density_sampler *s, const struct mthp_fault_sample *v, size_t n) {
        s->faults = n ? v : NULL;
        s->n_faults = v ? n : 0;
}

void mthp_density_set_first(struct mthp_density_sampler *s, const int *pids, size_t n) {
        s->n_first = 0;
        for (size_t i = 0; pids && i < n && s->n_first < MTHP_DENSITY_FIRST_MAX; i++)
                if (pids[i] > 0)
                        s->first[s->n_first++] = pids[i];
}

void mthp_density_set_young(struct mthp_density_sampler *s, uint64_t wait_usec, uint64_t stake_kb) {
        s->young_usec = wait_usec;
        s->young_stake_kb = stake_kb;
}

/* sample_proc: young and small (mthp_density_set_young), not sampled */
#define YOUNG_WAITS 1

/* Does e wait, young and small? From what the scan read of it: -1 no
 * (old enough, or it faults its stake in a second: sampled), 0 yes (its
 * whole RSS is under the stake), 1 young with an RSS that reaches the
 * stake: its anon and shmem RSS (status, which sample_proc reads first)
 * decide. /proc/uptime is read once a tick, at the first candidate that
 * needs it: ages are in the host's boot clock, as stat's start time is. */
static int young_check(struct mthp_density_sampler *s, const struct mthp_proc_entry *e) {
        const double page_kb = MTHP_DENSITY_PAGE / 1024.0;
        if (!s->young_usec || e->rate * page_kb >= (double) s->young_stake_kb)
                return -1;
        if (isnan(s->uptime)) {
                char buf[128];
                s->uptime = mthp_host_read(s->host, "/proc/uptime", buf, sizeof(buf)) > 0 ? strtod(buf, NULL) : -1;
        }
        if (!(s->uptime > 0) || s->ps.clk_tck <= 0)
                return -1;   /* no age: sampled, as before */
        double age = s->uptime - (double) e->starttime / (double) s->ps.clk_tck;
        if (age * 1e6 >= (double) s->young_usec)
                return -1;
        return (double) e->rss_pages * page_kb < (double) s->young_stake_kb ? 0 : 1;
}

/* The processes set first (mthp_density_set_first) that are in the table,
 * in that order, then the rest of order[0, nc) as ranked. Leads leave the
 * tick's last process slot to the ranked ones (the busiest process is not
 * crowded out). order holds room for every entry of the table. */
static size_t put_first(struct mthp_density_sampler *s, size_t *order, size_t nc, size_t *led_by) {
        size_t lead[MTHP_DENSITY_FIRST_MAX], n_lead = 0;
        size_t cap = s->b.max_procs > 1 ? s->b.max_procs - 1 : 1;
        for (size_t f = 0; f < s->n_first && n_lead < cap; f++)
                for (size_t i = 0; i < s->ps.n_tab; i++) {
                        const struct mthp_proc_entry *e = &s->ps.tab[i];
                        if (e->pid != s->first[f] || !e->seen || e->kthread || e->zombie ||
                            (s->host->real && e->pid == s->self))
                                continue;
                        bool dup = false;
                        for (size_t j = 0; j < n_lead; j++)
                                dup |= lead[j] == i;
                        if (!dup)
                                lead[n_lead++] = i;
                        break;
                }
        *led_by = n_lead;
        if (!n_lead)
                return nc;
        size_t k = 0;
        for (size_t j = 0; j < nc; j++) {   /* the ranked rest, without the lead */
                bool led = false;
                for (size_t l = 0; l < n_lead; l++)
                        led |= order[j] == lead[l];
                if (!led)
                        order[k++] = order[j];
        }
        memmove(order + n_lead, order, k * sizeof(*order));
        memcpy(order, lead, n_lead * sizeof(*order));
        return n_lead + k;
}

/* The run of pid's fault samples: [*lo, *hi). */
static void fault_run(const struct mthp_density_sampler *s, pid_t pid, size_t *lo, size_t *hi) {
        size_t a = 0, b = s->n_faults;
        while (a < b) {   /* first sample with a pid >= this one */
                size_t m = a + (b - a) / 2;
                if (s->faults[m].pid < pid)
                        a = m + 1;
                else
                        b = m;
        }
        *lo = *hi = a;
        while (*hi < s->n_faults && s->faults[*hi].pid == pid)
                (*hi)++;
}

/* Counts the samples that fall in [start, end) under kind (< 0: other).
 * maps lines come in address order, so one pass serves a process. */
static void count_faults(const struct mthp_density_sampler *s, struct proc_ctx *c, uint64_t start, uint64_t end,
                         int kind) {
        while (c->fs_next < c->fs_end && s->faults[c->fs_next].addr < start)
                c->fs_next++;   /* in no mapping (unmapped since): not counted */
        for (; c->fs_next < c->fs_end && s->faults[c->fs_next].addr < end; c->fs_next++) {
                if (kind >= 0)
                        c->fs_kind[kind]++;
                else
                        c->fs_other++;
        }
}

/* The /proc scan gets at most half of the tick's time. */
static bool scan_stop(void *user) {
        struct mthp_density_sampler *s = user;
        return density_spent(s, s->b.max_usec / 2);
}

/* ---- one process ---- */

static void rss_cb(void *user, const char *key, unsigned long long value) {
        struct proc_ctx *c = user;
        if (strcmp(key, "VmSize") == 0) {
                c->vm_kb = value;
                return;
        }
        if (strcmp(key, "THP_enabled") == 0) {
                /* 0 after PR_SET_THP_DISABLE (6.18: without
                 * PR_THP_DISABLE_EXCEPT_ADVISED, which leaves 1) */
                c->thp_disabled = value == 0;
                return;
        }
        int k = strcmp(key, "RssAnon") == 0 ? MTHP_ANON : strcmp(key, "RssShmem") == 0 ? MTHP_SHMEM : -1;
        if (k >= 0) {
                c->rss[k] = value * 1024;
                c->rss_known[k] = true;
        }
}

/* Of up to MTHP_DENSITY_SHM_PROBES present pages of the largest shmem
 * mapping, evenly spread from an offset drawn each time, how many sit in a
 * large folio. The offset moves the points from tick to tick: fixed
 * points (the middle of each sixteenth) see the same pages every tick,
 * and a part filled at 4K between them never. PostgreSQL's shared
 * structures, 38 MiB of a 1.1 GiB segment, are filled at 4K before any
 * raise; when the raise went straight to 2M the pool around them read
 * PMD-mapped at every tick, and in 5 runs of 6 the repair never started:
 * 40-42 MiB of the segment stayed at 4K all run (pgbench -S,
 * MaxBloat=60%). Where the mapping
 * is PMD-aligned and the kernel has PAGEMAP_SCAN, with PFNs or not:
 * whether the page is PMD-mapped (PAGE_IS_HUGE), one ioctl a page; the 2M
 * repair acts on aligned mappings alone, and must not take a 512K folio
 * (the raise's first probe leaves them) for a 2M one, which kpageflags
 * cannot tell apart. Elsewhere, with PFNs (root): kpageflags COMPOUND_HEAD
 * or COMPOUND_TAIL, a few preads; without them (the unit grants no
 * CAP_SYS_ADMIN) nothing. A 2M folio faulted in an aligned VMA is
 * mapped by a PMD (finish_fault and filemap_map_pmd call do_set_pmd on an
 * empty PMD), so a present page that is not is in a smaller folio, which
 * is what the 2M repair needs to know; the exceptions (THP disabled for the
 * VMA, a page table already at that PMD) are PTE-mapped 2M folios that
 * MADV_COLLAPSE maps by PMD at little cost. Unknown (sampled 0) otherwise. */
static void probe_shm_folios(struct mthp_density_sampler *s, struct proc_ctx *c) {
        struct mthp_shm_mapping *m = &c->shm;
        bool by_pmd = s->scan == 1 && m->align_kb >= MTHP_DENSITY_MAX_KB;
        bool kpf = !by_pmd && s->kpf_fd >= 0 && !s->pfn_hidden;
        if (m->bytes == 0 || (!kpf && !by_pmd))
                return;
        /* by PMD mapping: only the whole 2M blocks (aligned, so from addr) can be */
        uint64_t bytes = kpf ? m->bytes : m->bytes & ~((uint64_t) MTHP_DENSITY_MAX_KB * 1024 - 1);
        uint64_t pages = bytes / PAGE, step = pages / MTHP_DENSITY_SHM_PROBES;
        if (step == 0)
                step = 1;
        for (uint64_t i = density_rng_below(&s->probe_rng, step); i < pages && m->sampled < MTHP_DENSITY_SHM_PROBES;
             i += step) {
                uint64_t a = m->addr + i * PAGE;
                if (kpf) {
                        uint64_t f;
                        int r = density_page_flags(s, c->fd, a, &f);
                        if (r == -ENOENT)
                                continue;
                        if (r < 0)
                                return;
                        m->sampled++;
                        m->probe = MTHP_SHM_PROBE_KPAGEFLAGS;
                        if (f & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL))
                                m->large++;
                } else {
                        struct page_region g;
                        int r = mthp_pagemap_scan(c->fd, a, a + PAGE, &g, 1, 1, PAGE_IS_PRESENT,
                                                  PAGE_IS_PRESENT | PAGE_IS_HUGE, NULL);
                        if (r < 0)
                                return;
                        if (r == 0)
                                continue;
                        m->sampled++;
                        m->probe = MTHP_SHM_PROBE_PMD;
                        if (g.categories & PAGE_IS_HUGE)
                                m->large++;
                }
        }
}

static int collect_regions(struct mthp_density_sampler *s, struct proc_ctx *c, const struct mthp_density_target *t) {
        const struct maps_entry *me = c->maps;

        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                s->n_reg[k] = 0;
        size_t j = 0;   /* the hg/nh ranges are in address order too: one pass */
        for (size_t i = 0; i < me->n; i++) {
                const struct cmap *m = &me->m[i];
                int kind = m->kind;
                while (c->vmf && j < c->vmf->n && c->vmf->r[j].end <= m->start)
                        j++;
                unsigned flags = c->vmf && j < c->vmf->n && c->vmf->r[j].start <= m->start ? c->vmf->r[j].flags : 0;
                /* a fault in an nh mapping is one no size changes */
                count_faults(s, c, m->start, m->end, kind >= 0 && !(flags & MTHP_VMA_NOHUGEPAGE) ? kind : -1);
                if (kind < 0)
                        continue;
                uint64_t a = m->start, b = m->end;
                if (t && t->end) {
                        a = a > t->start ? a : t->start;
                        b = b < t->end ? b : t->end;
                }
                a = (a + PAGE - 1) & ~(uint64_t) (PAGE - 1);
                b &= ~(uint64_t) (PAGE - 1);
                if (a < b && (flags & MTHP_VMA_NOHUGEPAGE)) {
                        /* no large folio here whatever the knobs say */
                        c->nohuge_span[kind] += b - a;
                } else if (a < b) {
                        int r = mthp_grow((void **) &s->reg[kind], &s->cap_reg[kind], s->n_reg[kind] + 1,
                                          sizeof(struct region));
                        if (r < 0)
                                return r;
                        /* shmem folios align in the file, anon ones in the address space */
                        s->reg[kind][s->n_reg[kind]++] = (struct region) {
                                .start = a,
                                .end = b,
                                .delta = kind == MTHP_SHMEM ? m->offset - m->start : 0,
                                .hg = flags & MTHP_VMA_HUGEPAGE,
                                .map_start = m->start,
                                .map_end = m->end,
                                .map_off = m->offset,
                                .obj_fd = -1,
                        };
                        c->span[kind] += b - a;
                        if (flags & MTHP_VMA_HUGEPAGE)
                                c->advised_span[kind] += b - a;
                        if (kind == MTHP_SHMEM && m->end - m->start > c->shm.bytes)
                                c->shm = (struct mthp_shm_mapping) {
                                        .addr = m->start,
                                        .bytes = m->end - m->start,
                                        .align_kb = m->align_kb,
                                        .reach = m->reach,
                                };
                }
        }
        return 0;
}

/* Is the process still there? A pagemap whose mm is gone reads as empty. */
static int still_alive(int fd) {
        uint64_t e;
        ssize_t k = pread(fd, &e, sizeof(e), 0);
        if (k < 0)
                return -errno;
        return k == sizeof(e) ? 0 : -ESRCH;
}

/* zero_data_fraction speaks only for windows that read data making up this
 * much of those read: a program that writes zeros into a 128 MiB buffer
 * (page_fault1) has data only in its heap and stack, whose few small
 * blocks read zeros beside data (0.42-0.75 at 16K-64K, measured
 * under will-it-scale page_fault1) and say nothing of the buffer. A byte
 * every 64K of 2M folios reads data in 23% of its windows (4 reads a
 * window); a byte every 256K in 6%. */
#define ZERO_DATA_MIN_SHARE 0.05

static struct mthp_density_size size_of(unsigned kb, const struct acc *a) {
        return (struct mthp_density_size) {
                .kb = kb,
                .blocks = a->blocks,
                .coverage = a->cov_den > 0 ? a->cov_num / a->cov_den : NAN,
                .full_blocks = a->full,
                .read_pages = a->read,
                .zero_pages = a->zero,
                .zero_base_pages = a->zero_base,
                /* over every full block read: an all-zero mapping's
                 * subpages count as touched (content is not use), so a
                 * zero-writer's small heap and stack do not speak for its
                 * buffer of zeros; NAN where no mapping read held data */
                .zero_fraction = a->zero_den > 0 ? a->zero_num / a->read_den : NAN,
                .zero_data_fraction = a->zd_den > 0 && a->zd_den >= ZERO_DATA_MIN_SHARE * a->read_den
                                              ? a->zd_num / a->zd_den : NAN,
        };
}

static void fold(struct mthp_density_sampler *s, struct proc_ctx *c, struct mthp_density_proc *out) {
        for (size_t j = 0; j < s->n_recs; j++) {
                const struct window_rec *rec = &s->recs[j];
                /* Content is not use: a mapping whose every subpage read holds
                 * only zeros may be untouched or written with zeros (calloc,
                 * memset, will-it-scale's page_fault1), so it says nothing of
                 * bloat. Zeros count only in mappings that hold some data;
                 * the subpages of the others count as touched (read_den). */
                bool data = s->reg[rec->kind][rec->reg].data, hg = s->reg[rec->kind][rec->reg].hg;
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        if (!rec->read[i])
                                continue;
                        for (int part = 0; part < 1 + hg; part++) {
                                struct acc *a = part ? &s->acc_hg[rec->kind][i] : &s->acc[rec->kind][i];
                                a->read += rec->read[i];
                                a->zero += rec->zero[i];
                                a->zero_base += rec->zero_base[i];
                                a->read_den += rec->u * rec->full_present[i];
                                if (!data)
                                        continue;
                                /* zeros in base-page folios were touched */
                                double zn = rec->u * rec->full_present[i] * (rec->zero[i] - rec->zero_base[i]) /
                                            rec->read[i];
                                a->zero_num += zn;
                                a->zero_den += rec->u * rec->full_present[i];
                                /* this window read data (or a zero in a base
                                 * page: touched, as zn counts it) */
                                if (rec->zero[i] - rec->zero_base[i] < rec->read[i]) {
                                        a->zd_num += zn;
                                        a->zd_den += rec->u * rec->full_present[i];
                                }
                        }
                }
        }
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                struct mthp_density_kind *o = &out->kind[k];
                o->mapped_bytes = c->span[k];
                o->rss_bytes = c->rss[k];
                o->windows = c->windows[k];
                o->object_windows = k == MTHP_SHMEM ? c->object_windows : 0;
                o->census = c->census[k];
                o->nohuge_bytes = c->nohuge_span[k];
                o->nohuge_rss_bytes = c->nohuge_rss[k];
                o->advised_bytes = c->advised_span[k];
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        o->size[i] = size_of(s->kb[i], &s->acc[k][i]);
                        o->advised[i] = size_of(s->kb[i], &s->acc_hg[k][i]);
                }
        }
        out->pages_examined = c->examined;
        out->pages_read = c->reads;
        out->complete = !c->cut;
}

/* The rest of a process's report, and what it cost. */
static void proc_done(const struct mthp_proc_entry *e, const struct proc_ctx *c, struct mthp_density_proc *out,
                      uint64_t t0, uint64_t t0_cpu) {
        out->pid = e->pid;
        memcpy(out->comm, e->comm, sizeof(out->comm));
        out->minflt_rate = e->rate;
        out->rate_from_lifetime = e->from_lifetime;
        out->utime_rate = e->utime_rate;
        out->stime_rate = e->stime_rate;
        out->cpu_known = e->cpu_known && !e->from_lifetime;
        out->thp_disabled = c->thp_disabled;
        /* measured as the tick's cost is (elapsed_usec): CPU time, at least a
         * quarter of the wall time, so a process never costs more than its tick */
        uint64_t cpu = (mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID) - t0_cpu) / 1000, wall = (mthp_now_nsec(CLOCK_MONOTONIC) - t0) / 1000;
        out->usec = cpu > wall / 4 ? cpu : wall / 4;
}

static int sample_proc_regions(struct mthp_density_sampler *s, struct proc_ctx *c, int dfd,
                               const struct mthp_proc_entry *e, struct mthp_density_proc *out, uint64_t t0,
                               uint64_t t0_cpu);

/* young: the status read decides whether it waits (young_check 1):
 * YOUNG_WAITS before anything else is read */
static int sample_proc(struct mthp_density_sampler *s, struct mthp_proc_entry *e, const struct mthp_density_target *t,
                       bool young, struct mthp_density_proc *out) {
        uint64_t t0 = mthp_now_nsec(CLOCK_MONOTONIC), t0_cpu = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        struct proc_ctx c = { .pid = e->pid, .fd = -1, .dfd = -1, .unlisted = e->unlisted };
        char path[32];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "/proc/%d", (int) e->pid);
        /* everything below is read through this directory: if the PID is
         * reused meanwhile, the reads fail instead of reading someone else */
        _cleanup_close_ int dfd = mthp_host_open_file(s->host, path, O_PATH | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        r = density_read_all(s, dfd, "status", &len);
        if (r < 0)
                return r;
        mthp_parse_kv(s->text, rss_cb, &c);
        if (young && (double) (c.rss[MTHP_ANON] + c.rss[MTHP_SHMEM]) / 1024 < (double) s->young_stake_kb)
                return YOUNG_WAITS;
        if (c.thp_disabled && !s->b.measure_thp_disabled) {
                /* no large folio for it whatever the knobs say: nothing to measure */
                memset(s->acc, 0, sizeof(s->acc));
                memset(s->acc_hg, 0, sizeof(s->acc_hg));
                s->n_recs = 0;
                memset(out, 0, sizeof(*out));
                fold(s, &c, out);
                proc_done(e, &c, out, t0, t0_cpu);
                return 0;
        }
        fault_run(s, e->pid, &c.fs_next, &c.fs_end);
        r = density_read_mappings(s, dfd, e, &c);
        for (int k = 0; r == 0 && c.vmf && k < _MTHP_KIND_MAX; k++)
                c.nohuge_rss[k] = (uint64_t) ((double) c.rss[k] * c.vmf->nh_share[k]);
        if (r < 0)
                return r;
        r = collect_regions(s, &c, t);
        if (r < 0)
                return r;
        c.dfd = dfd;
        r = sample_proc_regions(s, &c, dfd, e, out, t0, t0_cpu);
        /* the shmem objects opened for it: an fd or a view of ours would
         * keep a segment the process frees alive */
        density_object_release(s);
        return r;
}

/* The rest of sample_proc, once the process's regions are known. */
static int sample_proc_regions(struct mthp_density_sampler *s, struct proc_ctx *c, int dfd,
                               const struct mthp_proc_entry *e, struct mthp_density_proc *out, uint64_t t0,
                               uint64_t t0_cpu) {
        int r = 0;
        _cleanup_close_ int fd = openat(dfd, "pagemap", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        c->fd = fd;
        /* also keeps PAGEMAP_SCAN away from an mm-less pagemap, which
         * crashed kernels before the fix for it */
        r = still_alive(fd);
        if (r < 0)
                return r;
        if (s->scan == 0) {
                size_t n = 0;
                /* ENOTTY (before 6.7, or a fake tree) or EINVAL: read pagemap
                 * entries from now on; another error (the process exiting)
                 * asks again on the next process, lest the shmem probe fall
                 * back to kpageflags for good */
                int q = density_pm_scan(s, fd, 0, PAGE, 1, 1, &n);
                if (q == 0)
                        s->scan = 1;
                else if (q == -ENOTTY || q == -EINVAL || q == -EOPNOTSUPP)
                        s->scan = -1;
        }
        c->can_read = s->host->real && s->b.reads_per_window > 0;
        probe_shm_folios(s, c);

        /* split the draws between the kinds by resident size (by span if
         * status does not say); a kind with nothing resident is skipped */
        uint64_t draws = s->b.max_pages_per_proc / density_window_cost(s, c);
        uint64_t weight[_MTHP_KIND_MAX], wsum = 0;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                uint64_t rss = c->rss[k] > c->nohuge_rss[k] ? c->rss[k] - c->nohuge_rss[k] : 0;
                weight[k] = !s->n_reg[k] ? 0 : c->rss_known[k] && rss ? rss : c->span[k];
                wsum += weight[k];
        }
        s->n_recs = 0;
        s->n_rq = 0;
        memset(s->acc, 0, sizeof(s->acc));
        memset(s->acc_hg, 0, sizeof(s->acc_hg));
        for (int k = 0; k < _MTHP_KIND_MAX && r == 0; k++) {
                if (!weight[k])
                        continue;
                uint64_t dk = draws * weight[k] / wsum;
                r = density_sample_kind(s, c, k, dk ? dk : 1);
        }
        if (r == 0 && s->n_rq)
                r = density_flush_reads(s, c);
        if (r == 0)
                r = still_alive(fd);
        if (r < 0)
                return r;
        s->tick_reads += c->reads;

        memset(out, 0, sizeof(*out));
        fold(s, c, out);
        proc_done(e, c, out, t0, t0_cpu);
        out->shm = c->shm;
        out->mappings = (unsigned) c->maps->n;
        out->maps_age_usec = s->t0_ns / 1000 - c->maps->t_usec;
        memcpy(out->fault_samples, c->fs_kind, sizeof(out->fault_samples));
        out->fault_samples_other = c->fs_other;
        return 0;
}

static const struct mthp_density_target *find_target(const struct mthp_density_sampler *s, pid_t pid) {
        for (size_t i = 0; i < s->n_targets; i++)
                if (s->targets[i].pid == pid)
                        return &s->targets[i];
        return NULL;
}

/* Per kind and size over the processes that have data, weighted by fault
 * rate; equal weights if none of them faults. */
static void aggregate(struct mthp_density_sampler *s, struct mthp_density_report *out) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                struct mthp_density_kind *o = &out->kind[k];
                memset(o, 0, sizeof(*o));
                for (unsigned p = 0; p < out->n_procs; p++) {
                        const struct mthp_density_kind *pk = &s->procs[p].kind[k];
                        o->mapped_bytes += pk->mapped_bytes;
                        o->rss_bytes += pk->rss_bytes;
                        o->windows += pk->windows;
                        o->object_windows += pk->object_windows;
                }
                o->census = out->n_procs > 0;
                for (unsigned p = 0; p < out->n_procs; p++)
                        o->census &= s->procs[p].kind[k].census || s->procs[p].kind[k].windows == 0;
                for (unsigned i = 0; i < s->n_sizes; i++) {
                        struct mthp_density_size *os = &o->size[i];
                        double cw = 0, cv = 0, zw = 0, zv = 0, cw1 = 0, cv1 = 0, zw1 = 0, zv1 = 0;
                        os->kb = s->kb[i];
                        for (unsigned p = 0; p < out->n_procs; p++) {
                                const struct mthp_density_size *ps = &s->procs[p].kind[k].size[i];
                                double w = s->procs[p].minflt_rate;
                                os->blocks += ps->blocks;
                                os->full_blocks += ps->full_blocks;
                                os->read_pages += ps->read_pages;
                                os->zero_pages += ps->zero_pages;
                                os->zero_base_pages += ps->zero_base_pages;
                                if (ps->blocks) {
                                        cw += w, cv += w * ps->coverage;
                                        cw1 += 1, cv1 += ps->coverage;
                                }
                                if (ps->read_pages) {
                                        zw += w, zv += w * ps->zero_fraction;
                                        zw1 += 1, zv1 += ps->zero_fraction;
                                }
                        }
                        os->coverage = cw > 0 ? cv / cw : cw1 > 0 ? cv1 / cw1 : NAN;
                        os->zero_fraction = zw > 0 ? zv / zw : zw1 > 0 ? zv1 / zw1 : NAN;
                }
        }
}

static int density_tick(struct mthp_density_sampler *s, uint64_t t_usec, struct mthp_density_report *out);

int mthp_density_tick(struct mthp_density_sampler *s, uint64_t t_usec, struct mthp_density_report *out) {
        int r = density_tick(s, t_usec, out);
        mthp_density_set_fault_samples(s, NULL, 0);   /* given for one tick */
        s->n_first = 0;
        s->ps.last_pid_given = false;
        return r;
}

void mthp_density_set_last_pid(struct mthp_density_sampler *s, long last_pid) {
        s->ps.given_last_pid = last_pid;
        s->ps.last_pid_given = true;
}

static int density_tick(struct mthp_density_sampler *s, uint64_t t_usec, struct mthp_density_report *out) {
        struct mthp_proc_scan_stats ps;
        int r;

        s->t0_ns = mthp_now_nsec(CLOCK_MONOTONIC);
        s->t0_cpu_ns = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        s->cpu_read = false;
        s->tick_examined = s->tick_queued = s->tick_reads = 0;
        s->exhausted = false;
        s->uptime = NAN;
        memset(out, 0, sizeof(*out));
        out->t_usec = t_usec;
        out->n_sizes = s->n_sizes;
        out->procs = s->procs;

        r = mthp_proc_scan_tick(&s->ps, s->targets, s->n_targets, t_usec, &s->b, scan_stop, s, &ps);
        if (r < 0)
                return r;
        s->scan_usec = t_usec;
        out->procs_listed = ps.listed;
        out->procs_scanned = ps.scanned;
        out->procs_full_list = ps.full_list;

        size_t *order = malloc((s->ps.n_tab ? s->ps.n_tab : 1) * sizeof(*order));
        if (!order)
                return -ENOMEM;
        size_t nc = 0;
        for (size_t i = 0; i < s->ps.n_tab; i++) {
                const struct mthp_proc_entry *e = &s->ps.tab[i];
                if (e->kthread || e->zombie || (s->host->real && e->pid == s->self))
                        continue;
                if (s->n_targets || e->rate > 0)
                        order[nc++] = i;
        }
        /* the tick samples at most max_procs; a few more in case some exit */
        nc = mthp_proc_scan_top(s->ps.tab, order, nc, 4 * (size_t) s->b.max_procs);
        size_t n_lead = 0;
        if (!s->n_targets)
                nc = put_first(s, order, nc, &n_lead);

        unsigned quiet = 0;
        for (size_t j = 0; j < nc && out->n_procs < s->b.max_procs; j++) {
                /* the first candidate (the first set first, else the most
                 * faulting) is always sampled, at least in the floor's
                 * windows (density-window.c) */
                if (j > 0 && (s->tick_examined + s->tick_queued + s->wpages > s->b.max_pages_per_tick ||
                              density_spent(s, s->b.max_usec))) {
                        s->exhausted = true;
                        break;
                }
                struct mthp_proc_entry *e = &s->ps.tab[order[j]];
                /* young and small: later, if it lives (leads and targets never wait) */
                int young = s->n_targets || j < n_lead ? -1 : young_check(s, e);
                if (young == 0) {
                        out->procs_young++;
                        continue;
                }
                if (!s->n_targets && j >= n_lead && e->from_lifetime && e->rate < s->b.min_hot_rate &&
                    quiet++ >= s->b.max_quiet)
                        continue;
                r = sample_proc(s, e, find_target(s, e->pid), young > 0, &s->procs[out->n_procs]);
                if (r == -ENOMEM) {
                        free(order);
                        return r;
                }
                if (r == YOUNG_WAITS) {
                        out->procs_young++;
                        continue;
                }
                if (r < 0) {   /* exited, or not ours to read: skip quietly */
                        out->procs_skipped++;
                        continue;
                }
                out->n_procs++;
        }
        free(order);

        aggregate(s, out);
        out->pages_read = s->tick_reads;
        out->pages_examined = s->tick_examined;
        out->budget_exhausted = s->exhausted;
        out->usec = density_elapsed_usec(s);
        return 0;
}

void mthp_density_set_pmd_on(struct mthp_density_sampler *s, enum mthp_kind kind, bool on) {
        if (kind >= 0 && kind < _MTHP_KIND_MAX)
                s->pmd_on[kind] = on;
}

void mthp_density_set_hot_rate(struct mthp_density_sampler *s, double faults_per_sec) {
        if (faults_per_sec >= 0)
                s->b.min_hot_rate = faults_per_sec;
}

int mthp_density_idle_tick(struct mthp_density_sampler *s, uint64_t t_usec) {
        struct mthp_proc_scan_stats ps;
        struct mthp_density_budget b = s->b;

        if (s->n_targets)
                return 0;
        s->t0_ns = mthp_now_nsec(CLOCK_MONOTONIC);
        s->t0_cpu_ns = mthp_now_nsec(CLOCK_THREAD_CPUTIME_ID);
        s->cpu_read = false;
        b.max_hot = b.max_rescan = 0;   /* only the processes not seen yet */
        /* The first one (the daemon's start) reads every process at once:
         * ~5 us a stat file, 26 ms at 5,000 processes, paid once at start
         * instead of half the budget on each of the next ten idle ticks */
        bool first = !s->ps.listed_once;
        if (first)
                b.max_scan = UINT_MAX;
        int r = mthp_proc_scan_tick(&s->ps, NULL, 0, t_usec, &b, first ? NULL : scan_stop, s, &ps);
        s->ps.last_pid_given = false;
        if (r == 0)
                s->scan_usec = t_usec;
        return r;
}

void mthp_density_proc_view(const struct mthp_caps *caps, const struct mthp_density_report *rep,
                            const struct mthp_density_proc *p, struct mthp_proc_density *o) {
        o->pid = p->pid;
        mthp_strcpy(o->comm, sizeof(o->comm), p->comm);
        o->fault_rate = p->minflt_rate;
        o->new_proc = p->rate_from_lifetime;
        o->cpu_known = p->cpu_known;
        o->utime_rate = p->utime_rate;
        o->stime_rate = p->stime_rate;
        o->shm = p->shm;
        o->thp_disabled = p->thp_disabled;
        memcpy(o->fault_samples, p->fault_samples, sizeof(o->fault_samples));
        o->fault_samples_other = p->fault_samples_other;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                o->rss_kb[k] = p->kind[k].rss_bytes / 1024;
                o->nohuge_kb[k] = p->kind[k].nohuge_rss_bytes / 1024;
                for (unsigned j = 0; j < caps->n_sizes; j++) {
                        o->coverage[k][j] = o->hg_coverage[k][j] = NAN;
                        o->zero[k][j] = o->hg_zero[k][j] = o->zero_data[k][j] = NAN;
                        o->blocks[k][j] = o->hg_blocks[k][j] = 0;
                        for (unsigned m = 0; m < rep->n_sizes; m++)
                                if (p->kind[k].size[m].kb == caps->sizes[j].kb) {
                                        const struct mthp_density_size *a = &p->kind[k].size[m], *h = &p->kind[k].advised[m];
                                        o->coverage[k][j] = a->coverage;
                                        o->zero[k][j] = a->zero_fraction;
                                        o->zero_data[k][j] = a->zero_data_fraction;
                                        o->blocks[k][j] = (double) a->blocks;
                                        o->hg_coverage[k][j] = h->coverage;
                                        o->hg_zero[k][j] = h->zero_fraction;
                                        o->hg_blocks[k][j] = (double) h->blocks;
                                }
                }
        }
}

int mthp_density_proc_rate(const struct mthp_density_sampler *s, int pid, double *rate, char *comm, size_t comm_size) {
        if (!s || pid <= 0 || !rate)
                return -EINVAL;
        size_t lo = 0, hi = s->ps.n_tab;   /* the table is in PID order */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->ps.tab[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo >= s->ps.n_tab || s->ps.tab[lo].pid != pid)
                return -ENOENT;
        const struct mthp_proc_entry *e = &s->ps.tab[lo];
        if (e->zombie) {   /* exited, not reaped: faults no more */
                *rate = 0;
        } else {
                if (!e->seen || !s->scan_usec || e->t_usec != s->scan_usec || e->from_lifetime)
                        return -EAGAIN;
                *rate = e->rate;
        }
        if (comm && comm_size)
                snprintf(comm, comm_size, "%s", e->comm);
        return 0;
}
