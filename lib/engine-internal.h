/* SPDX-License-Identifier: MIT */
#pragma once

/* What the engine's files share. Private to lib/. The files form layers,
 * each calling only the ones before it here: the basis; what is
 * remembered; the limited cgroups; the density judgement; then
 * engine-tick.c (when to sample and tick) and engine.c (the decision),
 * which call the steps and are called by none of them. */

#include "mthp/engine.h"

/* ---- engine-basis.c: what every step stands on; calls no other step ---- */

#define PROC_DECAY 0.5             /* per tick: a sample counts half as much a tick later */
#define PROC_FORGET_TICKS 5        /* a process not seen for this long is forgotten */
#define PROC_RECENT_TICKS 3        /* ... and counts for decisions this long */
/* Fault samples (added up, then halved down to this) a process needs
 * before they, not the memory it holds, split its faults between the kinds: at 8, a kind's share is known
 * to about +-0.17 (one standard deviation at a half share). */
#define ENGINE_FAULT_SAMPLES_MIN 8.0
/* A process whose memory of a kind turns over at least this many times
 * a second (its fault pages of the kind at the largest size on, capped by
 * the host's mTHP allocation pages of the kind, beside its RSS) churns: it maps,
 * fills and unmaps buffers faster than the sampler looks, so one sample's
 * zero subpages say how far a write had got, not what it uses
 * (struct mthp_engine_proc churn, peak_u). A process that holds what it
 * faults turns over at most once a second (its RSS grows by what it
 * faults) once it is a second old; stress-ng --vm's workers with 64K on
 * turn over about twice (4 was too high for them), with 2M on 30-75 times. Per second, not per tick:
 * an early tick (a quarter Interval) must not lose it. */
#define ENGINE_CHURN_TURNOVER 1.5
/* Samples in a row whose zeros beside data read sparse before the churn
 * rule lets the size go (struct mthp_engine_proc data_sparse): one can
 * catch a worker just after it populated its buffer, with a single window
 * written in part (stress-ng --vm: a window in 64 per pass). */
#define ENGINE_DATA_SPARSE_SAMPLES 2
/* After a step-down for that, the ticks before a sample may raise back
 * (struct mthp_engine_kind churn_beside) */
#define ENGINE_CHURN_BESIDE_TICKS 2
void engine_level_name(const struct mthp_caps *caps, const unsigned *ladder, unsigned level, char *buf, size_t n);
/* A process's comm as a reason quotes it: as it is when plain, else in
 * double quotes with '"' and '\\' escaped by a backslash (a name with the
 * parentheses, quotes, commas or backslash that reasons put around it, or
 * that is empty or not clean text), then through mthp_escape(). Returns
 * buf; ENGINE_NAME_QUOTED bytes hold any comm. */
#define ENGINE_NAME_MAX 16
#define ENGINE_NAME_QUOTED (4 * (2 * ENGINE_NAME_MAX + 2) + 1)
const char *engine_quote_name(const char *name, char *buf, size_t n);
/* A cgroup path the same way, quoted also when it holds a space, ';' or
 * ':' (what follows a path in a reason); ENGINE_PATH_QUOTED bytes hold any
 * path of MTHP_CGROUP_PATH_MAX. */
#define ENGINE_PATH_QUOTED (4 * MTHP_CGROUP_PATH_MAX + 3)
const char *engine_quote_path(const char *path, char *buf, size_t n);
/* What a per-size knob means now: its value, or for inherit the global
 * knob's of its kind. */
const char *engine_effective_value(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind,
                                  int knob);
/* Is the size at "madvise" now (its own value, or inherit under a global
 * madvise; shmem: advise)? */
bool engine_size_madvised(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind,
                          unsigned size);
/* The raise and lower fault rates (4K pages/s) for this snapshot's fault
 * cost; why (if not NULL) says when RaiseFaultTime= set them (engine.c). */
void engine_fault_rates(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, double *raise,
                        double *lower, char *why, size_t why_size);
/* A process fault-heavy enough to speak whose faults wait for their
 * address samples (fs_pending), seen within the last `recent` ticks
 * (engine.c): the early tick and the density back-off both wait on it. */
bool engine_proc_awaits_samples(const struct mthp_engine_config *cfg, const struct mthp_engine_proc *p, uint64_t tick,
                                unsigned recent);
