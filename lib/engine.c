/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mthp/engine.h"

#define BACKOFF_MAX_TICKS 3600
#define SPARSE_CONFIRM_TICKS 1  /* block-weighted memory already filters odd samples */
#define DEFRAG_MIN_KB 512         /* sizes whose allocation needs compaction */
#define DEFRAG_FALLBACK_PCT 20.0

unsigned mthp_engine_ladder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps, enum mthp_kind kind,
                            unsigned ladder[MTHP_SIZES_MAX]) {
        unsigned n = 0;
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size *sz = &caps->sizes[i];
                if (sz->knob[kind] < 0 || sz->kb < cfg->min_kb[kind] || sz->kb > cfg->max_kb[kind])
                        continue;
                if (!mthp_knob_allows(&caps->knobs[sz->knob[kind]], "always"))
                        continue;
                ladder[n++] = i;
        }
        return n;
}

static double size_rate(const struct mthp_caps *caps, const struct mthp_snapshot *snap, unsigned i, const char *name) {
        int j = mthp_stat_index(&caps->sizes[i], name);
        return j < 0 ? 0 : snap->size[i].stat[j].rate;
}

/* How much of a block of this size a process really uses. Content is not
 * use: while no folio of this size or larger is handed out (folios_on
 * false), pagemap coverage says exactly what was touched, and a written
 * zero is a touch. Once folios that large are on, pagemap shows every
 * subpage of a folio present, so the lower of coverage and the share of
 * non-zero subpages (the sampler counts zeros only beside data,
 * include/mthp/density.h). NAN: no sample. */
static double usage(const struct mthp_proc_density *p, enum mthp_kind kind, unsigned size, bool folios_on) {
        double c = p->coverage[kind][size], z = p->zero[kind][size];
        double u = NAN;
        if (!isnan(c))
                u = c;
        if (folios_on && !isnan(z) && (isnan(u) || 1 - z < u))
                u = 1 - z;
        return u;
}

/* The largest size (caps index) whose folios the kernel hands out to any
 * fault of this kind now: its knob "always", or "inherit" under a global
 * "always"; -1: none. madvise'd memory is the program's own choice. */
static int largest_always(const struct mthp_caps *caps, const struct mthp_snapshot *snap, enum mthp_kind kind) {
        int g = mthp_caps_find_knob(caps, kind == MTHP_ANON ? "global/enabled" : "global/shmem_enabled");
        bool global_always = g >= 0 && strcmp(snap->knob[g], "always") == 0;
        int top = -1;
        for (unsigned z = 0; z < caps->n_sizes; z++) {
                int k = caps->sizes[z].knob[kind];
                if (k < 0)
                        continue;
                if (strcmp(snap->knob[k], "always") == 0 || (global_always && strcmp(snap->knob[k], "inherit") == 0))
                        top = (int) z;
        }
        return top;
}

#define PROC_DECAY 0.5             /* per tick: a sample counts half as much a tick later */
#define PROC_FORGET_TICKS 5        /* a process not seen for this long is forgotten */
#define PROC_RECENT_TICKS 3        /* ... and counts for decisions this long */

/* Fold this tick's density samples into the remembered processes. */
static void remember(const struct mthp_caps *caps, const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        const struct mthp_density_view *dv = &snap->density;
        int on[_MTHP_KIND_MAX];
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                on[k] = largest_always(caps, snap, k);
        for (unsigned i = 0; dv->valid && i < dv->n_procs; i++) {
                const struct mthp_proc_density *p = &dv->proc[i];
                struct mthp_engine_proc *m = NULL, *oldest = NULL;
                for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                        struct mthp_engine_proc *c = &st->proc[j];
                        if (c->pid == p->pid) {
                                m = c;
                                break;
                        }
                        if (!oldest || c->pid == 0 || (oldest->pid && c->seen_tick < oldest->seen_tick))
                                oldest = c;
                }
                /* The pid was reused (or exec'd: fork+exec keeps the pid and
                 * changes comm): a new process, in the same slot. The search
                 * stopped at the match, so `oldest` only covers the slots
                 * before it (NULL when the match is slot 0). */
                if (m && strncmp(m->comm, p->comm, sizeof(m->comm)) != 0) {
                        memset(m, 0, sizeof(*m));
                        m->pid = p->pid;
                }
                if (!m) {
                        m = oldest;
                        memset(m, 0, sizeof(*m));
                        m->pid = p->pid;
                }
                memcpy(m->comm, p->comm, sizeof(m->comm));
                m->comm[sizeof(m->comm) - 1] = 0;
                if (p->cgroup[0])
                        mthp_strcpy(m->cgroup, sizeof(m->cgroup), p->cgroup);
                m->fault_rate = p->fault_rate;
                m->new_proc = p->new_proc;
                bool fresh = m->seen_tick == 0 && m->w[0][0] == 0 && m->rss_kb[0] == 0 && m->rss_kb[1] == 0;
                for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                        /* smoothed: a map/unmap loop's RSS depends on the instant */
                        m->rss_kb[k] = fresh ? p->rss_kb[k] : (m->rss_kb[k] + p->rss_kb[k]) / 2;
                        for (unsigned z = 0; z < caps->n_sizes && z < MTHP_SIZES_MAX; z++) {
                                double u = usage(p, k, z, (int) z <= on[k]);
                                if (isnan(u))
                                        continue; /* no sample: keep what we knew */
                                double w = p->blocks[k][z] > 0 ? p->blocks[k][z] : 1;
                                /* A full-weight sample far from the memory means the
                                 * process changed phase (dense -> sparse -> dense): start
                                 * over from it. A light one (a few blocks seen between two
                                 * mappings) only nudges the average. */
                                double old_w = m->w[k][z] * PROC_DECAY;
                                if (old_w > 0 && w >= old_w / 2 && fabs(u - m->u[k][z] / m->w[k][z]) > 0.5)
                                        m->w[k][z] = m->u[k][z] = 0;
                                m->w[k][z] = m->w[k][z] * PROC_DECAY + w;
                                m->u[k][z] = m->u[k][z] * PROC_DECAY + u * w;
                        }
                }
                m->seen_tick = snap->tick;
        }
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (st->proc[j].pid && snap->tick > st->proc[j].seen_tick + PROC_FORGET_TICKS)
                        memset(&st->proc[j], 0, sizeof(st->proc[j]));
}

/* Fold this tick's managed cgroups into the remembered ones. */
static void remember_cgroups(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                             struct mthp_engine_state *st) {
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                struct mthp_engine_cgroup *m = NULL, *free_slot = NULL;
                for (unsigned j = 0; j < MTHP_SNAP_CGROUPS && !m; j++) {
                        if (strcmp(st->cgroup[j].path, c->path) == 0)
                                m = &st->cgroup[j];
                        else if (!free_slot && (!st->cgroup[j].path[0] || st->cgroup[j].seen_tick + PROC_FORGET_TICKS < snap->tick))
                                free_slot = &st->cgroup[j];
                }
                if (!m) {
                        if (!free_slot)
                                continue;
                        m = free_slot;
                        memset(m, 0, sizeof(*m));
                        mthp_strcpy(m->path, sizeof(m->path), c->path);
                }
                if (!c->new_cgroup) {
                        m->fault_rate = m->seen_tick ? (m->fault_rate + c->fault_rate) / 2 : c->fault_rate;
                        if (c->fault_rate >= cfg->min_proc_fault_rate)
                                m->say_tick = snap->tick ? snap->tick : 1;
                }
                m->seen_tick = snap->tick ? snap->tick : 1;
        }
        for (unsigned j = 0; j < MTHP_SNAP_CGROUPS; j++)
                if (st->cgroup[j].path[0] && st->cgroup[j].seen_tick + PROC_FORGET_TICKS < snap->tick)
                        memset(&st->cgroup[j], 0, sizeof(st->cgroup[j]));
}

static const struct mthp_engine_cgroup *remembered_cgroup(const struct mthp_engine_state *st, const char *path) {
        for (unsigned j = 0; j < MTHP_SNAP_CGROUPS; j++)
                if (st->cgroup[j].path[0] && strcmp(st->cgroup[j].path, path) == 0)
                        return &st->cgroup[j];
        return NULL;
}

