/* SPDX-License-Identifier: MIT */
/* The observer (mthp/observe.h): one tick's snapshot from the samplers it
 * owns, planned from the engine's configuration and state. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/bloat.h"
#include "mthp/cgmon.h"
#include "mthp/faultcost.h"
#include "mthp/faults.h"
#include "mthp/log.h"
#include "mthp/observe.h"
#include "mthp/procinfo.h"

#include "engine-internal.h"   /* engine_min_bloat_kb: the floor the engine's persistence uses */
#include "proc-scan.h"        /* mthp_proc_last_pid */

#define FAULT_FREQ_HZ 250        /* samples per second and CPU, about (lib/faults.c retunes the period) */
#define FAULT_RING_PAGES 8       /* 32 KiB a CPU: 1,300 samples, 5 s of them */
#define FAULT_BUF 8192           /* samples handed over a tick */
#define FAULT_OFF_TICKS 10       /* ticks without a faulting process holding shmem before sampling stops */

struct mthp_observer {
        const struct mthp_host *host;
        const struct mthp_caps *caps;
        const struct mthp_config *cfg;
        uint64_t ticks;                     /* takes so far */
        struct mthp_sampler *sampler;
        struct mthp_procinfo *procinfo;
        struct mthp_density_sampler *density; /* NULL: unavailable */
        struct mthp_cgmon *cgmon;           /* NULL: no memory cgroups on this host */
        /* FaultSampling=: page-fault addresses, given to the density
         * sampler each tick; NULL: off or unavailable */
        struct mthp_fault_sampler *faults;
        struct mthp_fault_sample *fault_buf;
        uint64_t faults_lost;
        bool faults_tried;                  /* opened, or failed and logged once */
        uint64_t faults_mixed_tick;         /* the last tick a faulting process held shared memory */
        /* FaultCost=auto: this host's 4K fault, measured once (on the first
         * tick that needs it); 0: not measured or failed (tried: logged) */
        double fault_cost_measured_ns;
        bool fault_cost_tried;
        bool density_error_logged;
        bool cgmon_error_logged;
        /* processes grown and quiet under a raise (bloat.h), this tick's */
        struct mthp_bloat *bloat;           /* NULL: unavailable */
        struct mthp_bloat_candidate grown[MTHP_BLOAT_CANDIDATES];
        unsigned n_grown;
        struct mthp_bloat_stats bloat_stats;
        bool bloat_error_logged;
        uint64_t given_kb, given_max_kb;    /* mthp_observer_given_back since the last take */
        int given_pid;
};

/* FaultSampling=: page-fault addresses (lib/faults.c, perf) for the density
 * sampler, which counts them by the kind of mapping they fall in, so that
 * the engine splits a process's faults between anon and shmem by what it
 * faults, not by what it holds. */
static void faults_open(struct mthp_observer *o) {
        if (!o->cfg->fault_sampling || !o->host->real || !o->density || o->faults_tried)
                return;   /* a fake host tree has no faults of its own to sample */
        o->faults_tried = true;
        int r = mthp_fault_sampler_new(FAULT_FREQ_HZ, FAULT_RING_PAGES, &o->faults);
        if (r == 0) {
                o->fault_buf = calloc(FAULT_BUF, sizeof(*o->fault_buf));
                if (!o->fault_buf)
                        r = -ENOMEM;
        }
        if (r < 0) {
                mthp_fault_sampler_free(o->faults);
                o->faults = NULL;
                mthp_log(LOG_INFO, "fault sampling unavailable: %s (perf_event_open needs CAP_PERFMON); "
                         "faults are split between anon and shmem by the memory each process holds",
                         mthp_errno_words(r));
        }
}

static void faults_free(struct mthp_observer *o) {
        mthp_fault_sampler_free(o->faults);
        o->faults = NULL;
        free(o->fault_buf);
        o->fault_buf = NULL;
}

/* Before a density tick: the faults sampled since the last one. */
static void faults_give(struct mthp_observer *o) {
        size_t n = 0;
        uint64_t lost = 0;
        if (!o->faults || !mthp_fault_sampler_enabled(o->faults))
                return;
        if (mthp_fault_sampler_drain(o->faults, o->fault_buf, FAULT_BUF, &n, &lost) < 0)
                return;
        o->faults_lost += lost;
        mthp_density_set_fault_samples(o->density, o->fault_buf, n);
}

