/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "mthp/types.h"

struct mthp_policy_set;

/* Observe mode (Mode=observe, --mode observe; --dry-run and Mode=dry-run
 * are its old names, still accepted): decide and explain, write nothing. */
enum mthp_mode { MTHP_MODE_MANAGE, MTHP_MODE_OBSERVE };

struct mthp_engine_config {
        unsigned min_kb[_MTHP_KIND_MAX], max_kb[_MTHP_KIND_MAX]; /* sizes the engine may enable */
        double raise_fault_rate;      /* 4K pages/s that count as "faulting hard" */
        double lower_fault_rate;      /* below this for lower_ticks: step down */
        /* RaiseFaultTime=: percent of one core the kind's faults would take
         * at the host's 4K fault cost (mthp_snapshot.fault_cost_ns) that
         * counts as faulting hard too. Where faults are slow, fewer pages/s
         * cost as much: the raise rate is then the lower of raise_fault_rate
         * and this share's rate, and the lower rate falls with it. 0: off. */
        double raise_fault_time;
        unsigned confirm_ticks;       /* ticks the raise condition must hold (no density sample) */
        unsigned density_confirm_ticks; /* the same when density samples back the raise */
        unsigned lower_ticks;         /* ticks the idle condition must hold */
        unsigned dwell_ticks;         /* minimum ticks between changes of one kind */
        double psi_some_max;          /* percent (avg10) that counts as pressure */
        double min_available;         /* percent of MemTotal */
        double max_fallback;          /* percent of mTHP faults falling back */
        double max_bloat;             /* percent of extra RSS a size may cost a faulting process */
        /* The bloat (kB) a process's density must predict at a size, its
         * memory there x (1/usage - 1), before it alone may hold that size
         * back or step it down; processes under it count against the host's
         * budget (max_host_bloat_*), or without one are added up and object
         * together once their sum reaches it. min_bloat_auto: the larger of
         * 16 MiB and 0.1% of MemTotal (engine_min_bloat_kb). 0: every
         * process has its say, however small. */
        uint64_t min_bloat_kb;
        bool min_bloat_auto;
        double min_proc_fault_rate;   /* faults/s that make a process count for density */
        double min_proc_share;        /* percent of the kind's sampled faults, likewise */
        unsigned unmeasured_max_kb;   /* ceiling when no density sample exists */
        unsigned verify_ticks;        /* ticks a raise has to show allocations at the new size */
        double cgroup_headroom;       /* percent of a faulting process's memcg limit kept free */
        double max_compact_ms;        /* ms/s a faulting process may stall in compaction */
        /* The limited-cgroup invariant and guard (mthpd.conf(5), GuardHeadroom=):
         * the guard fires when a limited cgroup has grown by guard_headroom
         * percent of its headroom while sizes are raised; a size is raised
         * only if every populated limited cgroup's worst case fits in the
         * rest. guard_floor: percent of a cgroup's limit it is assumed to
         * fault per tick however quiet it was. */
        double guard_headroom;
        double guard_floor;
        unsigned default_priority;    /* of processes no policy file manages (0..100) */
        /* A managed cgroup whose policy says always for a kind has a say on
         * that kind from its appearance (mthp_cgroup_view.appeared_usec) for
         * this long, faulting or not, so its sizes are set before its first
         * faults (a shared segment is aligned for large folios only if the
         * size is on when it is mapped). 0: off. */
        uint64_t start_grace_usec;
        /* While the largest shmem size on the ladder is not raised and is
         * off (never, or inherit of a global never), set it to advise:
         * the kernel then maps new shared anonymous memory aligned for it
         * (measured on 6.18: every MAP_SHARED|MAP_ANONYMOUS mapping
         * 2M-aligned under 2M advise, 4K-32K under the boot state), so a
         * later raise reaches a segment mapped before it (PostgreSQL's
         * shared buffers).
         * advise gives large folios only to memory a program madvises.
         * Not while a memory-limited cgroup caps the kind's sizes. */
        bool shmem_align;
        /* The administrator's "THP off" found at start (mthpd(8), "The
         * administrator's THP off"): thp_off[kind] non-empty names what
         * said it ("the kernel command line: transparent_hugepage=never",
         * "global/enabled was never when mthpd started"); the kind then stays at
         * 4K (rule hold-admin): no size of it goes to always, ShmemAlign=
         * sets no advise, and only a policy's madvise is written.
         * thp_off_kb[kind]: bit log2(kB) for each size the command line
         * set to never (thp_anon=, thp_shmem=): off the ladder. Neither
         * applies with override_thp_off ([Daemon] OverrideThpOff=yes). */
        char thp_off[_MTHP_KIND_MAX][160];
        uint64_t thp_off_kb[_MTHP_KIND_MAX];
        bool override_thp_off;
        /* per-cgroup policy files (mthpd.policy(5)); NULL or empty: none.
         * Owned by whoever loaded them; the engine only reads. */
        const struct mthp_policy_set *policies;
        /* MaxHostBloat= (mthpd.conf(5)): the bloat the host as a whole
         * may hold, summed over the processes that get a size
         * (engine-budget.c). Not set (the zero value): auto, 2.5% of
         * MemTotal; max_host_bloat_is_pct: max_host_bloat_pct percent of
         * MemTotal; else max_host_bloat_kb, UINT64_MAX for infinity (no
         * host budget: MinBloatBytes= alone, as before it). */
        bool max_host_bloat_set;
        bool max_host_bloat_is_pct;
        double max_host_bloat_pct;
        uint64_t max_host_bloat_kb;
};