static double remembered(const struct mthp_engine_proc *m, enum mthp_kind kind, unsigned size) {
        return m->w[kind][size] > 0 ? m->u[kind][size] / m->w[kind][size] : NAN;
}

/* ---- memory-limited cgroups: the invariant (engine.h, mthp_engine_limited) ---- */

#define GUARD_BACKOFF_TICKS 30     /* a tripped cgroup counts as sparse this long ... */
#define GUARD_BACKOFF_MAX 3600     /* ... doubling on each repeat, up to this */

static void remember_limited(const struct mthp_snapshot *snap, struct mthp_engine_state *st) {
        if (!snap->limited_valid)
                return; /* not scanned (an old recording): nothing is known, nothing changes */
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED; j++)
                st->limited[j].present = false;
        for (unsigned i = 0; i < snap->n_limited && i < MTHP_SNAP_LIMITED; i++) {
                const struct mthp_limited_cgroup *c = &snap->limited[i];
                struct mthp_engine_limited *m = NULL, *free_slot = NULL;
                for (unsigned j = 0; j < MTHP_SNAP_LIMITED && !m; j++) {
                        struct mthp_engine_limited *e = &st->limited[j];
                        if (e->path[0] && strcmp(e->path, c->path) == 0)
                                m = e;
                        else if (!free_slot && (!e->path[0] || (e->trip_until <= snap->tick &&
                                                                  e->seen_tick + PROC_FORGET_TICKS < snap->tick)))
                                free_slot = e;
                }
                bool known = m != NULL;
                if (!m) {
                        if (!free_slot)
                                continue;
                        m = free_slot;
                        memset(m, 0, sizeof(*m));
                        mthp_strcpy(m->path, sizeof(m->path), c->path);
                }
                m->growth_kb = known && c->usage_kb > m->usage_kb ? c->usage_kb - m->usage_kb : 0;
                m->usage_kb = c->usage_kb;
                m->limit_kb = c->limit_kb;
                m->populated = c->populated;
                m->present = true;
                m->seen_tick = snap->tick;
        }
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED; j++) {
                struct mthp_engine_limited *e = &st->limited[j];
                if (e->path[0] && !e->present && e->trip_until <= snap->tick &&
                    e->seen_tick + PROC_FORGET_TICKS < snap->tick)
                        memset(e, 0, sizeof(*e));
        }
}

static bool path_inside(const char *path, const char *parent) {
        size_t len = strlen(parent);
        if (strcmp(parent, "/") == 0)
                return path[0] == '/';
        return strncmp(path, parent, len) == 0 && (path[len] == 0 || path[len] == '/');
}

/* bloat_C(S): how many times its 4K memory a limited cgroup could take with
 * folios of caps size `size`. From the remembered density of its sampled
 * processes (the worst one), else S/4K: a cgroup nobody sampled is not
 * known to be dense, and neither is one that tripped the guard. */
static double limited_bloat(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                            const struct mthp_engine_limited *c, enum mthp_kind kind, unsigned size, char *how,
                            size_t n) {
        double assumed = caps->sizes[size].kb / 4.0;
        if (c->trip_until > st->tick) {
                snprintf(how, n, "tripped the guard at tick %llu: assumed sparse", (unsigned long long) c->trip_tick);
                return assumed;
        }
        double worst = 0;
        unsigned procs = 0;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS || !m->cgroup[0] ||
                    !path_inside(m->cgroup, c->path))
                        continue;
                double u = remembered(m, kind, size);
                if (isnan(u))
                        continue;
                procs++;
                double b = u > 1.0 / assumed ? 1.0 / u : assumed;
                if (b > worst)
                        worst = b;
        }
        if (!procs) {
                snprintf(how, n, "no sampled process: assumed sparse");
                return assumed;
        }
        snprintf(how, n, "measured on %u process(es)", procs);
        return worst < 1 ? 1 : worst;
}

/* The highest level of the kind's ladder that every present, populated
 * limited cgroup affords; *blocker: the slot of the one that stops it
 * (-1: none), why: its numbers. */
static unsigned limited_afford(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                               const struct mthp_engine_state *st, enum mthp_kind kind, const unsigned *ladder,
                               unsigned n_ladder, int *blocker, char *why, size_t n) {
        unsigned afford = n_ladder;
        *blocker = -1;
        if (why && n)
                why[0] = 0;
        for (unsigned i = 0; i < MTHP_SNAP_LIMITED; i++) {
                const struct mthp_engine_limited *c = &st->limited[i];
                if (!c->path[0] || !c->present || !c->populated || !c->limit_kb)
                        continue;
                double headroom = c->limit_kb > c->usage_kb ? (double) (c->limit_kb - c->usage_kb) : 0;
                double budget = headroom * (1 - cfg->guard_headroom / 100.0);
                double floor = (double) c->limit_kb * cfg->guard_floor / 100.0;
                double r = (double) c->growth_kb > floor ? (double) c->growth_kb : floor;
                if (c->trip_until > st->tick && (double) c->trip_growth_kb > r)
                        r = (double) c->trip_growth_kb; /* it showed it can fault that much between ticks */
                for (unsigned rung = 0; rung < afford; rung++) {
                        char how[96];
                        double b = limited_bloat(caps, st, c, kind, ladder[rung], how, sizeof(how));
                        if (b * r <= budget)
                                continue;
                        afford = rung;
                        *blocker = (int) i;
                        if (why && n) {
                                char sz[16];
                                mthp_format_size(caps->sizes[ladder[rung]].kb, sz, sizeof(sz));
                                snprintf(why, n,
                                         "limited cgroup %s (usage %.0f MiB, limit %.0f MiB, headroom %.0f MiB; %s: "
                                         "x%.1f at %s) cannot afford %s: x%.1f of %.1f MiB/tick = %.0f MiB > %.0f MiB "
                                         "(%.0f%% of its headroom)",
                                         c->path, (double) c->usage_kb / 1024, (double) c->limit_kb / 1024,
                                         headroom / 1024, how, b, sz, sz, b, r / 1024, b * r / 1024, budget / 1024,
                                         100 - cfg->guard_headroom);
                        }
                        break;
                }
        }
        return afford;
}

bool mthp_engine_limited_at_risk(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                 const struct mthp_engine_state *st, unsigned i) {
        const struct mthp_engine_limited *c = i < MTHP_SNAP_LIMITED ? &st->limited[i] : NULL;
        if (!c || !c->path[0] || !c->present || !c->limit_kb)
                return false;
        if (!c->populated)
                return true; /* a program may start in it any moment: nothing known of it */
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                unsigned lvl = st->kind[kind].level;
                if (!lvl || lvl > n_ladder)
                        continue;
                char how[96];
                if (limited_bloat(caps, st, c, kind, ladder[lvl - 1], how, sizeof(how)) > 1 + cfg->max_bloat / 100.0)
                        return true;
        }
        return false;
}

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
        bool capped;              /* keep limited by its Sizes=, not by density */
};

struct density_verdict {
        bool measured;            /* at least one party with a say */
        unsigned keep, raise;     /* highest level the arbitration allows (keep / raise thresholds) */
        int holder;               /* party that limits keep (-1: none) */
        int best;                 /* the most faulting process that counts */
        int unknown;              /* a process that counts but was never sampled, or -1 */
        unsigned n_parties;
        struct party party[MAX_PARTIES];
        bool madvise[MTHP_SIZES_MAX];  /* per rung: madvise wished above the level */
        char outranked[200];      /* parties whose objection or wish lost, for the explanation */
};

/* What a process faults in of one kind, in 4K pages per second: its fault
 * rate split by the memory it holds of each kind (a shmem workload's small
 * heap must not speak for anon), times the pages each fault brings in: a
 * process that uses the current top size densely gets folios of that size,
 * one fault each; any other counts 4K a fault. Counting events instead
 * would let a compiler's 700 faults/s outvote a workload faulting 2M
 * folios 2000 times a second. */