/* MaxBloat= in percent for a process under pol (NULL: the defaults). */
double engine_max_bloat(const struct mthp_engine_config *cfg, const struct mthp_policy *pol);
/* A process's keep threshold under pol (NULL: the defaults), 1 / (1 +
 * MaxBloat), and the raise threshold above it (half way to 1: the
 * hysteresis band). */
double engine_keep_threshold(const struct mthp_engine_config *cfg, const struct mthp_policy *pol);
double engine_raise_threshold(double keep);
/* MinBloatBytes= in kB for this snapshot: the value set, or auto's larger
 * of 16 MiB and 0.1% of MemTotal (16 MiB where MemTotal is unknown). */
double engine_min_bloat_kb(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap);
/* Is the managed cgroup in its start grace for kind (mthpd.conf
 * StartGrace=): its policy says always for the kind and it appeared less
 * than start_grace_usec before this snapshot? *age_s: since when. */
bool engine_cgroup_grace(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                         const struct mthp_cgroup_view *c, enum mthp_kind kind, double *age_s);
/* Does some managed cgroup of the snapshot have its start grace for kind? */
bool engine_any_grace(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap, enum mthp_kind kind);

/* ---- engine-remember.c: what the engine remembers of processes and cgroups (uses the basis) ---- */

/* Folds this tick's sampled processes (engine_remember) and managed
 * cgroups into what the engine remembers (engine-remember.c). */
void engine_remember(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                     const struct mthp_snapshot *snap, struct mthp_engine_state *st);
void engine_remember_cgroups(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                             struct mthp_engine_state *st);
const struct mthp_engine_cgroup *engine_remembered_cgroup(const struct mthp_engine_state *st, const char *path);
double engine_remembered(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned size);
/* Its usage of a size as a raise to always would change it: with madvised
 * (the size is at "madvise" now) over its mappings that are not hg. */
double engine_remembered_raise(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned size, bool madvised);
/* The memory of a kind a process holds that the engine's sizes can reach
 * (kB): none with THP disabled, none of its nh mappings, none at all when
 * they hold most of it. */
double engine_eligible_kb(const struct mthp_engine_proc *m, enum mthp_kind kind);
/* The memory (kB) of a kind a process puts at stake: what it holds that a
 * size can reach, or what it faults in of the kind in a second if that is
 * more (engine-remember.c). */
double engine_stake_kb(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind);
/* Persistent evidence. A process's faults may raise a size (the faults
 * of those a raise gives folios to, engine-density.c gain_rate; the
 * demand a blind step-up answers) only once the engine has seen it alive
 * for ENGINE_PERSIST_USEC (its first and latest samples that far apart),
 * or at once where its stake reaches MinBloatBytes (floor_kb): a dense
 * program faults 35-1500 MB a second or holds more than that, a
 * compiler job neither. On a build box (gcc -O2 on this tree's files
 * beside other builds, 2026-12-06) cc1 lived 0.2-3 s and was seen over
 * 2.0 s at the most, at 25 MiB of anon and 4,161 faults/s at the most;
 * a python3 or a shell script between ticks. 0 floor_kb: everything has
 * its say (MinBloatBytes=0). */
#define ENGINE_PERSIST_USEC 5000000ULL

/* A churner that read dense at size z once and holds no more than it
 * held then (MaxBloat bloat_pct on top), its zeros not beside its data
 * sample after sample: the zeros are a write it had not finished, in
 * memory it holds at any size (struct mthp_engine_proc churn). Shared by
 * the density judgement and the host's bloat budget. */
static inline bool engine_churn_dense(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned z,
                                      double bloat_pct, double keep_thr) {
        return m->churn[kind] && m->peak_u[kind][z] >= keep_thr &&
               (double) m->rss_kb[kind] <= (1.0 + bloat_pct / 100.0) * (double) m->peak_rss_kb[kind][z] &&
               m->data_sparse[kind][z] < ENGINE_DATA_SPARSE_SAMPLES;
}
/* Seconds between its first and its latest sample. */
double engine_seen_s(const struct mthp_engine_proc *m);
bool engine_persistent(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                       double floor_kb);
/* Its sampled faults (added up to 8, halved above), all kinds and elsewhere. */
double engine_fault_samples(const struct mthp_engine_proc *m);
/* The share of a process's faults that are of this kind; eligible: only
 * those a size can change (not nh, THP not disabled for it). */
double engine_fault_share(const struct mthp_engine_proc *m, enum mthp_kind kind, bool eligible);
/* ", N% of them <kind> by fault address" where the samples split its
 * faults, else "": for the reasons that name a process */