/* After it: the samples are needed only where memory held cannot split a
 * process's faults, a faulting process holding shared memory (a database
 * backend: shared buffers and a heap; a process churning its heap beside a
 * segment, which may hold no anon at the instant it is read). Elsewhere the
 * events stay off, and a fault costs nothing more. */
static void faults_steer(struct mthp_observer *o, struct mthp_snapshot *snap) {
        const struct mthp_density_view *v = &snap->density;
        int mixed = -1;
        if (!o->cfg->fault_sampling) {   /* turned off by a reload */
                faults_free(o);
                o->faults_tried = false;
                return;
        }
        faults_open(o);                  /* turned on by a reload; tried once */
        if (!o->faults)
                return;
        for (unsigned i = 0; v->valid && i < v->n_procs && mixed < 0; i++) {
                const struct mthp_proc_density *p = &v->proc[i];
                if (p->fault_rate >= o->cfg->engine.min_proc_fault_rate && p->rss_kb[MTHP_SHMEM] >= MTHP_FAULT_SHARED_KB)
                        mixed = (int) i;
        }
        /* off after FAULT_OFF_TICKS without one: a process between two
         * samples of it, or a tick without density, is no reason to stop */
        if (mixed >= 0)
                o->faults_mixed_tick = o->ticks;
        bool on = mthp_fault_sampler_enabled(o->faults);
        bool want = mixed >= 0 || (on && o->ticks < o->faults_mixed_tick + FAULT_OFF_TICKS);
        if (want != on) {
                /* the period for the host's fault rate now, so that the
                 * next tick has the samples the engine waits for (a
                 * process holding shared memory has no demand say until then) */
                double rate = snap->vm[MTHP_VM_PGFAULT].rate;
                if (want && rate > 0)
                        (void) mthp_fault_sampler_expect(o->faults, rate);
                int r = mthp_fault_sampler_enable(o->faults, want);
                if (r < 0) {
                        mthp_log(LOG_WARNING, "fault sampling: %s; faults are split by memory held",
                                 mthp_errno_words(r));
                        faults_free(o);
                        return;
                }
                if (want)
                        mthp_log(LOG_INFO,
                                 "fault sampling on: pid %d (%s) faults and holds %llu MiB anon and %llu MiB shmem",
                                 v->proc[mixed].pid, v->proc[mixed].comm,
                                 (unsigned long long) v->proc[mixed].rss_kb[MTHP_ANON] >> 10,
                                 (unsigned long long) v->proc[mixed].rss_kb[MTHP_SHMEM] >> 10);
                else
                        mthp_log(LOG_INFO,
                                 "fault sampling off: no faulting process held shared memory for %u ticks "
                                 "(%llu samples lost so far)",
                                 FAULT_OFF_TICKS, (unsigned long long) o->faults_lost);
        }
        /* the engine waits for such a process's samples (a tick) */
        snap->density.fault_sampling = v->valid;
}

/* The rate scaled by share, so that the early tick gets about the samples
 * a whole Interval would bring; the first drain retunes it to FAULT_FREQ_HZ. */
void mthp_observer_expect_faults(struct mthp_observer *o, const struct mthp_snapshot *snap, double awaited_rate,
                                 double share) {
        double rate = snap->vm[MTHP_VM_PGFAULT].rate;
        if (awaited_rate > rate)
                rate = awaited_rate;
        if (!o->faults || !mthp_fault_sampler_enabled(o->faults) || !(rate > 0) || !(share > 0) || share >= 1)
                return;
        (void) mthp_fault_sampler_expect(o->faults, rate * share);
}

/* The 4K fault cost the engine gets (FaultCost=): as configured, or
 * measured once on the host mthpd runs on; 0 unknown. A host root other than
 * / is a test tree or another machine's: this machine's cost is not its. */
