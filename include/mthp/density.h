/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "mthp/faults.h"
#include "mthp/host.h"
#include "mthp/procfs.h"
#include "mthp/sample.h"
#include "mthp/types.h"

/* Density sampler: how densely do the processes that fault most touch their
 * anon and shmem memory, seen in aligned blocks of each candidate folio size?
 * Why each rule below is as it is, with the measurements: docs/signals.md
 * (use, not content), docs/shmem.md (shmem by the object), docs/engine.md
 * (opt-outs, the cost of smaps).
 *
 *  - coverage: touched 4K pages / pages of the blocks that have at least one
 *    touched page (HawkEye's "access coverage"). Meaningful while a size is
 *    off: how much a folio of that size would hold that is used.
 *  - zero_fraction: of the subpages of blocks whose every page is touched,
 *    the share that is all zeros (read with process_vm_readv) inside a large
 *    folio. Meaningful once a size is on: pagemap then shows whole folios
 *    present, and the zeros beside data are the bloat. A zero page that is
 *    a 4K folio of its own was touched like any present page: it counts in
 *    zero_pages and zero_base_pages, not here (this needs PFNs in pagemap,
 *    CAP_SYS_ADMIN, and a readable kpageflags; without them, while the PMD
 *    size is on for shmem, mthp_density_set_pmd_on, a zero in a whole,
 *    aligned 2M block mapped by PTEs is in a smaller folio from before the
 *    raise; otherwise every zero counts). Content is not use: a mapping
 *    whose reads hold only zeros counts its subpages as touched and its
 *    zeros for nothing; a process that writes only zeros has no
 *    zero_fraction (NAN). Whether a process's zeros lie beside its data or
 *    ahead of a write it was caught in is zero_data_fraction (below), which
 *    the engine's churn rule reads.
 *
 * Opt-outs: a process whose status says "THP_enabled: 0"
 * (PR_SET_THP_DISABLE) gets no large folio whatever the knobs say, so it is
 * reported (thp_disabled) but not measured. Mappings marked nh in smaps
 * (MADV_NOHUGEPAGE) are left out of every measure (their span and RSS are
 * reported); mappings marked hg (MADV_HUGEPAGE) are measured with the rest
 * and again on their own (advised[]), since under "madvise" values they
 * alone get large folios. smaps costs a page-table walk, so it is read at
 * first sight of a process (that tick may overrun its budget by it), again
 * after MTHP_DENSITY_VMFLAGS_USEC, and (at most once a second) when its
 * anon/shmem mappings changed; never sooner than 400 times what the last
 * read cost. The nh share of a kind's Rss comes from one smaps read and is
 * held at 3/4 of the previous read's at least, so that a program mapping,
 * faulting and unmapping nh memory in a loop is not judged by one instant.
 *
 * "Touched" = present in the page table (not the shared zero page) or
 * swapped; without PAGEMAP_SCAN the zero page cannot be told apart. Blocks
 * are aligned in virtual address for anon and in file offset for shmem, and
 * never cross a mapping, as folios do not.
 *
 * Shmem is judged by the object, not the process: a shmem window's touched
 * pages are the process's PTE-touched ones plus the pages the mapped object
 * holds (MAP_SHARED anon, memfd, /dev/shm and SysV alike), read through
 * /proc/PID/map_files/START-END, cheapest first: fstat (an object whose
 * every page is allocated fills every window), cachestat(2) over the window,
 * else mincore() over a PROT_READ view of the mapping mapped into mthpd and
 * never touched. Windows are still chosen by the process's own touched
 * pages. The fd and view are closed after the process (they would keep a
 * freed segment alive). The tick's time budget is checked before each
 * window. Falls back to the PTE view (object_windows 0) where map_files
 * cannot be opened (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE in the host
 * user namespace), and where mincore would not tell the truth (a file mthpd
 * neither owns nor may write, without CAP_FOWNER: the kernel reports every
 * page resident) and cachestat cannot say.
 *
 * Work is in windows of the largest size (at most one PMD): one pagemap walk
 * (PAGEMAP_SCAN, Linux 6.7+, else 8-byte pagemap entries) per window gives
 * every smaller size's blocks. Per process and kind, the windows holding a
 * touched page are first listed, hopping over holes (a short walk each, so
 * sparse reservations cost next to nothing): if they fit the budget all are
 * read (census, exact), else a uniform choice of them. A process with more
 * populated windows than listing pays for gets random draws instead, each
 * weighted by the inverse of its chance, with a region's chance its span
 * capped at the process's resident size (a terabyte reservation cannot take
 * every draw). Subpages for zero_fraction are a uniform choice among the
 * present pages of full blocks, read in batches; swapped pages are never
 * read. All work is bounded per tick (pages and time) and per process.
 */