static double kind_rate(const struct mthp_engine_proc *m, enum mthp_kind kind, const struct mthp_caps *caps, int top,
                        double keep_thr) {
        double all = (double) m->rss_kb[MTHP_ANON] + (double) m->rss_kb[MTHP_SHMEM];
        if (all <= 0)
                return 0;
        double pages_per_fault = 1;
        if (top >= 0 && m->w[kind][top] > 0 && m->u[kind][top] / m->w[kind][top] >= keep_thr)
                pages_per_fault = caps->sizes[top].kb / 4.0;
        return m->fault_rate * (double) m->rss_kb[kind] / all * pages_per_fault;
}

/* Which processes count: recently seen, and faulting memory of this kind
 * both fast enough and with a real share of the kind's faults. A process
 * seen once has only a lifetime average (a 'sleep' that faulted 100 pages
 * while starting): it may hold a raise back or back one, but it can take
 * no size away until a second sample measures its rate. */
static bool counts(const struct mthp_engine_config *cfg, const struct mthp_engine_state *st, unsigned j,
                   enum mthp_kind kind, double total, const struct mthp_caps *caps, int top, double keep_thr) {
        const struct mthp_engine_proc *m = &st->proc[j];
        double pages = kind_rate(m, kind, caps, top, keep_thr);
        return m->pid && st->tick <= m->seen_tick + PROC_RECENT_TICKS && pages > 0 &&
               pages >= cfg->min_proc_fault_rate && pages >= total * cfg->min_proc_share / 100.0;
}

const struct mthp_policy *mthp_engine_policy(const struct mthp_engine_config *cfg, const char *cgroup, char *managed,
                                             size_t size) {
        if (!cfg->policies || !cgroup || !cgroup[0])
                return NULL;
        int i = mthp_policy_match(cfg->policies, cgroup, managed, size);
        return i < 0 ? NULL : &cfg->policies->p[i];
}

int mthp_engine_cgroup_dense_kb(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                                const struct mthp_engine_state *st, const char *managed, enum mthp_kind kind,
                                unsigned *n_procs) {
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder), n = 0;
        int dense = -1;
        size_t len = strlen(managed);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                bool inside = strcmp(managed, "/") == 0 ||
                              (strncmp(m->cgroup, managed, len) == 0 && (m->cgroup[len] == 0 || m->cgroup[len] == '/'));
                if (!inside)
                        continue;
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = pol && !isnan(pol->max_bloat) ? pol->max_bloat : cfg->max_bloat;
                double keep_thr = 1.0 / (1.0 + bloat / 100.0);
                int kb = 0;
                bool any = false;
                for (unsigned r = 0; r < n_ladder; r++) {
                        double u = remembered(m, kind, ladder[r]);
                        if (isnan(u))
                                continue;
                        any = true;
                        if (u < keep_thr)
                                break;
                        kb = (int) caps->sizes[ladder[r]].kb;
                }
                if (!any)
                        continue;
                n++;
                dense = dense < 0 || kb < dense ? kb : dense;
        }
        if (n_procs)
                *n_procs = n;
        return dense;
}

/* Rungs of the ladder at or below a policy's top size (all without one). */
static unsigned sizes_cap(const struct mthp_caps *caps, const unsigned *ladder, unsigned n_ladder,
                          const struct mthp_policy *pol) {
        unsigned c = 0;
        while (c < n_ladder && (!pol || !pol->max_kb || caps->sizes[ladder[c]].kb <= pol->max_kb))
                c++;
        return c;
}

/* Managed cgroups with madvise want their Sizes= as madvise, whether they
 * fault or not: madvise hands large folios only to memory a program asks
 * for, so nobody's objection blocks it. */
static void madvise_wishes(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const unsigned *ladder,
                           unsigned n_ladder, bool madvise[MTHP_SIZES_MAX]) {
        for (unsigned c = 0; c < snap->n_cgroups && c < MTHP_SNAP_CGROUPS; c++) {
                const struct mthp_policy *pol = mthp_engine_policy(cfg, snap->cgroup[c].path, NULL, 0);
                if (!pol || pol->mode[kind] != MTHP_POLICY_MADVISE)
                        continue;
                for (unsigned r = 0; r < n_ladder; r++) {
                        unsigned kb = caps->sizes[ladder[r]].kb;
                        if ((!pol->min_kb || kb >= pol->min_kb) && (!pol->max_kb || kb <= pol->max_kb))
                                madvise[r] = true;
                }
        }
}

/* Does every party whose ceiling (keep or raise) is below level get
 * outranked by one that accepts it with a strictly higher priority? Ties go
 * to the smaller size. */
static bool level_ok(const struct density_verdict *v, unsigned level, bool raise, int *blocker) {
        bool ok = true;
        if (blocker)
                *blocker = -1;
        for (unsigned q = 0; q < v->n_parties; q++) {
                const struct party *pq = &v->party[q];
                unsigned cq = raise ? pq->raise : pq->keep;
                if (cq >= level)
                        continue;
                bool outranked = false;
                for (unsigned p = 0; p < v->n_parties && !outranked; p++) {
                        const struct party *pp = &v->party[p];
                        outranked = (raise ? pp->raise : pp->keep) >= level && pp->prio > pq->prio;
                }
                if (!outranked) {
                        /* name the strongest objection: highest priority,
                         * then the lowest ceiling */
                        if (!blocker)
                                return false;
                        const struct party *pb = *blocker >= 0 ? &v->party[*blocker] : NULL;
                        if (!pb || (raise ? pb->raise : pb->keep) >= level || pq->prio > pb->prio ||
                            (pq->prio == pb->prio && cq < (raise ? pb->raise : pb->keep)))
                                *blocker = (int) q;
                        ok = false;
                }
        }
        return ok;
}

static void describe_party(const struct mthp_caps *caps, const struct mthp_engine_state *st,
                           const struct mthp_snapshot *snap, enum mthp_kind kind, const struct party *p, char *buf,
                           size_t n) {
        char pol[96] = "";
        if (p->pol)
                snprintf(pol, sizeof(pol), ", policy %s: %s=%s, priority %u", p->pol->name,
                         kind == MTHP_ANON ? "Anon" : "Shmem", mthp_policy_mode_name(p->pol->mode[kind]), p->prio);
        if (p->proc >= 0) {
                const struct mthp_engine_proc *m = &st->proc[p->proc];
                snprintf(buf, n, "pid %d (%s, %.0f faults/s%s%s%s)", m->pid, m->comm, m->fault_rate,
                         m->cgroup[0] ? ", cgroup " : "", m->cgroup, pol);
        } else {
                const struct mthp_cgroup_view *c = &snap->cgroup[p->cgroup];
                const struct mthp_engine_cgroup *mc = remembered_cgroup(st, c->path);
                snprintf(buf, n, "cgroup %s (%.0f faults/s%s)", c->path, mc ? mc->fault_rate : c->fault_rate, pol);
        }
        (void) caps;
}