static double fault_cost(struct mthp_observer *o) {
        const struct mthp_config *cfg = o->cfg;
        if (cfg->fault_cost_ns > 0)
                return cfg->fault_cost_ns;
        /* RaiseFaultTime=0: nothing reads the cost, so no faults to time */
        if (!cfg->fault_cost_auto || !o->host->real || !(cfg->engine.raise_fault_time > 0))
                return 0;
        if (!o->fault_cost_tried) {
                o->fault_cost_tried = true;
                double ns;
                int r = mthp_fault_cost_measure(&ns);
                /* a 4K fault is 0.5-30 us on the hosts measured; 1 ms means
                 * the rounds met reclaim or a stall: no cost rather than one
                 * that lowers the raise rate for the daemon's whole life */
                if (r == 0 && ns > MTHP_FAULT_COST_MAX_NS) {
                        mthp_log(LOG_WARNING, "FaultCost=auto: a 4K page fault timed at %.0f us (over %.0f us: a "
                                 "stall, not a fault); raising on RaiseFaultRate alone", ns / 1e3,
                                 MTHP_FAULT_COST_MAX_NS / 1e3);
                        return 0;
                }
                if (r < 0)
                        mthp_log(LOG_WARNING, "FaultCost=auto: cannot time a page fault (%s); raising on "
                                 "RaiseFaultRate alone", mthp_errno_words(r));
                else {
                        /* the engine's own rates, not a second copy of its formula */
                        const struct mthp_engine_config *e = &cfg->engine;
                        double raise, lower;
                        o->fault_cost_measured_ns = ns;
                        if (mthp_engine_fault_rates(e, ns, &raise, &lower))
                                mthp_log(LOG_INFO, "FaultCost=auto: a 4K page fault takes %.2f us of CPU here; "
                                         "RaiseFaultTime %g%% of a core is %.0f pages/s, below RaiseFaultRate "
                                         "%.0f: raises start at %.0f pages/s, step-downs below %.0f", ns / 1e3,
                                         e->raise_fault_time, raise, e->raise_fault_rate, raise, lower);
                        else
                                mthp_log(LOG_INFO, "FaultCost=auto: a 4K page fault takes %.2f us of CPU here; "
                                         "RaiseFaultRate %.0f pages/s decides (RaiseFaultTime %g%% of a core "
                                         "would be %.0f)", ns / 1e3, e->raise_fault_rate, e->raise_fault_time,
                                         e->raise_fault_time / 100 * 1e9 / ns);
                }
        }
        return o->fault_cost_measured_ns;
}

bool mthp_observe_cgroup_managed(const struct mthp_policy_set *set, const char *path) {
        for (unsigned i = 0; set && i < set->n; i++)
                if (mthp_policy_set_matches(set, i, path))
                        return true;
        return false;
}

/* cgmon's predicate: the policy files in force now */
static bool cgroup_managed(const char *path, void *user) {
        const struct mthp_observer *o = user;
        return mthp_observe_cgroup_managed(o->cfg->engine.policies, path);
}

void mthp_observer_configure(struct mthp_observer *o, const struct mthp_config *cfg) {
        o->cfg = cfg;
        if (!o->cgmon)
                return;
        /* cgmon's predicate (a new walk), and whether it looks for new
         * cgroups every tick: only while some policy could give one a
         * start grace */
        const struct mthp_policy_set *set = cfg->engine.policies;
        bool watch = false;
        for (unsigned i = 0; cfg->engine.start_grace_usec && set && i < set->n; i++)
                watch = watch || set->p[i].mode[MTHP_ANON] == MTHP_POLICY_ALWAYS ||
                        set->p[i].mode[MTHP_SHMEM] == MTHP_POLICY_ALWAYS;
        mthp_cgmon_set_match(o->cgmon, cgroup_managed, o);
        mthp_cgmon_set_watch_new(o->cgmon, watch);
}

bool mthp_observer_has_cgroups(const struct mthp_observer *o) {
        return o->cgmon != NULL;
}

bool mthp_observer_cgroup_stats(const struct mthp_observer *o, struct mthp_cgmon_stats *st,
                                unsigned long long *fd_limit) {
        if (!o || !o->cgmon)
                return false;
        mthp_cgmon_get_stats(o->cgmon, st);
        *fd_limit = mthp_cgmon_fd_limit(o->cgmon);
        return true;
}