#define MTHP_DENSITY_PAGE 4096u
#define MTHP_DENSITY_MAX_KB 2048u   /* the window: one x86-64 PMD */
#define MTHP_DENSITY_COMM_MAX MTHP_PROC_COMM_MAX
#define MTHP_DENSITY_VMFLAGS_USEC (30 * 1000000ULL)   /* smaps is read again after this */
#define MTHP_DENSITY_SHM_PROBES 16

struct mthp_density_budget {
        unsigned max_procs;           /* processes sampled per tick, most faulting first */
        unsigned max_scan;            /* /proc/PID/stat reads per tick, all kinds */
        unsigned max_hot;             /* of those, processes that faulted at their last read */
        double min_hot_rate;          /* a first-sight (lifetime) rate counts as hot from this */
        unsigned max_rescan;          /* of those, quiet processes re-read, in rotation */
        /* processes sampled per tick whose only rate is a first-sight
         * lifetime average below min_hot_rate (an idle process met by the
         * rotation): sampling one costs a smaps read, and thousands of idle
         * processes would take the tick's budget one after the other */
        unsigned max_quiet;
        uint64_t max_pages_per_tick;  /* 4K pages examined: window pages + subpages read */
        uint64_t max_pages_per_proc;
        unsigned reads_per_window;    /* subpages read per window for zero_fraction (<= 512) */
        /* Wall time per tick; the /proc scan gets at most half. Checked before
         * each window: a tick may overrun by one window and the subpage reads
         * still queued for the process at hand, and by the floor: the tick
         * always starts its first candidate, and a process it started gets
         * up to 4 windows of each kind past this budget (never past the page
         * budgets), with their subpage reads (lib/density-window.c). */
        uint64_t max_usec;
        uint64_t seed;                /* same seed, same draws */
        /* Measure processes with THP disabled too (still reported
         * thp_disabled): for tests whose workloads use PR_SET_THP_DISABLE to
         * keep 4K folios whatever the host's knobs. Default false: such a
         * process's density decides nothing, and its pages cost budget. */
        bool measure_thp_disabled;
};
void mthp_density_budget_default(struct mthp_density_budget *b);


/* Restrict sampling to given processes (and optionally an address range):
 * for tests, and for callers that know which processes matter (a cgroup's
 * cgroup.procs). Targets are sampled whatever their fault rate. */
struct mthp_density_target {
        pid_t pid;
        uint64_t start, end;          /* end == 0: the whole address space */
};

struct mthp_density_size {
        unsigned kb;
        uint64_t blocks;              /* sampled blocks with >= 1 touched page */
        double coverage;              /* NAN if blocks == 0 */
        uint64_t full_blocks;         /* of those, blocks with every page touched */
        uint64_t read_pages;          /* subpages of full blocks read */
        uint64_t zero_pages;          /* of those, all zeros */
        uint64_t zero_base_pages;     /* of those, in a base-page (4K) folio, or (without PFNs) in a smaller
                                       * folio than a PMD (tally_read): touched, not in zero_fraction */
        double zero_fraction;         /* NAN if no subpage read in a mapping with data */
        /* The same share over the windows (MTHP_DENSITY_MAX_KB) where some
         * read at this size held data: zeros beside data in the window that
         * holds them. A buffer caught mid-write (stress-ng --vm) has its
         * zeros ahead of the write, in windows that read no data: near 0
         * here, whatever zero_fraction reads. A program that touches a byte
         * every 64K of 2M folios (or turned sparse after reading dense) has
         * its zeros in every window: about 0.7 with 4 reads a window.
         * NAN if no window read data, or if those that did are under 5%
         * of the windows read (weighted as zero_fraction): a zero-writer's
         * heap and stack beside its buffer of zeros (lib/density.c). */
        double zero_data_fraction;
};

struct mthp_density_kind {
        uint64_t mapped_bytes;        /* eligible mappings (address span) */
        uint64_t rss_bytes;           /* RssAnon / RssShmem from /proc/PID/status */
        unsigned windows;             /* windows examined */
        unsigned object_windows;      /* shmem: of those, judged by the object's page cache */
        bool census;                  /* every window was examined (exact) */
        struct mthp_density_size size[MTHP_SIZES_MAX];
        /* per process only (the report's aggregate leaves them 0): */
        uint64_t nohuge_bytes;        /* span of nh mappings, in no measure */
        uint64_t nohuge_rss_bytes;    /* rss_bytes x their share of it when smaps was last read */
        uint64_t advised_bytes;       /* span of hg mappings */
        struct mthp_density_size advised[MTHP_SIZES_MAX];  /* size[] over the hg mappings alone */
};