static void judge_density(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                          const struct mthp_snapshot *snap, const struct mthp_engine_state *st, enum mthp_kind kind,
                          const unsigned *ladder, unsigned n_ladder, unsigned level, struct density_verdict *v) {
        double total = 0;
        int top = level ? (int) ladder[level - 1] : -1;
        double keep_default = 1.0 / (1.0 + cfg->max_bloat / 100.0);

        memset(v, 0, sizeof(*v));
        v->holder = v->best = v->unknown = -1;
        v->keep = v->raise = n_ladder;
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++)
                if (st->proc[j].pid && st->tick <= st->proc[j].seen_tick + PROC_RECENT_TICKS)
                        total += kind_rate(&st->proc[j], kind, caps, top, keep_default);

        /* processes under auto (a policy's or the defaults) speak for themselves */
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = pol && !isnan(pol->max_bloat) ? pol->max_bloat : cfg->max_bloat;
                double keep_thr = 1.0 / (1.0 + bloat / 100.0);
                double raise_thr = keep_thr + (1.0 - keep_thr) / 2; /* hysteresis band */
                if (pol && pol->mode[kind] != MTHP_POLICY_AUTO)
                        continue; /* its cgroup speaks for it, below */
                if (!counts(cfg, st, j, kind, total, caps, top, keep_default))
                        continue;
                bool any = false;
                for (unsigned r = 0; r < n_ladder; r++)
                        any = any || !isnan(remembered(m, kind, ladder[r]));
                if (!any) {
                        v->unknown = (int) j;
                        continue;
                }
                v->measured = true;
                if (v->best < 0 ||
                    kind_rate(m, kind, caps, top, keep_default) > kind_rate(&st->proc[v->best], kind, caps, top, keep_default))
                        v->best = (int) j;
                if (v->n_parties >= MAX_PARTIES)
                        continue;
                struct party *pt = &v->party[v->n_parties++];
                unsigned cap = sizes_cap(caps, ladder, n_ladder, pol);
                *pt = (struct party){ .proc = (int) j, .cgroup = -1, .pol = pol,
                                      .prio = pol ? pol->priority : cfg->default_priority,
                                      .keep = cap, .raise = cap, .capped = cap < n_ladder };
                for (unsigned r = 0; r < cap; r++) {
                        double u = remembered(m, kind, ladder[r]);
                        /* no block of this size in its mappings: the kernel cannot
                         * give it folios of this size, so it cannot bloat with them */
                        bool ok_keep = isnan(u) || u >= keep_thr || m->new_proc;
                        bool ok_raise = isnan(u) || u >= raise_thr;
                        if (!ok_raise && r < pt->raise)
                                pt->raise = r;
                        if (!ok_keep) {
                                pt->keep = r;
                                pt->fail_size = ladder[r];
                                pt->fail_usage = u;
                                pt->capped = false;
                                break;
                        }
                }
                if (pt->raise > pt->keep)
                        pt->raise = pt->keep;
        }

        madvise_wishes(cfg, caps, snap, kind, ladder, n_ladder, v->madvise);
        /* managed cgroups that say always, madvise or never, while they fault */
        for (unsigned c = 0; c < snap->n_cgroups && c < MTHP_SNAP_CGROUPS; c++) {
                const struct mthp_cgroup_view *cv = &snap->cgroup[c];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, cv->path, NULL, 0);
                if (!pol || pol->mode[kind] == MTHP_POLICY_AUTO)
                        continue;
                uint64_t kind_kb = kind == MTHP_ANON ? cv->anon_kb : cv->shmem_kb;
                /* No share rule here, unlike processes: memcg pgfault counts
                 * events, so a cgroup that gets 2M folios faults 512 times less
                 * often for the same memory and would lose its say to a
                 * sparse neighbour the moment it got what it asked for. */
                const struct mthp_engine_cgroup *mc = remembered_cgroup(st, cv->path);
                if (!mc || !mc->say_tick || st->tick > mc->say_tick + PROC_RECENT_TICKS || kind_kb == 0 ||
                    v->n_parties >= MAX_PARTIES)
                        continue;
                unsigned ceil = pol->mode[kind] == MTHP_POLICY_ALWAYS ? sizes_cap(caps, ladder, n_ladder, pol) : 0;
                v->party[v->n_parties++] = (struct party){ .proc = -1, .cgroup = (int) c, .pol = pol,
                                                           .prio = pol->priority, .keep = ceil, .raise = ceil,
                                                           .capped = true };
                v->measured = true;
        }

        /* the level: climb while every objection is outranked */
        unsigned keep = 0, raise = 0;
        int blocker = -1;
        while (keep < n_ladder && level_ok(v, keep + 1, false, &blocker))
                keep++;
        while (raise < keep && level_ok(v, raise + 1, true, NULL))
                raise++;
        if (v->n_parties) {
                v->keep = keep;
                v->raise = raise;
                v->holder = keep < n_ladder ? blocker : -1;
        }

        /* madvise above the level for policy parties that accept a size but
         * were outranked there; and name who lost, for the explanation */
        size_t len = 0;
        for (unsigned p = 0; p < v->n_parties; p++) {
                const struct party *pp = &v->party[p];
                bool lost = false;
                for (unsigned r = v->keep; r < n_ladder; r++) {
                        if (pp->keep <= r)
                                break;
                        for (unsigned q = 0; q < v->n_parties; q++)
                                if (v->party[q].keep <= r && v->party[q].prio > pp->prio) {
                                        if (pp->pol)
                                                v->madvise[r] = true;
                                        lost = true;
                                }
                }
                /* an objector that lost: its ceiling is below the level */
                lost = lost || pp->keep < v->keep;
                if (lost && len < sizeof(v->outranked) - 8) {
                        char d[160];
                        describe_party(caps, st, snap, kind, pp, d, sizeof(d));
                        int w = snprintf(v->outranked + len, sizeof(v->outranked) - len, "%s%s", len ? "; " : "", d);
                        len += w > 0 ? (size_t) w : 0;
                        if (len >= sizeof(v->outranked))
                                len = sizeof(v->outranked) - 1;
                }
        }
        for (unsigned r = 0; r < v->keep && r < n_ladder; r++)
                v->madvise[r] = false; /* always already */
        /* a process that counts but has no sample yet may be sparse: no raise */
        if (v->unknown >= 0 && v->raise > level)
                v->raise = level;
}

/* Why a party holds the level at keep: its density or its policy. */
static void describe_holder(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                            const struct mthp_engine_state *st, const struct mthp_snapshot *snap, enum mthp_kind kind,
                            const struct density_verdict *v, const unsigned *ladder, unsigned n_ladder, char *buf,
                            size_t n) {
        const struct party *p = &v->party[v->holder];
        char who[200], hs[16];
        describe_party(caps, st, snap, kind, p, who, sizeof(who));
        if (p->proc >= 0 && !p->capped) {
                double bloat = p->pol && !isnan(p->pol->max_bloat) ? p->pol->max_bloat : cfg->max_bloat;
                mthp_format_size(caps->sizes[p->fail_size].kb, hs, sizeof(hs));
                snprintf(buf, n, "%s uses %.2f of each %s block (predicted RSS x%.1f > MaxBloat %.0f%%)", who,
                         p->fail_usage, hs, p->fail_usage > 0 ? 1 / p->fail_usage : 99.0, bloat);
        } else {
                unsigned r = p->keep < n_ladder ? p->keep : n_ladder - 1;
                mthp_format_size(caps->sizes[ladder[r]].kb, hs, sizeof(hs));
                snprintf(buf, n, "%s accepts no %s folios of %s as always", who, mthp_kind_name(kind), hs);
        }
}

struct signals {
        double demand, fallback_pct, avail_pct, share, top_alloc, stall_ms;
        int stall_pid;                 /* a process stalling in compaction, or 0 */
        bool pressure, fragmented, measured;
        char pressure_why[256];
};