/* In the state directory: the outcome of mthpd's last reload, for
 * 'mthpctl reload' when mthpd is off the bus (it sends SIGHUP, then reads
 * this). "usec=REALTIME\nresult=ok|failed\n", then what the reload did
 * not apply (ok) or its errors (failed), a line each. */
#define MTHP_RELOAD_FILE "reload"

struct mthp_config {
        uint64_t interval_usec;
        enum mthp_mode mode;
        bool mode_set;                /* the file says Mode=: a reload may only then turn observe into manage */
        char state_dir[MTHP_PATH_MAX];
        bool bus;                     /* serve org.mthpd.mthpd1 on the system bus */
        char policy_dir[MTHP_PATH_MAX];
        uint64_t collapse_budget_kb;  /* MADV_COLLAPSE per tick for Collapse=yes cgroups */
        bool shmem_collapse;          /* repair shmem held at 4K after mthpd's 2M raise (in that budget) */
        /* GiveBack=auto: page out the zero subpages of large folios that a
         * quiet process grew under a raise (process_madvise MADV_PAGEOUT on
         * its sparse 2M windows), only where the host has no swap; no: never.
         * GiveBackBudget=: bytes of such windows a tick, 0 none. */
        bool give_back;
        uint64_t give_back_budget_kb;
        /* CollapseCPU=: percent of one core MADV_COLLAPSE work (Collapse=yes
         * and the shmem repair) may take; a tick's time budget is
         * interval_usec x collapse_cpu / 100 (mthp_collapse_usec_per_tick).
         * Above 0, at most 100; default 2 (20 ms a tick at the 1 s interval). */
        double collapse_cpu;
        bool fault_sampling;          /* split faults between anon and shmem by sampled addresses (perf) */
        /* FaultCost=: the CPU time of one 4K page fault, the unit of
         * RaiseFaultTime=. auto (fault_cost_ns 0, fault_cost_auto): measured
         * by mthpd at its start on the host it runs on (host root /), unknown
         * under another root; off (0, false): unknown; else as given. */
        double fault_cost_ns;
        bool fault_cost_auto;
        struct mthp_engine_config engine;
};

