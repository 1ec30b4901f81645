/* SPDX-License-Identifier: MIT */
#pragma once

#include "mthp/config.h"
#include "mthp/policy.h"
#include "mthp/sample.h"
#include "mthp/types.h"

/* A raise on trial (lib/engine-pay.c): what the processes that drove it
 * paid before it, and what they and the new top size pay since. */
#define MTHP_ENGINE_TRIAL_PROCS 4
struct mthp_engine_trial_proc {
        int pid;                        /* 0: free */
        char comm[16];
        /* before the raise (its smoothed samples): system and total CPU
         * (cores), the MB/s of the kind it faulted in, its RSS of the kind */
        double sys0, cpu0, mb0;
        uint64_t rss0_kb;
        /* since: sums of rate x seconds over the trial's ticks it was
         * measured in, those seconds, and its latest RSS of the kind */
        double sys, cpu, mb, dt;
        uint64_t rss_kb;
};
struct mthp_engine_trial {
        unsigned from, to;              /* levels; to 0: no trial */
        uint64_t tick;                  /* the latest raise (a climb goes on trial as one) */
        unsigned ticks;                 /* ticks measured at `to` */
        double dt;                      /* their seconds */
        double alloc, fallback, charge; /* the top size's allocations, fallbacks, memcg-charge fallbacks */
        unsigned n_procs;
        struct mthp_engine_trial_proc proc[MTHP_ENGINE_TRIAL_PROCS];
};
/* The last trial that failed, for the reasons of the holds while its
 * level is barred: rule 0 none (a value of enum mthp_rule below). */
struct mthp_engine_unpaid {
        int rule;
        unsigned level, from;           /* the level barred, the level it went back to */
        unsigned kb, from_kb;           /* their top sizes (the page size at level 0) */
        uint64_t tick;                  /* when it was judged */
        unsigned ticks;                 /* the trial's length in ticks */
        double value;                   /* fallback %, or the CPU ratio */
        double charge_pct;              /* of the faults, those the memcg charge refused */
        int pid;
        char comm[16];
        bool per_mb;                    /* the CPU rule: per MB faulted in (else per second) */
};

/* Per kind, the engine keeps a level: level L enables the L smallest sizes of
 * the allowed ladder ("always"); sizes above stay at their original value.
 * The kernel tries the largest enabled size first and falls back to smaller
 * enabled ones, so a cumulative ladder degrades gracefully.
 *
 * Which level pays off comes from density: for each process that faults
 * hard, the share of each block of a candidate size it really touches
 * (pagemap coverage before large folios; 1 - zero-subpage share after).
 * A size is allowed while every such process touches enough of it that the
 * RSS it would cost stays within MaxBloat; the most sparse process holds the
 * size back, and the explanation names it. Without density samples the
 * engine climbs one size at a time up to UnmeasuredMaxSize. */
struct mthp_engine_kind {
        unsigned level;
        unsigned raise_streak, lower_streak, pressure_streak;
        uint64_t last_change_tick;
        /* After a step down for pressure or fragmentation, the level that
         * failed is barred until ceiling_until; each repeat failure at the
         * same level doubles the backoff. Without this the engine climbs
         * straight back into the condition it fled and flaps. */
        unsigned ceiling;               /* 0 = none */
        uint64_t ceiling_until;
        unsigned backoff;
        /* probe-then-verify: ticks left for the new top size to show
         * allocations after a raise (0 = verified or nothing to verify) */
        unsigned verify_left;
        unsigned verify_from;           /* level to go back to if it fails */
        unsigned sparse_streak;         /* ticks a faulting process was too sparse for the level */
        int last_dir;                   /* +1 last change raised, -1 lowered, 0 none */
        /* A density step-down blamed on a churning process (struct
         * mthp_engine_proc churn) with no dense sample of the size it
         * failed at (it was caught writing a buffer), or whose RSS grew
         * beyond MaxBloat of what it held when it read dense there
         * (churn_grown). churn_pid: that process (0: none), churn_from: the
         * level it stepped down from, churn_tick: when. Once the process,
         * sampled since with the sizes off (presence), reads dense at every
         * size a raise turns on, at an RSS within MaxBloat of one it read
         * dense at, the raise back need not wait DwellTicks; cleared by any other change
         * of the level and when the dwell is over. Once per process
         * (struct mthp_engine_proc churn_spent): a later step-down blamed
         * on it waits the dwell (no flap). churn_beside: its zeros lay
         * beside its data (it turned sparse): its folios of before may
         * still be mapped whole at the next sample and read dense by
         * presence, so the raise back waits for a sample
         * ENGINE_CHURN_BESIDE_TICKS after the step-down, when a churner has
         * turned its memory over (1.5 times a second at least). */
        int churn_pid;
        unsigned churn_from;
        uint64_t churn_tick;
        bool churn_grown;
        bool churn_beside;
        /* A raise back after a step-down blamed on a churner's grown RSS
         * (churn_grown) proved its growth resident at 4K: sampled with the
         * sizes off, it read dense at the RSS it had grown to. Its zeros by
         * content are memory it holds at any size (a JVM's pre-touched
         * heap): a later density objection of its stands only past (1 +
         * MaxBloat)^2 of resident_kb, or once its zeros lie beside its data
         * (engine.c sparse_set_aside). 0: none. */
        int resident_pid;
        uint64_t resident_kb;
        /* The last density step-down: when (0 none) and the process it
         * was blamed on (0: a policy's cgroup). Another blamed on the same
         * process within ENGINE_FLAP_TICKS of it, not arming a churn raise
         * back, is a flap: it bars the levels above the one it goes to
         * (ceiling, backoff as after a failure). */
        uint64_t sparse_down_tick;
        int sparse_down_pid;
        bool align_advised;             /* the top size is at advise for alignment (ShmemAlign=) */
        /* the last raise stopped below the top of the ladder where a
         * process's density held it (not a policy's sizes, a limited
         * cgroup, a barred level, a blind step or a start grace):
         * mthp_engine_climbing */
        bool climb;
        /* A raise is a trial (lib/engine-pay.c): judged after
         * ENGINE_PAY_TICKS at the new level, kept if it paid, else the
         * level goes back to trial.from and the level barred as after a
         * failure; unpaid: the last verdict against a level */
        struct mthp_engine_trial trial;
        struct mthp_engine_unpaid unpaid;
};