static void read_signals(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_snapshot *snap, const struct mthp_engine_state *mem, enum mthp_kind kind,
                         int top_size, struct signals *s) {
        memset(s, 0, sizeof(*s));
        s->measured = snap->dt > 0;
        /* Faults no mTHP allocation explains are 4K faults of either kind.
         * Split them by the kinds of memory the faulting processes hold (from
         * the density sample), else by the host's anon and shmem totals, so an
         * anon-only workload does not raise shmem sizes too. */
        double explained = snap->kind_pages_rate[MTHP_ANON] + snap->kind_pages_rate[MTHP_SHMEM];
        double unexplained = snap->fault_pages_rate > explained ? snap->fault_pages_rate - explained : 0;
        double w_kind = 0, w_all = 0;
        for (unsigned i = 0; i < MTHP_ENGINE_PROCS; i++) {
                const struct mthp_engine_proc *p = &mem->proc[i];
                double rss = (double) p->rss_kb[MTHP_ANON] + (double) p->rss_kb[MTHP_SHMEM];
                if (!p->pid || rss <= 0 || mem->tick > p->seen_tick + PROC_RECENT_TICKS ||
                    p->fault_rate < cfg->min_proc_fault_rate)
                        continue; /* only processes that fault enough to count speak */
                w_kind += p->fault_rate * (double) p->rss_kb[kind] / rss;
                w_all += p->fault_rate;
        }
        if (w_all > 0)
                s->share = w_kind / w_all;
        else {
                double total_kb = (double) snap->mem.anon_kb + (double) snap->mem.shmem_kb;
                s->share = total_kb > 0 ? (double) (kind == MTHP_ANON ? snap->mem.anon_kb : snap->mem.shmem_kb) /
                                                  total_kb
                                        : 0.5;
        }
        s->demand = snap->kind_pages_rate[kind] + unexplained * s->share;

        /* The kernel counts a fallback at every size it tries, so only the
         * largest enabled size's own ratio says whether it is failing. */
        if (top_size >= 0) {
                double alloc = size_rate(caps, snap, (unsigned) top_size,
                                         kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc");
                double fb = size_rate(caps, snap, (unsigned) top_size,
                                      kind == MTHP_ANON ? "anon_fault_fallback" : "shmem_fallback");
                s->top_alloc = alloc;
                if (alloc + fb >= 10) {
                        s->fallback_pct = 100.0 * fb / (alloc + fb);
                        s->fragmented = s->fallback_pct >= cfg->max_fallback;
                }
        }

        s->avail_pct = snap->mem.total_kb ? 100.0 * (double) snap->mem.available_kb / (double) snap->mem.total_kb : 100;
        /* a faulting process of this kind close to its memory cgroup's limit:
         * larger folios would take it there sooner */
        for (unsigned i = 0; snap->density.valid && i < snap->density.n_procs && !s->pressure; i++) {
                const struct mthp_proc_density *p = &snap->density.proc[i];
                /* any faulting at all: with 2M folios a fast grower is 60 faults/s */
                if (p->fault_rate <= 0 || p->rss_kb[kind] == 0 || !p->cg_limit_kb)
                        continue;
                double used = 100.0 * (double) p->cg_usage_kb / (double) p->cg_limit_kb;
                if (used >= 100.0 - cfg->cgroup_headroom) {
                        s->pressure = true;
                        snprintf(s->pressure_why, sizeof(s->pressure_why),
                                 "cgroup %s of pid %d at %.0f%% of its %llu MiB limit", p->cgroup, p->pid, used,
                                 (unsigned long long) p->cg_limit_kb / 1024);
                }
        }
        /* a managed cgroup that faults this kind, stalled beyond its MaxPressure= */
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS && !s->pressure; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                const struct mthp_policy *pol = mthp_engine_policy(cfg, c->path, NULL, 0);
                double limit = pol && !isnan(pol->max_pressure) ? pol->max_pressure : cfg->psi_some_max;
                uint64_t kind_kb = kind == MTHP_ANON ? c->anon_kb : c->shmem_kb;
                if (!c->psi_present || kind_kb == 0 || c->fault_rate < cfg->min_proc_fault_rate ||
                    c->psi_some_avg10 < limit)
                        continue;
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "cgroup %s memory.pressure some %.1f%% >= %.0f%%%s%s",
                         c->path, c->psi_some_avg10, limit, pol ? " of policy " : "", pol ? pol->name : "");
        }
        /* a managed cgroup that faults and grows towards its limit */
        for (unsigned i = 0; i < snap->n_cgroups && i < MTHP_SNAP_CGROUPS && !s->pressure; i++) {
                const struct mthp_cgroup_view *c = &snap->cgroup[i];
                uint64_t kind_kb = kind == MTHP_ANON ? c->anon_kb : c->shmem_kb;
                if (!c->limit_kb || kind_kb == 0 || c->fault_rate < cfg->min_proc_fault_rate)
                        continue;
                double used = 100.0 * (double) c->usage_kb / (double) c->limit_kb;
                if (used < 100.0 - cfg->cgroup_headroom)
                        continue;
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "cgroup %s at %.0f%% of its %llu MiB limit", c->path,
                         used, (unsigned long long) c->limit_kb / 1024);
        }
        /* direct compaction stalls: large folios cost the faulting process time */
        for (unsigned i = 0; snap->density.valid && i < snap->density.n_procs && !s->fragmented; i++) {
                const struct mthp_proc_density *p = &snap->density.proc[i];
                if (p->fault_rate < cfg->min_proc_fault_rate || p->rss_kb[kind] == 0 || isnan(p->compact_ms))
                        continue;
                if (p->compact_ms >= cfg->max_compact_ms && top_size >= 0) {
                        s->fragmented = true;
                        s->stall_pid = p->pid;
                        s->stall_ms = p->compact_ms;
                }
        }
        if (s->pressure)
                ;
        else if (snap->psi.present && snap->psi.some_avg10 >= cfg->psi_some_max) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "PSI memory some %.1f%% >= %.0f%%",
                         snap->psi.some_avg10, cfg->psi_some_max);
        } else if (s->avail_pct < cfg->min_available) {
                s->pressure = true;
                snprintf(s->pressure_why, sizeof(s->pressure_why), "MemAvailable %.1f%% < %.0f%%", s->avail_pct,
                         cfg->min_available);
        }
}

static void level_name(const struct mthp_caps *caps, const unsigned *ladder, unsigned level, char *buf, size_t n) {
        if (level)
                mthp_format_size(caps->sizes[ladder[level - 1]].kb, buf, n);
        else
                snprintf(buf, n, "4K");
}

/* Step down after a failure (pressure, fragmentation, a probe that did not
 * verify) and bar the level that failed for a while, longer each time it
 * fails again. */
static void step_down_failed(const struct mthp_engine_config *cfg, struct mthp_engine_kind *st, unsigned to,
                             uint64_t tick) {
        unsigned base = cfg->dwell_ticks ? 4 * cfg->dwell_ticks : 4;
        if (st->ceiling == st->level && st->backoff)
                st->backoff = st->backoff * 2 > BACKOFF_MAX_TICKS ? BACKOFF_MAX_TICKS : st->backoff * 2;
        else
                st->backoff = base;
        st->ceiling = st->level;
        st->ceiling_until = tick + st->backoff;
        st->level = to;
}

static void describe_proc(const struct mthp_engine_proc *p, char *buf, size_t n) {
        snprintf(buf, n, "pid %d (%s, %.0f faults/s)", p->pid, p->comm, p->fault_rate);
}

/* The safety net under 2M (issue 16): while mthpd holds the PMD size at
 * always for anon, the THP shrinker may split, under reclaim, PMD folios
 * whose zero subpages exceed khugepaged/max_ptes_none, and maps those
 * subpages to the zero page (content kept, memory freed). Sizes below PMD
 * have no such shrinker. The kernel counts a subpage as zero by its content
 * (thp_underused(): memchr_inv, pages_identical with ZERO_PAGE), as the
 * density sampler's zero share does, and 511 turns the shrinker off.
 * The value: the MaxBloat boundary (a folio with more zero subpages costs
 * more than MaxBloat), raised to keep whole the folios of every process
 * measured dense enough to hold 2M (its zero subpages + NET_MARGIN), at most
 * 510. Also khugepaged then collapses only regions at least that full. */