struct mthp_density_proc {
        pid_t pid;
        char comm[MTHP_DENSITY_COMM_MAX];
        double minflt_rate;           /* minor faults/s */
        bool rate_from_lifetime;      /* first sight: minflt / age instead of a delta */
        bool complete;                /* the budget did not cut this process short */
        bool thp_disabled;            /* "THP_enabled: 0": not measured */
        struct mthp_density_kind kind[_MTHP_KIND_MAX];
        /* Its largest shmem mapping from maps, and for up to
         * MTHP_DENSITY_SHM_PROBES of its present pages (evenly spread, from an
         * offset that moves each tick) whether
         * they are PMD-mapped (PAGEMAP_SCAN, a PMD-aligned mapping, PFNs or
         * not) or, elsewhere, whether they sit in a large folio of any size
         * (/proc/kpageflags: root, real host only): shm.probe says which. */
        struct mthp_shm_mapping shm;
        /* Its faults by the kind of mapping they fell in: of the fault
         * addresses given with mthp_density_set_fault_samples(), those in an
         * anon or shmem mapping that is not nh, and those in any other
         * mapping (files, text, nh mappings: no anon or shmem size changes
         * them). Addresses in no mapping (unmapped since) are not counted.
         * All 0: no samples given. */
        uint32_t fault_samples[_MTHP_KIND_MAX];
        uint32_t fault_samples_other;
        uint64_t pages_examined, pages_read, usec;
        /* Its mappings as the sample saw them, and how old that list was:
         * maps is read again only when VmSize moved (at most every 20 times
         * what reading it cost) or the list is 200 times that old (a few
         * hundred mappings: every tick; 60,000, ~25 ms: every 5 s), so a
         * mapping made since is not sampled until then. smaps, read for
         * the hg/nh flags, serves as maps when it is whole (it is cut at
         * MTHP_PROC_TEXT_MAX, ~16,000 mappings). */
        unsigned mappings;
        uint64_t maps_age_usec;
        /* its CPU as the /proc scan read it with minflt_rate (cores);
         * cpu_known false: not measured (first sight) */
        double utime_rate, stime_rate;
        bool cpu_known;
};

struct mthp_density_report {
        uint64_t t_usec;
        unsigned n_sizes;
        unsigned procs_listed;        /* processes the scan knows (or targets) */
        unsigned procs_scanned;       /* /proc/PID/stat read this tick */
        bool procs_full_list;         /* /proc was listed whole this tick */
        unsigned procs_skipped;       /* candidates gone or not readable mid-tick */
        unsigned procs_young;         /* candidates young and small, not sampled (mthp_density_set_young) */
        uint64_t pages_examined, pages_read, usec;
        bool budget_exhausted;        /* pages or time ran out before every candidate was done */
        /* Per kind over all sampled processes, each weighted by its fault rate
         * (equal weights if none faults); counts are plain sums. */
        struct mthp_density_kind kind[_MTHP_KIND_MAX];
        unsigned n_procs;
        const struct mthp_density_proc *procs;  /* owned by the sampler; valid until the next tick */
};

struct mthp_density_sampler;

/* sizes_kb: candidate folio sizes, powers of two from 8 to MTHP_DENSITY_MAX_KB
 * (any order, duplicates ignored). budget NULL: defaults. The host must
 * outlive the sampler. Subpage reads happen only on the real root ("/"). */
int mthp_density_new(const struct mthp_host *h, const unsigned *sizes_kb, unsigned n_sizes,
                     const struct mthp_density_budget *budget, struct mthp_density_sampler **ret);
void mthp_density_free(struct mthp_density_sampler *s);
/* n == 0: back to choosing from all of /proc. */
int mthp_density_set_targets(struct mthp_density_sampler *s, const struct mthp_density_target *t, size_t n);

/* Fault addresses sampled since the last tick (mthp/faults.h), sorted by pid
 * then address: each process sampled on the next mthp_density_tick() has
 * its faults counted by the kind of the mapping they fall in
 * (mthp_density_proc.fault_samples), against the maps it reads anyway.
 * The sampler keeps the pointer until that tick returns; n 0: none. */
void mthp_density_set_fault_samples(struct mthp_density_sampler *s, const struct mthp_fault_sample *v, size_t n);

/* Processes the next mthp_density_tick() samples before the ranked ones,
 * in this order (the early tick is due for their fault samples: the tick's
 * budget must not go to a busier process first). A pid not in the /proc
 * table is skipped; the first lead is always sampled, later ones within
 * the tick's budget, and leads take at most max_procs - 1 slots (at least
 * 1). Given for that one tick (mthp_density_idle_tick keeps them), at
 * most MTHP_DENSITY_FIRST_MAX (more are ignored); choosing from all of
 * /proc only (set_targets wins). n 0: none. */