void mthp_config_defaults(struct mthp_config *c);
/* Longest state directory: its files' names must fit after it. */
#define MTHP_STATE_DIR_MAX (MTHP_PATH_MAX - 33)
/* Set StateDirectory=/--state-dir, PolicyDirectory=/--policy-dir: an
 * absolute path that fits, or -ENAMETOOLONG (never a cut path: a cut
 * --state-dir saved the journal as "restore.jo", which restore never found). */
int mthp_config_set_state_dir(struct mthp_config *c, const char *path);
int mthp_config_set_policy_dir(struct mthp_config *c, const char *path);
/* Parse an mthpd.conf over the current values. Every unknown section or key
 * and every bad value is reported as "FILE:LINE: ..." (one per line of err);
 * on any error c is left untouched and -EINVAL returned. */
int mthp_config_load(const char *file, struct mthp_config *c, char *err, size_t errsz);
int mthp_config_load_string(const char *name, const char *text, struct mthp_config *c, char *err, size_t errsz);

/* The files of a configuration, in the order they are read (mthpd.conf(5),
 * FILES): the main file, if any (main), then the drop-ins NAME.d/ *.conf
 * (mthp_conf_files_list: sorted by file name, an earlier directory's name
 * masks a later one's, a /dev/null symlink or empty file masks it). */
#define MTHP_CONFIG_NAME "mthpd.conf"
#define MTHP_CONFIG_DIRS_MAX 8
struct mthp_config_files {
        char **path;
        size_t n;
        bool main;
};
/* The directories of the default configuration, the one that wins first:
 * the administrator's (MTHP_SYSCONFDIR, /etc/mthpd), the runtime one
 * (/run/mthpd) and the vendor's (/usr/lib/mthpd). NULL-terminated. */
extern const char *const mthp_config_default_dirs[];
/* The main file is the first DIR/mthpd.conf of dirs that exists (none if
 * that one is a symlink to /dev/null); drop-ins from every DIR/mthpd.conf.d. */
int mthp_config_files_find(const char *const *dirs, struct mthp_config_files *f, char *err, size_t errsz);
/* An explicit file (mthpd --config FILE): FILE, then FILE.d/ *.conf. */
int mthp_config_files_explicit(const char *file, struct mthp_config_files *f, char *err, size_t errsz);
void mthp_config_files_free(struct mthp_config_files *f);
/* Parse the files in order over c: a later file's key overrides an earlier
 * one's. Every error of every file as "FILE:LINE: ..."; on any error c is
 * left untouched (all files or none) and -EINVAL returned. */
int mthp_config_load_files(const struct mthp_config_files *f, struct mthp_config *c, char *err, size_t errsz);

/* Bounds of the durations, both ends allowed (mthpd.conf(5)): Interval=
 * and --interval from 100ms to 1h, StartGrace= up to 1h. Durations are
 * parsed by mthp_timespan_parse (mthp/timespan.h). */
#define MTHP_INTERVAL_MIN_USEC 100000ULL
#define MTHP_INTERVAL_MAX_USEC 3600000000ULL
#define MTHP_START_GRACE_MAX_USEC 3600000000ULL

/* Value parsers shared by config and policy files. */
int mthp_parse_percent(const char *s, double *pct);       /* "10", "10%" */
int mthp_parse_size_range(const char *s, unsigned *min_kb, unsigned *max_kb); /* "16K-64K", "64K", "none" */
int mthp_parse_boolean(const char *s, bool *b);           /* yes/no, true/false, on/off, 1/0 */
/* A whole number lo..hi of decimal digits only: -EINVAL or -ERANGE. */
int mthp_parse_whole(const char *s, unsigned lo, unsigned hi, unsigned *out);
/* A size an mTHP can have: a power of two, 8K or more ("3K" is not one). */
int mthp_parse_ladder_size(const char *s, unsigned *kb);
/* MaxBloat=: "20%", "20", 0..10000. */
int mthp_parse_max_bloat(const char *s, double *out);
