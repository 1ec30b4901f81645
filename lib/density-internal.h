/* SPDX-License-Identifier: MIT */
#pragma once

/* The density sampler's state and the steps density.c (construction, one
 * process, the tick) and density-window.c (budget, pagemap, subpage reads,
 * windows) share. Private to lib/. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mthp/density.h"

#include "pagemap-scan.h"
#include "proc-scan.h"

#define PAGE MTHP_DENSITY_PAGE
#define WIN_PAGES_MAX (MTHP_DENSITY_MAX_KB * 1024 / PAGE)
#define WIN_WORDS (WIN_PAGES_MAX / 64)
#define READ_BATCH 256               /* subpages per process_vm_readv (<= IOV_MAX) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_PFN_MASK ((1ULL << 55) - 1)
#define KPF_COMPOUND_HEAD (1ULL << 15)
#define KPF_COMPOUND_TAIL (1ULL << 16)
#define KPF_ZERO_PAGE (1ULL << 24)

struct region {
        uint64_t start, end;
        uint64_t delta;              /* alignment key = address + delta: file offset for shmem */
        double cum;                  /* running sum of draw weights */
        bool data;                   /* a subpage read in it held data */
        bool hg;                     /* MADV_HUGEPAGE: measured on its own too */
        /* shmem: the mapped object's page cache (density-window.c,
         * density_object_*), opened at its first window in a tick */
        uint64_t map_start, map_end;  /* the whole mapping, as maps names it */
        uint64_t map_off;             /* its file offset */
        int8_t obj;                   /* 0 not tried, 1 open, -1 PTE view only */
        int8_t obj_view;              /* obj_map: 0 not tried, 1 mapped, -1 cannot be */
        bool obj_whole;               /* every page of the object allocated (fstat) */
        bool no_cachestat;
        int obj_fd;                   /* /proc/PID/map_files/START-END */
        uint64_t obj_size;            /* its size then */
        unsigned char *obj_map;       /* PROT_READ view of the mapping's range, never touched: mincore */
};

/* A window: the part of one aligned block of the largest size that lies in
 * a region; page indexes lo..hi are relative to the aligned block. */
struct win {
        uint64_t start, end;
        unsigned lo, hi;
};

struct wmap {
        uint64_t touched[WIN_WORDS], present[WIN_WORDS];
        uint64_t huge[WIN_WORDS];     /* mapped by a PMD (PAGEMAP_SCAN PAGE_IS_HUGE) */
        bool huge_known;              /* huge was read (PAGEMAP_SCAN, not pagemap) */
};

/* One examined window, kept until its subpage reads are in. */
struct window_rec {
        double u;                                 /* inverse draw probability */
        uint32_t full_present[MTHP_SIZES_MAX];    /* present pages in full blocks */
        uint16_t read[MTHP_SIZES_MAX], zero[MTHP_SIZES_MAX];
        uint16_t zero_base[MTHP_SIZES_MAX];       /* of the zeros, in a base-page folio */
        uint8_t kind;
        uint32_t reg;                             /* its region in reg[kind] */
};

struct read_req {
        uint64_t addr;
        uint32_t rec;
        uint32_t size_mask;          /* sizes whose block around addr is full */
        bool small;                  /* PTE-mapped in a block a PMD could map while the
                                      * PMD size is on: a smaller folio (tally_read) */
};

struct acc {
        double cov_num, cov_den, zero_num, zero_den;
        double zd_num, zd_den;       /* zero_num/zero_den over windows that read data */
        double read_den;             /* zero_den's weight over every window read, data or not */
        uint64_t blocks, full, read, zero, zero_base;
};

/* What smaps said of a process's hg and nh mappings, kept between reads
 * (mthp/density.h: smaps costs a page-table walk). */