#define MTHP_DENSITY_FIRST_MAX 8
void mthp_density_set_first(struct mthp_density_sampler *s, const int *pids, size_t n);
/* Young and small processes wait. A candidate younger than wait_usec
 * (its age from /proc/PID/stat's start time) is not sampled while its
 * stake is under stake_kb: the memory it holds (stat's RSS, then RssAnon +
 * RssShmem from status where that is not already under) and what it
 * faults in a second (its rate x 4K) both under it. On a build box 46 %
 * of mthpd's CPU was smaps and pagemap reads of compilers and scripts at
 * first sight, whose samples decide nothing (the engine counts a process's
 * faults only once it was seen 5 s or has MinBloatBytes at stake,
 * docs/engine.md "Persistent evidence"); a big or fast-faulting program is
 * sampled at once, so a first raise is not delayed. Processes set first
 * and targets never wait. wait_usec 0 (the default): none waits. */
void mthp_density_set_young(struct mthp_density_sampler *s, uint64_t wait_usec, uint64_t stake_kb);

/* The last PID handed out (/proc/loadavg's last field, -1 unreadable) as
 * the caller read it for the next tick (mthp_density_tick or _idle_tick),
 * which then reads no /proc/loadavg of its own (the observer reads it once
 * a tick for this scan and the bloat tracker). Given for that one tick. */
void mthp_density_set_last_pid(struct mthp_density_sampler *s, long last_pid);

/* One tick at t_usec (CLOCK_MONOTONIC); rates are against this sampler's
 * previous ticks. Processes that exit or deny access mid-tick are skipped. */
int mthp_density_tick(struct mthp_density_sampler *s, uint64_t t_usec, struct mthp_density_report *out);
/* After a tick: pid's minor faults per second as the /proc scan measured
 * them in that tick (since its read before; 0 for a zombie), and its comm
 * (comm may be NULL) to tell a new process at the pid. -ENOENT: not in
 * the scan's table (exited, or never seen); -EAGAIN: not read in that
 * tick, or only its lifetime average known; -EINVAL. */
int mthp_density_proc_rate(const struct mthp_density_sampler *s, int pid, double *rate, char *comm, size_t comm_size);
/* A first-sight (lifetime) fault rate counts as hot from this many faults
 * per second: the daemon passes MinProcessFaultRate= (it follows a reload). */
void mthp_density_set_hot_rate(struct mthp_density_sampler *s, double faults_per_sec);
/* Whether the kernel hands the PMD size's folios to any fault of kind now
 * (its knob always, or inherit under a global always), where the largest
 * size given to mthp_density_new is the PMD size. While it does, and pagemap
 * has no PFNs to ask kpageflags, a zero subpage that is mapped by PTEs in a
 * block a PMD could map counts as in a small folio, not as bloat
 * (density-window.c tally_read). Default false: every such zero counts.
 * mthpd sets it for shmem only (daemon/manager.c). */
void mthp_density_set_pmd_on(struct mthp_density_sampler *s, enum mthp_kind kind, bool on);
/* A tick on which nothing is sampled (no raise possible, none held): keeps
 * the process table current at little cost, so that the tick the host
 * starts to fault on finds the new faulting process at once instead of
 * listing /proc and reading thousands of stat files first. It lists /proc
 * when mthp_density_tick would (the first time, once a minute, when many
 * IDs were handed out) and reads the stat files of processes it has not
 * seen (IDs handed out since the last tick, from /proc/loadavg), within
 * half the tick budget; no process is read again and none is sampled.
 * Nothing to do while targets are set (they are read on every tick). */
int mthp_density_idle_tick(struct mthp_density_sampler *s, uint64_t t_usec);

/* One sampled process as the engine takes it (mthp/sample.h): its
 * measures at the caps sizes the report has (NAN elsewhere), its opt-outs. */
void mthp_density_proc_view(const struct mthp_caps *caps, const struct mthp_density_report *rep,
                            const struct mthp_density_proc *p, struct mthp_proc_density *o);

/* Pure helpers, exposed for tests. */
/* Coverage of n pagemap entries (bit 63 present, bit 62 swapped) cut in
 * blocks of block_pages from the first entry; a partial tail is ignored.
 * Returns NAN if no block has a touched page; *blocks gets their count. */
double mthp_density_coverage(const uint64_t *pagemap, size_t n, unsigned block_pages, uint64_t *blocks);
bool mthp_density_page_is_zero(const void *page);
size_t mthp_density_count_zero_pages(const void *buf, size_t n_pages);