void engine_fault_split_note(const struct mthp_engine_proc *m, enum mthp_kind kind, char *buf, size_t n);

/* ---- engine-limits.c: the limited-cgroup invariant and the safety net under 2M, max_ptes_none and
 * shrink_underused (uses the basis and what is remembered) ---- */

void engine_remember_limited(const struct mthp_snapshot *snap, struct mthp_engine_state *st);
unsigned engine_limited_afford(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                               const struct mthp_engine_state *st, enum mthp_kind kind, const unsigned *ladder,
                               unsigned n_ladder, int *blocker, char *why, size_t n);
void engine_shrinker_net(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         struct mthp_engine_state *st, struct mthp_decision *out, size_t *n, size_t n_out);

/* ---- engine-budget.c: the host's bloat budget (uses the basis and what is remembered) ---- */

/* The bloat (kB) a process would hold with caps size `size` at always
 * (madvised: at madvise now): its stake times 1/usage - 1. */
double engine_rung_bloat_kb(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                            unsigned size, bool madvised);
/* What a process would hold in bloat with the level at each rung of
 * the ladder (host_kb[r]: its largest at rung r or below; up to cap, its
 * policy's Sizes=; none where it churns, or, existing, maps page cache
 * already there): engine-density.c, for each party. */
void engine_proc_host_bloat(const struct mthp_caps *caps, const struct mthp_engine_proc *m, enum mthp_kind kind,
                            const unsigned *ladder, unsigned cap, unsigned n_ladder, const bool *madvised,
                            double bloat_pct, double keep_thr, bool existing, double *host_kb);

/* ---- engine-density.c: the density judgement and the descriptions reasons quote (uses the basis and
 * what is remembered) ---- */

/* The parties of an arbitration (mthpd.policy(5), ARBITRATION): each
 * process that counts (auto) and each managed cgroup with an explicit
 * always/madvise/never that faults. Ceiling: the rungs of the ladder it
 * accepts as "always". */
#define MAX_PARTIES (MTHP_ENGINE_PROCS + MTHP_SNAP_CGROUPS)
struct party {
        int proc;                 /* engine proc index, or -1 */
        int cgroup;               /* snapshot cgroup index, or -1 */
        const struct mthp_policy *pol;
        unsigned prio;
        unsigned keep, raise;     /* ceilings with the keep / raise density thresholds */
        unsigned fail_size;       /* auto: caps size index its density failed at (keep) */
        double fail_usage;
        bool fail_plain;          /* fail_usage is over its mappings that are not hg */
        unsigned raise_size;      /* auto: caps size index its density failed the raise at */
        double raise_usage;
        bool capped;              /* keep limited by its Sizes=, not by density */
        bool grace;               /* a cgroup in its start grace (engine_cgroup_grace) */
        unsigned gain;            /* highest level with a block of its (a policy: its ceiling) */
        unsigned blocks;          /* auto: the highest level it has a block of (party_rungs) */
        /* auto: its density objected, but the bloat it predicts there
         * (bloat_kb, at the rung it objected at first) is under
         * MinBloatBytes=: its ceilings moved up until the small ones' sum
         * reaches it (engine-density.c small_party) */
        bool small;
        double bloat_kb;
        /* auto: the bloat (kB) it would hold with the level at each rung
         * (its largest at that rung or below; none where it churns or
         * maps page cache already there): its part of the host's bloat
         * (engine-budget.c) */
        double host_kb[MTHP_SIZES_MAX];
        bool host_raise_only;     /* seen once, or counts only ahead: it weighs on a raise, not on a hold */
};
struct density_verdict {
        bool measured;            /* at least one party with a say */
        unsigned keep, raise;     /* highest level the arbitration allows (keep / raise thresholds) */
        int holder;               /* party that limits keep (-1: none) */
        int raise_holder;         /* process party that limits raise below keep (-1: none) */
        int best;                 /* the most faulting process that counts */
        int unknown;              /* a process that counts but was never sampled, or -1 */
        unsigned n_parties;
        struct party party[MAX_PARTIES];
        bool madvise[MTHP_SIZES_MAX];  /* per rung: madvise wished above the level */
        char outranked[200];      /* parties whose objection or wish lost, for the explanation */
        int grace;                /* a party in its start grace that accepts keep, or -1 */
        /* a raise the fault rates of those it would give folios fell
         * short of (engine_judge_density): their pages/s, the rate a raise
         * needs, the fastest of them */
        double small_kb;          /* the bloat of the small objectors, added up */
        unsigned n_small;         /* how many they are */
        bool small_say;           /* their sum reached MinBloatBytes=: they object together */
        double min_bloat_kb;      /* MinBloatBytes= for this snapshot */
        bool short_held;
        double short_rate, short_need;
        int short_party;
        /* Persistent evidence (engine_persistent) over the processes seen
         * in the last PROC_RECENT_TICKS: the pages/s of the kind the
         * persistent ones fault (persist_rate) and the others that fault
         * MinProcessFaultRate at least (young_rate, n_young of them, the
         * most faulting: young, or -1). sampler: the
         * density sampler has seen processes (this tick or before:
         * mthp_engine_state procs_seen_tick), so what it saw can judge the
         * demand. blind_held: a blind step-up (no party, no
         * process waiting for its sample, below UnmeasuredMaxSize) is due
         * to the demand, but the sampler saw no persistent process fault
         * raise_at pages/s: the demand comes from processes too short-lived
         * to be judged (rule hold-short-lived). */
        double persist_rate, young_rate, raise_at;
        int young;
        unsigned n_young;
        bool sampler, blind_held;
        /* The host's bloat per rung: the parties' host_kb added up, and
         * the party holding the most of it (-1: none); host_budget: a
         * finite MaxHostBloat=, so the small objectors' sum goes to the
         * budget instead of objecting together (engine-budget.c) */
        double host_kb[MTHP_SIZES_MAX];
        double host_keep_kb[MTHP_SIZES_MAX];   /* the same without the parties host_raise_only */
        int host_top[MTHP_SIZES_MAX];
        bool host_budget;
};
/* Shmem: a process whose fault pages are more than 1/this the kind's mTHP
 * allocation pages (host-wide) maps page cache already there, and cannot
 * bloat with a larger size (engine-density.c quiet_shmem_alloc). A
 * sparse writer's every fault allocates a folio of the size: 4 to 512
 * pages a fault. */