#define VMF_RANGES 32                /* flagged mappings kept per process; more are read as plain */
#define VMF_CACHE 64                 /* processes remembered */
struct vmf_range {
        uint64_t start, end, rss;    /* rss in bytes */
        int8_t kind;                 /* mthp_proc_mapping_kind() */
        uint8_t flags;               /* MTHP_VMA_* */
};
struct vmf_entry {
        pid_t pid;                   /* 0: free */
        uint64_t starttime, t_usec;  /* t_usec: when smaps was read */
        uint64_t layout;             /* hash of its anon/shmem mappings' bounds then */
        uint64_t cost_usec;          /* CPU time that read took */
        /* per kind, the share of its Rss in nh mappings, from one smaps
         * read (both sides at one instant), at least 3/4 of the previous
         * read's: a program that maps, faults and unmaps nh memory in a loop
         * is caught at any point of the loop by a read */
        double nh_share[_MTHP_KIND_MAX];
        unsigned n;
        struct vmf_range r[VMF_RANGES];
};

/* A process's mappings as maps last said them, parsed (density.c,
 * read_mappings): /proc/PID/maps costs the kernel a formatted line per
 * mapping, and us a parse, ~25 ms for 60,000 mappings; it is read again
 * when the process's VmSize moved, or when the list is old against what
 * reading it cost. */
#define MAPS_CACHE 16                /* processes remembered */
struct cmap {
        uint64_t start, end, offset;
        int8_t kind;                 /* mthp_proc_mapping_kind(), -1 none */
        uint8_t reach;               /* shmem: shm_reach() */
        uint16_t align_kb;           /* shmem: shm_align_kb() */
};
struct maps_entry {
        pid_t pid;                   /* 0: free */
        uint64_t starttime;
        uint64_t t_usec;             /* when maps (or smaps) was read */
        uint64_t used_usec;          /* when a sample last used it */
        uint64_t cost_usec;          /* CPU time that read and its parse took */
        uint64_t vm_kb;              /* VmSize then */
        uint64_t layout;             /* layout hash of its anon/shmem mappings */
        struct cmap *m;
        size_t n, cap;
};

struct proc_ctx {
        pid_t pid;
        int fd;                      /* /proc/PID/pagemap */
        int dfd;                     /* /proc/PID */
        bool can_read, gone, cut;
        uint64_t examined, queued, reads;   /* window pages; subpage reads queued, done */
        uint64_t rss[_MTHP_KIND_MAX], span[_MTHP_KIND_MAX];
        uint64_t nohuge_span[_MTHP_KIND_MAX], nohuge_rss[_MTHP_KIND_MAX], advised_span[_MTHP_KIND_MAX];
        bool thp_disabled;
        const struct vmf_entry *vmf;        /* its hg/nh mappings, NULL: unknown */
        uint64_t vm_kb;                     /* status VmSize */
        const struct maps_entry *maps;      /* its mappings */
        bool rss_known[_MTHP_KIND_MAX];
        uint8_t *unlisted;                  /* the process's entry: persists across ticks */
        unsigned windows[_MTHP_KIND_MAX];
        unsigned object_windows;            /* shmem windows judged by the object's page cache */
        bool census[_MTHP_KIND_MAX];
        struct mthp_shm_mapping shm;        /* the largest shmem mapping */
        /* its fault samples (mthp_density_set_fault_samples): the next one
         * to place and the end of its run; counts by mapping kind */
        size_t fs_next, fs_end;
        uint32_t fs_kind[_MTHP_KIND_MAX], fs_other;
};

struct mthp_density_sampler {
        const struct mthp_host *host;
        struct mthp_density_budget b;
        unsigned n_sizes;
        unsigned kb[MTHP_SIZES_MAX];
        unsigned bp[MTHP_SIZES_MAX];        /* 4K pages per block */
        unsigned lbp[MTHP_SIZES_MAX];       /* log2 of that */
        unsigned wpages;
        uint64_t wbytes;
        uint64_t rng;
        uint64_t probe_rng;                 /* the shmem probe's offsets: a stream of its own, so that
                                             * the windows drawn stay those of the seed */
        int scan;                           /* PAGEMAP_SCAN: 1 works, 0 untried, -1 use pread */
        int kpf_fd;                         /* /proc/kpageflags, -1: not readable here */
        bool pfn_hidden;                    /* our own pagemap shows no PFN: no folio lookups */
        bool pmd_on[_MTHP_KIND_MAX];        /* mthp_density_set_pmd_on() */
        bool cap_fowner;                    /* mincore of files we do not own tells the truth */
        pid_t self;