int mthp_observer_new(const struct mthp_host *h, const struct mthp_caps *caps, const struct mthp_config *cfg,
                      struct mthp_observer **ret) {
        _cleanup_(mthp_observer_freep) struct mthp_observer *o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->host = h;
        o->caps = caps;
        o->cfg = cfg;
        int r = mthp_sampler_new(h, caps, &o->sampler);
        if (r < 0)
                return r;
        unsigned sizes[MTHP_SIZES_MAX], n = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++)
                if (caps->sizes[i].kb <= MTHP_DENSITY_MAX_KB)
                        sizes[n++] = caps->sizes[i].kb;
        r = mthp_procinfo_new(h, caps, &o->procinfo);
        if (r < 0)
                return r;
        r = mthp_density_new(h, sizes, n, NULL, &o->density);
        if (r < 0) {
                mthp_log(LOG_WARNING, "density sampler unavailable: %s; sizes above %uK stay off",
                         mthp_errno_words(r), cfg->engine.unmeasured_max_kb);
                o->density = NULL;
        }
        faults_open(o);
        r = mthp_bloat_new(h, &o->bloat);
        if (r < 0)
                return r;
        r = mthp_cgmon_new(h, caps, &o->cgmon);
        if (r < 0) {
                mthp_log(LOG_WARNING, "cgroup monitor unavailable: %s; policy files match processes only",
                         mthp_errno_words(r));
                o->cgmon = NULL;
        } else
                mthp_observer_configure(o, cfg);
        *ret = o;
        o = NULL;
        return 0;
}

void mthp_observer_free(struct mthp_observer *o) {
        if (!o)
                return;
        mthp_sampler_free(o->sampler);
        faults_free(o);
        mthp_density_free(o->density);
        mthp_bloat_free(o->bloat);
        mthp_procinfo_free(o->procinfo);
        mthp_cgmon_free(o->cgmon);
        free(o);
}

void mthp_observe_plan(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *st, unsigned flags,
                       struct mthp_observe_plan *plan) {
        memset(plan, 0, sizeof(*plan));
        plan->hot_rate = cfg->min_proc_fault_rate;
        /* the sampler's largest size is the PMD one where the PMD
         * size is at most MTHP_DENSITY_MAX_KB (mthp_observer_new).
         * Shmem only: an anon 2M folio is often mapped by PTEs
         * (a fork's copy-on-write, MADV_DONTNEED of part of it,
         * mremap), a shmem one whose whole PMD was zapped is
         * mapped again by a PMD (limits: density-window.c) */
        int top = mthp_engine_largest_always(caps, snap, MTHP_SHMEM);
        plan->shmem_pmd_on = top >= 0 && caps->sizes[top].kb == caps->pmd_kb && caps->pmd_kb <= MTHP_DENSITY_MAX_KB;
        /* an early tick is for the fault samples, which only a density
         * tick hands over: the density back-off does not skip it */
        plan->density = (flags & MTHP_OBSERVE_EARLY) || mthp_engine_wants_density(cfg, snap, st);
        /* while the last tick awaited fault samples (and on the
         * early tick it asked for), their processes are sampled
         * first: not forever for one whose samples never reach 8 */
        if (plan->density && (flags & (MTHP_OBSERVE_EARLY | MTHP_OBSERVE_AWAITS)))
                plan->n_first = mthp_engine_awaited_pids(cfg, st, plan->first, MTHP_DENSITY_FIRST_MAX);
        /* young and small processes wait: the same floor the engine's
         * persistence applies (engine_persistent), so that what is
         * sampled at once is what could count at once */
        double floor_kb = engine_min_bloat_kb(cfg, snap);
        plan->young_stake_kb = floor_kb > 0 ? (uint64_t) floor_kb : 0;
        plan->young_usec = plan->young_stake_kb ? MTHP_OBSERVE_YOUNG_USEC : 0;
}

/* Reduce the density sampler's report to what the engine and a recording
 * need: the most faulting processes, per kind and size. */
static void density_view(const struct mthp_observer *o, const struct mthp_density_report *rep,
                         struct mthp_density_view *v) {
        memset(v, 0, sizeof(*v));
        v->valid = true;
        v->usec = (double) rep->usec;
        for (unsigned i = 0; i < rep->n_procs && v->n_procs < MTHP_DENSITY_PROCS; i++) {
                const struct mthp_density_proc *p = &rep->procs[i];
                mthp_density_proc_view(o->caps, rep, p, &v->proc[v->n_procs++]);
        }
}

/* The processes the engine remembers that this density tick did not
 * sample: those that have exited (no /proc/PID) in gone[], the engine
 * forgets them at once (engine_remember); the others' fault rates as the
 * /proc scan read them this tick in rates[], so that one that stopped
 * faulting no longer weighs with its last sample's rate. At most
 * MTHP_ENGINE_PROCS lookups a density tick. */