#define NET_MARGIN 32
static void shrinker_net(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                         const struct mthp_engine_state *st, struct mthp_decision *out, size_t *n, size_t n_out) {
        int mk = mthp_caps_find_knob(caps, "khugepaged/max_ptes_none");
        int sk = mthp_caps_find_knob(caps, "global/shrink_underused");
        int pmd = mthp_caps_find_size(caps, caps->pmd_kb);
        if ((mk < 0 && sk < 0) || pmd < 0)
                return;
        unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, MTHP_ANON, ladder);
        bool held = false;
        for (unsigned r = 0; r < st->kind[MTHP_ANON].level && r < n_ladder; r++)
                held = held || ladder[r] == (unsigned) pmd;
        unsigned subpages = caps->pmd_kb / 4;
        double keep_default = 1.0 / (1.0 + cfg->max_bloat / 100.0);
        unsigned val = (unsigned) ceil((double) subpages * (1 - keep_default));
        char why[300], pmd_name[16];
        mthp_format_size(caps->pmd_kb, pmd_name, sizeof(pmd_name));
        int w = snprintf(why, sizeof(why), "the MaxBloat %.0f%% boundary: %u of %u subpages zero", cfg->max_bloat, val,
                         subpages);
        for (unsigned j = 0; j < MTHP_ENGINE_PROCS; j++) {
                const struct mthp_engine_proc *m = &st->proc[j];
                if (!m->pid || st->tick > m->seen_tick + PROC_RECENT_TICKS)
                        continue;
                const struct mthp_policy *pol = mthp_engine_policy(cfg, m->cgroup, NULL, 0);
                double bloat = pol && !isnan(pol->max_bloat) ? pol->max_bloat : cfg->max_bloat;
                double u = remembered(m, MTHP_ANON, (unsigned) pmd);
                if (isnan(u) || u < 1.0 / (1.0 + bloat / 100.0))
                        continue; /* not one 2M is held for */
                unsigned z = (unsigned) ceil((1 - u) * subpages) + NET_MARGIN;
                if (z > val) {
                        val = z;
                        w = snprintf(why, sizeof(why),
                                     "pid %d (%s) uses %.2f of each %s block: its %u zero subpages + %u kept whole",
                                     m->pid, m->comm, u, pmd_name, z - NET_MARGIN, NET_MARGIN);
                }
        }
        (void) w;
        if (val > subpages - 2)
                val = subpages - 2;
        if (mk >= 0 && *n < n_out) {
                struct mthp_decision *d = &out[(*n)++];
                d->knob = mk;
                if (held) {
                        snprintf(d->value, sizeof(d->value), "%u", val);
                        snprintf(d->reason, sizeof(d->reason),
                                 "anon %s is always: the THP shrinker may split, under reclaim, %s folios with more "
                                 "than %u of %u subpages zero (%s)",
                                 pmd_name, pmd_name, val, subpages, why);
                } else {
                        d->value[0] = 0;
                        snprintf(d->reason, sizeof(d->reason), "mthpd does not hold anon %s always: original value",
                                 pmd_name);
                }
        }
        if (sk >= 0 && *n < n_out) {
                struct mthp_decision *d = &out[(*n)++];
                d->knob = sk;
                snprintf(d->value, sizeof(d->value), "%s", held ? "1" : "");
                snprintf(d->reason, sizeof(d->reason), "%s",
                         held ? "anon 2M is always: the shrinker of underused 2M folios stays on"
                              : "mthpd does not hold anon 2M always: original value");
        }
}