#define ENGINE_ALLOC_SHARE 0.1
/* The processes that fault enough to count but are left out for the
 * kind, and why ("pid N (redis) left out: THP disabled for it (prctl)"),
 * "; "-separated into buf ("" none). */
void engine_left_out(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, enum mthp_kind kind,
                     char *buf, size_t n);
void engine_madvise_wishes(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const unsigned *ladder,
                           unsigned n_ladder, bool madvise[MTHP_SIZES_MAX]);
void engine_judge_density(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, const struct mthp_engine_state *st, enum mthp_kind kind,
                          const unsigned *ladder, unsigned n_ladder, unsigned level, double raise_at,
                          struct density_verdict *v);
void engine_describe_party(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const struct party *p, char *buf,
                           size_t n);
void engine_describe_holder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_engine_state *st, const struct mthp_snapshot *snap, enum mthp_kind kind,
                            const struct density_verdict *v, const unsigned *ladder, unsigned n_ladder, char *buf,
                            size_t n);
/* Why the density allows no raise above level, though it keeps it: the
 * process whose usage misses the raise threshold (raise_holder), or one
 * that counts but was never sampled; false: neither. */
/* Why a blind step-up is held (v->blind_held): the demand, what the
 * persistent processes fault of it, the short-lived ones seen. */
void engine_describe_short_lived(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                                 enum mthp_kind kind, const struct density_verdict *v, double demand, char *buf,
                                 size_t n);
bool engine_describe_raise_holder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                  const struct mthp_engine_state *st, const struct mthp_snapshot *snap,
                                  enum mthp_kind kind, const struct density_verdict *v, char *buf, size_t n);
/* A shmem size 'always' that cannot reach a sampled process's shared
 * mapping (remembered processes seen in the last PROC_RECENT_TICKS): the
 * rule that says why (MTHP_RULE_SIZE_SHM_*; MTHP_RULE_NONE: it can), and
 * why in buf. */
enum mthp_rule engine_shm_unreachable(const struct mthp_engine_state *st, uint64_t tick, unsigned kb, char *buf,
                                      size_t n);
/* A recently sampled process's shmem mapping the daemon repaired with
 * MADV_COLLAPSE (shm_repaired_kb): the one repaired most, said in buf. */
bool engine_shm_repaired(const struct mthp_engine_state *st, uint64_t tick, char *buf, size_t n);

/* ---- engine-emit.c: one kind's level as knob decisions, and defrag (uses the basis, density and
 * remember); engine.c's steps hand a kind on to it as a struct kind_step ---- */
#define DEFRAG_FALLBACK_PCT 20.0

