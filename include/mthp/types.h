/* SPDX-License-Identifier: MIT */
#pragma once

/* The shared vocabulary: what a kind, a size, a knob and the host's
 * capabilities are, every limit the modules share, and the pure helpers on
 * them (size names, knob and size lookup). No I/O: probe.h fills these from
 * a host, the engine, actuator, recorder and mthpctl read them. Limits that
 * only one module uses stay in that module's header. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MTHP_THP_DIR "/sys/kernel/mm/transparent_hugepage"
#define MTHP_VALUE_MAX 24
#define MTHP_VALUES_MAX 8
#define MTHP_SIZES_MAX 16
#define MTHP_KNOBS_MAX (3 + 2 * MTHP_SIZES_MAX)
#define MTHP_STATS_MAX 32
#define MTHP_STAT_NAME_MAX 32
#define MTHP_PATH_MAX 256
#define MTHP_CGROUP_PATH_MAX 128
#define MTHP_REASON_MAX 768
#define MTHP_HISTORY_MAX 256

enum mthp_knob_type {
        MTHP_KNOB_ENABLED,        /* global enabled */
        MTHP_KNOB_DEFRAG,         /* global defrag */
        MTHP_KNOB_SHMEM_ENABLED,  /* global shmem_enabled */
        MTHP_KNOB_SIZE_ANON,      /* hugepages-NkB/enabled */
        MTHP_KNOB_SIZE_SHMEM,     /* hugepages-NkB/shmem_enabled */
        MTHP_KNOB_NUMBER,         /* a plain unsigned number: khugepaged/max_ptes_none, shrink_underused */
};

enum mthp_kind { MTHP_ANON, MTHP_SHMEM, _MTHP_KIND_MAX };
const char *mthp_kind_name(enum mthp_kind k);

/* Which knobs can give a shared mapping large folios on its faults (Linux
 * 6.18, measured: docs/shmem.md). */
enum mthp_shm_reach {
        MTHP_SHM_NONE,            /* no shmem mapping seen */
        MTHP_SHM_PER_SIZE,        /* shared anonymous, memfd, a tmpfs file unlinked before mmap:
                                   * the per-size shmem_enabled knobs, where the mapping's
                                   * address and file offset are aligned for the size */
        MTHP_SHM_TMPFS_FILE,      /* a linked tmpfs file (/dev/shm/NAME): its mount's huge=
                                   * (PMD only), never the per-size knobs */
        MTHP_SHM_SYSV,            /* a SysV segment: the global shmem_enabled (PMD only) */
};

/* How the folios of a shmem mapping's sampled pages were told. */
enum mthp_shm_probe {
        MTHP_SHM_PROBE_KPAGEFLAGS, /* /proc/kpageflags through pagemap's PFNs (CAP_SYS_ADMIN),
                                    * where the PMD probe cannot run (a mapping not
                                    * PMD-aligned, a kernel before 6.7): large = in a
                                    * folio of any size above 4K */
        MTHP_SHM_PROBE_PMD,        /* PAGEMAP_SCAN, PFNs or not, wherever the mapping is
                                    * PMD-aligned: large = mapped by a PMD (a 2M folio); a
                                    * present page not PMD-mapped is in a smaller folio, or
                                    * in a 2M one the kernel mapped by PTEs (THP disabled
                                    * for the VMA, a page table already at that PMD) */
};

/* A process's largest shmem mapping: what a raise of shmem sizes is for. */
struct mthp_shm_mapping {
        uint64_t addr, bytes;
        unsigned align_kb;        /* the largest folio its address and file offset
                                   * allow (capped at 2048) */
        unsigned reach;           /* enum mthp_shm_reach */
        unsigned sampled, large;  /* present pages probed, and those in a large folio
                                   * (sampled 0: unknown); by probe: */
        unsigned probe;           /* enum mthp_shm_probe */
};

/* One writable selection file. The accepted values come from the file itself
 * (MTHP_KNOB_NUMBER: none listed; any unsigned number, the kernel checks the
 * range). */