_Static_assert(MTHP_DENSITY_GONE_MAX >= MTHP_ENGINE_PROCS, "gone[] and rates[] hold every remembered process");
static void density_unsampled(const struct mthp_observer *o, const struct mthp_engine_state *st,
                              struct mthp_density_view *v) {
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {   /* one entry at most each: the assert */
                int pid = st->proc[j].pid;
                bool sampled = false;
                for (unsigned i = 0; i < v->n_procs && !sampled; i++)
                        sampled = v->proc[i].pid == pid;
                char path[32];
                if (pid <= 0 || sampled)
                        continue;
                double rate;
                char comm[MTHP_PROC_COMM_MAX];
                int q = mthp_density_proc_rate(o->density, pid, &rate, comm, sizeof(comm));
                if (q == 0 && strncmp(comm, st->proc[j].comm, sizeof(comm)) == 0) {
                        v->rates[v->n_rates++] = (struct mthp_proc_rate) { .pid = pid, .fault_rate = rate };
                        continue;
                }
                if (q == 0) {   /* another process at the pid (or an exec): the remembered one is gone */
                        v->gone[v->n_gone++] = pid;
                        continue;
                }
                snprintf(path, sizeof(path), "/proc/%d", pid);
                /* gone only when /proc says so: EMFILE or EACCES is no exit */
                int fd = mthp_host_open_file(o->host, path, O_PATH | O_CLOEXEC);
                if (fd >= 0)
                        close(fd);
                else if (fd == -ENOENT)
                        v->gone[v->n_gone++] = pid;
        }
}

/* The managed cgroups, while some policy file is in force. */
static void take_cgroups(struct mthp_observer *o, uint64_t t, struct mthp_snapshot *snap) {
        const struct mthp_policy_set *set = o->cfg->engine.policies;
        snap->n_cgroups = 0;
        if (!o->cgmon || !set || !set->n)
                return;
        int r = mthp_cgmon_tick(o->cgmon, t, snap->cgroup, MTHP_SNAP_CGROUPS, &snap->n_cgroups);
        if (r < 0 && mthp_once_set(&o->cgmon_error_logged))
                mthp_log(LOG_WARNING, "cgroup sampling failed: %s; deciding without cgroup figures",
                         mthp_errno_words(r));
        else if (r >= 0 && mthp_once_clear(&o->cgmon_error_logged))
                mthp_log(LOG_INFO, "cgroup sampling works again");
}

/* The faulting processes as the plan says, or the scan's idle tick. */
static void take_density(struct mthp_observer *o, uint64_t t, const struct mthp_engine_state *st, unsigned flags,
                         struct mthp_snapshot *snap) {
        snap->density.valid = false;
        snap->density.n_procs = 0;
        snap->density.n_gone = 0;
        snap->density.n_rates = 0;
        if (!o->density)
                return;
        struct mthp_observe_plan plan;
        mthp_observe_plan(&o->cfg->engine, o->caps, snap, st, flags, &plan);
        mthp_density_set_hot_rate(o->density, plan.hot_rate);
        mthp_density_set_pmd_on(o->density, MTHP_SHMEM, plan.shmem_pmd_on);
        if (!plan.density) {
                (void) mthp_density_idle_tick(o->density, t);   /* a failure shows on the next sampling tick */
                return;
        }
        struct mthp_density_report rep;
        mthp_density_set_first(o->density, plan.first, plan.n_first);
        mthp_density_set_young(o->density, plan.young_usec, plan.young_stake_kb);
        faults_give(o);
        int r = mthp_density_tick(o->density, t, &rep);
        if (r == 0) {
                density_view(o, &rep, &snap->density);
                mthp_procinfo_enrich(o->procinfo, &snap->density);
                density_unsampled(o, st, &snap->density);
        } else if (mthp_once_set(&o->density_error_logged))
                mthp_log(LOG_WARNING, "density sampling failed: %s; deciding without it", mthp_errno_words(r));
}

/* The processes grown and quiet under a raise: read only while an anon
 * size is raised and shortly after (a stat file each), nothing otherwise; not on an early
 * tick (a quarter Interval after the last: the give-back is a regular
 * tick's, and a candidate is offered once). */