struct signals {
        double opted_out;              /* pages/s of processes that opted out, not in demand */
        double madvised;               /* pages/s in folios of sizes at madvise, not in demand */
        double demand, fallback_pct, avail_pct, share, top_alloc, stall_ms;
        int stall_pid;                 /* a process stalling in compaction, or 0 */
        bool pressure, fragmented, measured;
        char pressure_why[256];
        /* this tick's rates (engine_fault_rates) and, when RaiseFaultTime
         * set them, what they stand for */
        double raise_at, lower_at;
        char rate_why[96];
};

/* One kind's decision this tick, as the steps of mthp_engine_decide pass it
 * on: its inputs (signals, density), the level it may go to, the level it
 * goes to and why. */
struct kind_step {
        enum mthp_kind kind;
        const char *kname;
        struct mthp_engine_kind *st;
        unsigned ladder[MTHP_SIZES_MAX];
        unsigned n_ladder;
        struct signals sig;
        struct density_verdict dens;
        bool dwell_ok;
        unsigned target, afford, old_level;
        bool lim_capped, barred, probe_failed;
        bool align;                     /* the top size goes to advise (ShmemAlign=) */
        bool align_capped;              /* it would, but a limited cgroup caps the sizes */
        int lim_blocker;
        char lim_why[400];
        char top[16], who[96], raiser[200], keeper[200];
        char left_out[240];             /* processes that opted out, for the reasons */
        /* a raise back after a step-down blamed on a churner that reads
         * dense now (struct mthp_engine_kind churn_pid): no dwell, and why */
        bool churn_back, churn_armed;
        unsigned churn_to;              /* where it may go: no higher than it came down from */
        char churn_note[200];
        char why[MTHP_REASON_MAX - 96];
        enum mthp_rule rule;            /* the rule why says */
        /* the host's bloat budget, not a limited cgroup, set afford
         * (engine_budget_afford); lim_why then says the host's figures */
        bool budget_capped;
        /* the trial of the last raise (engine-pay.c): it did not pay
         * (st->unpaid says how), or a note for a hold's reason */
        bool pay_failed;
        char pay_note[200];
};

/* Whether the kind's top size goes to advise for alignment (ShmemAlign=). */
void engine_kind_align(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, struct kind_step *k);
/* One decision for every per-size knob of the kind. */
void engine_emit_size_decisions(const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                                const struct mthp_engine_state *st_all, const struct kind_step *k,
                                struct mthp_decision *out, size_t *n, size_t n_out);
/* The level a kind still uses, at most level `top`: the largest size on
 * its ladder whose folios were allocated this
 * tick at MinProcessFaultRate 4K pages a second or more (the rate from
 * which the engine counts a process's faults at all), its rate in
 * *pages_rate; 0 (the boot or policy values) when none is. */
unsigned engine_level_in_use(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct kind_step *k, unsigned top,
                             double *pages_rate);
/* The defrag decision, with the sizes' confirm/lower hysteresis. */
void engine_decide_defrag(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, struct mthp_engine_state *next, bool want_defer,
                          const char *defer_why, struct mthp_decision *out, size_t *n, size_t n_out);

/* ---- engine-budget.c: the host's bloat budget, MaxHostBloat= (uses the basis, what is remembered and
 * the density verdict) ---- */

/* MaxHostBloat= in kB for this snapshot: auto's 2.5% of MemTotal, a
 * percent of it, a size; INFINITY for infinity or where MemTotal is
 * unknown (auto, a percent). */
double engine_max_host_bloat_kb(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap);
/* The parties' host_kb added up per rung (v->host_kb), and who holds the most (v->host_top). */
void engine_host_bloat_sum(struct density_verdict *v, unsigned n_ladder);
/* The largest level whose host bloat fits the budget, if below k->afford:
 * k->afford lowered, k->budget_capped set, k->lim_why the figures; the
 * host's figures kept in next for the bus and the metrics. */
void engine_budget_afford(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k);

/* engine-basis.c: down to level `to` after a failure (pressure, a failed probe,
 * fragmentation, a flap), and bar the level that failed for a while,
 * longer each time it fails again. */
void engine_step_down_failed(const struct mthp_engine_config *cfg, struct mthp_engine_kind *st, unsigned to,
                             uint64_t tick);

/* engine-sparse.c: a density step-down and what sets it aside. */
/* The remembered process of a pid, or NULL. */
const struct mthp_engine_proc *engine_churn_proc(const struct mthp_engine_state *st, int pid);
/* A churner stepped down for reading sparse may raise back without the
 * dwell, once it reads dense again (k->churn_note says why). */