        struct mthp_proc_scan ps;           /* the /proc scan: who faults */
        uint64_t scan_usec;                 /* the t_usec of its last tick (mthp_density_proc_rate) */
        struct mthp_density_target *targets;
        size_t n_targets;
        const struct mthp_fault_sample *faults;   /* sorted by pid, addr; until the tick returns */
        size_t n_faults;
        /* sampled first on the next tick (mthp_density_set_first) */
        pid_t first[MTHP_DENSITY_FIRST_MAX];
        size_t n_first;
        /* mthp_density_set_young(): a process younger than young_usec with
         * less than young_stake_kb at stake waits (0: none waits) */
        uint64_t young_usec, young_stake_kb;
        struct mthp_density_proc *procs;

        /* per tick */
        uint64_t t0_ns, t0_cpu_ns, tick_examined, tick_queued, tick_reads;
        bool exhausted;
        double uptime;                      /* /proc/uptime, read at the first young candidate; NAN: not yet */
        /* density_spent()'s last CPU clock reading, the wall time then
         * (density_elapsed_usec's measures, in ns) and the /proc listing's
         * wall time they left out; valid when cpu_read */
        uint64_t cpu_read_ns, cpu_read_wall_ns, cpu_read_list_ns;
        bool cpu_read;

        /* scratch, reused */
        char *text;
        size_t cap_text;
        struct region *reg[_MTHP_KIND_MAX];
        size_t n_reg[_MTHP_KIND_MAX], cap_reg[_MTHP_KIND_MAX];
        struct window_rec *recs;
        size_t n_recs, cap_recs;
        struct win *listed;
        size_t cap_listed;
        struct acc acc[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        struct acc acc_hg[_MTHP_KIND_MAX][MTHP_SIZES_MAX];   /* the hg mappings' part */
        struct vmf_entry *vmf;              /* VMF_CACHE entries */
        struct maps_entry *maps;            /* MAPS_CACHE entries */
        struct read_req rq[READ_BATCH];
        struct iovec riov[READ_BATCH];
        size_t n_rq;
        uint8_t *rbuf;
        uint64_t pm[WIN_PAGES_MAX];
        struct page_region vec[WIN_PAGES_MAX];
};

/* The kpageflags of the page at addr of the process whose pagemap is
 * pm_fd: 0 and *flags; -ENOENT: not present, or pagemap shows no PFN;
 * -EIO: a read failed (the process gone); -ENODATA: no kpageflags here. */
int density_page_flags(const struct mthp_density_sampler *s, int pm_fd, uint64_t addr, uint64_t *flags);
/* The tick's cost so far: CPU time, at least a quarter of the wall time. */
uint64_t density_elapsed_usec(const struct mthp_density_sampler *s);
/* density_elapsed_usec(s) >= limit_usec, reading the CPU clock only when needed */
bool density_spent(struct mthp_density_sampler *s, uint64_t limit_usec);
/* A uniform draw in [0, n) from the stream *x (splitmix64). */
uint64_t density_rng_below(uint64_t *x, uint64_t n);
/* PAGEMAP_SCAN for touched pages over [start, end): *n regions in s->vec. */
int density_pm_scan(struct mthp_density_sampler *s, int fd, uint64_t start, uint64_t end, size_t vec_len,
                    uint64_t max_pages, size_t *n);
/* Pages one window costs the process's budget. */
uint64_t density_window_cost(const struct mthp_density_sampler *s, const struct proc_ctx *c);
/* Sample one kind of the process with about `draws` windows. */
int density_sample_kind(struct mthp_density_sampler *s, struct proc_ctx *c, int kind, uint64_t draws);
/* Close what density_object_* opened for the process's shmem regions. */
void density_object_release(struct mthp_density_sampler *s);
/* Read the queued subpages and tally them. */
int density_flush_reads(struct mthp_density_sampler *s, struct proc_ctx *c);
/* The text of /proc/PID/name (dfd: /proc/PID) into s->text, its length in *len. */
int density_read_all(struct mthp_density_sampler *s, int dfd, const char *name, size_t *len);
/* The process's mappings (c->maps) and its hg and nh mappings (c->vmf),
 * read again only when they may have changed (density-maps.c). */
int density_read_mappings(struct mthp_density_sampler *s, int dfd, const struct mthp_proc_entry *e,
                          struct proc_ctx *c);