static void take_grown(struct mthp_observer *o, uint64_t t, const struct mthp_engine_state *st, unsigned flags) {
        bool raised = st && st->kind[MTHP_ANON].level > 0;
        o->n_grown = 0;
        if (flags & MTHP_OBSERVE_EARLY)
                return;
        int r = mthp_bloat_tick(o->bloat, raised, t, o->cfg->engine.min_proc_fault_rate, o->grown,
                                MTHP_BLOAT_CANDIDATES, &o->n_grown, &o->bloat_stats);
        if (r < 0 && mthp_once_set(&o->bloat_error_logged))
                mthp_log(LOG_WARNING, "scanning processes for growth under the raise failed: %s", mthp_errno_words(r));
        else if (r >= 0 && mthp_once_clear(&o->bloat_error_logged))
                mthp_log(LOG_INFO, "scanning processes for growth under the raise works again");
}

unsigned mthp_observer_grown(const struct mthp_observer *o, const struct mthp_bloat_candidate **c,
                             struct mthp_bloat_stats *stats) {
        *c = o->grown;
        if (stats)
                *stats = o->bloat_stats;
        return o->n_grown;
}

void mthp_observer_grown_again(struct mthp_observer *o, int pid) {
        mthp_bloat_again(o->bloat, pid);
}

void mthp_observer_given_back(struct mthp_observer *o, int pid, uint64_t kb) {
        o->given_kb += kb;
        if (kb > o->given_max_kb) {
                o->given_max_kb = kb;
                o->given_pid = pid;
        }
}

int mthp_observer_take(struct mthp_observer *o, uint64_t t_usec, const struct mthp_engine_state *st, unsigned flags,
                       struct mthp_snapshot *snap) {
        o->ticks++;
        int r = mthp_sampler_take(o->sampler, t_usec, snap);
        mthp_sampler_set_idle(o->sampler, false);   /* until this tick shows otherwise */
        if (r < 0)
                return r;
        snap->fault_cost_ns = fault_cost(o);
        /* /proc/loadavg's last PID, read once for the tick: the density
         * scan finds new processes by it (every tick, idle ones too), the
         * bloat tracker those started under a raise (while one holds, and
         * shortly after) */
        bool grown = st && (st->kind[MTHP_ANON].level > 0 || mthp_bloat_tracking(o->bloat)) &&
                     !(flags & MTHP_OBSERVE_EARLY);
        if (o->density || grown) {
                long last = mthp_proc_last_pid(o->host);
                if (o->density)
                        mthp_density_set_last_pid(o->density, last);
                if (grown)
                        mthp_bloat_set_last_pid(o->bloat, last);
        }
        take_cgroups(o, t_usec, snap);
        take_density(o, t_usec, st, flags, snap);
        faults_steer(o, snap);
        take_grown(o, t_usec, st, flags);
        snap->given_back_kb = o->given_kb;
        snap->given_back_pid = o->given_pid;
        o->given_kb = o->given_max_kb = 0;
        o->given_pid = 0;
        for (unsigned i = 0; i < o->n_grown; i++) {   /* for the host's bloat budget (engine-budget.c) */
                const struct mthp_bloat_candidate *c = &o->grown[i];
                uint64_t b = c->grown_kb > c->faults_kb ? c->grown_kb - c->faults_kb : 0;
                snap->grown_bloat_kb += b;
                if (b > snap->grown_max_kb) {
                        snap->grown_max_kb = b;
                        snap->grown_pid = c->pid;
                        mthp_strcpy(snap->grown_comm, sizeof(snap->grown_comm), c->comm);
                }
        }
        return 0;
}

bool mthp_observe_sizes_idle(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                             const struct mthp_snapshot *snap, const struct mthp_engine_state *st) {
        /* a raised size skips density on steady ticks (its back-off): raised is never idle */
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (st->kind[k].level > 0)
                        return false;
        if (mthp_engine_wants_density(cfg, snap, st))
                return false;
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                const struct mthp_knob *k = &caps->knobs[i];
                if ((k->type == MTHP_KNOB_SIZE_ANON || k->type == MTHP_KNOB_SIZE_SHMEM) &&
                    k->size_kb < caps->pmd_kb && strcmp(snap->knob[i], "never") != 0)
                        return false;
        }
        return true;
}

void mthp_observer_set_idle(struct mthp_observer *o, bool idle) {
        mthp_sampler_set_idle(o->sampler, idle);
}