int mthp_engine_decide(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                       const struct mthp_snapshot *snap, const struct mthp_engine_state *prev,
                       struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out) {
        size_t n = 0;
        bool want_defer = false;
        char defer_why[256] = "";

        *next = *prev;
        next->tick = snap->tick;
        remember(caps, snap, next);
        remember_cgroups(cfg, snap, next);
        remember_limited(snap, next);
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct mthp_engine_kind *st = &next->kind[kind];
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                struct signals sig;
                struct density_verdict dens;
                char why[MTHP_REASON_MAX - 96] = "";
                const char *kname = mthp_kind_name(kind);

                unsigned blind = 0; /* levels allowed without a density sample */
                while (blind < n_ladder && caps->sizes[ladder[blind]].kb <= cfg->unmeasured_max_kb)
                        blind++;
                if (st->level > n_ladder)
                        st->level = n_ladder; /* config shrank the ladder */
                read_signals(cfg, caps, snap, next, kind, st->level ? (int) ladder[st->level - 1] : -1, &sig);
                /* density speaks for a kind only while the kind faults: a shmem
                 * workload's heap must not decide anon sizes */
                if (sig.demand >= cfg->lower_fault_rate)
                        judge_density(cfg, caps, snap, next, kind, ladder, n_ladder, st->level, &dens);
                else {
                        memset(&dens, 0, sizeof(dens));
                        dens.holder = dens.best = dens.unknown = -1;
                        dens.keep = n_ladder;
                        dens.raise = st->level;
                        madvise_wishes(cfg, caps, snap, kind, ladder, n_ladder, dens.madvise);
                }

                if (sig.measured) {
                        st->pressure_streak = sig.pressure ? st->pressure_streak + 1 : 0;
                        bool want_up = sig.demand >= cfg->raise_fault_rate && !sig.pressure && !sig.fragmented;
                        st->raise_streak = want_up ? st->raise_streak + 1 : 0;
                        st->lower_streak = sig.demand < cfg->lower_fault_rate ? st->lower_streak + 1 : 0;
                        st->sparse_streak = dens.measured && dens.keep < st->level ? st->sparse_streak + 1 : 0;
                }
                bool dwell_ok = st->last_change_tick == 0 || snap->tick >= st->last_change_tick + cfg->dwell_ticks;
                /* where a raise may go: density says how far; blind, one step */
                /* Climb blind only where no process that counts could be
                 * measured: if one that counts has no sample yet, wait a tick
                 * for it rather than give a sparse one large folios. */
                bool blind_ok = dens.unknown < 0;
                unsigned target = dens.measured ? dens.raise
                                  : blind_ok && st->level < blind ? st->level + 1
                                                                  : st->level;
                if (target > n_ladder)
                        target = n_ladder;
                /* the limited-cgroup invariant: no policy priority outranks it
                 * (arbitration trades memory within a limit, never a process) */
                char lim_why[400];
                int lim_blocker;
                unsigned afford = limited_afford(cfg, caps, next, kind, ladder, n_ladder, &lim_blocker, lim_why,
                                                 sizeof(lim_why));
                bool lim_capped = target > afford;
                if (lim_capped)
                        target = afford;
                bool barred = false;
                if (st->ceiling && snap->tick < st->ceiling_until && target >= st->ceiling) {
                        target = st->ceiling - 1;
                        barred = true;
                }
                unsigned old_level = st->level;
                char top[16], to[16], who[96] = "";
                level_name(caps, ladder, st->level, top, sizeof(top));
                if (dens.best >= 0)
                        describe_proc(&next->proc[dens.best], who, sizeof(who));
                /* who wants the sizes: the highest-priority party that accepts
                 * the target (raise) or the level (hold) */
                char raiser[200] = "", keeper[200] = "";
                int pr = -1, pk = -1;
                for (unsigned p = 0; p < dens.n_parties; p++) {
                        const struct party *pp = &dens.party[p];
                        if (target > 0 && pp->keep >= target && (pr < 0 || pp->prio > dens.party[pr].prio))
                                pr = (int) p;
                        if (st->level > 0 && pp->keep >= st->level && (pk < 0 || pp->prio > dens.party[pk].prio))
                                pk = (int) p;
                }
                if (pr >= 0)
                        describe_party(caps, next, snap, kind, &dens.party[pr], raiser, sizeof(raiser));
                if (pk >= 0 && dens.party[pk].pol)
                        describe_party(caps, next, snap, kind, &dens.party[pk], keeper, sizeof(keeper));

                /* probe-then-verify: a raise must show allocations at its new
                 * top size while the kind is faulting */
                bool probe_failed = false;
                /* only once the kernel holds the new value (a dry run never does) */
                int top_knob = st->level ? caps->sizes[ladder[st->level - 1]].knob[kind] : -1;
                bool holds = top_knob >= 0 && strcmp(snap->knob[top_knob], "always") == 0;
                if (sig.measured && st->verify_left && st->level && holds) {
                        if (sig.top_alloc > 0)
                                st->verify_left = 0;
                        else if (sig.demand >= cfg->raise_fault_rate && --st->verify_left == 0)
                                probe_failed = true;
                }

                if (st->level > afford) {
                        /* no dwell, no confirmation: the cgroup pays at once */
                        level_name(caps, ladder, afford, to, sizeof(to));
                        snprintf(why, sizeof(why), "%s: step %s down from %s to %s", lim_why, kname, top, to);
                        st->level = afford;
                        st->verify_left = 0;
                } else if (!sig.measured) {
                        snprintf(why, sizeof(why), "first sample: no rates yet, holding %s at %s", kname, top);
                } else if (st->level > 0 && st->pressure_streak >= 2) {
                        /* pressure acts without waiting for dwell: memory is the emergency */
                        snprintf(why, sizeof(why), "memory pressure for %u ticks (%s): step %s down from %s",
                                 st->pressure_streak, sig.pressure_why, kname, top);
                        step_down_failed(cfg, st, st->level - 1, snap->tick);
                        st->pressure_streak = 0; /* PSI lags: give the step time to show */
                } else if (probe_failed) {
                        /* back to the largest enabled size the kernel did use */
                        unsigned back = st->verify_from < st->level ? st->verify_from : st->level - 1;
                        for (unsigned r = st->level - 1; r > back; r--)
                                if (size_rate(caps, snap, ladder[r - 1],
                                              kind == MTHP_ANON ? "anon_fault_alloc" : "shmem_alloc") > 0) {
                                        back = r;
                                        break;
                                }
                        level_name(caps, ladder, back, to, sizeof(to));
                        snprintf(why, sizeof(why),
                                 "probe of %s %s failed: no %s allocations at %s in %u ticks of %.0f pages/s "
                                 "demand: back to %s, the largest size in use",
                                 kname, top, kname, top, cfg->verify_ticks, sig.demand, to);
                        step_down_failed(cfg, st, back, snap->tick);
                        st->ceiling = back + 1; /* every size above it went unused */
                } else if (st->level > 0 && st->sparse_streak >= SPARSE_CONFIRM_TICKS) {
                        /* bloat guard: no dwell, a faulting sparse process pays now */
                        char hd[320];
                        describe_holder(cfg, caps, next, snap, kind, &dens, ladder, n_ladder, hd, sizeof(hd));
                        level_name(caps, ladder, dens.keep, to, sizeof(to));
                        snprintf(why, sizeof(why), "%s: step %s down from %s to %s", hd, kname, top, to);
                        st->level = dens.keep;
                        st->verify_left = 0;
                } else if (st->level > 0 && sig.fragmented && dwell_ok) {
                        if (sig.stall_pid)
                                snprintf(why, sizeof(why),
                                         "pid %d stalls %.0f ms/s in direct compaction (>= %.0f, taskstats) with "
                                         "%s %s folios: step down",
                                         sig.stall_pid, sig.stall_ms, cfg->max_compact_ms, kname, top);
                        else
                                snprintf(why, sizeof(why),
                                         "%.0f%% of %s mTHP faults at %s fall back (>= %.0f%%): memory too "
                                         "fragmented, step down",
                                         sig.fallback_pct, kname, top, cfg->max_fallback);
                        step_down_failed(cfg, st, st->level - 1, snap->tick);
                } else if (target > st->level &&
                           st->raise_streak >= (dens.measured ? cfg->density_confirm_ticks : cfg->confirm_ticks) &&
                           (dwell_ok || (dens.measured && st->last_dir > 0))) {
                        /* dwell guards against reversals: a second raise right
                         * after the first (a sample that saw more) is no flap */
                        level_name(caps, ladder, target, to, sizeof(to));
                        if (dens.measured && dens.best < 0)
                                snprintf(why, sizeof(why),
                                         "%s fault demand %.0f pages/s >= %.0f for %u ticks; wanted by policy: %s; "
                                         "no pressure (MemAvailable %.0f%%): raise to %s (probe)",
                                         kname, sig.demand, cfg->raise_fault_rate, st->raise_streak, raiser, sig.avail_pct,
                                         to);
                        else if (dens.measured)
                                snprintf(why, sizeof(why),
                                         "%s fault demand %.0f pages/s >= %.0f for %u ticks; densest use by %s: "
                                         "%.2f of each %s block; no pressure (MemAvailable %.0f%%): raise to %s "
                                         "(probe)",
                                         kname, sig.demand, cfg->raise_fault_rate, st->raise_streak, who,
                                         remembered(&next->proc[dens.best], kind, ladder[target - 1]), to,
                                         sig.avail_pct, to);
                        else
                                snprintf(why, sizeof(why),
                                         "%s fault demand %.0f pages/s >= %.0f for %u ticks, no pressure (PSI some "
                                         "%.1f%%, MemAvailable %.0f%%), fallback %.0f%%, no density sample: step up",
                                         kname, sig.demand, cfg->raise_fault_rate, st->raise_streak,
                                         snap->psi.present ? snap->psi.some_avg10 : 0.0, sig.avail_pct,
                                         sig.fallback_pct);
                        if (lim_capped) {
                                size_t l = strlen(why);
                                snprintf(why + l, sizeof(why) - l, "; stops there: %s", lim_why);
                        }
                        st->verify_from = st->level;
                        st->verify_left = cfg->verify_ticks;
                        st->level = target;
                } else if (st->level > 0 && st->lower_streak >= cfg->lower_ticks && dwell_ok) {
                        st->level--;
                        snprintf(why, sizeof(why), "%s fault demand %.0f pages/s < %.0f for %u ticks: step down", kname,
                                 sig.demand, cfg->lower_fault_rate, st->lower_streak);
                } else {
                        char extra[480] = "";
                        if (sig.pressure)
                                snprintf(extra, sizeof(extra), "; pressure: %s", sig.pressure_why);
                        else if (lim_blocker >= 0 && afford <= st->level)
                                snprintf(extra, sizeof(extra), "; held back by %s", lim_why);
                        else if (dens.measured && dens.holder >= 0 && dens.keep <= st->level) {
                                char hd[320];
                                describe_holder(cfg, caps, next, snap, kind, &dens, ladder, n_ladder, hd, sizeof(hd));
                                snprintf(extra, sizeof(extra), "; held back by %s", hd);
                        } else if (keeper[0])
                                snprintf(extra, sizeof(extra), "; wanted by %s", keeper);
                        else if (barred)
                                snprintf(extra, sizeof(extra), "; level %u failed before, barred for %llu more ticks",
                                         st->ceiling, (unsigned long long) (st->ceiling_until - snap->tick));
                        else if (!dwell_ok)
                                snprintf(extra, sizeof(extra), "; dwelling after last change");
                        snprintf(why, sizeof(why),
                                 "holding %s at %s: demand %.0f pages/s (raise at %.0f for %u ticks: streak %u; lower "
                                 "below %.0f for %u: streak %u), fallback %.0f%%%s",
                                 kname, top, sig.demand, cfg->raise_fault_rate, cfg->confirm_ticks, st->raise_streak,
                                 cfg->lower_fault_rate, cfg->lower_ticks, st->lower_streak, sig.fallback_pct, extra);
                }
                if (st->level != old_level) {
                        st->last_dir = st->level > old_level ? 1 : -1;
                        st->last_change_tick = snap->tick ? snap->tick : 1;
                        st->raise_streak = st->lower_streak = st->sparse_streak = 0;
                        if (st->level < old_level && st->level <= st->verify_from)
                                st->verify_left = 0;
                }
                if (st->ceiling && snap->tick >= st->ceiling_until + 10 * st->backoff)
                        st->ceiling = st->backoff = 0; /* long clean spell: forget the failure */

                /* large sizes that fall back a lot: let kcompactd work in the
                 * background instead of stalling faults or giving up */
                if (st->level && caps->sizes[ladder[st->level - 1]].kb >= DEFRAG_MIN_KB && sig.measured &&
                    sig.fallback_pct >= DEFRAG_FALLBACK_PCT && !sig.pressure) {
                        want_defer = true;
                        snprintf(defer_why, sizeof(defer_why),
                                 "%.0f%% of %s faults at %s fall back (>= %.0f%%): defer compaction to kcompactd",
                                 sig.fallback_pct, kname, top, DEFRAG_FALLBACK_PCT);
                }

                /* One decision for every per-size knob of this kind: sizes off
                 * the ladder (e.g. after a reload narrowed it) go back to their
                 * original value instead of staying as we left them. */
                for (unsigned i = 0; i < caps->n_sizes && n < n_out; i++) {
                        int knob = caps->sizes[i].knob[kind];
                        if (knob < 0)
                                continue;
                        int rung = -1;
                        for (unsigned r = 0; r < n_ladder; r++)
                                if (ladder[r] == i)
                                        rung = (int) r;
                        struct mthp_decision *d = &out[n++];
                        char sname[16];
                        mthp_format_size(caps->sizes[i].kb, sname, sizeof(sname));
                        d->knob = knob;
                        bool on = rung >= 0 && (unsigned) rung < st->level;
                        const char *adv = kind == MTHP_ANON ? "madvise" : "advise";
                        bool madv = !on && rung >= 0 && dens.madvise[rung] &&
                                    mthp_knob_allows(&caps->knobs[knob], adv);
                        snprintf(d->value, sizeof(d->value), "%s", on ? "always" : madv ? adv : "");
                        if (rung < 0)
                                snprintf(d->reason, sizeof(d->reason),
                                         "%s is outside the %s sizes mthpd may use: original value", sname, kname);
                        else if (snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s %s)%s%s", why, st->level,
                                          n_ladder, sname,
                                          on     ? "in use"
                                          : madv ? "madvise: a policy wants it where programs ask"
                                                 : "not needed: original value",
                                          dens.outranked[0] ? "; outranked: " : "", dens.outranked) >=
                                 (int) sizeof(d->reason))
                                d->reason[sizeof(d->reason) - 2] = '~'; /* cut, never lost */
                }
        }

        /* defrag, with the same confirm/lower hysteresis as the sizes */
        int dk = mthp_caps_find_knob(caps, "global/defrag");
        if (dk >= 0 && n < n_out) {
                if (snap->dt > 0) {
                        if (want_defer != next->defrag_defer)
                                next->defrag_streak++;
                        else
                                next->defrag_streak = 0;
                        unsigned need = want_defer ? cfg->confirm_ticks : cfg->lower_ticks;
                        if (next->defrag_streak >= need) {
                                next->defrag_defer = want_defer;
                                next->defrag_streak = 0;
                        }
                }
                struct mthp_decision *d = &out[n++];
                d->knob = dk;
                bool on = next->defrag_defer && mthp_knob_allows(&caps->knobs[dk], "defer");
                snprintf(d->value, sizeof(d->value), "%s", on ? "defer" : "");
                if (on)
                        snprintf(d->reason, sizeof(d->reason), "%s", defer_why[0] ? defer_why :
                                 "large sizes were falling back: keeping defrag=defer until that stops");
                else
                        snprintf(d->reason, sizeof(d->reason),
                                 "no large size falls back >= %.0f%%: the administrator's defrag setting",
                                 DEFRAG_FALLBACK_PCT);
        }
        shrinker_net(cfg, caps, next, out, &n, n_out);
        return (int) n;
}