/* What the engine remembers of a process the density sampler saw: one
 * sample catches a process at one instant (perhaps between two mappings),
 * so usage is a decayed average weighted by the blocks each sample saw. */
#define MTHP_ENGINE_PROCS 16
struct mthp_engine_proc {
        int pid;                        /* 0: free */
        char comm[16];
        char cgroup[MTHP_CGROUP_PATH_MAX];  /* its memory cgroup, "" unknown */
        uint64_t seen_tick;
        double fault_rate;
        bool new_proc;                  /* its rate is a lifetime average so far */
        uint64_t rss_kb[_MTHP_KIND_MAX];
        double w[_MTHP_KIND_MAX][MTHP_SIZES_MAX];  /* decayed weight */
        double u[_MTHP_KIND_MAX][MTHP_SIZES_MAX];  /* decayed usage x weight */
        /* Opt-outs: a process that gets no folio of a size has no say on
         * it. thp_off: THP_enabled 0 (PR_SET_THP_DISABLE), no size at all;
         * nohuge_kb: RSS in MADV_NOHUGEPAGE mappings (smoothed like rss_kb),
         * which take no part in its fault share. A size at "madvise" gives
         * MADV_HUGEPAGE (hg) mappings its folios already, so only the other
         * mappings' usage judges a raise of it to always: wp/up like w/u
         * over them (the same as w/u while no hg mapping is seen), hg[k][z]:
         * the last sample there saw one. */
        bool thp_off;
        uint64_t nohuge_kb[_MTHP_KIND_MAX];
        bool hg[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double wp[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double up[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* its largest shmem mapping (a map/unmap loop is caught between
         * mappings in some ticks: a smaller one seen meanwhile does not
         * replace it for PROC_FORGET_TICKS); folio counts decay by half a
         * sample; reach MTHP_SHM_NONE: never seen */
        struct mthp_shm_mapping shm;
        uint64_t shm_tick;              /* when shm was last seen */
        /* shmem repair: kB of shm's mapping the daemon collapsed with
         * MADV_COLLAPSE, as the last sample of it said
         * (mthp_proc_density.shm_repaired_kb); 0 when shm changes; a repair
         * of the PMD size counts as its use (probe-then-verify) */
        uint64_t shm_repaired_kb;
        /* its sampled faults by mapping kind (mthp_proc_density.fault_samples),
         * halved at each sample of it but never below 8 in all (added up
         * until there are 8): with enough of them
         * (engine_fault_share), they split its fault rate between the kinds
         * instead of the memory it holds */
        double fs[_MTHP_KIND_MAX], fs_other;
        /* the split its samples last gave while there were enough of them:
         * it stands while they are too few (a process whose fault rate fell
         * because its memory got large folios, or that faults slowly) */
        double fs_last[_MTHP_KIND_MAX], fs_last_other;
        bool fs_known;
        /* it holds shared memory and its faults are sampled, but too few
         * samples are in (yet: a tick after sampling starts; or ever, for a
         * process with too small a share of the host's faults): its faults
         * are no kind's demand for as long as that lasts (the flag stands
         * between two samples of it); its density counts, split by memory
         * held */
        bool fs_pending;
        /* Churn (engine-remember.c): its memory turned over at least
         * ENGINE_CHURN_TURNOVER times a second at its last sample (its
         * fault pages of the kind at the largest size on, no more than the
         * host's mTHP allocations of the kind, beside its RSS). With large folios on
         * the sampler reads content, and a buffer caught mid-write reads
         * zeros it fills a moment later. peak_u: its densest sample of each
         * size (presence with the size off, else content); peak_rss_kb: the
         * largest RSS of the kind (smoothed) at which it read dense: at a
         * new densest sample, or at one with the size off that read dense
         * (not in the tick after a step down, at the lower of its RSS and
         * the smoothed one): peak_base_kb; or by content with the size on
         * (dense enough to raise, not its densest), but then no more than
         * (1 + MaxBloat) of peak_base_kb, so content alone, which
         * counts mappings where no read found data as touched, cannot ratchet it
         * up tick by tick (the churn rule allows MaxBloat on top: (1 +
         * MaxBloat)^2 of the base). A churning process whose
         * peak is dense and whose RSS has not grown beyond (1 + MaxBloat)
         * of peak_rss_kb keeps the size, and a raise may go past it while
         * it is on (engine-density.c). */
        bool churn[_MTHP_KIND_MAX];
        double peak_u[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        uint64_t peak_rss_kb[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        uint64_t peak_base_kb[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* a density step-down of the kind was blamed on it while it
         * churned and never read dense, and let a raise back skip the
         * dwell (struct mthp_engine_kind churn_pid): the next one waits */
        bool churn_spent[_MTHP_KIND_MAX];
        /* Its last samples in a row, with the size on, whose zeros beside
         * data (mthp_proc_density zero_data) read sparse at the keep
         * threshold, up to 255; a sample that reads data densely there
         * resets it. A write not yet finished has its zeros ahead of it,
         * in windows with no data; a program that turned sparse has them
         * in every window. From ENGINE_DATA_SPARSE_SAMPLES the churn rule
         * no longer keeps the size (engine-density.c), and at 1 the
         * density back-off waits for the second sample (engine-tick.c). */
        uint8_t data_sparse[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        /* Persistence (engine-remember.c, engine_persistent): the snapshot
         * times (t_usec) of its first sample since the engine remembers it
         * and of its latest one. A raise needs the faults of processes seen
         * alive a while or with MinBloatBytes at stake, not a compiler
         * job's (docs/engine.md, "Persistent evidence"). */
        uint64_t first_usec, seen_usec;
        /* Its CPU (lib/engine-pay.c): the last sample's system and total
         * CPU (cores) and MB/s faulted in per kind at the level then on;
         * pay_*: the same smoothed (half each sample); pay_tick: the tick
         * of the last sample that measured them (0: never) */
        double sys_rate, cpu_rate, mb_rate[_MTHP_KIND_MAX];
        double pay_sys, pay_cpu, pay_mb[_MTHP_KIND_MAX];
        uint64_t pay_tick;
};

/* What the engine remembers of a managed cgroup: memcg statistics are
 * flushed lazily, so one tick's pgfault delta can read 100x too low or too
 * high; a cgroup keeps its say for a few ticks after it last faulted hard
 * and its rate is smoothed. */
struct mthp_engine_cgroup {
        char path[MTHP_CGROUP_PATH_MAX];   /* "": free */
        uint64_t seen_tick, say_tick;      /* say_tick 0: never had a say */
        double fault_rate;                 /* smoothed */
};

/* What the engine remembers of a memory-limited cgroup (every one on the
 * host, not only managed ones): the invariant of mthp_engine_decide() and
 * mthp_engine_guard() is that a size is "always" only while each populated
 * limited cgroup could take its worst case under it,
 *     bloat_C(S) x R_C <= (1 - GuardHeadroom) x headroom_C,
 * bloat_C(S) from the measured density of its sampled processes, S/4K
 * (assumed sparse) when none was sampled or while it is tripped; R_C the
 * memory it faulted last tick, at least GuardFloor of its limit, and while
 * tripped at least what it grew between the guard's arming and the trip. */
struct mthp_engine_limited {
        char path[MTHP_CGROUP_PATH_MAX];   /* "": free */
        uint64_t usage_kb, limit_kb;
        uint64_t growth_kb;                /* usage growth over the last tick */
        bool present;                      /* in the last scan */
        bool populated;
        uint64_t seen_tick;
        /* the guard fired for it: assumed sparse until trip_until; a repeat
         * within the backoff doubles it */
        uint64_t trip_tick, trip_until;
        unsigned trip_backoff;
        uint64_t trip_growth_kb;           /* what it grew between arming and the trip: its R_C until trip_until */
};

struct mthp_engine_state {
        uint64_t tick;
        struct mthp_engine_limited limited[MTHP_SNAP_LIMITED];
        struct mthp_engine_proc proc[MTHP_ENGINE_PROCS];
        struct mthp_engine_cgroup cgroup[MTHP_SNAP_CGROUPS];
        struct mthp_engine_kind kind[_MTHP_KIND_MAX];
        bool defrag_defer;              /* mthpd set defrag=defer for large sizes */
        unsigned defrag_streak;
        /* the shrinker net (max_ptes_none) outlives the 2M raise: the PMD
         * folios faulted meanwhile stay until split (engine.c, shrinker_net) */
        /* the most a limited cgroup grew past its guard threshold before
         * the step-down took effect (the guard's wake-up latency times how
         * fast the kernel charges): the invariant's burst term */
        uint64_t guard_overshoot_kb;
        uint64_t net_until;             /* keep the net up to this tick; 0: none held */
        unsigned net_value;             /* the value it was last held at */
        /* density back-off (mthp_engine_wants_density): the last tick with
         * a density sample and the host's fault rate then; the ticks in a
         * row whose decision was steady (mthp_engine_density_steady); a
         * process in the last sample near its cgroup's limit or stalling
         * in compaction (checks only a fresh sample makes) */
        uint64_t density_tick;
        double density_rate;
        unsigned steady_ticks;
        bool density_alert;
        /* MinBloatBytes= in kB at the last decision (engine_remember), for
         * the steps that have no snapshot (the shrinker's net) */
        double min_bloat_kb;
        /* the last tick whose density sample saw a process (0: none ever):
         * the sampler sees the host's processes, so a demand none of them
         * faults comes from processes too short-lived to be seen (a fake
         * host, or a /proc mounted hidepid, shows none) */
        uint64_t procs_seen_tick;
        /* The host's bloat budget (engine-budget.c): MaxHostBloat= in kB
         * for the last snapshot (INFINITY: none), and per kind and caps
         * size the bloat the host would hold with the kind's level at that
         * size (the processes' predictions, and for anon the bloat
         * measured and not given back); 0 off the ladder or unmeasured.
         * grown_*: what the observer last found grown and quiet under a
         * raise (mthp_snapshot grown_*), kept ENGINE_GROWN_KEEP_USEC. */
        double host_budget_kb;
        double host_bloat_kb[_MTHP_KIND_MAX][MTHP_SIZES_MAX];
        double grown_kb, grown_max_kb;
        uint64_t grown_usec;
        int grown_pid;
        char grown_comm[16];
};

/* The rule behind a decision: a stable name for what its reason says, so
 * that tools and tests match the rule (and the numbers), not the prose. A
 * size knob's decision carries two: why the kind is at its level (rule)
 * and what that makes of this size (size_rule). mthp_rule_name() gives
 * the kebab-case name. */
enum mthp_rule {
        MTHP_RULE_NONE,
        MTHP_RULE_FIRST_SAMPLE,         /* no rates yet: the level holds */
        MTHP_RULE_STEP_DOWN_LIMIT,      /* a memory-limited cgroup cannot afford the level */
        MTHP_RULE_STEP_DOWN_PRESSURE,   /* memory pressure, ticks in a row */
        MTHP_RULE_STEP_DOWN_PROBE,      /* a raise the kernel did not use */
        MTHP_RULE_STEP_DOWN_SPARSE,     /* a party with a say reads sparse at the level */
        MTHP_RULE_STEP_DOWN_CHURN,      /* the same, blamed on a churner: a quick raise back armed */
        MTHP_RULE_STEP_DOWN_STALL,      /* a process stalls in direct compaction */
        MTHP_RULE_STEP_DOWN_FALLBACK,   /* mTHP faults fall back: memory fragmented */
        MTHP_RULE_STEP_DOWN_DEMAND,     /* fault demand below the lower rate */
        MTHP_RULE_RAISE_GRACE,          /* a new cgroup in its start grace */
        MTHP_RULE_RAISE_POLICY,         /* demand, and a policy wants the size */
        MTHP_RULE_RAISE_DENSE,          /* demand, and the processes use the size densely */
        MTHP_RULE_RAISE_DEMAND,         /* demand, no density sample */
        MTHP_RULE_RAISE_CHURN_BACK,     /* a churner reads dense again: back without the dwell */
        MTHP_RULE_HOLD,                 /* nothing moves the level */
        MTHP_RULE_HOLD_PRESSURE,        /* ... and there is pressure */
        MTHP_RULE_HOLD_LIMIT,           /* ... a memory-limited cgroup holds it back */
        MTHP_RULE_HOLD_SPARSE,          /* ... a party's density holds it back */
        MTHP_RULE_HOLD_NO_HIGHER,       /* ... a raise is due but density allows none */
        MTHP_RULE_HOLD_GRACE,           /* ... a cgroup in its start grace wants it */
        MTHP_RULE_HOLD_WANTED,          /* ... a party wants it kept */
        MTHP_RULE_HOLD_BARRED,          /* ... the level above failed before */
        MTHP_RULE_HOLD_DWELL,           /* ... dwelling after the last change */
        MTHP_RULE_HOLD_ADMIN,           /* the administrator turned THP off: the kind stays at 4K */
        MTHP_RULE_GUARD_LIMIT,          /* the guard: a limited cgroup crossed its threshold */
        MTHP_RULE_DEFRAG_DEFER,         /* large sizes fall back: defrag=defer */
        MTHP_RULE_DEFRAG_ADMIN,         /* the administrator's defrag */
        MTHP_RULE_NET_HELD,             /* 2M is always: the THP shrinker's net */
        MTHP_RULE_NET_LINGER,           /* 2M was always lately: the net stays a while */
        MTHP_RULE_NET_OFF,              /* 2M not held: original value */
        /* size_rule: what the level makes of one size */
        MTHP_RULE_SIZE_IN_USE,          /* below the level: always */
        /* always, but a sampled process's shared mapping cannot get it: */
        MTHP_RULE_SIZE_SHM_FILE,        /* ... a linked tmpfs file (its mount's huge= rules) */
        MTHP_RULE_SIZE_SHM_SYSV,        /* ... a SysV segment (the global shmem_enabled rules) */
        MTHP_RULE_SIZE_SHM_UNALIGNED,   /* ... not aligned for the size */
        MTHP_RULE_SIZE_SHM_FILLED,      /* ... its page cache was filled before the raise */
        MTHP_RULE_SIZE_SHM_REPAIRING,   /* ... the same, being repaired by MADV_COLLAPSE */
        MTHP_RULE_SIZE_REPAIRED,        /* in use; the daemon repaired a mapping */
        MTHP_RULE_SIZE_MADVISE,         /* above the level: a policy's madvise */
        MTHP_RULE_SIZE_ALIGN,           /* above the level: advise, for alignment (ShmemAlign=) */
        MTHP_RULE_SIZE_ALIGN_CAPPED,    /* above the level: no advise, a limited cgroup caps the sizes */
        MTHP_RULE_SIZE_OFF,             /* above the level: original value */
        MTHP_RULE_SIZE_OUTSIDE,         /* not on the ladder: original value */
        /* the kind's rule again (appended: the values above stay): */
        MTHP_RULE_HOLD_SHORT_LIVED,     /* ... demand due, but from short-lived processes with little at stake */
        /* the host's bloat budget (MaxHostBloat=, engine-budget.c) */
        MTHP_RULE_STEP_DOWN_BUDGET,     /* the host's bloat at the level is over MaxHostBloat */
        MTHP_RULE_HOLD_BUDGET,          /* ... a raise is due, but the host's bloat above would be over it */
        /* a raise is a trial (lib/engine-pay.c): */
        MTHP_RULE_STEP_BACK_FALLBACK,   /* the new top size fell back on most faults of its trial */
        MTHP_RULE_STEP_BACK_CPU,        /* it cost the processes that drove it more CPU */
        MTHP_RULE_HOLD_UNPAID,          /* ... the level above failed its trial: barred */
        _MTHP_RULE_MAX
};

/* "step-down-sparse", ...; "none" for MTHP_RULE_NONE, "?" out of range. */
const char *mthp_rule_name(enum mthp_rule rule);

struct mthp_decision {
        int knob;                               /* index into caps.knobs */
        char value[MTHP_VALUE_MAX];             /* "" = its original value */
        char reason[MTHP_REASON_MAX];
        enum mthp_rule rule;                    /* what the reason says, by name */
        enum mthp_rule size_rule;               /* a size knob: what the level makes of it (else NONE) */
};

/* The ladder of sizes a kind may use under cfg, ascending; returns count. */
unsigned mthp_engine_ladder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            enum mthp_kind kind, unsigned ladder[MTHP_SIZES_MAX]);

/* Pure: did the administrator turn THP of this kind off (cfg->thp_off),
 * and does the configuration respect it (not OverrideThpOff=yes)? Then no
 * size of the kind goes to always (rule hold-admin). */
bool mthp_engine_thp_off(const struct mthp_engine_config *cfg, enum mthp_kind kind);

/* The policy that manages a memory cgroup path under cfg (NULL: none, the
 * defaults apply); managed gets the matched cgroup if not NULL. */
const struct mthp_policy *mthp_engine_policy(const struct mthp_engine_config *cfg, const char *cgroup, char *managed,
                                             size_t size);

/* Density of a managed cgroup's processes as the engine remembers them: the
 * largest size (kB) on the kind's ladder that every sampled process of the
 * cgroup (or its children) uses densely enough for its MaxBloat; 0: none;
 * -1: no process of it sampled. n_procs (may be NULL): how many. */
int mthp_engine_cgroup_dense_kb(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_engine_state *st, const char *managed, enum mthp_kind kind,
                                unsigned *n_procs);

/* Pure: what process j (an index into st->proc) faults of kind, in base
 * pages a second, as the engine's density judgement counts it: its fault
 * rate times its faults' share of the kind, times the pages of the kind's
 * current top size where it uses that size densely (each fault then taken
 * to bring in a folio of it), else one page a fault. A process that gets
 * 2M folios faults 512 times less often for the same memory: its fault
 * rate alone would call it idle. Only where its faults were sampled by
 * address (now or before) and its rate is measured, not a lifetime
 * average: else each fault is one page. 0 for an empty slot. */
double mthp_engine_proc_pages_rate(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                   const struct mthp_engine_state *st, unsigned j, enum mthp_kind kind);

/* Pure: the fault rates (4K pages/s) a raise needs and a step-down falls
 * below, at the host's 4K fault cost (0: unknown): RaiseFaultRate and
 * LowerFaultRate, or lower ones where faults at that cost take
 * RaiseFaultTime of a core (lib/engine.c). True when RaiseFaultTime set
 * them. */
bool mthp_engine_fault_rates(const struct mthp_engine_config *cfg, double fault_cost_ns, double *raise,
                             double *lower);

/* Pure: the largest size (caps index) whose folios the kernel hands out to
 * any fault of this kind in snap: its knob "always", or "inherit" under a
 * global "always"; -1: none. madvise'd memory is the program's own choice. */
int mthp_engine_largest_always(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind);

/* Pure: does this tick's decision need the density sampler (the /proc
 * scan, the costly part of an idle tick)? Only while the host faults fast
 * enough that some kind could be raised (the per-kind demand never exceeds
 * the host's fault volume) or while a size is raised (the bloat guard
 * watches the processes that use it), then every tick until the decision
 * has been steady, every MTHP_ENGINE_DENSITY_EVERY ticks after (below),
 * raised or not: a busy host whose samples found nothing to raise backs
 * off as a raised level does. An idle host then costs the same
 * whatever its number of processes, and a workload that starts faulting is
 * sampled in the very tick its faults first show. */
bool mthp_engine_wants_density(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                               const struct mthp_engine_state *st);

/* Pure: does the engine, after deciding this tick (st: the state
 * mthp_engine_decide() returned), wait for fault samples that may raise a
 * size? True when processes seen this tick that fault at least
 * MinProcessFaultRate each hold shared memory, their faults not split
 * between anon and shmem yet (their samples pending: kind_demand() leaves
 * them out, so they can hold a raise back but never cause one), and fault
 * together at the raise rate at least: the samples could make their
 * faults a raise at the next tick. Their own rates, not the host's: a
 * process that started faulting just before the tick is seen at its
 * lifetime rate while the host's rate is still the quiet second's. False
 * when neither anon nor shmem could go higher at the next tick: each at
 * the top of its ladder, below a level barred after a failure, or at what
 * the memory-limited cgroups afford (the samples could raise nothing).
 * rate (may be NULL) gets their faults per second. */
bool mthp_engine_awaits_samples(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_snapshot *snap, const struct mthp_engine_state *st, double *rate);

/* After a tick the fault-burst wakeup brought forward (mthp_tick_burst):
 * should the next one look again a quarter Interval later? True when the
 * host still faults at the raise rate, no process awaits its samples
 * (mthp_engine_awaits_samples: that early tick comes anyway), the tick
 * changed no level, the processes it saw fault below the raise rate
 * between them (their faults a second of 4K pages: else it judged the
 * faulting ones) and anon or shmem could go higher: the burst tick came
 * before the processes that fault were there to see. The daemon asks only
 * after a density tick (else no tick sees a process). pgbench -S under a
 * root mthpd (2026-12-03, 3 runs of 5): the burst tick saw only a
 * short-lived postgres process at its lifetime rate, the backends forked
 * just after it, and the next tick
 * came a whole Interval later; the raise came ~1.35 s into the run
 * instead of ~0.35 s, and its first second ran at 6-7k tps against
 * 11-18k in the runs whose burst tick saw a backend. */
bool mthp_engine_burst_unexplained(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                   const struct mthp_snapshot *snap, const struct mthp_engine_state *st);

/* After a tick: did it raise a kind short of what it could reach (a
 * probe a process's density stopped below the top of the kind's ladder,
 * struct mthp_engine_kind climb, with room left: kind_has_room), at a
 * tick that sampled density, and does the raise stand (a refused write
 * undoes it: mthp_engine_note_applied)? Then the next
 * tick comes a quarter Interval later (mthp_tick_next's climb), with
 * fault samples taken at the new size: a workload that fills its memory
 * as fast as it can reads denser at the larger sizes once the smaller
 * ones are on (the blocks it fills are whole folios, not 4K pages half
 * way through), so each step of the climb needs a tick. pgbench TPC-B
 * under a root mthpd: shmem
 * to 256K at +0.35 s of the server's start, 1M at +1.1 s, 2M at +2.1 s,
 * each a regular tick after the last, while the backends filled the
 * buffer pool at 55 MB/s: 100 MB of it in folios below 2M, for the
 * repair to collapse later, and the run's first seconds slower. */
bool mthp_engine_climbing(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, const struct mthp_engine_state *st);

/* Could a cgroup under pol raise a size by its start grace now (a kind
 * pol says always for is below the largest size Sizes= allows and has
 * room)? The daemon's check for a new cgroup runs only then. */
bool mthp_engine_grace_room(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_engine_state *st, const struct mthp_policy *pol);

/* The processes whose faults wait for their address samples, fault-heavy
 * enough to speak, seen in the last few ticks (a superset of those
 * mthp_engine_awaits_samples counts: it takes this tick's only), the most
 * faulting first: up to max pids into pids; returns how many.
 * The next density tick samples them before any other
 * (mthp_density_set_first), so that its budget does not go to a busier
 * process and leave their samples uncounted another tick. */
size_t mthp_engine_awaited_pids(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, int *pids,
                                size_t max);

/* The tick schedule: a tick every Interval, and an early one, a quarter
 * Interval (at least MTHP_TICK_EARLY_MIN_USEC) after a tick that started
 * to await fault samples (mthp_engine_awaits_samples: it was not awaiting
 * them at the tick before), so that the raise they may bring comes then
 * rather than a whole Interval later. At most one early tick in
 * MTHP_TICK_EARLY_SPACING ticks, never two in a row, and the tick after an
 * early one comes when it would have come without it: an early tick is
 * one tick more, the grid of the others does not move. A look (look: a
 * brought-forward tick that mthp_engine_burst_unexplained says found
 * nothing to act on) also asks for a tick a quarter Interval later; that
 * one is not counted by the spacing and may itself start to await and ask
 * for an early tick, so a workload that forks its faulting processes just
 * after a burst tick is raised about half an Interval later, not one and
 * a quarter. A look is never asked after an early tick nor by a tick
 * that starts to await (its early tick comes as before), and the fault
 * alarm that brings a tick forward is off for MTHP_TICK_EARLY_SPACING
 * ticks after it, the look and its early tick among them: a workload that
 * faults in bursts may get a burst tick, a look and an early tick every 3
 * Intervals or so. A climb (climb: mthp_engine_climbing) asks for a tick
 * a quarter Interval later too, after an early tick as well, not counted
 * by the spacing: each needs a raise at its own tick, so the ladder bounds
 * them, and the grid kept ends them within an Interval. */
#define MTHP_TICK_EARLY_MIN_USEC 100000ULL
#define MTHP_TICK_EARLY_SPACING 5
struct mthp_tick_plan {
        bool awaited;                 /* the last tick awaited samples */
        bool early;                   /* the next tick is an early one */
        uint64_t early_tick;          /* the tick that asked for the last early tick; 0: none yet */
        uint64_t regular_usec;        /* when the tick after the early one is due */
        uint64_t burst_tick;          /* the last tick a fault burst brought forward; 0: none yet */
        bool look;                    /* the next tick is an early one asked by a look */
};

/* Pure: when the tick after `tick` (scheduled for tick_usec, a monotonic
 * time, the Interval interval_usec) is due, given whether it awaits
 * samples; updates plan. A zero plan is the start. */
uint64_t mthp_tick_next(struct mthp_tick_plan *plan, uint64_t tick, uint64_t tick_usec, uint64_t interval_usec,
                        bool awaits, bool look, bool climb);

/* The fault-burst wakeup (mthp_fault_alarm, daemon/fault-alarm.c): a tick
 * brought forward when the host starts to fault fast between two ticks,
 * so that the first raise need not wait for the grid (up to an Interval).
 *
 * Pure: after a tick (snap, st: what it decided; plan: after
 * mthp_tick_next), the faults per CPU at which the alarm should wake the
 * daemon, or 0: leave it off. Off while an early tick is due anyway, while
 * the host already faults at the raise rate (the ticks see it; the alarm
 * would only ring once an Interval), when neither kind could go higher
 * (kind_has_room), within MTHP_TICK_EARLY_SPACING ticks of the last
 * brought-forward tick, and at the first tick (no rates yet). The count:
 * the raise rate for a quarter Interval (at least
 * MTHP_TICK_EARLY_MIN_USEC), split between n_cpus, at least 16. */
uint64_t mthp_tick_alarm_period(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_snapshot *snap, const struct mthp_engine_state *st,
                                const struct mthp_tick_plan *plan, uint64_t interval_usec, unsigned n_cpus);

/* Pure: the alarm rang at now_usec, when /proc/vmstat pgfault read
 * pgfault_now. Since the last tick's snapshot (snap), has the host faulted
 * at the raise rate (that tick's fault cost), and at least
 * MTHP_TICK_EARLY_MIN_USEC's worth of it (a few ms after a tick, one exec
 * would read as the rate)? Fault events against a rate of 4K pages: they
 * are one and the same while faults are 4K, as on a host the alarm is
 * set for. *rate gets its faults per second. Then a tick is due at *tick_usec: now, or
 * MTHP_TICK_EARLY_MIN_USEC after the last one. False: keep waiting (the
 * overflow said only that one CPU took its count since the alarm was set). */
bool mthp_tick_burst(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, uint64_t now_usec,
                     uint64_t pgfault_now, double *rate, uint64_t *tick_usec);

/* Density back-off: while a size is raised, the density sampler (most of
 * a raised tick's CPU) runs every MTHP_ENGINE_DENSITY_EVERY ticks instead
 * of every tick once the decision has been steady for
 * MTHP_ENGINE_STEADY_TICKS ticks: no level change, nothing pending (no
 * raise the density allows waiting, no sparse, pressure or probe streak;
 * a low-demand streak steps down on the counters alone), no start grace, no process of the last sample near its
 * cgroup's limit or stalling in compaction, no memory pressure, and the
 * host's fault rate not jumped since the last sample (above twice it plus
 * the raise rate: a new faulting process). The engine remembers a
 * sampled process for PROC_RECENT_TICKS (3) ticks, so between two samples
 * it decides on the last one. Pure: true when the tick may skip density. */
#define MTHP_ENGINE_STEADY_TICKS 5
#define MTHP_ENGINE_DENSITY_EVERY 3
bool mthp_engine_density_steady(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                                const struct mthp_engine_state *st);

/* A limited cgroup crossed the guard's threshold between two ticks. */
struct mthp_guard_trip {
        char path[MTHP_CGROUP_PATH_MAX];
        uint64_t usage_kb, limit_kb;
        uint64_t armed_usage_kb;           /* its usage when the threshold was set */
        uint64_t threshold_kb;
        const char *what;                  /* "usage threshold", "memory.events high", ... */
        double latency_us;                 /* from the wake-up to this call, for the reason */
        bool hit_limit;                    /* memory.events high/max moved: it reached a limit; no
                                            * size above 4K for it during the backoff */
};

/* Pure: the guard's step-down. Marks the tripped cgroup sparse for a
 * backoff (doubling on repeats), lowers each kind's level to what every
 * limited cgroup then affords (the tripped one's R_C being what it grew
 * since the threshold was set), and emits a decision for every size knob it
 * lowered, with a reason naming the cgroup and its numbers. Returns the
 * number of decisions (0: the current sizes are affordable, nothing to do). */
int mthp_engine_guard(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_guard_trip *trip, const struct mthp_engine_state *prev,
                      struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out);

/* Should the guard watch this limited cgroup (index into st->limited) while
 * the levels are as in st: empty (a program may start in it), or populated
 * and not measured dense enough to take the current top size within
 * MaxBloat. */
bool mthp_engine_limited_at_risk(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                 const struct mthp_engine_state *st, unsigned i);

/* Pure: no I/O, no clock, no globals. Emits one decision for every knob the
 * engine manages, every tick (the actuator only writes differences), and
 * explains it. Returns the number of decisions. */
int mthp_engine_decide(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *prev,
                       struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out);

/* What was really written, fed back after the decisions were applied:
 * failed[k] is true when the write of knob k's decision failed (EROFS,
 * EACCES, EINVAL...), so the kernel kept its old value. A kind whose top
 * size was refused comes down to the largest size below whose write was not,
 * so its level, its next reasons and mthpd's status name only sizes the
 * kernel really holds; the next raise tries the refused size again. Pure. */
void mthp_engine_note_applied(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                              struct mthp_engine_state *st, const bool failed[MTHP_KNOBS_MAX]);