void engine_churn_raise_back(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                             struct kind_step *k);
/* A faulting process reads sparse at the level: down to what the density
 * keeps (the bloat guard, no dwell). */
void engine_step_down_sparse(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, struct mthp_engine_state *next, struct kind_step *k);
/* Whether a sparse reading is set aside (MTHP_RULE_HOLD or
 * MTHP_RULE_HOLD_DWELL, why in aside) or steps down (MTHP_RULE_NONE). */
enum mthp_rule engine_sparse_set_aside(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                       const struct mthp_snapshot *snap, const struct mthp_engine_state *next,
                                       const struct kind_step *k, char *buf, size_t n);
/* The level holds though a party reads sparse: the reason with aside. */
void engine_hold_aside(const struct mthp_engine_config *cfg, struct kind_step *k, enum mthp_rule rule,
                       const char *aside);

/* ---- engine-pay.c: a raise is a trial (the file's head says how it is judged) ---- */

/* Ticks measured at the new level before the verdict, and at least these
 * seconds of them: a climb's quarter-Interval ticks count for less. With
 * USER_HZ 100 a process using 0.3 of a core shows 60 clock ticks of CPU in
 * 2 s: the quantum is under 2 % of it. The dwell (DwellTicks, 5) is
 * longer: a step back comes before any other move would. */
#define ENGINE_PAY_TICKS 3
#define ENGINE_PAY_MIN_S 2.0
/* The new top size's fallback verdict needs this many attempts (its
 * allocations and fallbacks over the trial); the threshold is
 * MaxFallback= (50 %). */
#define ENGINE_PAY_MIN_ATTEMPTS 32
/* The CPU rules (margins measured, docs/engine.md "A raise is a trial"):
 * system CPU per MB faulted in at least ENGINE_PAY_SYS_MARGIN times
 * before's, at a fault demand within a factor ENGINE_PAY_DEMAND_BAND of
 * before's and at least ENGINE_PAY_MIN_MB MB/s both times, and at least
 * ENGINE_PAY_MIN_SYS of a core more than before's cost at that demand;
 * or the CPU a second at least ENGINE_PAY_CPU_MARGIN times before's and
 * ENGINE_PAY_MIN_CPU of a core more, its MB/s faulted and RSS within
 * ENGINE_PAY_STEADY of before's. */
#define ENGINE_PAY_SYS_MARGIN 1.5
#define ENGINE_PAY_CPU_MARGIN 1.5
#define ENGINE_PAY_DEMAND_BAND 2.0
#define ENGINE_PAY_STEADY 0.25
#define ENGINE_PAY_MIN_MB 8.0
#define ENGINE_PAY_MIN_SYS 0.05
#define ENGINE_PAY_MIN_CPU 0.10
/* The per-MB rule judges a process whose faults before made at least this
 * share of its system CPU at the host's 4K fault cost (FaultCost=, else
 * ENGINE_PAY_FAULT_NS, what FaultCost measured on this VM): a dense fault
 * loop's were 77 %, memcached's under memcaslap 1 % (its system CPU is
 * its network I/O, and its CPU per MB moved 0.35-4.1x tick to tick). */
#define ENGINE_PAY_FAULT_SHARE 0.5
#define ENGINE_PAY_FAULT_NS 1500.0
/* The sampled processes' CPU into what the engine remembers of them
 * (after engine_remember, before the kinds decide). */
void engine_pay_remember(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, struct mthp_engine_state *st);
/* A raise to k->target (before st->level moves): a trial starts, or a
 * climb's goes on at the new top. */
void engine_pay_start(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_snapshot *snap, const struct mthp_engine_state *next, struct kind_step *k);
/* This tick's figures into the trial, and its verdict once due:
 * k->pay_failed (st->unpaid says why) or a note in k->pay_note. */
void engine_pay_judge(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_snapshot *snap, const struct mthp_engine_state *next, struct kind_step *k);
/* The step back after a trial that did not pay, and the bar. */
void engine_step_back_unpaid(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, struct kind_step *k);
/* "anon 64K not taken: ..." for a failed trial. */
void engine_pay_unpaid_note(const struct mthp_engine_unpaid *u, const char *kname,
                            char *buf, size_t n);
/* While the level above is barred by a failed trial: the reason's tail. */
bool engine_pay_barred_note(const struct kind_step *k, uint64_t tick, char *buf,
                            size_t n);