int mthp_engine_guard(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                      const struct mthp_guard_trip *trip, const struct mthp_engine_state *prev,
                      struct mthp_engine_state *next, struct mthp_decision *out, size_t n_out) {
        size_t n = 0;
        *next = *prev;
        uint64_t tick = next->tick;
        struct mthp_engine_limited *c = NULL, *free_slot = NULL, *oldest = NULL;
        for (unsigned j = 0; j < MTHP_SNAP_LIMITED && !c; j++) {
                struct mthp_engine_limited *e = &next->limited[j];
                if (e->path[0] && strcmp(e->path, trip->path) == 0)
                        c = e;
                else if (!free_slot && !e->path[0])
                        free_slot = e;
                else if (e->path[0] && e->trip_until <= tick && (!oldest || e->seen_tick < oldest->seen_tick))
                        oldest = e;
        }
        if (!c) {
                c = free_slot ? free_slot : oldest ? oldest : &next->limited[MTHP_SNAP_LIMITED - 1];
                memset(c, 0, sizeof(*c));
                mthp_strcpy(c->path, sizeof(c->path), trip->path);
        }
        c->usage_kb = trip->usage_kb;
        c->limit_kb = trip->limit_kb;
        c->growth_kb = trip->usage_kb > trip->armed_usage_kb ? trip->usage_kb - trip->armed_usage_kb : 0;
        c->present = c->populated = true;
        c->seen_tick = tick;
        /* a repeat while the last backoff (or as long again after it) runs doubles it */
        if (c->trip_backoff && tick < c->trip_until + c->trip_backoff)
                c->trip_backoff = c->trip_backoff * 2 > GUARD_BACKOFF_MAX ? GUARD_BACKOFF_MAX : c->trip_backoff * 2;
        else
                c->trip_backoff = GUARD_BACKOFF_TICKS;
        c->trip_tick = tick;
        c->trip_until = tick + c->trip_backoff;
        c->trip_growth_kb = trip->hit_limit ? c->limit_kb : c->growth_kb;

        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct mthp_engine_kind *st = &next->kind[kind];
                unsigned ladder[MTHP_SIZES_MAX], n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                char lim_why[400], top[16], to[16], why[MTHP_REASON_MAX - 64];
                int blocker;
                if (st->level > n_ladder)
                        st->level = n_ladder;
                /* The tripped cgroup has just shown that it faults faster than
                 * one tick's worth: every kind goes back to 4K (the boot
                 * default, what it was sized for) at once; the next ticks'
                 * invariant decides how far back up, with it counted sparse. */
                (void) limited_afford(cfg, caps, next, kind, ladder, n_ladder, &blocker, lim_why, sizeof(lim_why));
                unsigned afford = 0;
                if (blocker < 0 || strcmp(next->limited[blocker].path, c->path) != 0) {
                        char sz[16];
                        mthp_format_size(caps->sizes[ladder[0]].kb, sz, sizeof(sz));
                        snprintf(lim_why, sizeof(lim_why), "it faulted %.0f MiB since the last tick",
                                 (double) c->growth_kb / 1024);
                }
                if (st->level <= afford)
                        continue;
                unsigned old = st->level;
                level_name(caps, ladder, old, top, sizeof(top));
                level_name(caps, ladder, afford, to, sizeof(to));
                int w = snprintf(why, sizeof(why),
                         "guard: cgroup %s crossed its %s (%.0f MiB = %.0f MiB + %.0f%% of its headroom, limit "
                         "%.0f MiB), now %.0f MiB; reacted %.0f us after the wake-up; %s: step %s down from %s to "
                         "%s at once, the cgroup counts as sparse for %u ticks",
                         trip->path, trip->what ? trip->what : "usage threshold", (double) trip->threshold_kb / 1024,
                         (double) trip->armed_usage_kb / 1024, cfg->guard_headroom, (double) trip->limit_kb / 1024,
                         (double) trip->usage_kb / 1024, trip->latency_us, lim_why, mthp_kind_name(kind), top, to,
                         c->trip_backoff);
                if (w >= (int) sizeof(why))
                        why[sizeof(why) - 2] = '~';
                st->level = afford;
                st->verify_left = 0;
                st->last_dir = -1;
                st->last_change_tick = tick ? tick : 1;
                st->raise_streak = st->lower_streak = st->sparse_streak = 0;
                /* largest first: it bloats most */
                for (unsigned r = old; r-- > afford && n < n_out;) {
                        struct mthp_decision *d = &out[n++];
                        char sname[16];
                        mthp_format_size(caps->sizes[ladder[r]].kb, sname, sizeof(sname));
                        d->knob = caps->sizes[ladder[r]].knob[kind];
                        d->value[0] = 0;
                        if (snprintf(d->reason, sizeof(d->reason), "%s (level %u/%u; %s not affordable: original value)",
                                     why, afford, n_ladder, sname) >= (int) sizeof(d->reason))
                                d->reason[sizeof(d->reason) - 2] = '~';
                }
        }
        return (int) n;
}

void mthp_engine_note_applied(const struct mthp_engine_config *cfg, const struct mthp_caps *caps,
                              struct mthp_engine_state *st, const bool failed[MTHP_KNOBS_MAX]) {
        for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                struct mthp_engine_kind *k = &st->kind[kind];
                unsigned ladder[MTHP_SIZES_MAX];
                unsigned n_ladder = mthp_engine_ladder(cfg, caps, kind, ladder);
                unsigned level = k->level <= n_ladder ? k->level : n_ladder;
                /* down to the largest rung whose "always" was not refused */
                while (level > 0 && caps->sizes[ladder[level - 1]].knob[kind] >= 0 &&
                       failed[caps->sizes[ladder[level - 1]].knob[kind]])
                        level--;
                if (level == k->level)
                        continue;
                k->level = level;
                if (level <= k->verify_from)
                        k->verify_left = 0; /* nothing raised to verify */
        }
}

bool mthp_engine_wants_density(const struct mthp_engine_config *cfg, const struct mthp_snapshot *snap,
                               const struct mthp_engine_state *st) {
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (st->kind[k].level > 0)
                        return true;
        return snap->dt > 0 && snap->fault_pages_rate >= cfg->raise_fault_rate;
}