struct mthp_knob {
        enum mthp_knob_type type;
        unsigned size_kb;                       /* 0 for global knobs */
        char id[32];                            /* "64K/anon", "global/defrag" */
        char path[MTHP_PATH_MAX];               /* host path */
        unsigned n_allowed;
        char allowed[MTHP_VALUES_MAX][MTHP_VALUE_MAX];
};

struct mthp_size {
        unsigned kb;
        int order;
        int knob[_MTHP_KIND_MAX];               /* index into caps.knobs, or -1 */
        unsigned n_stats;
        char stats[MTHP_STATS_MAX][MTHP_STAT_NAME_MAX];
};

enum mthp_cg_layout { MTHP_CG_NONE, MTHP_CG_V1, MTHP_CG_HYBRID, MTHP_CG_V2 };
const char *mthp_cg_layout_name(enum mthp_cg_layout l);

struct mthp_caps {
        unsigned pmd_kb;
        /* Base page size, from the tree, never assumed: a PMD maps one page
         * table of page/8 entries (x86-64 and arm64), so PMD = page^2/8:
         * 4K -> 2M, 16K -> 32M, 64K -> 512M. The real host's own page size
         * when hpage_pmd_size is missing. 0 only in records made before it
         * existed: read it with mthp_caps_page_kb(). */
        unsigned page_kb;
        /* khugepaged collapses anon memory to mTHP sizes (7.2+: per-size
         * stats/collapse_*); it then takes khugepaged/max_ptes_none 0 or
         * 511 only (any other value warns and collapses as if 0): write it
         * only within mthp_caps_max_ptes_none_ok() */
        bool mthp_collapse;
        unsigned n_sizes;                       /* ascending by kb */
        struct mthp_size sizes[MTHP_SIZES_MAX];
        unsigned n_knobs;
        struct mthp_knob knobs[MTHP_KNOBS_MAX];
        bool psi;                               /* /proc/pressure/memory readable */
        bool task_delayacct;                    /* kernel.task_delayacct = 1 */
        enum mthp_cg_layout cg_layout;
        char cg_memory[MTHP_PATH_MAX];          /* memory controller mount ("" if none) */
        char cg_unified[MTHP_PATH_MAX];         /* cgroup2 mount ("" if none) */
};

unsigned mthp_caps_page_kb(const struct mthp_caps *caps);
bool mthp_caps_max_ptes_none_ok(const struct mthp_caps *caps, unsigned value);
int mthp_caps_find_knob(const struct mthp_caps *caps, const char *id);
int mthp_caps_find_size(const struct mthp_caps *caps, unsigned kb);
bool mthp_knob_allows(const struct mthp_knob *k, const char *value);
/* The per-size stats mthpd reads every tick (the fault counters): the
 * sampler's hot set, and the ones a size keeps first when it has more than
 * MTHP_STATS_MAX stats. */
bool mthp_stat_is_hot(const char *name);
/* "64K", "2M", "1G" */
void mthp_format_size(unsigned kb, char *buf, size_t size);
/* Parses "64K", "64k", "64kB", "2M", "2048"(kB); returns 0 or -EINVAL. */
int mthp_parse_size(const char *s, unsigned *kb);
/* Strict numbers, for config and policy alike: decimal digits with an
 * optional fraction; no sign, space, hex ("0x10"), hex float ("0x1p3"),
 * exponent, inf or nan. *end is after the number (units follow). */
int mthp_parse_decimal(const char *s, double *v, const char **end);
/* The size of a per-size sysfs directory name, in the one form the kernel
 * writes ("hugepages-%lukB"): "hugepages-<N>kB", N decimal without sign or
 * leading zero, a power of two from 8 (8kB exists for shmem) that fits an
 * unsigned. Every other spelling ("hugepages-064kB", "hugepages-64",
 * "hugepages--4294967232kB", "hugepages-4294967360kB") is -EINVAL: read
 * loosely, two names could be the same size and it would be managed twice. */
int mthp_sysfs_size_parse(const char *name, unsigned *kb);

/* One knob change: mthpd's write, or a restore (actuator history, log, bus). */
struct mthp_change {
        uint64_t realtime_usec;
        char id[32];
        char old[MTHP_VALUE_MAX];
        char new[MTHP_VALUE_MAX];
        char reason[MTHP_REASON_MAX];
};
